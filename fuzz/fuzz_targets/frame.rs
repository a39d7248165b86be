//! The JSON-RPC frame decoder on arbitrary bytes: parsing, sorting a frame into request,
//! response or notification, and turning a response into a result or error never panic.
//! Every value that parses is also written back with `json_text`, which must give exactly
//! serde_json's text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpc::fuzzing::json_text;
use mcpc::fuzzing::{classify, into_result, Incoming};

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    assert_eq!(
        json_text::to_string(&frame),
        serde_json::to_string(&frame).unwrap()
    );
    if let Incoming::Response { frame, .. } = classify(frame) {
        let _ = into_result(frame);
    }
});
