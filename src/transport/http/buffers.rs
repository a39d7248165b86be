//! The buffers ureq reads and writes an HTTP connection through, sized for what a connection
//! does now rather than for the largest thing it might do:
//! - they are taken when the connection is first used and given back when it goes idle (ureq
//!   asks a connection [`is_open`](ureq::unversioned::transport::Transport::is_open) before it
//!   pools it), to a small process-wide stash the next busy connection takes them from. A
//!   thousand idle clients hold no buffer; a client making calls reuses the same two;
//! - the output is given back as soon as the answer starts to arrive (the request is written by
//!   then), so a stream that stays open for long (the standalone GET) keeps only its input, and
//!   while it waits parked, not even that (`body_end::Unread::parked`);
//! - the input grows when ureq needs more room (a response head longer than it, up to ureq's own
//!   limit on heads) and goes back to its usual size when the connection is given back.

use super::headers::MAX_HEADER_BYTES;
use crate::sync::lock;
use std::sync::Mutex;
use ureq::unversioned::transport::Buffers;

/// The usual input: room for a TLS record and a response head, and reads large enough for a
/// large body to come in a few system calls per megabyte.
pub const INPUT_BYTES: usize = 32 * 1024;
/// The output holds the request head one line at a time, so the longest header line must fit:
/// the host's extra headers may take [`MAX_HEADER_BYTES`] in all.
pub const OUTPUT_BYTES: usize = MAX_HEADER_BYTES + 4 * 1024;
/// How many given-back buffers of each kind the stash keeps; more are freed.
const STASH_LIMIT: usize = 16;

/// Given-back buffers of the usual sizes, for the next connection that needs one.
static INPUTS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
static OUTPUTS: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// One connection's buffers (see the module's comment).
#[derive(Debug)]
pub struct ConnectionBuffers {
    input_size: usize,
    output_size: usize,
    /// Empty while given back.
    input: Vec<u8>,
    filled: usize,
    consumed: usize,
    /// The last consume took something: what is left may be parsed as it is (ureq's rule).
    progress: bool,
    output: Vec<u8>,
}

impl ConnectionBuffers {
    pub fn new(input_size: usize, output_size: usize) -> ConnectionBuffers {
        assert!(input_size > 0 && output_size > 0);
        ConnectionBuffers {
            input_size,
            output_size,
            input: Vec::new(),
            filled: 0,
            consumed: 0,
            progress: false,
            output: Vec::new(),
        }
    }

    /// Gives both buffers back, when no input is left unread: the connection is idle.
    pub fn give_back(&mut self) {
        if self.filled > self.consumed {
            return;
        }
        self.give_back_input();
        self.give_back_output();
    }

    /// Gives the input back, when none of it is left unread (a parked stream's connection,
    /// between reads).
    pub fn give_back_input(&mut self) {
        if self.filled > self.consumed {
            return;
        }
        (self.filled, self.consumed, self.progress) = (0, 0, false);
        put(
            &INPUTS,
            std::mem::take(&mut self.input),
            self.input_size == INPUT_BYTES,
        );
    }

    /// Holds buffers (for tests: whether giving back happened).
    #[cfg(test)]
    fn holds_memory(&self) -> bool {
        !self.input.is_empty() || !self.output.is_empty()
    }

    fn give_back_output(&mut self) {
        let usual = self.output_size == OUTPUT_BYTES;
        put(&OUTPUTS, std::mem::take(&mut self.output), usual);
    }

    fn ensure_output(&mut self) {
        if self.output.is_empty() {
            self.output = take(&OUTPUTS, self.output_size, self.output_size == OUTPUT_BYTES);
        }
    }

    /// Makes room at the end of the input: moves the unread bytes to the front when that frees
    /// enough, grows the buffer when the unread bytes fill it.
    fn input_room(&mut self, wanted: usize) {
        if self.input.is_empty() {
            self.input = take(&INPUTS, self.input_size, self.input_size == INPUT_BYTES);
        }
        if self.consumed == self.filled {
            (self.filled, self.consumed) = (0, 0);
        } else if self.consumed > 0 && self.input.len() - self.filled < wanted {
            self.input.copy_within(self.consumed..self.filled, 0);
            (self.filled, self.consumed) = (self.filled - self.consumed, 0);
        }
        let free = self.input.len() - self.filled;
        if free < wanted {
            let grown = (self.input.len() * 2).max(self.filled + wanted);
            self.input.resize(grown, 0);
        }
    }
}

/// A buffer of `size` bytes: a given-back one when `usual` and the stash has one.
fn take(stash: &Mutex<Vec<Vec<u8>>>, size: usize, usual: bool) -> Vec<u8> {
    let kept = match usual {
        true => lock(stash).pop(),
        false => None,
    };
    kept.unwrap_or_else(|| vec![0; size])
}

/// Keeps `buffer` for the next connection when it has the usual size and the stash has room.
fn put(stash: &Mutex<Vec<Vec<u8>>>, buffer: Vec<u8>, usual_size: bool) {
    if buffer.is_empty() || !usual_size {
        return;
    }
    let mut stash = lock(stash);
    if stash.len() < STASH_LIMIT {
        stash.push(buffer);
    }
}

impl Buffers for ConnectionBuffers {
    fn output(&mut self) -> &mut [u8] {
        self.ensure_output();
        &mut self.output[..self.output_size]
    }

    fn input(&self) -> &[u8] {
        self.input
            .get(self.consumed..self.filled)
            .unwrap_or_default()
    }

    fn input_append_buf(&mut self) -> &mut [u8] {
        // At least one byte of room, so a read never looks like the end of the stream.
        self.input_room(1);
        &mut self.input[self.filled..]
    }

    fn input_appended(&mut self, amount: usize) {
        self.filled += amount;
        assert!(self.filled <= self.input.len());
        // The answer is coming: the request is written whole, its output no longer needed.
        if amount > 0 && !self.output.is_empty() {
            self.give_back_output();
        }
    }

    fn input_consume(&mut self, amount: usize) {
        self.progress = amount > 0;
        self.consumed += amount;
        assert!(self.consumed <= self.filled);
    }

    fn tmp_and_output(&mut self) -> (&mut [u8], &mut [u8]) {
        // ureq reads a request body into the free input (at least this much) before writing
        // it to the output.
        const MIN_TMP: usize = 10 * 1024;
        self.input_room(MIN_TMP);
        self.ensure_output();
        (
            &mut self.input[self.filled..],
            &mut self.output[..self.output_size],
        )
    }

    fn can_use_input(&self) -> bool {
        self.filled > self.consumed && self.progress
    }
}

impl Drop for ConnectionBuffers {
    fn drop(&mut self) {
        // A connection closed with unread input drops it; otherwise the buffers are reused.
        (self.filled, self.consumed) = (0, 0);
        self.give_back();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(buffers: &mut ConnectionBuffers, bytes: &[u8]) {
        buffers.input_append_buf()[..bytes.len()].copy_from_slice(bytes);
        buffers.input_appended(bytes.len());
    }

    #[test]
    fn unread_bytes_move_to_the_front_and_the_input_grows_when_they_fill_it() {
        let mut buffers = ConnectionBuffers::new(8, 8);
        append(&mut buffers, b"abcdefgh");
        buffers.input_consume(3);
        assert_eq!(buffers.input(), b"defgh");
        // Full: the next append moves "defgh" to the front, leaving 3 bytes of room.
        assert_eq!(buffers.input_append_buf().len(), 3);
        append(&mut buffers, b"ijk");
        assert_eq!(buffers.input(), b"defghijk");
        // Full of unread bytes (a long head): it grows instead of offering no room.
        assert!(!buffers.input_append_buf().is_empty());
        append(&mut buffers, b"lmnop");
        assert_eq!(buffers.input(), b"defghijklmnop");
        buffers.input_consume(13);
        assert!(buffers.input().is_empty());
    }

    #[test]
    fn the_output_goes_back_once_the_answer_starts_and_everything_once_idle() {
        let mut buffers = ConnectionBuffers::new(16, 16);
        buffers.output()[..4].copy_from_slice(b"POST");
        assert!(!buffers.output.is_empty());
        append(&mut buffers, b"HTTP/1.1");
        assert!(
            buffers.output.is_empty(),
            "the output was kept while reading"
        );
        // Unread input: the connection is not idle, nothing is given back.
        buffers.give_back();
        assert_eq!(buffers.input(), b"HTTP/1.1");
        buffers.input_consume(8);
        buffers.give_back();
        assert!(
            !buffers.holds_memory(),
            "an idle connection kept its buffers"
        );
        // Used again: new buffers, empty input.
        assert!(buffers.input().is_empty());
        assert_eq!(buffers.output().len(), 16);
    }

    #[test]
    fn a_body_gets_its_scratch_room_and_the_output_its_size() {
        let mut buffers = ConnectionBuffers::new(16, 32);
        let (tmp, output) = buffers.tmp_and_output();
        assert!(tmp.len() >= 10 * 1024);
        assert_eq!(output.len(), 32);
    }
}
