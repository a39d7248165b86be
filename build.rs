//! Generates the C header with cbindgen into OUT_DIR. The checked-in copy, include/mcpc.h,
//! is compared with it by a test (tests/header.rs); set MCPC_UPDATE_HEADER=1 to rewrite it.

use std::path::{Path, PathBuf};

mod header_groups;

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
    // `cfg(mcpc_kqueue)`: the systems whose reactor waits on a kqueue (and watches a process's
    // exit there: they have no pidfd).
    println!("cargo:rustc-check-cfg=cfg(mcpc_kqueue)");
    let kqueue = ["macos", "ios", "freebsd", "openbsd", "dragonfly"];
    if kqueue.contains(&env("CARGO_CFG_TARGET_OS").as_str()) {
        println!("cargo:rustc-cfg=mcpc_kqueue");
    }
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=header_groups.rs");
    println!("cargo:rerun-if-env-changed=MCPC_UPDATE_HEADER");

    let crate_dir = PathBuf::from(env("CARGO_MANIFEST_DIR"));
    let mut config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // The version macros follow what cbindgen.toml puts after the includes. Cargo.toml's version
    // is the only one: the header, pkg-config and CMake files all take theirs from here.
    config.after_includes = Some(format!(
        "{}{}",
        config.after_includes.as_deref().unwrap_or_default(),
        version_macros(&major)
    ));
    let header = cbindgen::Builder::new()
        .with_crate(&crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen could not generate the header");
    let mut text = Vec::new();
    header.write(&mut text);
    let text = header_groups::open_groups(&String::from_utf8(text).expect("a UTF-8 header"));
    write_if_changed(&PathBuf::from(env("OUT_DIR")).join("mcpc.h"), &text);
    if std::env::var_os("MCPC_UPDATE_HEADER").is_some() {
        write_if_changed(&crate_dir.join("include").join("mcpc.h"), &text);
    }
}

/// Writes the file only when its text changes, so that its time stamp means a change.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}

/// MCPC_VERSION and its parts, MCPC_VERSION_NUM (0xMMmmpp, as curl's LIBCURL_VERSION_NUM: one
/// number that grows with every release) and MCPC_AT_LEAST_VERSION, which compares with it.
fn version_macros(major: &str) -> String {
    let minor = env("CARGO_PKG_VERSION_MINOR");
    let patch = env("CARGO_PKG_VERSION_PATCH");
    let part = |name: &str, text: &str| -> u32 {
        let value: u32 = text
            .parse()
            .unwrap_or_else(|_| panic!("{name} {text} is not a number"));
        assert!(
            value < 256,
            "{name} {value} does not fit MCPC_VERSION_NUM's byte"
        );
        value
    };
    let num = part("major", major) << 16 | part("minor", &minor) << 8 | part("patch", &patch);
    format!(
        "
/** The version of this header, e.g. \"0.1.0\"; mcp_version() gives the library's at run time. */
#define MCPC_VERSION \"{version}\"
/** The major part of #MCPC_VERSION. */
#define MCPC_VERSION_MAJOR {major}
/** The minor part of #MCPC_VERSION. */
#define MCPC_VERSION_MINOR {minor}
/** The patch part of #MCPC_VERSION. */
#define MCPC_VERSION_PATCH {patch}
/**
 * The version as one number, 0xMMmmpp (major, minor and patch a byte each), for comparisons:
 * MCPC_VERSION_NUM >= 0x000200 is true from 0.2.0 on.
 */
#define MCPC_VERSION_NUM 0x{num:06x}
/**
 * True when the header is of version major.minor.patch or later:
 * \\#if MCPC_AT_LEAST_VERSION(0, 2, 0) ... \\#endif
 */
#define MCPC_AT_LEAST_VERSION(major, minor, patch) \\
  (MCPC_VERSION_NUM >= (((major) << 16) | ((minor) << 8) | (patch)))",
        version = env("CARGO_PKG_VERSION"),
    )
}

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set"))
}
