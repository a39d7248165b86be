//! The SSE parser on arbitrary bytes: it never panics, and no event it dispatches is larger
//! than the limit it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpc::fuzzing::SseReader;

const LIMIT: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let mut reader = SseReader::new(data, LIMIT);
    while let Ok(Some(event)) = reader.next_event() {
        assert!(
            event.data.len() <= LIMIT,
            "an event over the limit was dispatched"
        );
    }
});
