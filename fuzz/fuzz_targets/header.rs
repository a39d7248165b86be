//! The header encoder on arbitrary text: what it produces is always a plain visible-ASCII
//! header value (no CR, LF or other control byte can reach a header), and plain input passes
//! through unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpc::fuzzing::{encode, render_param};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let encoded = encode(&text);
    assert!(
        encoded.bytes().all(|b| (0x20..=0x7e).contains(&b)),
        "{encoded:?}"
    );
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Some(rendered) = render_param(&value) {
            assert!(!rendered.contains('\r') && !rendered.contains('\n'));
        }
    }
});
