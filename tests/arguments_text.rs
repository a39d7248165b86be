//! A host's arguments as JSON text: the C API checks them (JSON, an object) and sends them as
//! the host wrote them, without a tree in between (`Arguments::Json`). The server's log holds
//! the lines it read byte for byte, so the tests can see the host's own spelling arrive, next
//! to what the library adds (`_meta`, the modern envelope, `requestState`).

mod common;

use common::*;
use mcpc::ffi::*;
use mcpc::{Arguments, ObjectText, Request, RequestOptions, Status};
use serde_json::Value;
use std::ffi::{CStr, CString};
use std::path::Path;
use std::ptr::null;

/// Spaces, a trailing zero and a key order a tree would not keep.
const SPELLED: &str = r#"{ "text" : "as written", "z": 1.50, "a": [ 1 ,2 ] }"#;

unsafe fn c_client(log: &Path, extra: &[&str]) -> *mut mcp_client {
    let mut args = vec![SERVER.clone(), "--log".into(), log.to_str().unwrap().into()];
    args.extend(extra.iter().map(|a| a.to_string()));
    let args: Vec<CString> = args.into_iter().map(|a| CString::new(a).unwrap()).collect();
    let mut argv: Vec<*const std::ffi::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(null());
    let client = mcp_client_new_stdio(argv.as_ptr(), std::ptr::null_mut());
    let connected = mcp_client_connect(client);
    assert_eq!(mcp_result_status(connected), mcp_status::Ok);
    mcp_result_free(connected);
    client
}

/// Status and result JSON (or message) of a result, which is freed.
unsafe fn take(result: *mut mcp_result) -> (mcp_status, Value) {
    let status = mcp_result_status(result);
    let json = mcp_result_json(result);
    let value = if json.is_null() {
        Value::String(
            CStr::from_ptr(mcp_result_message(result))
                .to_string_lossy()
                .into(),
        )
    } else {
        serde_json::from_str(CStr::from_ptr(json).to_str().unwrap()).unwrap()
    };
    mcp_result_free(result);
    (status, value)
}

/// The raw lines of the server's log that are `tools/call` requests.
fn raw_calls(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(r#""method":"tools/call""#))
        .map(str::to_owned)
        .collect()
}

#[test]
fn c_arguments_reach_the_server_as_the_host_wrote_them_in_both_eras() {
    for (era, extra) in [("legacy", &[][..]), ("modern", &["--modern"][..])] {
        let log = log_path(&format!("arguments-text-{era}"));
        unsafe {
            let client = c_client(&log, extra);
            let spelled = CString::new(SPELLED).unwrap();
            // With a progress token, the library adds `_meta` beside the host's text.
            let options = mcp_request_options_new();
            mcp_request_options_set_progress_token(options, c"p-1".as_ptr());
            let (status, result) = take(mcp_client_call_tool(
                client,
                c"echo".as_ptr(),
                spelled.as_ptr(),
                options,
            ));
            assert_eq!(status, mcp_status::Ok, "{era}: {result}");
            assert_eq!(text(&result), "as written", "{era}");
            mcp_request_options_free(options);

            let calls = raw_calls(&log);
            assert_eq!(calls.len(), 1, "{era}: {calls:?}");
            let line = &calls[0];
            assert!(
                line.contains(&format!(r#""arguments":{SPELLED}"#)),
                "{era}: the host's text, byte for byte: {line}"
            );
            let sent: Value = serde_json::from_str(line).unwrap();
            assert_eq!(sent["params"]["name"], "echo");
            assert_eq!(sent["params"]["_meta"]["progressToken"], "p-1", "{era}");
            let stamped = sent["params"]["_meta"]
                .get("io.modelcontextprotocol/protocolVersion")
                .is_some();
            assert_eq!(stamped, era == "modern", "{era}: {line}");
            mcp_client_free(client);
        }
    }
}

#[test]
fn c_arguments_are_sent_again_with_each_leg_of_a_multi_round_trip_call() {
    let log = log_path("arguments-text-legs");
    unsafe {
        let client = c_client(&log, &["--modern"]);
        let (status, result) = take(mcp_client_call_tool(
            client,
            c"state_only".as_ptr(),
            c"{ \"legs\": 3 }".as_ptr(),
            null(),
        ));
        assert_eq!(status, mcp_status::Ok, "{result}");
        assert_eq!(text(&result), "legs done");
        let calls = raw_calls(&log);
        assert_eq!(calls.len(), 4, "the first leg and three more: {calls:?}");
        for (leg, line) in calls.iter().enumerate() {
            assert!(line.contains(r#""arguments":{ "legs": 3 }"#), "{line}");
            let sent: Value = serde_json::from_str(line).unwrap();
            let state = sent["params"].get("requestState").and_then(Value::as_str);
            let expected = (leg > 0).then(|| format!("leg-{leg}"));
            assert_eq!(state, expected.as_deref(), "{line}");
        }
        mcp_client_free(client);
    }
}

#[test]
fn bad_text_is_refused_before_anything_is_sent() {
    let log = log_path("arguments-text-bad");
    unsafe {
        let client = c_client(&log, &[]);
        for (bad, expected) in [
            ("{\"a\": 1", "tool arguments is not valid JSON"),
            ("{\"a\": 1} {}", "tool arguments is not valid JSON"),
            (" [ {} ] ", "tool arguments must be a JSON object"),
            ("\"{}\"", "tool arguments must be a JSON object"),
            ("", "tool arguments is not valid JSON"),
        ] {
            let bad = CString::new(bad).unwrap();
            let (status, message) = take(mcp_client_call_tool(
                client,
                c"echo".as_ptr(),
                bad.as_ptr(),
                null(),
            ));
            assert_eq!(status, mcp_status::InvalidArgument, "{bad:?}: {message}");
            let message = message.as_str().unwrap_or_default();
            assert!(message.starts_with(expected), "{bad:?}: {message}");
        }
        // Surrounding whitespace is no error; the client goes on working.
        let (status, result) = take(mcp_client_call_tool(
            client,
            c"echo".as_ptr(),
            c" \n{\"text\":\"ok\"}\t ".as_ptr(),
            null(),
        ));
        assert_eq!(status, mcp_status::Ok, "{result}");
        assert_eq!(text(&result), "ok");
        assert_eq!(raw_calls(&log).len(), 1, "only the good call was sent");
        mcp_client_free(client);
    }
}

#[test]
fn rust_hosts_can_hand_over_text_too() {
    let client = connect(&[]);
    let json = |text: &str| Some(Arguments::Json(ObjectText::new(text).unwrap()));
    let call = |arguments| Request::CallTool {
        name: "echo".into(),
        arguments,
    };
    let result = client
        .run(
            call(json(r#"{"text": "from text"}"#)),
            &RequestOptions::default(),
        )
        .unwrap();
    assert_eq!(text(&result), "from text");
    // Text is checked when it is made; a tree when the request is.
    for refused in ["[1]", "{\"a\":", "{} {}"] {
        let error = ObjectText::new(refused).unwrap_err();
        assert_eq!(error.status, Status::InvalidArgument, "{refused}: {error}");
    }
    let error = client
        .run(
            call(Some(Arguments::Value(serde_json::json!([1])))),
            &RequestOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument, "{error}");
    assert!(error.request_id.is_none(), "nothing was sent");
}
