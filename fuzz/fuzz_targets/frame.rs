//! The JSON-RPC frame decoder on arbitrary bytes: parsing, sorting a frame into request,
//! response or notification, and turning a response into a result or error never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpc::protocol::jsonrpc::{classify, into_result, Incoming};

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    if let Incoming::Response { frame, .. } = classify(frame) {
        let _ = into_result(frame);
    }
});
