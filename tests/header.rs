//! The checked-in header must be what cbindgen generates from the current sources.

#[test]
fn checked_in_header_is_fresh() {
    let generated = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/mcpc.h")).unwrap();
    let checked_in =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mcpc.h")).unwrap();
    assert!(
        generated == checked_in,
        "include/mcpc.h is stale: run `MCPC_UPDATE_HEADER=1 cargo build` and commit it"
    );
}

#[test]
fn header_declares_every_fixed_name() {
    let header =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mcpc.h")).unwrap();
    for name in [
        "mcp_cancellation *mcp_cancellation_new(void)",
        "bool mcp_cancellation_cancel(mcp_cancellation *token, const char *reason)",
        "bool mcp_cancellation_is_cancelled(const mcp_cancellation *token)",
        "const char *mcp_cancellation_reason(const mcp_cancellation *token)",
        "void mcp_cancellation_free(mcp_cancellation *token)",
        "mcp_result *mcp_client_connect(mcp_client *client)",
        "void mcp_client_close(mcp_client *client)",
        "void mcp_client_free(mcp_client *client)",
        "mcp_status mcp_result_status(const mcp_result *result)",
        "void mcp_result_free(mcp_result *result)",
        "const char *mcp_status_name(int status)",
        "const char *mcp_version(void)",
        "MCP_STATUS_PAGINATION_LIMIT = 8",
    ] {
        assert!(header.contains(name), "the header lacks `{name}`");
    }
    for request in [
        "list_tools",
        "tools",
        "list_resources",
        "resources",
        "list_resource_templates",
        "resource_templates",
        "list_prompts",
        "prompts",
        "call_tool",
        "read_resource",
        "get_prompt",
        "complete",
        "discover",
        "ping",
        "request",
    ] {
        assert!(
            header.contains(&format!("mcp_result *mcp_client_{request}(")),
            "missing mcp_client_{request}"
        );
    }
}

/// The header's version macros, as the C preprocessor sees them, and the library's
/// `mcp_version()` name one version; MCPC_VERSION_NUM is 0xMMmmpp of it.
#[test]
fn header_version_macros_agree_with_mcp_version() {
    let header =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mcpc.h")).unwrap();
    let define = |name: &str| -> String {
        let prefix = format!("#define {name} ");
        let line = header.lines().find(|line| line.starts_with(&prefix));
        line.unwrap_or_else(|| panic!("the header does not define {name}"))[prefix.len()..]
            .trim()
            .to_string()
    };
    let number = |name: &str| -> u32 { define(name).parse().expect(name) };

    // SAFETY: mcp_version returns a static NUL-terminated string.
    let library = unsafe { std::ffi::CStr::from_ptr(mcpc::ffi::mcp_version()) };
    let library = library.to_str().unwrap();
    assert_eq!(define("MCPC_VERSION"), format!("\"{library}\""));

    let (major, minor, patch) = (
        number("MCPC_VERSION_MAJOR"),
        number("MCPC_VERSION_MINOR"),
        number("MCPC_VERSION_PATCH"),
    );
    assert_eq!(format!("{major}.{minor}.{patch}"), library);
    let num = define("MCPC_VERSION_NUM");
    let num = u32::from_str_radix(num.strip_prefix("0x").expect("MCPC_VERSION_NUM in hex"), 16);
    assert_eq!(num.unwrap(), major << 16 | minor << 8 | patch);
    assert!(header.contains("#define MCPC_AT_LEAST_VERSION(major, minor, patch)"));
}
