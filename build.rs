//! Generates the C header with cbindgen into OUT_DIR. The checked-in copy, include/mcpc.h,
//! is compared with it by a test (tests/header.rs); set MCPC_UPDATE_HEADER=1 to rewrite it.

use std::path::PathBuf;

fn main() {
    let major = env("CARGO_PKG_VERSION_MAJOR");
    match env("CARGO_CFG_TARGET_OS").as_str() {
        // The soname carries the major version, so hosts record libmcpc.so.MAJOR, not a path.
        "linux" | "android" | "freebsd" | "netbsd" | "openbsd" => {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmcpc.so.{major}");
        }
        // macOS's equivalent: an @rpath install name with the major version, and the major
        // version as the compatibility version that the loader checks.
        "macos" | "ios" => {
            println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libmcpc.{major}.dylib");
            println!("cargo:rustc-cdylib-link-arg=-Wl,-compatibility_version,{major}.0.0");
            println!(
                "cargo:rustc-cdylib-link-arg=-Wl,-current_version,{}",
                env("CARGO_PKG_VERSION")
            );
        }
        // Windows: mcpc.dll and its import library (libmcpc.dll.a with mingw, mcpc.dll.lib
        // with MSVC); a DLL has no soname.
        _ => {}
    }
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=MCPC_UPDATE_HEADER");

    let crate_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let mut config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // The version macros follow what cbindgen.toml puts after the includes.
    config.after_includes = Some(format!(
        "{}\n#define MCPC_VERSION \"{}\"\n#define MCPC_VERSION_MAJOR {}\n#define MCPC_VERSION_MINOR {}\n#define MCPC_VERSION_PATCH {}",
        config.after_includes.as_deref().unwrap_or_default(),
        env("CARGO_PKG_VERSION"),
        major,
        env("CARGO_PKG_VERSION_MINOR"),
        env("CARGO_PKG_VERSION_PATCH"),
    ));
    let header = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let out = PathBuf::from(env("OUT_DIR")).join("mcpc.h");
    header.write_to_file(&out);
    if std::env::var_os("MCPC_UPDATE_HEADER").is_some() {
        header.write_to_file(crate_dir.join("include").join("mcpc.h"));
    }
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}
