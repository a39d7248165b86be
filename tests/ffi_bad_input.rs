//! The C API under bad input: NULL pointers, invalid UTF-8, malformed JSON. Each gets a clear
//! status and message, never a crash. Called through the exported functions themselves.

mod common;

use mcpc::ffi::*;
use std::ffi::{c_char, CStr, CString};
use std::ptr::{null, null_mut};

const BAD_UTF8: &[u8] = b"\xff\xfe\0";

fn bad_utf8() -> *const c_char {
    BAD_UTF8.as_ptr().cast()
}

/// Takes a result: its status and message; frees it.
unsafe fn take(result: *mut mcp_result) -> (mcp_status, String) {
    assert!(!result.is_null(), "request functions never return NULL");
    let status = mcp_result_status(result);
    let message = CStr::from_ptr(mcp_result_message(result))
        .to_string_lossy()
        .into_owned();
    mcp_result_free(result);
    (status, message)
}

unsafe fn connected_client() -> *mut mcp_client {
    let server = CString::new(common::SERVER.as_str()).unwrap();
    let argv = [server.as_ptr(), null()];
    let client = mcp_client_new_stdio(argv.as_ptr(), null());
    assert_eq!(take(mcp_client_connect(client)).0, mcp_status::Ok);
    client
}

#[test]
fn null_client_gives_invalid_argument_everywhere() {
    unsafe {
        let c: *mut mcp_client = null_mut();
        let name = c"x".as_ptr();
        let results = [
            mcp_client_connect(c),
            mcp_client_ping(c, null()),
            mcp_client_discover(c, null()),
            mcp_client_list_tools(c, null(), null()),
            mcp_client_tools(c, null()),
            mcp_client_list_resources(c, null(), null()),
            mcp_client_resources(c, null()),
            mcp_client_list_resource_templates(c, null(), null()),
            mcp_client_resource_templates(c, null()),
            mcp_client_list_prompts(c, null(), null()),
            mcp_client_prompts(c, null()),
            mcp_client_call_tool(c, name, null(), null()),
            mcp_client_read_resource(c, name, null()),
            mcp_client_get_prompt(c, name, null(), null()),
            mcp_client_complete(c, c"{}".as_ptr(), c"{}".as_ptr(), null(), null()),
            mcp_client_request(c, name, null(), null()),
        ];
        for result in results {
            let (status, message) = take(result);
            assert_eq!(status, mcp_status::InvalidArgument);
            assert_eq!(message, "client must not be NULL");
        }
        mcp_client_close(c);
        mcp_client_free(c);
        assert!(mcp_client_server_info(c).is_null());
        assert!(mcp_client_protocol_version(c).is_null());
        assert!(mcp_client_server_capabilities(c).is_null());
        assert!(mcp_client_instructions(c).is_null());
    }
}

#[test]
fn null_results_tokens_and_options_are_harmless() {
    unsafe {
        assert_eq!(mcp_result_status(null()), mcp_status::InvalidArgument);
        assert!(mcp_result_json(null()).is_null());
        assert!(!mcp_result_message(null()).is_null());
        assert_eq!(mcp_result_error_code(null()), 0);
        assert!(mcp_result_error_data(null()).is_null());
        assert_eq!(mcp_result_request_id(null()), 0);
        assert!(mcp_result_cancel_reason(null()).is_null());
        mcp_result_free(null_mut());

        assert!(!mcp_cancellation_cancel(null_mut(), null()));
        assert!(!mcp_cancellation_is_cancelled(null()));
        assert!(mcp_cancellation_reason(null()).is_null());
        mcp_cancellation_free(null_mut());

        assert_eq!(
            mcp_client_options_set_timeout_ms(null_mut(), 5),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_set_client_info(null_mut(), null(), null()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_request_options_set_timeout_ms(null_mut(), 5),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_request_options_set_cancellation(null_mut(), null()),
            mcp_status::InvalidArgument
        );
        mcp_client_options_free(null_mut());
        mcp_request_options_free(null_mut());
    }
}

#[test]
fn bad_strings_and_json_in_requests() {
    unsafe {
        let client = connected_client();
        let cases: Vec<(*mut mcp_result, &str)> = vec![
            (
                mcp_client_call_tool(client, null(), null(), null()),
                "tool name must not be NULL",
            ),
            (
                mcp_client_call_tool(client, bad_utf8(), null(), null()),
                "tool name is not valid UTF-8",
            ),
            (
                mcp_client_call_tool(client, c"echo".as_ptr(), c"{not json".as_ptr(), null()),
                "tool arguments is not valid JSON",
            ),
            (
                mcp_client_call_tool(client, c"echo".as_ptr(), c"[1,2]".as_ptr(), null()),
                "tool arguments must be a JSON object",
            ),
            (
                mcp_client_call_tool(client, c"echo".as_ptr(), bad_utf8(), null()),
                "tool arguments is not valid UTF-8",
            ),
            (
                mcp_client_read_resource(client, null(), null()),
                "resource uri must not be NULL",
            ),
            (
                mcp_client_get_prompt(client, c"greet".as_ptr(), c"7".as_ptr(), null()),
                "prompt arguments must be a JSON object",
            ),
            (
                mcp_client_complete(client, null(), c"{}".as_ptr(), null(), null()),
                "completion ref must not be NULL",
            ),
            (
                mcp_client_list_tools(client, bad_utf8(), null()),
                "cursor is not valid UTF-8",
            ),
            (
                mcp_client_request(client, null(), null(), null()),
                "method must not be NULL",
            ),
            (
                mcp_client_request(client, c"ping".as_ptr(), c"\"s\"".as_ptr(), null()),
                "params must be a JSON object",
            ),
        ];
        for (result, expected) in cases {
            let (status, message) = take(result);
            assert_eq!(status, mcp_status::InvalidArgument, "{message}");
            assert!(
                message.starts_with(expected),
                "`{message}` should start with `{expected}`"
            );
        }
        // The client is unharmed.
        assert_eq!(take(mcp_client_ping(client, null())).0, mcp_status::Ok);
        mcp_client_free(client);
    }
}

#[test]
fn bad_options_are_reported_by_the_call_that_uses_them() {
    unsafe {
        let options = mcp_client_options_new();
        assert_eq!(
            mcp_client_options_set_capabilities(options, c"[]".as_ptr()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_set_stderr(options, 99),
            mcp_status::InvalidArgument
        );
        let server = CString::new(common::SERVER.as_str()).unwrap();
        let argv = [server.as_ptr(), null()];
        let client = mcp_client_new_stdio(argv.as_ptr(), options);
        mcp_client_options_free(options);
        let (status, message) = take(mcp_client_connect(client));
        assert_eq!(status, mcp_status::InvalidArgument);
        assert_eq!(message, "capabilities must be a JSON object");
        mcp_client_free(client);

        let client = connected_client();
        let request = mcp_request_options_new();
        assert_eq!(
            mcp_request_options_set_meta(request, c"{oops".as_ptr()),
            mcp_status::InvalidArgument
        );
        let (status, message) = take(mcp_client_ping(client, request));
        assert_eq!(status, mcp_status::InvalidArgument);
        assert!(message.starts_with("meta is not valid JSON"), "{message}");
        mcp_request_options_free(request);
        mcp_client_free(client);
    }
}

#[test]
fn bad_argv_is_reported_by_connect() {
    unsafe {
        let client = mcp_client_new_stdio(null(), null());
        assert!(!client.is_null());
        assert_eq!(
            take(mcp_client_connect(client)),
            (mcp_status::InvalidArgument, "argv must not be NULL".into())
        );
        assert_eq!(
            take(mcp_client_ping(client, null())).0,
            mcp_status::InvalidArgument
        );
        mcp_client_free(client);

        let argv = [bad_utf8(), null()];
        let client = mcp_client_new_stdio(argv.as_ptr(), null());
        assert_eq!(
            take(mcp_client_connect(client)),
            (
                mcp_status::InvalidArgument,
                "argv[0] is not valid UTF-8".into()
            )
        );
        mcp_client_free(client);

        let argv: [*const c_char; 1] = [null()];
        let client = mcp_client_new_stdio(argv.as_ptr(), null());
        assert_eq!(
            take(mcp_client_connect(client)).0,
            mcp_status::InvalidArgument
        );
        mcp_client_free(client);

        let client = mcp_client_new_custom(null(), null_mut(), null());
        assert_eq!(
            take(mcp_client_connect(client)).0,
            mcp_status::InvalidArgument
        );
        mcp_client_free(client);
    }
}

#[test]
fn use_after_close_is_closed_and_token_reason_survives() {
    unsafe {
        let client = connected_client();
        mcp_client_close(client);
        let (status, _) = take(mcp_client_ping(client, null()));
        assert_eq!(status, mcp_status::Closed);
        mcp_client_close(client);
        mcp_client_free(client);

        let token = mcp_cancellation_new();
        assert!(mcp_cancellation_reason(token).is_null());
        assert!(
            mcp_cancellation_cancel(token, bad_utf8()),
            "invalid UTF-8 in a reason is replaced, not refused"
        );
        assert!(!mcp_cancellation_cancel(token, c"second".as_ptr()));
        let reason = CStr::from_ptr(mcp_cancellation_reason(token))
            .to_string_lossy()
            .into_owned();
        assert_eq!(reason, "\u{FFFD}\u{FFFD}");
        mcp_cancellation_free(token);
    }
}

#[test]
fn status_names_and_version() {
    unsafe {
        assert_eq!(
            CStr::from_ptr(mcp_status_name(mcp_status::Cancelled as i32))
                .to_str()
                .unwrap(),
            "CANCELLED"
        );
        assert_eq!(
            CStr::from_ptr(mcp_status_name(1000)).to_str().unwrap(),
            "UNKNOWN"
        );
        assert_eq!(
            CStr::from_ptr(mcp_version()).to_str().unwrap(),
            env!("CARGO_PKG_VERSION")
        );
    }
}

/// Every option setter refuses a NULL options handle with INVALID_ARGUMENT.
#[test]
fn every_setter_refuses_null_options() {
    unsafe {
        let (c, r): (*mut mcp_client_options, *mut mcp_request_options) = (null_mut(), null_mut());
        let statuses = [
            mcp_client_options_set_capabilities(c, c"{}".as_ptr()),
            mcp_client_options_set_connect_timeout_ms(c, 1),
            mcp_client_options_set_cwd(c, c"/".as_ptr()),
            mcp_client_options_set_discover_timeout_ms(c, 1),
            mcp_client_options_set_env(c, c"A".as_ptr(), c"B".as_ptr()),
            mcp_client_options_set_http_connect_timeout_ms(c, 1),
            mcp_client_options_set_http_idle_timeout_ms(c, 1),
            mcp_client_options_set_http_listen(c, true),
            mcp_client_options_add_header(c, c"X".as_ptr(), c"y".as_ptr()),
            mcp_client_options_set_input_required_max_rounds(c, 1),
            mcp_client_options_set_list_changed_callback(c, None, null_mut()),
            mcp_client_options_set_log_callback(c, None, null_mut()),
            mcp_client_options_set_max_line_bytes(c, 1),
            mcp_client_options_set_max_pages(c, 1),
            mcp_client_options_set_message_callback(c, None, null_mut()),
            mcp_client_options_set_mode(c, 0),
            mcp_client_options_set_notification_callback(c, None, null_mut()),
            mcp_client_options_set_progress_callback(c, None, null_mut()),
            mcp_client_options_set_protocol_version(c, null()),
            mcp_client_options_set_request_handler(c, c"roots/list".as_ptr(), None, null_mut()),
            mcp_client_options_set_resource_updated_callback(c, None, null_mut()),
            mcp_client_options_set_stderr(c, 0),
            mcp_client_options_set_stderr_callback(c, None, null_mut()),
            mcp_request_options_set_input_responses(r, null()),
            mcp_request_options_set_max_total_timeout_ms(r, 1),
            mcp_request_options_set_meta(r, null()),
            mcp_request_options_set_progress_callback(r, None, null_mut()),
            mcp_request_options_set_progress_token(r, null()),
            mcp_request_options_set_request_state(r, null()),
            mcp_request_options_set_reset_timeout_on_progress(r, true),
        ];
        for (i, status) in statuses.into_iter().enumerate() {
            assert_eq!(status, mcp_status::InvalidArgument, "setter #{i}");
        }
    }
}

/// Bad values for the newer options and requests: each a clear status, never a crash.
#[test]
fn bad_values_for_eras_http_handlers_and_callbacks() {
    unsafe {
        let o = mcp_client_options_new();
        assert_eq!(
            mcp_client_options_set_mode(o, 7),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_set_protocol_version(o, c"1999-01-01".as_ptr()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_set_protocol_version(o, bad_utf8()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_set_discover_timeout_ms(o, 0),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_add_header(o, c"Bad Name".as_ptr(), c"v".as_ptr()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_add_header(o, c"X-Ok".as_ptr(), c"a\r\nInjected: 1".as_ptr()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_add_header(o, null(), c"v".as_ptr()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_set_request_handler(o, null(), None, null_mut()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_client_options_set_env(o, c"A=B".as_ptr(), c"v".as_ptr()),
            mcp_status::InvalidArgument
        );
        mcp_client_options_free(o);

        let r = mcp_request_options_new();
        assert_eq!(
            mcp_request_options_set_input_responses(r, c"[1]".as_ptr()),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            mcp_request_options_set_request_state(r, bad_utf8()),
            mcp_status::InvalidArgument
        );
        mcp_request_options_free(r);

        // A NULL or malformed URL is reported by connect.
        let client = mcp_client_new_http(null(), null());
        assert_eq!(
            take(mcp_client_connect(client)).0,
            mcp_status::InvalidArgument
        );
        mcp_client_free(client);
        let client = mcp_client_new_http(c"not a url".as_ptr(), null());
        assert_eq!(
            take(mcp_client_connect(client)).0,
            mcp_status::InvalidArgument
        );
        assert!(!mcp_client_is_modern(client));
        assert!(mcp_client_server_implementation(client).is_null());
        assert_eq!(
            mcp_client_connection_state(client),
            mcp_connection_state::NotConnected
        );
        assert_eq!(
            mcp_client_connection_state(null()),
            mcp_connection_state::NotConnected
        );
        mcp_client_free(client);

        let client = connected_client();
        assert_eq!(
            take(mcp_client_set_logging_level(client, null(), null())).0,
            mcp_status::InvalidArgument
        );
        assert_eq!(
            take(mcp_client_subscribe_resource(client, null(), null())).0,
            mcp_status::InvalidArgument
        );
        assert_eq!(
            take(mcp_client_unsubscribe_resource(client, bad_utf8(), null())).0,
            mcp_status::InvalidArgument
        );
        mcp_client_free(client);

        assert_eq!(
            take(mcp_elicitation_defaults(null(), null())).0,
            mcp_status::InvalidArgument
        );
        assert_eq!(
            take(mcp_elicitation_defaults(c"{oops".as_ptr(), null())).0,
            mcp_status::InvalidArgument
        );
        let filled =
            mcp_elicitation_defaults(c"{\"properties\":{\"a\":{\"default\":1}}}".as_ptr(), null());
        assert_eq!(
            CStr::from_ptr(mcp_result_json(filled)).to_str().unwrap(),
            r#"{"a":1}"#
        );
        mcp_result_free(filled);

        // Reply handles: NULL is refused quietly.
        assert!(!mcp_handler_reply_set_result(null_mut(), c"{}".as_ptr()));
        mcp_handler_reply_set_error(null_mut(), 1, null());
        assert!(!mcp_handler_reply_is_cancelled(null()));
        assert!(!mcp_transport_reply_set_response(
            null_mut(),
            c"{}".as_ptr()
        ));
        mcp_transport_reply_set_error(null_mut(), null());
    }
}
