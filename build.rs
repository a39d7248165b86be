//! Generates the C header with cbindgen into OUT_DIR. The checked-in copy, include/mcpc.h,
//! is compared with it by a test (tests/header.rs); set MCPC_UPDATE_HEADER=1 to rewrite it.

use std::path::PathBuf;

fn main() {
    let major = env("CARGO_PKG_VERSION_MAJOR");
    // The soname carries the major version, so hosts record libmcpc.so.MAJOR, not a path.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libmcpc.so.{major}");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-env-changed=MCPC_UPDATE_HEADER");

    let crate_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let mut config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    config.after_includes = Some(format!(
        "\n#define MCPC_VERSION \"{}\"\n#define MCPC_VERSION_MAJOR {}\n#define MCPC_VERSION_MINOR {}\n#define MCPC_VERSION_PATCH {}",
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
