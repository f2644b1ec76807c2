//! Whether libjpeg-turbo got its SIMD kernels: `mozjpeg-sys` builds without
//! them, with only a cargo warning, when NASM is missing. The decoder is then
//! about 2x slower, so the answer reaches Python (`JPEG_SIMD`) and the build log.

use std::env;
use std::fs;
use std::path::Path;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(jpeg_simd)");
    println!("cargo:rerun-if-env-changed=DEP_JPEG_INCLUDE");
    let include = env::var_os("DEP_JPEG_INCLUDE").unwrap_or_default();
    let simd = env::split_paths(&include).any(|dir| defines_simd(&dir.join("jconfig.h")));
    if simd {
        println!("cargo:rustc-cfg=jpeg_simd");
    } else if env::var_os("CARGO_FEATURE_SIMD").is_some() {
        // Asked for and missed; a build with the feature off chose plain C.
        println!(
            "cargo:warning=dataloader-rust: libjpeg-turbo is built WITHOUT its SIMD kernels \
             (no NASM on PATH): JPEG decoding will be about 2x slower than Pillow's. \
             Install NASM (apt install nasm, brew install nasm) and rebuild; \
             dataloader_api.backends(details=True) reports it."
        );
    }
}

fn defines_simd(path: &Path) -> bool {
    fs::read_to_string(path)
        .is_ok_and(|text| text.lines().any(|l| l.trim() == "#define WITH_SIMD 1"))
}
