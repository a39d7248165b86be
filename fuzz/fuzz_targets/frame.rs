//! The JSON-RPC frame decoder on arbitrary bytes: parsing, sorting a frame into request,
//! response or notification, and turning a response into a result or error never panic.
//! Every value that parses is also written back with `json_text`, which must give exactly
//! serde_json's text. The stdio reader's fast path for plain answers (`parse_answer`, which
//! keeps the result as text) must agree with the general parser on every input it accepts:
//! same id, and a result that parses to the same value. The check of a host's arguments
//! (`ObjectText`, the same one-pass scanner) must take exactly the objects serde_json's
//! `RawValue` takes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpc::fuzzing::json_text;
use mcpc::fuzzing::{classify, into_result, parse_answer, Incoming};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        // As the raw value it replaced: valid JSON, numbers and \u escapes unchecked.
        let raw = serde_json::from_str::<Box<serde_json::value::RawValue>>(text);
        let object = raw.is_ok_and(|raw| raw.get().starts_with('{'));
        match mcpc::ObjectText::new(text) {
            Ok(_) => assert!(object, "{text:?}"),
            // A raw value may nest without limit; ours stops where a parser's tree would.
            Err(e) => assert!(!object || e.message.contains("nests deeper"), "{text:?}"),
        }
    }
    let answer = parse_answer(data);
    let Ok(frame) = serde_json::from_slice::<serde_json::Value>(data) else {
        // Only valid JSON beyond serde_json's limits may pass the fast path and not the general
        // parser; the Rust API then reports it (try_into_value), the C API hands the text over.
        if let Some((_, reply)) = answer {
            let text = reply.text().into_owned();
            assert!(serde_json::from_str::<serde_json::Value>(&text).is_err());
            assert!(reply.try_into_value().is_err());
        }
        return;
    };
    if let Some((id, reply)) = answer {
        let result = reply.text().into_owned();
        match classify(frame.clone()) {
            Incoming::Response { id: general_id, frame } => {
                assert_eq!(general_id.as_i64(), Some(id));
                let general = into_result(frame).expect("a result, not an error");
                let fast: serde_json::Value = serde_json::from_str(&result).unwrap();
                assert_eq!(fast, general);
                assert_eq!(reply.into_value(), general);
            }
            other => panic!("the fast path took {other:?}"),
        }
    }
    assert_eq!(
        json_text::to_string(&frame),
        serde_json::to_string(&frame).unwrap()
    );
    if let Incoming::Response { frame, .. } = classify(frame) {
        let _ = into_result(frame);
    }
});
