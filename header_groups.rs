//! The groups of the C header, in learning order, each with the paragraph that opens it.
//!
//! cbindgen writes the functions in source order (the module order of src/ffi/mod.rs), but it
//! cannot write a comment that belongs to no item. So build.rs hands the generated text to
//! `open_groups`, which puts a Doxygen group comment (`\defgroup` ... `\{`, then `\}` where the
//! next group begins) before the first function of each group named below. A group runs until
//! the next one, so a new function joins the group of the file it is written in.

/// One group: its Doxygen name, its title, the paragraph that says what it is for, and the
/// function it starts at (`None`: a group with no function of its own, written at the end).
struct Group {
    name: &'static str,
    title: &'static str,
    paragraph: &'static str,
    first: Option<&'static str>,
}

const GROUPS: &[Group] = &[
    Group {
        name: "status",
        title: "Status and version",
        paragraph: "Every call ends with an #mcp_status: a request's #mcp_result carries one \
            (mcp_result_status()) and every option setter returns one. MCP_STATUS_OK is 0; the \
            numbers are stable and never reused. mcp_version() names the library loaded at run \
            time; #MCPC_VERSION the header compiled against.",
        first: Some("mcp_status_name"),
    },
    Group {
        name: "client",
        title: "The client",
        paragraph: "An #mcp_client is one connection to one MCP server: a child process \
            spoken to over stdio (mcp_client_new_stdio()), or a Streamable HTTP endpoint \
            (mcp_client_new_http()). Creating it starts nothing; mcp_client_connect() starts \
            the server and learns its protocol era; then any number of threads make requests \
            on it at once; mcp_client_close() ends the session and mcp_client_free() frees it. \
            Once connected it says what the server told about itself. A client over a \
            transport of the host's own is made near the end of this header.",
        first: Some("mcp_client_new_stdio"),
    },
    Group {
        name: "client_options",
        title: "Client options",
        paragraph: "An #mcp_client_options says how a client connects and behaves. It is \
            copied when a client is made, so one object may serve many clients and may be \
            freed right after. Every setter returns MCP_STATUS_OK or \
            MCP_STATUS_INVALID_ARGUMENT; a rejected value is also remembered and reported by \
            mcp_client_connect(), so an unchecked setter never fails silently. The setters \
            come in this order: identity, timeouts and limits; the stdio server; the protocol \
            era; HTTP; TLS; the host's callbacks; request handlers; OAuth; tasks; the wire \
            trace.",
        first: Some("mcp_client_options_new"),
    },
    Group {
        name: "requests",
        title: "Requests (blocking)",
        paragraph: "One function per MCP request. Each sends its request and blocks the \
            calling thread until the answer, a cancel, a timeout or the client's close, and \
            returns an #mcp_result (never NULL) that the caller frees with mcp_result_free(). \
            Many threads may call at once on one client. `options` (may be NULL) is an \
            #mcp_request_options: the call's cancellation token, timeout, progress and `_meta`. \
            The same requests can be started without blocking a thread: see the non-blocking \
            API below.",
        first: Some("mcp_client_ping"),
    },
    Group {
        name: "results",
        title: "Results",
        paragraph: "An #mcp_result is the outcome of one call: its status and, when it is \
            MCP_STATUS_OK, the result as JSON text; otherwise a message, and for a server's \
            error its JSON-RPC code and data. The strings it returns belong to it and live \
            until mcp_result_free().",
        first: Some("mcp_result_status"),
    },
    Group {
        name: "cancellation",
        title: "Cancellation",
        paragraph: "An #mcp_cancellation token cancels the calls made with it (given through \
            mcp_request_options_set_cancellation()). Cancel from any thread at any time: it \
            never blocks on I/O, the call returns MCP_STATUS_CANCELLED at once, and the server \
            is told. One token may serve many calls.",
        first: Some("mcp_cancellation_new"),
    },
    Group {
        name: "request_options",
        title: "Request options",
        paragraph: "An #mcp_request_options says how one call is made: its cancellation \
            token, its timeouts, its progress token and callback, extra `_meta`, and the \
            answers of an `input_required` round by hand. Read when the call starts, so one \
            object may serve many calls at once. NULL options mean the defaults.",
        first: Some("mcp_request_options_new"),
    },
    Group {
        name: "nonblocking",
        title: "Requests without blocking: the completion queue and the starts",
        paragraph: "The same requests for an event loop. A constructor such as \
            mcp_request_call_tool() makes an #mcp_request; mcp_client_start() starts it without blocking and its \
            completion, the same #mcp_result a blocking call returns, goes to an \
            #mcp_completion_queue, whose file descriptor (on Windows, event object) the host's \
            loop watches: when it is readable, pop until the pop returns false. \
            mcp_client_start_callback() gives the completion to a callback on a library thread \
            instead. Every start that returns MCP_STATUS_OK completes exactly once.",
        first: Some("mcp_request_ping"),
    },
    Group {
        name: "handlers",
        title: "Callbacks and request handlers",
        paragraph: "Callbacks hear what the server says (progress, log messages, list changes, \
            resource updates, other notifications) and what the library notices; they are \
            registered through the client options and the request options, and their types \
            are declared at the top of this header. Request handlers answer what the server \
            asks of the client (`elicitation/create`, `sampling/createMessage`, `roots/list`) \
            through an #mcp_handler_reply. Both run on library threads, never while the \
            library holds a lock, so they may call the client.",
        first: Some("mcp_handler_reply_is_cancelled"),
    },
    Group {
        name: "listen",
        title: "Listens",
        paragraph: "A listen asks the server for what it sends outside any call (list \
            changes, resource updates, log messages) and blocks until it ends; what arrives \
            goes to the client's callbacks. An #mcp_listen says what to ask for; cancelling \
            the request options' token is the usual way to end it.",
        first: Some("mcp_listen_new"),
    },
    Group {
        name: "tasks",
        title: "Tasks by hand",
        paragraph: "With the tasks extension declared (mcp_client_options_set_tasks()) a call \
            the server answers with a task follows the task to its end by itself. With \
            mcp_request_options_set_return_task() the call returns the task instead, and the \
            host drives it with these.",
        first: Some("mcp_client_get_task"),
    },
    Group {
        name: "oauth",
        title: "OAuth",
        paragraph: "The library runs the OAuth flow of an HTTP server that asks for it, set \
            up through the client options (mcp_client_options_set_oauth_client() and its \
            neighbours). The host's parts: the person's step (#mcp_authorize_callback, \
            answered through #mcp_auth_reply; #mcp_loopback receives a native app's \
            redirect), optionally a token store (answered through #mcp_token_slot), and \
            optionally headers of its own for every request (#mcp_header_provider, filling an \
            #mcp_header_list).",
        first: Some("mcp_auth_reply_is_cancelled"),
    },
    Group {
        name: "custom_transport",
        title: "Custom transports",
        paragraph: "The host carries the JSON-RPC messages itself (an in-process server, a \
            transport the library does not have): it fills an #mcp_transport_vtable and makes \
            the client with mcp_client_new_custom(); the library does the rest of MCP.",
        first: Some("mcp_client_new_custom"),
    },
    Group {
        name: "trace",
        title: "The wire trace",
        paragraph: "For debugging: mcp_client_options_set_trace_callback() gives an \
            #mcp_trace_callback every JSON-RPC frame in and out (#mcp_trace_direction), in \
            order. It has no function of its own beyond that setter (with the other client \
            options) and costs nothing when off.",
        first: None,
    },
];

/// The header with each group's comment before its first function, and the groups closed.
pub fn open_groups(header: &str) -> String {
    let end_of_functions = "#ifdef __cplusplus\n}  // extern \"C\"";
    let end = header
        .find(end_of_functions)
        .expect("the header ends its extern \"C\" block");
    let (body, tail) = header.split_at(end);
    // cbindgen separates items with blank lines, and a doc comment has none inside.
    let mut chunks: Vec<String> = body.split("\n\n").map(str::to_owned).collect();
    // The status comes first among the types as among the functions. cbindgen puts the enums
    // in the order the functions first use them, and no enum depends on another.
    let status = chunks
        .iter()
        .position(|chunk| chunk.ends_with("} mcp_status;"))
        .expect("the header declares mcp_status");
    let first_enum = chunks
        .iter()
        .position(|chunk| chunk.contains("\ntypedef enum {"))
        .expect("the header declares enums");
    let status = chunks.remove(status);
    chunks.insert(first_enum, status);
    let mut last_index = 0;
    let mut open = false;
    for group in GROUPS.iter().filter(|g| g.first.is_some()) {
        let first = group.first.expect("filtered");
        let index = chunks
            .iter()
            .position(|chunk| declares(chunk, first))
            .unwrap_or_else(|| panic!("header_groups.rs: no function `{first}` in the header"));
        assert!(
            index > last_index,
            "header_groups.rs: `{first}` comes before the group above it in the header"
        );
        let mut text = String::new();
        if open {
            text.push_str("/** \\} */\n\n");
        }
        text.push_str(&comment(group));
        chunks.insert(index, text);
        last_index = index;
        open = true;
    }
    let mut out = chunks.join("\n\n");
    if open {
        out.push_str("/** \\} */\n\n");
    }
    for group in GROUPS.iter().filter(|g| g.first.is_none()) {
        out.push_str(&comment(group).replace(" * \\{\n", ""));
        out.push_str("\n\n");
    }
    out.push_str(tail);
    out
}

/// Whether a chunk of the header is the declaration of function `name`.
fn declares(chunk: &str, name: &str) -> bool {
    chunk
        .lines()
        .filter(|line| !line.starts_with("/**") && !line.starts_with(" *"))
        .any(|line| line.contains(&format!(" {name}(")) || line.contains(&format!("*{name}(")))
}

/// A group's opening comment, its paragraph wrapped at 96 columns.
fn comment(group: &Group) -> String {
    let mut text = format!("/**\n * \\defgroup {} {}\n *", group.name, group.title);
    let mut line = String::new();
    for word in group.paragraph.split_whitespace() {
        if !line.is_empty() && 3 + line.len() + 1 + word.len() > 96 {
            text.push_str(&format!("\n * {line}"));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    text.push_str(&format!("\n * {line}\n * \\{{\n */"));
    text
}
