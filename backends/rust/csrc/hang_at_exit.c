/* Threads that take the interpreter back during finalization hang, as on 3.14.
 *
 * CPython <= 3.13 ends such a thread with pthread_exit() (PyThread_exit_thread,
 * from take_gil). That forced unwind runs through every frame the thread has:
 * pyo3's trampolines catch it and abort ("FATAL: exception not rethrown"), and
 * Rust drops run on the way without the interpreter (a crash in obmalloc). The
 * calls of ours that may take the interpreter back are guarded (guard.c), but
 * pyo3 takes it back in places no guard wraps: the first use of a type object or
 * of an imported exception, normalizing an error, a module's import.
 *
 * CPython 3.14 parks such a thread instead (PyThread_hang_thread, gh-87135).
 * This does the same on older versions: the interpreter's own GOT slot for
 * pthread_exit is pointed at a function that parks the thread for good while
 * the interpreter is finalizing, and calls pthread_exit otherwise. Nothing else
 * that calls pthread_exit is touched (the slot is the interpreter's).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#define DL_JUMP_SLOT R_X86_64_JUMP_SLOT
#define DL_GLOB_DAT R_X86_64_GLOB_DAT
#elif defined(__aarch64__)
#define DL_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define DL_GLOB_DAT R_AARCH64_GLOB_DAT
#endif

/* What dl_hang_threads_at_exit returns. */
enum {
    DL_HANG_INSTALLED = 0,
    DL_HANG_NO_FINALIZING_CHECK = 1, /* neither Py_IsFinalizing nor _Py_IsFinalizing */
    DL_HANG_NO_INTERPRETER_OBJECT = 2, /* no loaded object holds that function */
    DL_HANG_NO_SLOT = 3,             /* that object has no GOT slot for pthread_exit */
    DL_HANG_NOT_WRITABLE = 4,        /* mprotect refused */
    DL_HANG_UNSUPPORTED = 5,         /* a platform this file does not know */
    DL_HANG_DISABLED = 6,            /* built with -DDL_NO_HANG */
};

#ifdef DL_JUMP_SLOT

static int (*dl_is_finalizing)(void);

static void dl_pthread_exit_or_hang(void *value) {
    if (dl_is_finalizing()) {
        for (;;) {
            pause();
        }
    }
    pthread_exit(value);
}

struct dl_search {
    uintptr_t inside;  /* an address inside the interpreter's object */
    int found;         /* that object was seen */
    void **slots[4];   /* its GOT slots for pthread_exit */
    int slot_count;
    uintptr_t relro_start, relro_end;
};

/* A dynamic entry's address: glibc relocates most in place, other loaders not. */
static uintptr_t dl_dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) ptr) {
    return ptr < info->dlpi_addr ? ptr + info->dlpi_addr : ptr;
}

static void dl_scan_relocations(const struct dl_phdr_info *info, const ElfW(Rela) *rela,
                                size_t bytes, const ElfW(Sym) *symtab, const char *strtab,
                                struct dl_search *search) {
    for (size_t i = 0; i < bytes / sizeof(ElfW(Rela)); i++) {
        unsigned long type = ELF64_R_TYPE(rela[i].r_info);
        if (type != DL_JUMP_SLOT && type != DL_GLOB_DAT) {
            continue;
        }
        const char *name = strtab + symtab[ELF64_R_SYM(rela[i].r_info)].st_name;
        if (strcmp(name, "pthread_exit") == 0 && search->slot_count < 4) {
            search->slots[search->slot_count++] = (void **)(info->dlpi_addr + rela[i].r_offset);
        }
    }
}

static int dl_find_slots(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct dl_search *search = data;
    const ElfW(Dyn) *dynamic = NULL;
    int holds = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && search->inside >= start &&
            search->inside < start + ph->p_memsz) {
            holds = 1;
        } else if (ph->p_type == PT_DYNAMIC) {
            dynamic = (const ElfW(Dyn) *)start;
        } else if (ph->p_type == PT_GNU_RELRO) {
            search->relro_start = start;
            search->relro_end = start + ph->p_memsz;
        }
    }
    if (!holds) {
        search->relro_start = search->relro_end = 0;
        return 0;
    }
    search->found = 1;
    if (dynamic == NULL) {
        return 1;
    }
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmprel_bytes = 0, rela_bytes = 0;
    for (const ElfW(Dyn) *d = dynamic; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB: symtab = (const ElfW(Sym) *)dl_dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_STRTAB: strtab = (const char *)dl_dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_JMPREL: jmprel = (const ElfW(Rela) *)dl_dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_PLTRELSZ: jmprel_bytes = d->d_un.d_val; break;
        case DT_RELA: rela = (const ElfW(Rela) *)dl_dyn_ptr(info, d->d_un.d_ptr); break;
        case DT_RELASZ: rela_bytes = d->d_un.d_val; break;
        default: break;
        }
    }
    if (symtab != NULL && strtab != NULL) {
        if (jmprel != NULL) {
            dl_scan_relocations(info, jmprel, jmprel_bytes, symtab, strtab, search);
        }
        if (rela != NULL) {
            dl_scan_relocations(info, rela, rela_bytes, symtab, strtab, search);
        }
    }
    return 1;
}

static int dl_write_slot(void **slot, const struct dl_search *search) {
    uintptr_t page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t page = (uintptr_t)slot & ~(page_size - 1);
    if (mprotect((void *)page, page_size, PROT_READ | PROT_WRITE) != 0) {
        return DL_HANG_NOT_WRITABLE;
    }
    __atomic_store_n(slot, (void *)dl_pthread_exit_or_hang, __ATOMIC_SEQ_CST);
    /* Read-only again where the loader had made it so. */
    if ((uintptr_t)slot >= search->relro_start && (uintptr_t)slot < search->relro_end) {
        mprotect((void *)page, page_size, PROT_READ);
    }
    return DL_HANG_INSTALLED;
}

int dl_hang_threads_at_exit(void) {
#ifdef DL_NO_HANG
    /* Only to show that tests/test_exit.py catches the abort without it. */
    return DL_HANG_DISABLED;
#endif
    if (dl_is_finalizing == NULL) {
        void *check = dlsym(RTLD_DEFAULT, "Py_IsFinalizing");
        if (check == NULL) {
            check = dlsym(RTLD_DEFAULT, "_Py_IsFinalizing");
        }
        if (check == NULL) {
            return DL_HANG_NO_FINALIZING_CHECK;
        }
        *(void **)&dl_is_finalizing = check;
    }
    struct dl_search search = {.inside = (uintptr_t)dl_is_finalizing};
    dl_iterate_phdr(dl_find_slots, &search);
    if (!search.found) {
        return DL_HANG_NO_INTERPRETER_OBJECT;
    }
    if (search.slot_count == 0) {
        return DL_HANG_NO_SLOT;
    }
    for (int i = 0; i < search.slot_count; i++) {
        int status = dl_write_slot(search.slots[i], &search);
        if (status != DL_HANG_INSTALLED) {
            return status;
        }
    }
    return DL_HANG_INSTALLED;
}

#else

int dl_hang_threads_at_exit(void) {
    return DL_HANG_UNSUPPORTED;
}

#endif
