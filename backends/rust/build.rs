fn main() {
    pyo3_build_config::use_pyo3_cfgs();
    println!("cargo:rerun-if-changed=csrc/guard.c");
    println!("cargo:rerun-if-env-changed=CFLAGS");
    cc::Build::new()
        .file("csrc/guard.c")
        // The cleanup that parks a thread must run during a forced unwind.
        .flag("-fexceptions")
        .warnings_into_errors(true)
        .flag_if_supported("-Wextra")
        .compile("dlguard");
}
