//! Buffers for outgoing frames, kept by the thread that wrote them for the next frames it
//! encodes.
//!
//! A frame is encoded on the caller's thread and, on stdio, usually written there too (see
//! `transport::stdin`). A frame of a kilobyte or more is too large for glibc's per-thread
//! cache, so allocating and freeing one went through the allocator's shared arena each time:
//! with many calls in flight, a tenth of a call's instructions. Frames written whole go back to
//! their writing thread's spares instead; at most [`KEEP_BYTES`] are kept per thread. (On
//! Windows a writer thread writes every frame: nothing comes back to the caller's thread there.)

use std::cell::RefCell;

/// The most buffer capacity a thread keeps (a window of calls in flight with 1 KiB
/// arguments fits; a large frame is freed, not kept).
#[cfg_attr(not(unix), allow(dead_code))]
const KEEP_BYTES: usize = 64 * 1024;

#[derive(Default)]
struct Spares {
    buffers: Vec<Vec<u8>>,
    bytes: usize,
}

thread_local! {
    static SPARES: RefCell<Spares> = RefCell::default();
}

/// An empty buffer with room for `capacity` bytes: a spare of this thread's when one is kept.
pub(crate) fn take(capacity: usize) -> Vec<u8> {
    let spare = SPARES
        .try_with(|spares| {
            let mut spares = spares.try_borrow_mut().ok()?;
            let buffer = spares.buffers.pop()?;
            spares.bytes -= buffer.capacity();
            Some(buffer)
        })
        .ok()
        .flatten();
    match spare {
        Some(mut buffer) => {
            buffer.reserve(capacity);
            buffer
        }
        None => Vec::with_capacity(capacity),
    }
}

/// Keeps `buffer` (a frame written whole) for this thread's next frame, if there is room.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn give_back(mut buffer: Vec<u8>) {
    let capacity = buffer.capacity();
    if capacity == 0 || capacity > KEEP_BYTES {
        return;
    }
    buffer.clear();
    let _ = SPARES.try_with(|spares| {
        let Ok(mut spares) = spares.try_borrow_mut() else {
            return;
        };
        if spares.bytes + capacity <= KEEP_BYTES {
            spares.bytes += capacity;
            spares.buffers.push(buffer);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_given_back_is_the_next_one_taken() {
        let buffer = take(1100);
        let address = buffer.as_ptr();
        give_back(buffer);
        let again = take(1000);
        assert_eq!(again.as_ptr(), address);
        assert!(again.is_empty() && again.capacity() >= 1100);
    }

    #[test]
    fn a_thread_keeps_at_most_its_share() {
        for _ in 0..200 {
            give_back(Vec::with_capacity(1024));
        }
        let kept = SPARES.with(|s| (s.borrow().buffers.len(), s.borrow().bytes));
        assert_eq!(kept, (KEEP_BYTES / 1024, KEEP_BYTES));
        give_back(Vec::with_capacity(KEEP_BYTES + 1));
        assert_eq!(SPARES.with(|s| s.borrow().bytes), KEEP_BYTES);
    }
}
