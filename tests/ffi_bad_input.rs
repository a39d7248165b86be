//! The C API under bad input: NULL pointers, invalid UTF-8, malformed JSON. Each gets a clear
//! status and message, never a crash. Called through the exported functions themselves.
//!
//! Every call goes through `call!`, which notes which arguments were NULL pointers at run time
//! and, once the call has returned, logs them: the reliability report builds its table of
//! export x pointer parameter from those lines (a cell counts only for a call where that
//! parameter was the one NULL pointer), never from the names written in this file.

mod common;

use common::take_result as take;
use mcpc::ffi::*;
use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr::{null, null_mut};

const BAD_UTF8: &[u8] = b"\xff\xfe\0";

/// Whether an argument is a NULL pointer (only raw pointers can be).
trait NullArg {
    fn is_null_arg(&self) -> bool {
        false
    }
}
impl<T> NullArg for *const T {
    fn is_null_arg(&self) -> bool {
        self.is_null()
    }
}
impl<T> NullArg for *mut T {
    fn is_null_arg(&self) -> bool {
        self.is_null()
    }
}
impl<T> NullArg for Option<T> {} // a callback: NULL means "none", not bad input
impl NullArg for bool {}
impl NullArg for i32 {}
impl NullArg for u32 {}
impl NullArg for u64 {}
impl NullArg for i64 {}
impl NullArg for usize {}
impl NullArg for f64 {}

/// `call!(export(args...))`: calls the export and logs which arguments were NULL.
/// `call!(in "test", export(args...))`: the same, from a library thread (a callback of that
/// test), where the thread's name is not the test's.
macro_rules! call {
    ($f:ident($($arg:expr),* $(,)?)) => {
        call!(in "", $f($($arg),*))
    };
    (in $test:expr, $f:ident($($arg:expr),* $(,)?)) => {{
        let mut nulls: Vec<usize> = Vec::new();
        let mut index = 0usize;
        let result = $f($({
            let value = $arg;
            if NullArg::is_null_arg(&value) {
                nulls.push(index);
            }
            index += 1;
            value
        }),*);
        let _arguments = index; // read, so that the last increment is not a dead store
        log_nulls(stringify!($f), &nulls, $test);
        result
    }};
}

/// One line per call that returned, `export<TAB>NULL argument indices<TAB>test`, appended to
/// `$MCPC_REPORT_DIR/bad_input.txt` when the run sets that variable (scripts/test.sh does).
fn log_nulls(export: &str, nulls: &[usize], test: &str) {
    use std::io::Write;
    let Some(dir) = std::env::var_os("MCPC_REPORT_DIR") else {
        return;
    };
    let indices: Vec<String> = nulls.iter().map(usize::to_string).collect();
    let thread = std::thread::current();
    let line = format!(
        "{export}\t{}\t{}\n",
        indices.join(","),
        if test.is_empty() {
            thread.name().unwrap_or("?")
        } else {
            test
        }
    );
    let _ = std::fs::create_dir_all(&dir);
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(std::path::Path::new(&dir).join("bad_input.txt"))
    {
        let _ = file.write_all(line.as_bytes()); // one write: O_APPEND keeps the line whole
    }
}

/// A skill entry (SEP-2640) naming one of the test server's resources as its SKILL.md.
const SKILL_ENTRY: &std::ffi::CStr = c"{\"uri\":\"test://static/1\",\"frontmatter\":{\"name\":\"x\",\"description\":\"y\"},\"resources\":\"dynamic\"}";

fn bad_utf8() -> *const c_char {
    BAD_UTF8.as_ptr().cast()
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
            call!(mcp_client_connect(c)),
            call!(mcp_client_ping(c, null())),
            call!(mcp_client_discover(c, null())),
            call!(mcp_client_list_tools(c, null(), null())),
            call!(mcp_client_tools(c, null())),
            call!(mcp_client_list_resources(c, null(), null())),
            call!(mcp_client_resources(c, null())),
            call!(mcp_client_list_resource_templates(c, null(), null())),
            call!(mcp_client_resource_templates(c, null())),
            call!(mcp_client_list_prompts(c, null(), null())),
            call!(mcp_client_prompts(c, null())),
            call!(mcp_client_call_tool(c, name, null(), null())),
            call!(mcp_client_read_resource(c, name, null())),
            call!(mcp_client_get_prompt(c, name, null(), null())),
            call!(mcp_client_complete(
                c,
                c"{}".as_ptr(),
                c"{}".as_ptr(),
                null(),
                null()
            )),
            call!(mcp_client_request(c, name, null(), null())),
            call!(mcp_client_skills(c, null())),
            call!(mcp_client_read_skill(c, c"{}".as_ptr(), null(), null())),
        ];
        for result in results {
            let (status, message) = take(result);
            assert_eq!(status, mcp_status::InvalidArgument);
            assert_eq!(message, "client must not be NULL");
        }
        call!(mcp_client_close(c));
        call!(mcp_client_free(c));
        assert!(call!(mcp_client_server_info(c)).is_null());
        assert!(call!(mcp_client_protocol_version(c)).is_null());
        assert!(call!(mcp_client_server_capabilities(c)).is_null());
        assert!(call!(mcp_client_instructions(c)).is_null());
    }
}

#[test]
fn null_results_tokens_and_options_are_harmless() {
    unsafe {
        assert_eq!(
            call!(mcp_result_status(null())),
            mcp_status::InvalidArgument
        );
        assert!(call!(mcp_result_json(null())).is_null());
        assert!(!call!(mcp_result_message(null())).is_null());
        assert_eq!(call!(mcp_result_error_code(null())), 0);
        assert!(call!(mcp_result_error_data(null())).is_null());
        assert_eq!(call!(mcp_result_request_id(null())), 0);
        assert!(call!(mcp_result_cancel_reason(null())).is_null());
        call!(mcp_result_free(null_mut()));

        assert!(!call!(mcp_cancellation_cancel(null_mut(), null())));
        assert!(!call!(mcp_cancellation_is_cancelled(null())));
        assert!(call!(mcp_cancellation_reason(null())).is_null());
        call!(mcp_cancellation_free(null_mut()));

        assert_eq!(
            call!(mcp_client_options_set_timeout_ms(null_mut(), 5)),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_set_client_info(
                null_mut(),
                null(),
                null()
            )),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_request_options_set_timeout_ms(null_mut(), 5)),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_request_options_set_cancellation(null_mut(), null())),
            mcp_status::InvalidArgument
        );
        call!(mcp_client_options_free(null_mut()));
        call!(mcp_request_options_free(null_mut()));
    }
}

#[test]
fn bad_strings_and_json_in_requests() {
    unsafe {
        let client = connected_client();
        let cases: Vec<(*mut mcp_result, &str)> = vec![
            (
                call!(mcp_client_call_tool(client, null(), null(), null())),
                "tool name must not be NULL",
            ),
            (
                call!(mcp_client_call_tool(client, bad_utf8(), null(), null())),
                "tool name is not valid UTF-8",
            ),
            (
                call!(mcp_client_call_tool(
                    client,
                    c"echo".as_ptr(),
                    c"{not json".as_ptr(),
                    null()
                )),
                "tool arguments is not valid JSON",
            ),
            (
                call!(mcp_client_call_tool(
                    client,
                    c"echo".as_ptr(),
                    c"[1,2]".as_ptr(),
                    null()
                )),
                "tool arguments must be a JSON object",
            ),
            (
                call!(mcp_client_call_tool(
                    client,
                    c"echo".as_ptr(),
                    bad_utf8(),
                    null()
                )),
                "tool arguments is not valid UTF-8",
            ),
            (
                call!(mcp_client_read_resource(client, null(), null())),
                "resource uri must not be NULL",
            ),
            (
                call!(mcp_client_get_prompt(
                    client,
                    c"greet".as_ptr(),
                    c"7".as_ptr(),
                    null()
                )),
                "prompt arguments must be a JSON object",
            ),
            (
                call!(mcp_client_complete(
                    client,
                    null(),
                    c"{}".as_ptr(),
                    null(),
                    null()
                )),
                "completion ref must not be NULL",
            ),
            (
                call!(mcp_client_list_tools(client, bad_utf8(), null())),
                "cursor is not valid UTF-8",
            ),
            (
                call!(mcp_client_request(client, null(), null(), null())),
                "method must not be NULL",
            ),
            (
                call!(mcp_client_request(
                    client,
                    c"ping".as_ptr(),
                    c"\"s\"".as_ptr(),
                    null()
                )),
                "params must be a JSON object",
            ),
            (
                call!(mcp_client_read_skill(
                    client,
                    c"{not json".as_ptr(),
                    null(),
                    null()
                )),
                "skill entry is not valid JSON",
            ),
            (
                call!(mcp_client_read_skill(
                    client,
                    c"{}".as_ptr(),
                    null(),
                    null()
                )),
                "the skill entry has no string `uri`",
            ),
            (
                call!(mcp_client_read_skill(
                    client,
                    SKILL_ENTRY.as_ptr(),
                    bad_utf8(),
                    null()
                )),
                "skill file uri is not valid UTF-8",
            ),
            (
                call!(mcp_client_read_skill(
                    client,
                    c"{\"uri\":\"test://static/1\",\"frontmatter\":{},\"resources\":[]}".as_ptr(),
                    c"test://static/2".as_ptr(),
                    null()
                )),
                "test://static/2 is not listed in the resources of the skill",
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
        assert_eq!(
            take(call!(mcp_client_ping(client, null()))).0,
            mcp_status::Ok
        );
        call!(mcp_client_free(client));
    }
}

#[test]
fn bad_options_are_reported_by_the_call_that_uses_them() {
    unsafe {
        let options = mcp_client_options_new();
        assert_eq!(
            call!(mcp_client_options_set_capabilities(options, c"[]".as_ptr())),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_set_stderr(options, 99)),
            mcp_status::InvalidArgument
        );
        let server = CString::new(common::SERVER.as_str()).unwrap();
        let argv = [server.as_ptr(), null()];
        let client = call!(mcp_client_new_stdio(argv.as_ptr(), options));
        call!(mcp_client_options_free(options));
        let (status, message) = take(call!(mcp_client_connect(client)));
        assert_eq!(status, mcp_status::InvalidArgument);
        assert_eq!(message, "capabilities must be a JSON object");
        call!(mcp_client_free(client));

        let client = connected_client();
        let request = mcp_request_options_new();
        assert_eq!(
            call!(mcp_request_options_set_meta(request, c"{oops".as_ptr())),
            mcp_status::InvalidArgument
        );
        let (status, message) = take(call!(mcp_client_ping(client, request)));
        assert_eq!(status, mcp_status::InvalidArgument);
        assert!(message.starts_with("meta is not valid JSON"), "{message}");
        call!(mcp_request_options_free(request));
        call!(mcp_client_free(client));
    }
}

#[test]
fn bad_argv_is_reported_by_connect() {
    unsafe {
        let client = call!(mcp_client_new_stdio(null(), null()));
        assert!(!client.is_null());
        assert_eq!(
            take(call!(mcp_client_connect(client))),
            (mcp_status::InvalidArgument, "argv must not be NULL".into())
        );
        assert_eq!(
            take(call!(mcp_client_ping(client, null()))).0,
            mcp_status::InvalidArgument
        );
        call!(mcp_client_free(client));

        let argv = [bad_utf8(), null()];
        let client = call!(mcp_client_new_stdio(argv.as_ptr(), null()));
        assert_eq!(
            take(call!(mcp_client_connect(client))),
            (
                mcp_status::InvalidArgument,
                "argv[0] is not valid UTF-8".into()
            )
        );
        call!(mcp_client_free(client));

        let argv: [*const c_char; 1] = [null()];
        let client = call!(mcp_client_new_stdio(argv.as_ptr(), null()));
        assert_eq!(
            take(call!(mcp_client_connect(client))).0,
            mcp_status::InvalidArgument
        );
        call!(mcp_client_free(client));

        let client = call!(mcp_client_new_custom(null(), null_mut(), null()));
        assert_eq!(
            take(call!(mcp_client_connect(client))).0,
            mcp_status::InvalidArgument
        );
        call!(mcp_client_free(client));
    }
}

#[test]
fn use_after_close_is_closed_and_token_reason_survives() {
    unsafe {
        let client = connected_client();
        call!(mcp_client_close(client));
        let (status, _) = take(call!(mcp_client_ping(client, null())));
        assert_eq!(status, mcp_status::Closed);
        call!(mcp_client_close(client));
        call!(mcp_client_free(client));

        let token = mcp_cancellation_new();
        assert!(call!(mcp_cancellation_reason(token)).is_null());
        assert!(
            call!(mcp_cancellation_cancel(token, bad_utf8())),
            "invalid UTF-8 in a reason is replaced, not refused"
        );
        assert!(!call!(mcp_cancellation_cancel(token, c"second".as_ptr())));
        let reason = CStr::from_ptr(call!(mcp_cancellation_reason(token)))
            .to_string_lossy()
            .into_owned();
        assert_eq!(reason, "\u{FFFD}\u{FFFD}");
        call!(mcp_cancellation_free(token));
    }
}

#[test]
fn status_names_and_version() {
    unsafe {
        assert_eq!(
            CStr::from_ptr(call!(mcp_status_name(mcp_status::Cancelled as i32)))
                .to_str()
                .unwrap(),
            "CANCELLED"
        );
        assert_eq!(
            CStr::from_ptr(call!(mcp_status_name(1000)))
                .to_str()
                .unwrap(),
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
            call!(mcp_client_options_set_capabilities(c, c"{}".as_ptr())),
            call!(mcp_client_options_set_connect_timeout_ms(c, 1)),
            call!(mcp_client_options_set_cwd(c, c"/".as_ptr())),
            call!(mcp_client_options_set_discover_timeout_ms(c, 1)),
            call!(mcp_client_options_set_env(c, c"A".as_ptr(), c"B".as_ptr())),
            call!(mcp_client_options_set_http_connect_timeout_ms(c, 1)),
            call!(mcp_client_options_set_http_idle_timeout_ms(c, 1)),
            call!(mcp_client_options_set_http_listen(c, true)),
            call!(mcp_client_options_add_header(
                c,
                c"X".as_ptr(),
                c"y".as_ptr()
            )),
            call!(mcp_client_options_set_input_required_max_rounds(c, 1)),
            call!(mcp_client_options_set_list_changed_callback(
                c,
                None,
                null_mut()
            )),
            call!(mcp_client_options_set_log_callback(c, None, null_mut())),
            call!(mcp_client_options_set_max_line_bytes(c, 1)),
            call!(mcp_client_options_set_max_pages(c, 1)),
            call!(mcp_client_options_set_message_callback(c, None, null_mut())),
            call!(mcp_client_options_set_mode(c, 0)),
            call!(mcp_client_options_set_http_transport(c, 0)),
            call!(mcp_client_options_set_lazy_connect(c, true)),
            call!(mcp_client_options_set_idle_shutdown_ms(c, 1)),
            call!(mcp_client_options_set_reconnect_policy(
                c, 100, 1000, 0.2, 3
            )),
            call!(mcp_client_options_set_state_callback(
                c,
                None,
                std::ptr::NonNull::<u8>::dangling().as_ptr().cast()
            )),
            call!(mcp_client_options_set_oauth_client_key(
                c,
                c"pem".as_ptr(),
                c"kid".as_ptr()
            )),
            call!(mcp_client_options_set_oauth_dpop(c, true, c"pem".as_ptr())),
            call!(mcp_client_options_set_oauth_workload_token_file(
                c,
                c"/token".as_ptr()
            )),
            call!(mcp_client_options_set_oauth_client_signer(
                c,
                c"ES256".as_ptr(),
                c"kid".as_ptr(),
                None,
                std::ptr::NonNull::<u8>::dangling().as_ptr().cast()
            )),
            call!(mcp_client_options_set_oauth_workload_token_callback(
                c,
                None,
                std::ptr::NonNull::<u8>::dangling().as_ptr().cast()
            )),
            call!(mcp_client_options_set_oauth_identity_provider(
                c,
                c"https://idp.example/token".as_ptr(),
                c"id".as_ptr(),
                c"secret".as_ptr(),
                None,
                std::ptr::NonNull::<u8>::dangling().as_ptr().cast()
            )),
            call!(mcp_client_options_set_notification_callback(
                c,
                None,
                null_mut()
            )),
            call!(mcp_client_options_set_progress_callback(
                c,
                None,
                null_mut()
            )),
            call!(mcp_client_options_set_protocol_version(c, null())),
            call!(mcp_client_options_set_request_handler(
                c,
                c"roots/list".as_ptr(),
                None,
                null_mut()
            )),
            call!(mcp_client_options_set_resource_updated_callback(
                c,
                None,
                null_mut()
            )),
            call!(mcp_client_options_set_sigpipe_ignored(c, true)),
            call!(mcp_client_options_set_close_in_background(c, true)),
            call!(mcp_client_options_set_stderr(c, 0)),
            call!(mcp_client_options_set_stderr_callback(c, None, null_mut())),
            call!(mcp_request_options_set_input_responses(r, null())),
            call!(mcp_request_options_set_max_total_timeout_ms(r, 1)),
            call!(mcp_request_options_set_meta(r, null())),
            call!(mcp_request_options_set_progress_callback(
                r,
                None,
                null_mut()
            )),
            call!(mcp_request_options_set_progress_token(r, null())),
            call!(mcp_request_options_set_request_state(r, null())),
            call!(mcp_request_options_set_reset_timeout_on_progress(r, true)),
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
            call!(mcp_client_options_set_mode(o, 7)),
            mcp_status::InvalidArgument
        );
        for transport in [-1, 3] {
            assert_eq!(
                call!(mcp_client_options_set_http_transport(o, transport)),
                mcp_status::InvalidArgument
            );
        }
        assert_eq!(
            call!(mcp_client_options_set_protocol_version(
                o,
                c"1999-01-01".as_ptr()
            )),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_set_protocol_version(o, bad_utf8())),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_set_discover_timeout_ms(o, 0)),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_add_header(
                o,
                c"Bad Name".as_ptr(),
                c"v".as_ptr()
            )),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_add_header(
                o,
                c"X-Ok".as_ptr(),
                c"a\r\nInjected: 1".as_ptr()
            )),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_add_header(o, null(), c"v".as_ptr())),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_set_request_handler(
                o,
                null(),
                None,
                null_mut()
            )),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_options_set_env(
                o,
                c"A=B".as_ptr(),
                c"v".as_ptr()
            )),
            mcp_status::InvalidArgument
        );
        call!(mcp_client_options_free(o));

        let r = mcp_request_options_new();
        assert_eq!(
            call!(mcp_request_options_set_input_responses(r, c"[1]".as_ptr())),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_request_options_set_request_state(r, bad_utf8())),
            mcp_status::InvalidArgument
        );
        call!(mcp_request_options_free(r));

        // A NULL or malformed URL is reported by connect.
        let client = call!(mcp_client_new_http(null(), null()));
        assert_eq!(
            take(call!(mcp_client_connect(client))).0,
            mcp_status::InvalidArgument
        );
        call!(mcp_client_free(client));
        let client = call!(mcp_client_new_http(c"not a url".as_ptr(), null()));
        assert_eq!(
            take(call!(mcp_client_connect(client))).0,
            mcp_status::InvalidArgument
        );
        assert!(!call!(mcp_client_is_modern(client)));
        assert!(call!(mcp_client_server_implementation(client)).is_null());
        assert_eq!(
            call!(mcp_client_connection_state(client)),
            mcp_connection_state::NotConnected
        );
        assert_eq!(
            call!(mcp_client_connection_state(null())),
            mcp_connection_state::NotConnected
        );
        call!(mcp_client_free(client));

        let client = connected_client();
        assert_eq!(
            take(call!(mcp_client_set_logging_level(client, null(), null()))).0,
            mcp_status::InvalidArgument
        );
        assert_eq!(
            take(call!(mcp_client_subscribe_resource(client, null(), null()))).0,
            mcp_status::InvalidArgument
        );
        assert_eq!(
            take(call!(mcp_client_unsubscribe_resource(
                client,
                bad_utf8(),
                null()
            )))
            .0,
            mcp_status::InvalidArgument
        );
        call!(mcp_client_free(client));

        assert_eq!(
            take(call!(mcp_elicitation_defaults(null(), null()))).0,
            mcp_status::InvalidArgument
        );
        assert_eq!(
            take(call!(mcp_elicitation_defaults(c"{oops".as_ptr(), null()))).0,
            mcp_status::InvalidArgument
        );
        let filled = call!(mcp_elicitation_defaults(
            c"{\"properties\":{\"a\":{\"default\":1}}}".as_ptr(),
            null()
        ));
        assert_eq!(
            CStr::from_ptr(call!(mcp_result_json(filled)))
                .to_str()
                .unwrap(),
            r#"{"a":1}"#
        );
        call!(mcp_result_free(filled));

        // Reply handles: NULL is refused quietly.
        assert!(!call!(mcp_handler_reply_set_result(
            null_mut(),
            c"{}".as_ptr()
        )));
        call!(mcp_handler_reply_set_error(null_mut(), 1, null()));
        assert!(!call!(mcp_handler_reply_is_cancelled(null())));
        assert!(!call!(mcp_transport_reply_set_response(
            null_mut(),
            c"{}".as_ptr()
        )));
        call!(mcp_transport_reply_set_error(null_mut(), null()));
    }
}

/// A non-NULL userdata, so that a call's other pointer is the only NULL one.
static USERDATA: u8 = 0;

fn userdata() -> *mut c_void {
    (&USERDATA as *const u8).cast_mut().cast()
}

/// Asserts a request's status (and, for INVALID_ARGUMENT, the start of its message).
unsafe fn expect(result: *mut mcp_result, status: mcp_status, message: &str) {
    let (got, text) = take(result);
    assert_eq!(got, status, "{text}");
    assert!(
        text.starts_with(message),
        "`{text}` should start with `{message}`"
    );
}

/// NULL for an optional pointer means "the default": anything but INVALID_ARGUMENT.
unsafe fn accepted(result: *mut mcp_result) {
    let (got, text) = take(result);
    assert_ne!(got, mcp_status::InvalidArgument, "{text}");
}

/// Each request function with NULL for one pointer and valid values for the others.
#[test]
fn every_request_pointer_passed_null_alone() {
    unsafe {
        let client = connected_client();
        let o = mcp_request_options_new();
        let (n, none) = (null_mut::<mcp_client>(), null::<c_char>());
        let null_client = "client must not be NULL";
        let uri = c"test://static/1".as_ptr();
        let obj = c"{}".as_ptr();
        let prompt_ref = c"{\"type\":\"ref/prompt\",\"name\":\"greet\"}".as_ptr();
        let argument = c"{\"name\":\"name\",\"value\":\"a\"}".as_ptr();
        let cursor = c"0".as_ptr();
        let bad = mcp_status::InvalidArgument;

        expect(call!(mcp_client_ping(n, o)), bad, null_client);
        expect(call!(mcp_client_discover(n, o)), bad, null_client);
        expect(call!(mcp_client_tools(n, o)), bad, null_client);
        expect(call!(mcp_client_resources(n, o)), bad, null_client);
        expect(call!(mcp_client_resource_templates(n, o)), bad, null_client);
        expect(call!(mcp_client_prompts(n, o)), bad, null_client);
        expect(call!(mcp_client_list_tools(n, cursor, o)), bad, null_client);
        expect(
            call!(mcp_client_list_resources(n, cursor, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_list_resource_templates(n, cursor, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_list_prompts(n, cursor, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_call_tool(n, c"echo".as_ptr(), obj, o)),
            bad,
            null_client,
        );
        expect(call!(mcp_client_read_resource(n, uri, o)), bad, null_client);
        expect(
            call!(mcp_client_get_prompt(n, c"greet".as_ptr(), obj, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_complete(n, prompt_ref, argument, obj, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_request(n, c"ping".as_ptr(), obj, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_set_logging_level(n, c"info".as_ptr(), o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_subscribe_resource(n, uri, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_unsubscribe_resource(n, uri, o)),
            bad,
            null_client,
        );
        expect(call!(mcp_client_skills(n, o)), bad, null_client);
        expect(
            call!(mcp_client_read_skill(n, SKILL_ENTRY.as_ptr(), none, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_read_skill(client, none, none, o)),
            bad,
            "skill entry must not be NULL",
        );
        let skill_md = c"test://static/1".as_ptr();
        expect(
            call!(mcp_client_read_skill(n, SKILL_ENTRY.as_ptr(), skill_md, o)),
            bad,
            null_client,
        );
        expect(
            call!(mcp_client_read_skill(client, none, skill_md, o)),
            bad,
            "skill entry must not be NULL",
        );
        // NULL for the file: the entry's SKILL.md.
        accepted(call!(mcp_client_read_skill(
            client,
            SKILL_ENTRY.as_ptr(),
            none,
            o
        )));
        assert!(!call!(mcp_client_is_modern(n)));
        assert!(call!(mcp_client_server_implementation(n)).is_null());

        // The other required strings.
        expect(
            call!(mcp_client_call_tool(client, none, obj, o)),
            bad,
            "tool name must not be NULL",
        );
        expect(
            call!(mcp_client_read_resource(client, none, o)),
            bad,
            "resource uri must not be NULL",
        );
        expect(
            call!(mcp_client_get_prompt(client, none, obj, o)),
            bad,
            "prompt name must not be NULL",
        );
        expect(
            call!(mcp_client_complete(client, none, argument, obj, o)),
            bad,
            "completion ref must not be NULL",
        );
        expect(
            call!(mcp_client_complete(client, prompt_ref, none, obj, o)),
            bad,
            "completion argument must not be NULL",
        );
        expect(
            call!(mcp_client_request(client, none, obj, o)),
            bad,
            "method must not be NULL",
        );
        expect(
            call!(mcp_client_set_logging_level(client, none, o)),
            bad,
            "level must not be NULL",
        );
        expect(
            call!(mcp_client_subscribe_resource(client, none, o)),
            bad,
            "resource uri must not be NULL",
        );
        expect(
            call!(mcp_client_unsubscribe_resource(client, none, o)),
            bad,
            "resource uri must not be NULL",
        );

        // Optional ones: NULL arguments, cursor, context or options mean the default.
        accepted(call!(mcp_client_call_tool(
            client,
            c"echo".as_ptr(),
            none,
            o
        )));
        accepted(call!(mcp_client_get_prompt(
            client,
            c"greet".as_ptr(),
            none,
            o
        )));
        accepted(call!(mcp_client_complete(
            client, prompt_ref, argument, none, o
        )));
        accepted(call!(mcp_client_request(client, c"ping".as_ptr(), none, o)));
        accepted(call!(mcp_client_list_tools(client, none, o)));
        accepted(call!(mcp_client_list_tools(client, cursor, null())));
        accepted(call!(mcp_client_list_resources(client, none, o)));
        accepted(call!(mcp_client_list_resources(client, cursor, null())));
        accepted(call!(mcp_client_list_resource_templates(client, none, o)));
        accepted(call!(mcp_client_list_resource_templates(
            client,
            cursor,
            null()
        )));
        accepted(call!(mcp_client_list_prompts(client, none, o)));
        accepted(call!(mcp_client_list_prompts(client, cursor, null())));
        accepted(call!(mcp_client_tools(client, null())));
        accepted(call!(mcp_client_resources(client, null())));
        accepted(call!(mcp_client_resource_templates(client, null())));
        accepted(call!(mcp_client_prompts(client, null())));
        accepted(call!(mcp_client_discover(client, null())));
        accepted(call!(mcp_client_read_resource(client, uri, null())));
        accepted(call!(mcp_client_complete(
            client,
            prompt_ref,
            argument,
            obj,
            null()
        )));
        accepted(call!(mcp_client_set_logging_level(
            client,
            c"info".as_ptr(),
            null()
        )));
        accepted(call!(mcp_client_subscribe_resource(client, uri, null())));
        // The test server declares no skills: NOT_SUPPORTED, nothing sent.
        accepted(call!(mcp_client_skills(client, null())));
        accepted(call!(mcp_client_read_skill(
            client,
            SKILL_ENTRY.as_ptr(),
            none,
            null()
        )));
        // The client is unharmed.
        assert_eq!(take(mcp_client_ping(client, null())).0, mcp_status::Ok);
        mcp_request_options_free(o);
        mcp_client_free(client);
    }
}

/// Each option setter, constructor and token function with NULL for one pointer and valid
/// values for the others.
#[test]
fn every_option_and_constructor_pointer_passed_null_alone() {
    unsafe {
        let (n, co, ro) = (
            null_mut::<mcp_client_options>(),
            mcp_client_options_new(),
            mcp_request_options_new(),
        );
        let (none, ud, bad, ok) = (
            null::<c_char>(),
            userdata(),
            mcp_status::InvalidArgument,
            mcp_status::Ok,
        );
        let s = c"x".as_ptr();
        // A NULL options handle, every other pointer valid.
        assert_eq!(call!(mcp_client_options_set_client_info(n, s, s)), bad);
        assert_eq!(
            call!(mcp_client_options_set_progress_callback(n, None, ud)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_message_callback(n, None, ud)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_list_changed_callback(n, None, ud)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_resource_updated_callback(
                n, None, ud
            )),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_notification_callback(n, None, ud)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_stderr_callback(n, None, ud)),
            bad
        );
        assert_eq!(call!(mcp_client_options_set_log_callback(n, None, ud)), bad);
        assert_eq!(
            call!(mcp_client_options_set_protocol_version(
                n,
                c"2025-06-18".as_ptr()
            )),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_request_handler(
                n,
                c"roots/list".as_ptr(),
                None,
                ud
            )),
            bad
        );
        let r = null_mut::<mcp_request_options>();
        let token = mcp_cancellation_new();
        assert_eq!(
            call!(mcp_request_options_set_progress_callback(r, None, ud)),
            bad
        );
        assert_eq!(call!(mcp_request_options_set_cancellation(r, token)), bad);
        assert_eq!(
            call!(mcp_request_options_set_input_responses(r, c"{}".as_ptr())),
            bad
        );
        assert_eq!(call!(mcp_request_options_set_meta(r, c"{}".as_ptr())), bad);
        assert_eq!(call!(mcp_request_options_set_progress_token(r, s)), bad);
        assert_eq!(call!(mcp_request_options_set_request_state(r, s)), bad);

        // Required strings: refused.
        assert_eq!(call!(mcp_client_options_set_client_info(co, none, s)), bad);
        assert_eq!(call!(mcp_client_options_set_client_info(co, s, none)), bad);
        assert_eq!(call!(mcp_client_options_set_capabilities(co, none)), bad);
        assert_eq!(call!(mcp_client_options_set_env(co, none, s)), bad);
        assert_eq!(
            call!(mcp_client_options_set_env(co, c"A".as_ptr(), none)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_add_header(co, c"X-A".as_ptr(), none)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_request_handler(co, none, None, ud)),
            bad
        );
        // NULL that means "unset" or "none": accepted.
        assert_eq!(call!(mcp_client_options_set_cwd(co, none)), ok);
        assert_eq!(call!(mcp_client_options_set_protocol_version(co, none)), ok);
        assert_eq!(
            call!(mcp_client_options_set_progress_callback(
                co,
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_message_callback(
                co,
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_list_changed_callback(
                co,
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_resource_updated_callback(
                co,
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_notification_callback(
                co,
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_stderr_callback(co, None, null_mut())),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_log_callback(co, None, null_mut())),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_request_handler(
                co,
                c"roots/list".as_ptr(),
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(
            call!(mcp_request_options_set_progress_callback(
                ro,
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(call!(mcp_request_options_set_cancellation(ro, null())), ok);
        assert_eq!(call!(mcp_request_options_set_input_responses(ro, none)), ok);
        assert_eq!(call!(mcp_request_options_set_meta(ro, none)), ok);
        assert_eq!(call!(mcp_request_options_set_progress_token(ro, none)), ok);
        assert_eq!(call!(mcp_request_options_set_request_state(ro, none)), ok);

        // Tokens.
        assert!(!call!(mcp_cancellation_cancel(null_mut(), s)));
        assert!(
            call!(mcp_cancellation_cancel(token, none)),
            "a NULL reason is no reason"
        );
        assert!(mcp_cancellation_reason(token).is_null());
        mcp_cancellation_free(token);

        // Constructors: the NULL is reported by connect; NULL options or userdata are fine.
        // (Fresh options: a refused setter's error is reported again by connect.)
        mcp_client_options_free(co);
        let co = mcp_client_options_new();
        let client = call!(mcp_client_new_stdio(null(), co));
        expect(mcp_client_connect(client), bad, "argv must not be NULL");
        mcp_client_free(client);
        let client = call!(mcp_client_new_http(none, co));
        expect(mcp_client_connect(client), bad, "");
        mcp_client_free(client);
        let client = call!(mcp_client_new_custom(null(), ud, co));
        expect(mcp_client_connect(client), bad, "");
        mcp_client_free(client);
        let vtable = failing_transport();
        for client in [
            call!(mcp_client_new_custom(&raw const vtable, null_mut(), co)),
            call!(mcp_client_new_custom(&raw const vtable, ud, null())),
        ] {
            // The transport answers every request with a NULL response, then a NULL error.
            let (status, message) = take(mcp_client_connect(client));
            assert_eq!(status, mcp_status::TransportError, "{message}");
            mcp_client_free(client);
        }
        assert_eq!(
            take(call!(mcp_elicitation_defaults(none, c"{}".as_ptr()))).0,
            bad
        );
        mcp_client_options_free(co);
        mcp_request_options_free(ro);
    }
}

unsafe extern "C" fn null_response(
    _userdata: *mut c_void,
    _request: *const c_char,
    _on_sent: mcp_on_sent,
    _sent_ctx: *mut c_void,
    reply: *mut mcp_transport_reply,
) -> bool {
    let test = "every_option_and_constructor_pointer_passed_null_alone";
    assert!(!call!(in test, mcp_transport_reply_set_response(reply, null())));
    call!(in test, mcp_transport_reply_set_error(reply, null()));
    call!(in test, mcp_transport_reply_set_error(null_mut(), c"m".as_ptr()));
    false
}

unsafe extern "C" fn no_notification(_userdata: *mut c_void, _json: *const c_char) -> bool {
    true
}

unsafe extern "C" fn no_close(_userdata: *mut c_void) {}

fn failing_transport() -> mcp_transport_vtable {
    mcp_transport_vtable {
        send_request: Some(null_response),
        send_notification: Some(no_notification),
        close: Some(no_close),
    }
}

unsafe extern "C" fn null_reply_handler(
    _userdata: *mut c_void,
    _method: *const c_char,
    _params: *const c_char,
    reply: *mut mcp_handler_reply,
) -> bool {
    let test = "a_handler_reply_with_null_result_or_message";
    assert!(!call!(in test, mcp_handler_reply_set_result(reply, null())));
    call!(in test, mcp_handler_reply_set_error(null_mut(), -32001, c"m".as_ptr()));
    call!(in test, mcp_handler_reply_set_error(reply, -32001, null()));
    false
}

/// A request handler that answers with a NULL result, then a NULL error message: the server
/// gets the error, with a message of the library's.
#[test]
fn a_handler_reply_with_null_result_or_message() {
    unsafe {
        let options = mcp_client_options_new();
        assert_eq!(
            mcp_client_options_set_request_handler(
                options,
                c"roots/list".as_ptr(),
                Some(null_reply_handler),
                null_mut()
            ),
            mcp_status::Ok
        );
        let server = CString::new(common::SERVER.as_str()).unwrap();
        let argv = [server.as_ptr(), null()];
        let client = mcp_client_new_stdio(argv.as_ptr(), options);
        mcp_client_options_free(options);
        assert_eq!(take(mcp_client_connect(client)).0, mcp_status::Ok);
        let result = mcp_client_call_tool(
            client,
            c"ask_client".as_ptr(),
            c"{\"method\":\"roots/list\"}".as_ptr(),
            null(),
        );
        let json = CStr::from_ptr(mcp_result_json(result))
            .to_string_lossy()
            .into_owned();
        let (status, message) = take(result);
        assert_eq!(status, mcp_status::Ok, "{message}");
        assert!(json.contains("-32001"), "the server got the error: {json}");
        mcp_client_free(client);
    }
}

#[test]
fn network_setters_pass_each_pointer_null_alone() {
    unsafe {
        let (n, o) = (null_mut::<mcp_client_options>(), mcp_client_options_new());
        let (none, bad, ok) = (
            null::<c_char>(),
            mcp_status::InvalidArgument,
            mcp_status::Ok,
        );
        let s = c"x".as_ptr();
        // A NULL options handle, every other pointer valid.
        let proxy = c"http://127.0.0.1:9".as_ptr();
        assert_eq!(call!(mcp_client_options_set_proxy(n, proxy)), bad);
        assert_eq!(call!(mcp_client_options_set_noproxy(n, s)), bad);
        assert_eq!(call!(mcp_client_options_set_proxy_from_env(n, true)), bad);
        assert_eq!(call!(mcp_client_options_add_ca_file(n, s)), bad);
        assert_eq!(call!(mcp_client_options_add_ca_dir(n, s)), bad);
        assert_eq!(call!(mcp_client_options_add_ca_pem(n, s)), bad);
        assert_eq!(call!(mcp_client_options_set_ca_replace(n, true)), bad);
        assert_eq!(call!(mcp_client_options_set_use_system_roots(n, true)), bad);
        assert_eq!(call!(mcp_client_options_set_client_cert(n, s, s)), bad);
        // Live options, one string NULL: "none" where the setter documents it, else refused.
        assert_eq!(call!(mcp_client_options_set_proxy(o, none)), ok);
        assert_eq!(call!(mcp_client_options_set_noproxy(o, none)), ok);
        assert_eq!(call!(mcp_client_options_add_ca_file(o, none)), bad);
        assert_eq!(call!(mcp_client_options_add_ca_dir(o, none)), bad);
        assert_eq!(call!(mcp_client_options_add_ca_pem(o, none)), bad);
        assert_eq!(call!(mcp_client_options_set_client_cert(o, none, s)), bad);
        assert_eq!(call!(mcp_client_options_set_client_cert(o, s, none)), bad);
        call!(mcp_client_options_free(o));
    }
}

/// The tasks extension's exports and the handler-feature setters: NULL or bad handles and
/// strings give INVALID_ARGUMENT with a message, never a crash.
#[test]
fn task_exports_and_feature_setters_refuse_bad_input() {
    unsafe {
        let (bad, ok) = (mcp_status::InvalidArgument, mcp_status::Ok);
        let (co, ro) = (
            null_mut::<mcp_client_options>(),
            null_mut::<mcp_request_options>(),
        );
        assert_eq!(call!(mcp_client_options_set_tasks(co, true)), bad);
        assert_eq!(call!(mcp_client_options_set_elicitation_url(co, true)), bad);
        assert_eq!(call!(mcp_client_options_set_sampling_tools(co, true)), bad);
        assert_eq!(call!(mcp_request_options_set_return_task(ro, true)), bad);
        let co = mcp_client_options_new();
        let ro = mcp_request_options_new();
        assert_eq!(call!(mcp_client_options_set_tasks(co, true)), ok);
        assert_eq!(call!(mcp_client_options_set_elicitation_url(co, false)), ok);
        assert_eq!(call!(mcp_client_options_set_sampling_tools(co, true)), ok);
        assert_eq!(call!(mcp_request_options_set_return_task(ro, false)), ok);
        mcp_client_options_free(co);

        let (id, o) = (c"task-1".as_ptr(), ro.cast_const());
        let n = null_mut::<mcp_client>();
        let null_client = "client must not be NULL";
        expect(call!(mcp_client_get_task(n, id, o)), bad, null_client);
        expect(
            call!(mcp_client_update_task(n, id, c"{}".as_ptr(), o)),
            bad,
            null_client,
        );
        expect(call!(mcp_client_cancel_task(n, id, o)), bad, null_client);

        let client = connected_client();
        let none = null();
        let task_id = "task id must not be NULL";
        expect(call!(mcp_client_get_task(client, none, o)), bad, task_id);
        expect(
            call!(mcp_client_update_task(client, none, c"{}".as_ptr(), o)),
            bad,
            task_id,
        );
        expect(call!(mcp_client_cancel_task(client, none, o)), bad, task_id);
        expect(
            call!(mcp_client_update_task(client, id, none, o)),
            bad,
            "input responses must not be NULL",
        );
        expect(
            call!(mcp_client_update_task(client, id, c"[1]".as_ptr(), o)),
            bad,
            "input responses must be a JSON object",
        );
        expect(
            call!(mcp_client_update_task(client, id, c"{".as_ptr(), o)),
            bad,
            "input responses",
        );
        assert_eq!(
            take(call!(mcp_client_get_task(client, bad_utf8(), o))).0,
            bad
        );
        // A legacy test server does not know tasks/get: the server's own error, not a crash.
        accepted(call!(mcp_client_get_task(client, id, null())));
        mcp_client_free(client);
        mcp_request_options_free(ro);
    }
}

/// The listen, notification and trace exports (issue 19): each pointer NULL alone, bad UTF-8,
/// bad values; the error a setter remembered is reported by the listen that uses the object.
#[test]
fn listen_notify_and_trace_exports_under_bad_input() {
    unsafe {
        let bad = mcp_status::InvalidArgument;
        let n: *mut mcp_listen = null_mut();
        assert_eq!(call!(mcp_listen_set_tools_list_changed(n, true)), bad);
        assert_eq!(call!(mcp_listen_set_prompts_list_changed(n, true)), bad);
        assert_eq!(call!(mcp_listen_set_resources_list_changed(n, true)), bad);
        assert_eq!(call!(mcp_listen_set_end_on_failure(n, true)), bad);
        assert_eq!(call!(mcp_listen_add_resource(n, c"test://x".as_ptr())), bad);
        assert_eq!(call!(mcp_listen_set_log_level(n, c"info".as_ptr())), bad);
        call!(mcp_listen_free(null_mut()));
        assert_eq!(
            call!(mcp_request_options_set_bypass_cache(null_mut(), true)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_trace_callback(
                null_mut(),
                None,
                null_mut()
            )),
            bad
        );

        let listen = mcp_listen_new();
        assert_eq!(call!(mcp_listen_add_resource(listen, null())), bad);
        assert_eq!(call!(mcp_listen_add_resource(listen, bad_utf8())), bad);
        assert_eq!(call!(mcp_listen_add_resource(listen, c"".as_ptr())), bad);
        assert_eq!(
            call!(mcp_listen_set_log_level(listen, c"loud".as_ptr())),
            bad
        );
        assert_eq!(
            call!(mcp_listen_set_log_level(listen, null())),
            mcp_status::Ok
        );

        let client = connected_client();
        let o: *const mcp_request_options = null();
        let some_options = mcp_request_options_new();
        expect(
            call!(mcp_client_listen(null_mut(), listen, some_options)),
            mcp_status::InvalidArgument,
            "",
        );
        expect(
            call!(mcp_client_listen(client, null(), some_options)),
            bad,
            "listen must not be NULL",
        );
        // The first setter error is the one reported.
        expect(
            call!(mcp_client_listen(client, listen, o)),
            bad,
            "resource uri must not be NULL",
        );
        call!(mcp_listen_free(listen));

        mcp_request_options_free(some_options);
        expect(
            call!(mcp_client_notify(null_mut(), c"x".as_ptr(), c"{}".as_ptr())),
            bad,
            "",
        );
        expect(
            call!(mcp_client_notify(client, null(), c"{}".as_ptr())),
            bad,
            "method must not be NULL",
        );
        expect(
            call!(mcp_client_notify(client, bad_utf8(), null())),
            bad,
            "method",
        );
        expect(
            call!(mcp_client_notify(
                client,
                c"notifications/x".as_ptr(),
                c"[1]".as_ptr()
            )),
            bad,
            "",
        );
        expect(
            call!(mcp_client_notify(
                client,
                c"notifications/x".as_ptr(),
                c"{".as_ptr()
            )),
            bad,
            "",
        );
        accepted(call!(mcp_client_notify(
            client,
            c"notifications/x".as_ptr(),
            null()
        )));
        expect(
            call!(mcp_client_notify_roots_list_changed(null_mut())),
            bad,
            "",
        );
        expect(
            call!(mcp_client_notify_roots_list_changed(client)),
            bad,
            "the client declared no roots capability",
        );
        assert_eq!(take(mcp_client_ping(client, null())).0, mcp_status::Ok);
        mcp_client_free(client);
    }
}

/// Pops the one completion `tag` must get, within a wide bound.
unsafe fn completion(queue: *mut mcp_completion_queue, want: u64) -> mcp_status {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let (mut tag, mut result) = (0u64, null_mut());
        if mcp_completion_queue_pop(queue, &raw mut tag, &raw mut result) {
            assert_eq!(tag, want);
            return take(result).0;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no completion for {want}"
        );
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

unsafe extern "C" fn ignore_completion(_: *mut c_void, _: u64, result: *mut mcp_result) {
    mcp_result_free(result);
}

const COMPLETION: mcp_completion_callback = Some(ignore_completion);

#[test]
fn completion_api_pointers_passed_null_alone() {
    unsafe {
        let client = connected_client();
        let queue = mcp_completion_queue_new();
        assert!(!queue.is_null());
        let s = c"x".as_ptr();
        let obj = c"{}".as_ptr();
        // A constructor given a NULL (or bad) required string makes a request that completes
        // with INVALID_ARGUMENT; an optional one left NULL is no error.
        let requests: Vec<(*mut mcp_request, mcp_status)> = vec![
            (
                call!(mcp_request_call_tool(null(), obj)),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_call_tool(bad_utf8(), obj)),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_call_tool(s, c"[1]".as_ptr())),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_read_resource(null())),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_get_prompt(null(), obj)),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_complete(null(), obj, obj)),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_complete(obj, null(), obj)),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_other(null(), obj)),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_other(s, c"{".as_ptr())),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_set_logging_level(null())),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_subscribe_resource(null())),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_unsubscribe_resource(null())),
                mcp_status::InvalidArgument,
            ),
            (
                call!(mcp_request_list_tools(bad_utf8())),
                mcp_status::InvalidArgument,
            ),
            (call!(mcp_request_list_tools(null())), mcp_status::Ok),
            (call!(mcp_request_list_resources(null())), mcp_status::Ok),
            (
                call!(mcp_request_list_resource_templates(null())),
                mcp_status::Ok,
            ),
            (call!(mcp_request_list_prompts(null())), mcp_status::Ok),
            (mcp_request_ping(), mcp_status::Ok),
            (mcp_request_discover(), mcp_status::ServerError),
            (mcp_request_tools(), mcp_status::Ok),
            (mcp_request_resources(), mcp_status::Ok),
            (mcp_request_resource_templates(), mcp_status::Ok),
            (mcp_request_prompts(), mcp_status::Ok),
            (
                call!(mcp_request_get_prompt(s, null())),
                mcp_status::ServerError,
            ),
            (
                call!(mcp_request_complete(obj, obj, null())),
                mcp_status::Ok,
            ),
        ];
        for (tag, (request, want)) in requests.into_iter().enumerate() {
            assert!(!request.is_null());
            let tag = tag as u64;
            // NULL options are the defaults.
            assert_eq!(
                call!(mcp_client_start(client, request, null(), queue, tag)),
                mcp_status::Ok
            );
            assert_eq!(completion(queue, tag), want, "request {tag}");
            call!(mcp_request_free(request));
        }
        // Nothing can be delivered: refused at once, and no completion comes.
        let ping = mcp_request_ping();
        assert_eq!(
            call!(mcp_client_start(null_mut(), ping, null(), queue, 1)),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_start(client, null(), null(), queue, 1)),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_start(client, ping, null(), null_mut(), 1)),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_start_callback(
                null_mut(),
                ping,
                null(),
                COMPLETION,
                null_mut(),
                1
            )),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_start_callback(
                client,
                null(),
                null(),
                COMPLETION,
                null_mut(),
                1
            )),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_client_start_callback(
                client,
                ping,
                null(),
                None,
                null_mut(),
                1
            )),
            mcp_status::InvalidArgument
        );
        // NULL userdata and options are fine.
        assert_eq!(
            call!(mcp_client_start_callback(
                client,
                ping,
                null(),
                COMPLETION,
                null_mut(),
                2
            )),
            mcp_status::Ok
        );
        let (mut tag, mut result) = (0u64, null_mut());
        assert!(
            !call!(mcp_completion_queue_pop(
                queue,
                &raw mut tag,
                &raw mut result
            )),
            "nothing more"
        );
        assert!(!call!(mcp_completion_queue_pop(
            null_mut(),
            &raw mut tag,
            &raw mut result
        )));
        assert!(!call!(mcp_completion_queue_pop(
            queue,
            null_mut(),
            &raw mut result
        )));
        assert!(!call!(mcp_completion_queue_pop(
            queue,
            &raw mut tag,
            null_mut()
        )));
        assert_eq!(call!(mcp_completion_queue_fd(null())), -1);
        assert!(call!(mcp_completion_queue_event(null())).is_null());
        // A batch with a bad argument starts nothing, says so in `started`, and no
        // completion comes. Each pointer parameter NULL alone.
        let requests = [ping as *const mcp_request, ping];
        let with_null = [ping as *const mcp_request, null()];
        let no_options: [*const mcp_request_options; 2] = [null(), null()];
        let tags = [10u64, 11];
        let (r, o, t) = (requests.as_ptr(), no_options.as_ptr(), tags.as_ptr());
        let mut started = usize::MAX;
        let s = &raw mut started;
        let refused = [
            call!(mcp_client_start_batch(null_mut(), r, o, queue, t, 2, s)),
            call!(mcp_client_start_batch(client, null(), o, queue, t, 2, s)),
            call!(mcp_client_start_batch(client, r, o, null_mut(), t, 2, s)),
            call!(mcp_client_start_batch(client, r, o, queue, null(), 2, s)),
            call!(mcp_client_start_batch(
                client,
                with_null.as_ptr(),
                o,
                queue,
                t,
                2,
                s
            )),
            call!(mcp_client_start_batch(
                client,
                r,
                o,
                queue,
                t,
                usize::MAX,
                s
            )),
        ];
        assert_eq!(refused, [mcp_status::InvalidArgument; 6]);
        assert_eq!(started, 0);
        assert!(!call!(mcp_completion_queue_pop(
            queue,
            &raw mut tag,
            &raw mut result
        )));
        // NULL options (the defaults for all) and a NULL `started` are fine; so is an empty
        // batch, whatever its arrays.
        let mut popped = Vec::new();
        assert_eq!(
            call!(mcp_client_start_batch(client, r, null(), queue, t, 2, s)),
            mcp_status::Ok
        );
        assert_eq!(started, 2);
        assert_eq!(
            call!(mcp_client_start_batch(
                client,
                r,
                o,
                queue,
                t,
                2,
                null_mut()
            )),
            mcp_status::Ok
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while popped.len() < 4 {
            assert!(
                std::time::Instant::now() < deadline,
                "completions: {popped:?}"
            );
            if mcp_completion_queue_pop(queue, &raw mut tag, &raw mut result) {
                popped.push((tag, take(result).0));
            } else {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        popped.sort_by_key(|(tag, _)| *tag);
        let ok = mcp_status::Ok;
        assert_eq!(popped, [(10, ok), (10, ok), (11, ok), (11, ok)]);
        assert_eq!(
            call!(mcp_client_start_batch(
                client,
                null(),
                null(),
                queue,
                null(),
                0,
                s
            )),
            mcp_status::Ok
        );
        assert_eq!(started, 0);
        call!(mcp_request_free(null_mut()));
        call!(mcp_completion_queue_free(null_mut()));
        mcp_client_free(client);
        // After close: CLOSED, and no completion.
        assert_eq!(
            call!(mcp_client_start(client_closed(), ping, null(), queue, 3)),
            mcp_status::Closed
        );
        let mut started = usize::MAX;
        assert_eq!(
            call!(mcp_client_start_batch(
                client_closed(),
                requests.as_ptr(),
                null(),
                queue,
                tags.as_ptr(),
                2,
                &raw mut started
            )),
            mcp_status::Closed
        );
        assert_eq!(started, 0);
        assert!(!mcp_completion_queue_pop(
            queue,
            &raw mut tag,
            &raw mut result
        ));
        mcp_request_free(ping);
        call!(mcp_completion_queue_free(queue));
    }
}

/// A client connected then closed (leaked: a start on it must stay valid).
unsafe fn client_closed() -> *mut mcp_client {
    static CLOSED: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CLOSED.get_or_init(|| {
        let client = connected_client();
        mcp_client_close(client);
        client as usize
    }) as *mut mcp_client
}

#[test]
fn loopback_exports_with_null_and_bad_arguments() {
    unsafe {
        assert!(call!(mcp_loopback_redirect_uri(null())).is_null());
        assert!(call!(mcp_loopback_url(null())).is_null());
        assert!(!call!(mcp_loopback_message(null())).is_null());
        assert_eq!(
            call!(mcp_loopback_wait(null_mut(), null(), 1)),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_loopback_wait_authorization(null_mut(), null_mut(), 1)),
            mcp_status::InvalidArgument
        );
        call!(mcp_loopback_free(null_mut()));
        // Each pointer NULL alone: the loopback, with a live token.
        let token = mcp_cancellation_new();
        assert_eq!(
            call!(mcp_loopback_wait(null_mut(), token, 1)),
            mcp_status::InvalidArgument
        );
        mcp_cancellation_free(token);

        // A path that is not UTF-8, or not a path: no listener, and the wait says why.
        for path in [bad_utf8(), c"no-slash".as_ptr()] {
            let loopback = call!(mcp_loopback_new(path));
            assert!(!loopback.is_null());
            assert!(call!(mcp_loopback_redirect_uri(loopback)).is_null());
            assert_eq!(
                call!(mcp_loopback_wait(loopback, null(), 1)),
                mcp_status::InvalidArgument
            );
            assert!(!CStr::from_ptr(call!(mcp_loopback_message(loopback)))
                .to_bytes()
                .is_empty());
            call!(mcp_loopback_free(loopback));
        }

        // NULL path is the default; NULL token waits without one.
        let loopback = call!(mcp_loopback_new(null()));
        assert!(!call!(mcp_loopback_redirect_uri(loopback)).is_null());
        assert_eq!(
            call!(mcp_loopback_wait_authorization(loopback, null_mut(), 1)),
            mcp_status::InvalidArgument
        );
        assert_eq!(
            call!(mcp_loopback_wait(loopback, null(), 10)),
            mcp_status::Timeout
        );
        assert!(call!(mcp_loopback_url(loopback)).is_null());
        call!(mcp_loopback_free(loopback));
    }
}
/// The OAuth and header-provider exports: a NULL handle is refused; NULL strings that mean
/// "none" are accepted; bad values are refused; the reply handles refuse NULL quietly.
#[test]
fn oauth_exports_refuse_null_and_bad_values() {
    unsafe {
        let (n, co) = (null_mut::<mcp_client_options>(), mcp_client_options_new());
        let (none, ud, bad, ok) = (
            null::<c_char>(),
            userdata(),
            mcp_status::InvalidArgument,
            mcp_status::Ok,
        );
        let s = c"x".as_ptr();
        let https = c"https://client.example/metadata.json".as_ptr();
        assert_eq!(call!(mcp_client_options_set_oauth_client(n, s, s)), bad);
        assert_eq!(
            call!(mcp_client_options_set_oauth_client_metadata_url(n, https)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_registration(n, s, s)),
            bad
        );
        assert_eq!(call!(mcp_client_options_set_oauth_redirect_uri(n, s)), bad);
        assert_eq!(call!(mcp_client_options_set_oauth_client_issuer(n, s)), bad);
        assert_eq!(
            call!(mcp_client_options_set_oauth_client_issuer(co, none)),
            ok
        );
        assert_eq!(call!(mcp_client_options_set_oauth_scopes(n, s)), bad);
        assert_eq!(call!(mcp_client_options_set_oauth_grant(n, 0)), bad);
        assert_eq!(
            call!(mcp_client_options_set_oauth_max_authorizations(n, 1)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_authorize_callback(n, None, ud)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_token_store(n, None, None, ud)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_header_provider(n, None, ud)),
            bad
        );

        // NULL that means "none": accepted.
        assert_eq!(call!(mcp_client_options_set_oauth_client(co, none, s)), ok);
        assert_eq!(
            call!(mcp_client_options_set_oauth_registration(co, none, s)),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_registration(co, s, none)),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_client(co, none, none)),
            ok
        );
        assert_eq!(call!(mcp_client_options_set_oauth_client(co, s, none)), ok);
        assert_eq!(
            call!(mcp_client_options_set_oauth_client_metadata_url(co, none)),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_registration(co, none, none)),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_redirect_uri(co, none)),
            ok
        );
        assert_eq!(call!(mcp_client_options_set_oauth_scopes(co, none)), ok);
        assert_eq!(
            call!(mcp_client_options_set_oauth_authorize_callback(
                co,
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_token_store(
                co,
                None,
                None,
                null_mut()
            )),
            ok
        );
        assert_eq!(
            call!(mcp_client_options_set_header_provider(co, None, null_mut())),
            ok
        );
        // Bad values: refused, and reported again by connect.
        assert_eq!(call!(mcp_client_options_set_oauth_grant(co, 7)), bad);
        assert_eq!(call!(mcp_client_options_set_oauth_grant(co, -1)), bad);
        assert_eq!(
            call!(mcp_client_options_set_oauth_max_authorizations(co, 0)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_client_metadata_url(co, s)),
            bad,
            "not https"
        );
        assert_eq!(
            call!(mcp_client_options_set_oauth_token_store(
                co,
                load_nothing(),
                None,
                ud
            )),
            bad,
            "load without save"
        );
        let client = mcp_client_new_http(c"http://127.0.0.1:1/mcp".as_ptr(), co);
        expect(mcp_client_connect(client), bad, "unknown OAuth grant 7");
        mcp_client_free(client);

        // Reply handles: NULL is refused quietly.
        assert!(!call!(mcp_auth_reply_is_cancelled(null())));
        assert!(!call!(mcp_auth_reply_set_redirect_url(null_mut(), s)));
        call!(mcp_auth_reply_set_error(null_mut(), s));
        assert!(!call!(mcp_token_slot_set(null_mut(), c"{}".as_ptr())));
        assert_eq!(call!(mcp_header_list_add(null_mut(), s, s)), bad);
        mcp_client_options_free(co);
    }
}

unsafe extern "C" fn no_tokens(
    _userdata: *mut c_void,
    _server_url: *const c_char,
    _issuer: *const c_char,
    _slot: *mut mcp_token_slot,
) -> bool {
    false
}

fn load_nothing() -> mcp_token_load_callback {
    Some(no_tokens)
}

/// The authorize callback of the test below: waits on a NULL loopback with a live reply.
unsafe extern "C" fn authorize_with_null_loopback(
    _userdata: *mut c_void,
    _url: *const c_char,
    _redirect_uri: *const c_char,
    reply: *mut mcp_auth_reply,
) -> bool {
    let status = call!(in "a_null_loopback_in_the_authorize_callback",
        mcp_loopback_wait_authorization(null_mut(), reply, 1));
    status == mcp_status::Ok
}

#[test]
fn a_null_loopback_in_the_authorize_callback() {
    let server = common::http_server::HttpServer::start("bad_input_loopback", &["--require-auth"]);
    unsafe {
        let options = mcp_client_options_new();
        mcp_client_options_set_mode(options, mcp_connect_mode::Legacy as i32);
        mcp_client_options_set_oauth_redirect_uri(options, c"http://127.0.0.1:9/cb".as_ptr());
        mcp_client_options_set_oauth_authorize_callback(
            options,
            Some(authorize_with_null_loopback),
            null_mut(),
        );
        let url = std::ffi::CString::new(server.url.as_str()).unwrap();
        let client = mcp_client_new_http(url.as_ptr(), options);
        mcp_client_options_free(options);
        // The reply was answered with the loopback's error, so the connect is refused.
        let (status, message) = take(mcp_client_connect(client));
        assert_eq!(status, mcp_status::Unauthorized, "{message}");
        assert!(message.contains("loopback is NULL"), "{message}");
        mcp_client_free(client);
    }
}

/// The handles the OAuth callbacks receive, live, with a NULL for their other pointers: the
/// flow runs against the test server's authorization server, and goes on.
#[test]
fn oauth_callback_handles_refuse_null_arguments() {
    let server = common::http_server::HttpServer::start("ffi_oauth_null", &["--require-auth"]);
    unsafe {
        let options = mcp_client_options_new();
        mcp_client_options_set_oauth_redirect_uri(options, c"http://127.0.0.1:9/cb".as_ptr());
        mcp_client_options_set_oauth_authorize_callback(
            options,
            Some(authorize_with_nulls),
            null_mut(),
        );
        mcp_client_options_set_oauth_token_store(
            options,
            load_with_null(),
            Some(save_nothing),
            null_mut(),
        );
        mcp_client_options_set_header_provider(options, Some(headers_with_nulls), null_mut());
        mcp_client_options_set_mode(options, mcp_connect_mode::Legacy as i32);
        let url = CString::new(server.url.as_str()).unwrap();
        let client = mcp_client_new_http(url.as_ptr(), options);
        let (status, message) = take(mcp_client_connect(client));
        assert_eq!(status, mcp_status::Ok, "{message}");
        mcp_client_free(client);
        mcp_client_options_free(options);
    }
}

const OAUTH_TEST: &str = "oauth_callback_handles_refuse_null_arguments";

unsafe extern "C" fn authorize_with_nulls(
    _userdata: *mut c_void,
    url: *const c_char,
    _redirect_uri: *const c_char,
    reply: *mut mcp_auth_reply,
) -> bool {
    assert!(!call!(in OAUTH_TEST, mcp_auth_reply_set_redirect_url(reply, null())));
    // A NULL reason is the default one; the redirect URL given after it wins.
    call!(in OAUTH_TEST, mcp_auth_reply_set_error(reply, null()));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .proxy(None)
        .build()
        .into();
    let url = CStr::from_ptr(url).to_str().unwrap();
    let response = agent.get(url).call().unwrap();
    let location = response
        .headers()
        .get("location")
        .unwrap()
        .to_str()
        .unwrap();
    let location = CString::new(location).unwrap();
    mcp_auth_reply_set_redirect_url(reply, location.as_ptr())
}

unsafe extern "C" fn load_nothing_but_null(
    _userdata: *mut c_void,
    _server_url: *const c_char,
    _issuer: *const c_char,
    slot: *mut mcp_token_slot,
) -> bool {
    assert!(!call!(in OAUTH_TEST, mcp_token_slot_set(slot, null())));
    false
}

fn load_with_null() -> mcp_token_load_callback {
    Some(load_nothing_but_null)
}

unsafe extern "C" fn save_nothing(
    _userdata: *mut c_void,
    _server_url: *const c_char,
    _issuer: *const c_char,
    _tokens_json: *const c_char,
) {
}

unsafe extern "C" fn headers_with_nulls(
    _userdata: *mut c_void,
    _url: *const c_char,
    headers: *mut mcp_header_list,
) -> bool {
    let bad = mcp_status::InvalidArgument;
    assert_eq!(
        call!(in OAUTH_TEST, mcp_header_list_add(headers, null(), c"v".as_ptr())),
        bad
    );
    assert_eq!(
        call!(in OAUTH_TEST, mcp_header_list_add(headers, c"X-A".as_ptr(), null())),
        bad
    );
    true
}

unsafe extern "C" fn ignore_trace(
    _: *mut c_void,
    _: mcp_trace_direction,
    _: *const c_char,
    _: *const c_char,
) {
}

const TRACE: mcp_trace_callback = Some(ignore_trace);

/// The parameters the tests above only passed NULL together with another NULL (a NULL
/// options object beside a NULL client, say): here each is the only NULL of its call.
#[test]
fn completion_task_and_trace_exports_with_one_null_each() {
    unsafe {
        let client = connected_client();
        let queue = mcp_completion_queue_new();
        let opts = mcp_request_options_new();
        let mut userdata = 0u8;
        let ud: *mut c_void = (&raw mut userdata).cast();
        let bad = mcp_status::InvalidArgument;
        let ping = mcp_request_ping();

        // Starting: each of client, request and queue NULL alone is refused at once.
        assert_eq!(
            call!(mcp_client_start(null_mut(), ping, opts, queue, 1)),
            bad
        );
        assert_eq!(call!(mcp_client_start(client, null(), opts, queue, 1)), bad);
        assert_eq!(
            call!(mcp_client_start(client, ping, opts, null_mut(), 1)),
            bad
        );
        let cb = COMPLETION;
        assert_eq!(
            call!(mcp_client_start_callback(null_mut(), ping, opts, cb, ud, 1)),
            bad
        );
        assert_eq!(
            call!(mcp_client_start_callback(client, null(), opts, cb, ud, 1)),
            bad
        );
        // NULL options are the defaults, NULL userdata is the host's business.
        assert_eq!(
            call!(mcp_client_start_callback(client, ping, null(), cb, ud, 2)),
            mcp_status::Ok
        );
        assert_eq!(
            call!(mcp_client_start_callback(
                client,
                ping,
                opts,
                cb,
                null_mut(),
                3
            )),
            mcp_status::Ok
        );

        // Optional JSON left NULL alone: a request like any other.
        let tool = call!(mcp_request_call_tool(c"echo".as_ptr(), null()));
        assert!(!tool.is_null());
        call!(mcp_request_free(tool));
        let other = call!(mcp_request_other(c"ping".as_ptr(), null()));
        assert!(!other.is_null());
        call!(mcp_request_free(other));

        // Tasks by hand with NULL options: the defaults (the test server knows no such task).
        let (status, _) = take(call!(mcp_client_update_task(
            client,
            c"task-none".as_ptr(),
            c"{}".as_ptr(),
            null()
        )));
        assert_ne!(status, mcp_status::InvalidArgument);
        let (status, _) = take(call!(mcp_client_cancel_task(
            client,
            c"task-none".as_ptr(),
            null()
        )));
        assert_ne!(status, mcp_status::InvalidArgument);

        // The trace setter: NULL options alone refused, NULL userdata alone accepted.
        let options = mcp_client_options_new();
        assert_eq!(
            call!(mcp_client_options_set_trace_callback(null_mut(), TRACE, ud)),
            bad
        );
        assert_eq!(
            call!(mcp_client_options_set_trace_callback(
                options,
                TRACE,
                null_mut()
            )),
            mcp_status::Ok
        );
        mcp_client_options_free(options);

        mcp_client_free(client); // the two started pings complete before free returns
        mcp_request_free(ping);
        mcp_request_options_free(opts);
        mcp_completion_queue_free(queue);
    }
}

unsafe extern "C" fn no_signature(
    _userdata: *mut c_void,
    _input: *const u8,
    _length: usize,
    _signature: *mut u8,
    _capacity: usize,
) -> usize {
    0
}

unsafe extern "C" fn no_assertion(
    _userdata: *mut c_void,
    _buffer: *mut c_char,
    _capacity: usize,
) -> usize {
    0
}

unsafe extern "C" fn ignore_state(_userdata: *mut c_void, _state: mcp_connection_state) {}

/// The newer client options with NULL for one pointer other than the options: each means what
/// its doc says (none, or the default), never a crash; a text that is no key is refused.
#[test]
fn newer_setters_with_one_null_pointer() {
    unsafe {
        let o = mcp_client_options_new();
        // No key: the key set before, if any, is cleared.
        assert_eq!(
            call!(mcp_client_options_set_oauth_client_key(
                o,
                null(),
                c"kid".as_ptr()
            )),
            mcp_status::Ok
        );
        // No key id is fine; the text is no key, so the call is refused all the same.
        assert_eq!(
            call!(mcp_client_options_set_oauth_client_key(
                o,
                c"not a key".as_ptr(),
                null()
            )),
            mcp_status::InvalidArgument
        );
        // No key: one is generated.
        assert_eq!(
            call!(mcp_client_options_set_oauth_dpop(o, true, null())),
            mcp_status::Ok
        );
        // No file: no workload identity (the default).
        assert_eq!(
            call!(mcp_client_options_set_oauth_workload_token_file(o, null())),
            mcp_status::Ok
        );
        let no_assertion: mcp_assertion_callback = Some(no_assertion);
        // The workload token callback: NULL userdata is the host's business.
        assert_eq!(
            call!(mcp_client_options_set_oauth_workload_token_callback(
                o,
                no_assertion,
                null_mut()
            )),
            mcp_status::Ok
        );
        // The identity provider: the endpoint is required (with a callback), the IdP client
        // id and secret and the userdata are not; an endpoint that is not HTTPS off loopback,
        // or not UTF-8, is refused.
        let ud = std::ptr::NonNull::<u8>::dangling().as_ptr().cast();
        let idp = |endpoint: *const c_char,
                   id: *const c_char,
                   secret: *const c_char,
                   userdata: *mut c_void| {
            call!(mcp_client_options_set_oauth_identity_provider(
                o,
                endpoint,
                id,
                secret,
                no_assertion,
                userdata
            ))
        };
        let (endpoint, id, secret) = (
            c"https://idp.example/token".as_ptr(),
            c"id".as_ptr(),
            c"secret".as_ptr(),
        );
        assert_eq!(idp(null(), id, secret, ud), mcp_status::InvalidArgument);
        assert_eq!(idp(endpoint, null(), secret, ud), mcp_status::Ok);
        assert_eq!(idp(endpoint, id, null(), ud), mcp_status::Ok);
        assert_eq!(idp(endpoint, id, secret, null_mut()), mcp_status::Ok);
        assert_eq!(
            idp(c"http://idp.example/token".as_ptr(), id, secret, ud),
            mcp_status::InvalidArgument
        );
        assert_eq!(idp(bad_utf8(), id, secret, ud), mcp_status::InvalidArgument);
        // The host's signer: the algorithm is required (with a callback) and must be an
        // asymmetric JWS one; the key id and the userdata are not required.
        let no_signature: mcp_sign_callback = Some(no_signature);
        let signer = |algorithm: *const c_char, key_id: *const c_char, userdata: *mut c_void| {
            call!(mcp_client_options_set_oauth_client_signer(
                o,
                algorithm,
                key_id,
                no_signature,
                userdata
            ))
        };
        let (es256, kid) = (c"ES256".as_ptr(), c"kid".as_ptr());
        assert_eq!(signer(null(), kid, ud), mcp_status::InvalidArgument);
        assert_eq!(signer(es256, null(), ud), mcp_status::Ok);
        assert_eq!(signer(es256, kid, null_mut()), mcp_status::Ok);
        assert_eq!(
            signer(c"HS256".as_ptr(), kid, ud),
            mcp_status::InvalidArgument
        );
        assert_eq!(signer(bad_utf8(), kid, ud), mcp_status::InvalidArgument);
        assert_eq!(
            call!(mcp_client_options_set_oauth_client_signer(
                o,
                null(),
                null(),
                None,
                null_mut()
            )),
            mcp_status::Ok
        );
        // No callback: the setting is cleared, whatever else is given.
        assert_eq!(
            call!(mcp_client_options_set_oauth_identity_provider(
                o,
                null(),
                null(),
                null(),
                None,
                null_mut()
            )),
            mcp_status::Ok
        );
        let on_state: mcp_state_callback = Some(ignore_state);
        assert_eq!(
            call!(mcp_client_options_set_state_callback(
                o,
                on_state,
                null_mut()
            )),
            mcp_status::Ok
        );
        mcp_client_options_free(o);
    }
}
