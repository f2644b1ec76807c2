fn main() {
    pyo3_build_config::use_pyo3_cfgs();
    println!("cargo:rerun-if-changed=csrc/guard.c");
    println!("cargo:rerun-if-changed=csrc/hang_at_exit.c");
    println!("cargo:rerun-if-env-changed=CFLAGS");
    cc::Build::new()
        .file("csrc/guard.c")
        // The cleanup that parks a thread must run during a forced unwind.
        .flag("-fexceptions")
        .warnings_into_errors(true)
        .flag_if_supported("-Wextra")
        .compile("dlguard");
    // dl_iterate_phdr and the ELF headers it walks are Linux's.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        cc::Build::new()
            .file("csrc/hang_at_exit.c")
            .warnings_into_errors(true)
            .flag_if_supported("-Wextra")
            .compile("dlhang");
    }
}
