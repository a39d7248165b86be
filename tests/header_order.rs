//! The header reads in learning order: its groups in the order a newcomer needs them, each
//! opened by a paragraph, and the functions of one object together (every client option
//! setter in one place, whichever ffi file implements it).

fn header() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/mcpc.h")).unwrap()
}

/// The functions the header declares, in order.
fn functions(header: &str) -> Vec<String> {
    let (_, declarations) = header
        .split_once("extern \"C\" {")
        .expect("the header's extern \"C\" block");
    declarations
        .split("\nMCPC_API")
        .skip(1)
        .filter_map(|declaration| {
            let (before, _) = declaration.split_once('(')?;
            let name = before.rsplit([' ', '*', '\n']).next()?;
            name.starts_with("mcp_").then(|| name.to_owned())
        })
        .collect()
}

/// Where the header's declaration of function `name` starts (not where a comment names it).
fn declaration_of(header: &str, name: &str) -> usize {
    let mut offset = 0;
    let mut previous = "";
    for line in header.split_inclusive('\n') {
        let code = !line.starts_with("/*") && !line.starts_with(" *");
        if code && (line.contains(&format!(" {name}(")) || line.contains(&format!("*{name}("))) {
            // A long declaration puts MCPC_API on a line of its own.
            return offset
                - if previous == "MCPC_API\n" {
                    previous.len()
                } else {
                    0
                };
        }
        offset += line.len();
        previous = line;
    }
    panic!("the header declares no {name}")
}

fn position(functions: &[String], name: &str) -> usize {
    functions
        .iter()
        .position(|f| f == name)
        .unwrap_or_else(|| panic!("the header declares no {name}"))
}

#[test]
fn groups_come_in_learning_order_each_opened_by_a_paragraph() {
    let header = header();
    let functions = functions(&header);
    assert!(
        functions.len() > 150,
        "found only {} functions",
        functions.len()
    );
    // The first function of each group, in the order of the issue: status and version, the
    // client, its options, blocking requests, results, cancellation, request options, the
    // non-blocking API, callbacks and handlers, listens, tasks, OAuth, custom transports.
    let firsts = [
        "mcp_status_name",
        "mcp_client_new_stdio",
        "mcp_client_options_new",
        "mcp_client_ping",
        "mcp_result_status",
        "mcp_cancellation_new",
        "mcp_request_options_new",
        "mcp_request_ping",
        "mcp_handler_reply_is_cancelled",
        "mcp_listen_new",
        "mcp_client_get_task",
        "mcp_auth_reply_is_cancelled",
        "mcp_client_new_custom",
    ];
    assert_eq!(
        functions[0], firsts[0],
        "the header does not start with the status"
    );
    for pair in firsts.windows(2) {
        assert!(
            position(&functions, pair[0]) < position(&functions, pair[1]),
            "{} comes after {}",
            pair[0],
            pair[1]
        );
    }
    // Each group's paragraph comes right before its first function's own comment.
    for first in firsts {
        let declaration = declaration_of(&header, first);
        let group = header[..declaration]
            .rfind("\\defgroup")
            .expect("a group before it");
        let between = &header[group..declaration];
        assert_eq!(
            between.matches("MCPC_API").count(),
            0,
            "{first} is not the first function after its group's paragraph"
        );
    }
    assert_eq!(header.matches("\\defgroup").count(), firsts.len() + 1); // + the wire trace
}

#[test]
fn the_functions_of_one_object_are_together() {
    let functions = functions(&header());
    for prefix in [
        "mcp_client_options_",
        "mcp_request_options_",
        "mcp_result_",
        "mcp_cancellation_",
        "mcp_completion_queue_",
        "mcp_listen_",
        "mcp_loopback_",
        "mcp_handler_reply_",
        "mcp_transport_reply_",
    ] {
        let at: Vec<usize> = (0..functions.len())
            .filter(|&i| functions[i].starts_with(prefix))
            .collect();
        assert!(!at.is_empty(), "no {prefix}* function");
        let apart: Vec<&str> = (at[0]..=at[at.len() - 1])
            .filter(|i| !functions[*i].starts_with(prefix))
            .map(|i| functions[i].as_str())
            .collect();
        assert!(
            apart.is_empty(),
            "{prefix}* functions are split by {apart:?}"
        );
    }
}
