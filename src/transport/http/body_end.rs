//! Whether the end of a chunked response body has been read from the connection already.
//!
//! A caller that has its answer from an SSE stream returns at once and leaves the rest of the
//! stream to a worker, unless the rest is there already: then reading it costs no wait, and
//! the caller reads it itself, which saves waking a worker and switching to it and back (a
//! context switch per HTTP call). Bytes waiting on the socket are seen by a poll; bytes ureq
//! has read from the socket already are not, and that is where the stream's last chunk
//! usually is: the server writes it with the answer, and ureq reads and parses both at once.
//! So the transport ureq talks to keeps its buffers in [`WatchedBuffers`], which notes whether
//! the bytes read so far end with a chunked body's last chunk.
//!
//! Only a hint: a body whose data ends with those very bytes at the end of a read, mid-chunk,
//! would make the caller wait for the real end, as a worker would otherwise have waited; the
//! drain deadline bounds both the same way.

use super::buffers::ConnectionBuffers;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use ureq::unversioned::transport::Buffers;

/// A chunked body's last chunk (no trailers), after the line end of what came before it (the
/// head's blank line, or the end of the previous chunk's data).
const LAST_CHUNK: &[u8] = b"\r\n0\r\n\r\n";

/// What a connection took from its socket and its reader has not read yet, by layer: the
/// standalone stream waits on the reactor only when a read would have to wait for the server,
/// and bytes held here never make the socket readable again. Set by [`WatchedBuffers`] (the
/// TCP and TLS layers' buffers) and by the TLS layer (records it decrypted, not yet handed on).
#[derive(Default)]
pub struct Unread {
    tcp: AtomicBool,
    tls: AtomicBool,
    pub decrypted: AtomicBool,
    /// The connection carries a stream that waits parked between reads: its buffers hold no
    /// input buffer while nothing is unread (a thousand parked streams would hold a thousand).
    /// Set when such a stream's request claims the connection, cleared when it is released.
    pub parked: AtomicBool,
}

/// Whose buffers a [`WatchedBuffers`] are.
#[derive(Clone, Copy)]
pub enum Layer {
    Tcp,
    #[cfg_attr(not(feature = "tls"), allow(dead_code))] // no TLS layer in that build
    Tls,
}

impl Unread {
    pub fn any(&self) -> bool {
        [&self.tcp, &self.tls, &self.decrypted]
            .iter()
            .any(|layer| layer.load(Ordering::Acquire))
    }

    fn of(&self, layer: Layer) -> &AtomicBool {
        match layer {
            Layer::Tcp => &self.tcp,
            Layer::Tls => &self.tls,
        }
    }
}

/// Set while the bytes last read on the connection end with a body's last chunk.
#[derive(Default)]
pub struct BodyEnd(AtomicBool);

impl BodyEnd {
    pub fn is_buffered(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// The connection's buffers, with the input watched when `end` is given (only the outermost transport's:
/// the bytes under TLS are ciphertext).
pub struct WatchedBuffers {
    inner: ConnectionBuffers,
    end: Option<Arc<BodyEnd>>,
    /// The last bytes read into the input (parsed or not), up to the length of the pattern.
    tail: Vec<u8>,
    /// Told whether the input holds bytes not yet consumed (see [`Unread`]).
    unread: Option<(Arc<Unread>, Layer)>,
}

impl WatchedBuffers {
    pub fn new(inner: ConnectionBuffers, end: Option<Arc<BodyEnd>>) -> WatchedBuffers {
        WatchedBuffers {
            inner,
            end,
            tail: Vec::with_capacity(2 * LAST_CHUNK.len()),
            unread: None,
        }
    }

    /// Tells `unread` whether the input holds bytes not yet consumed, as `layer`'s.
    pub fn noting_unread(mut self, unread: Option<(Arc<Unread>, Layer)>) -> WatchedBuffers {
        self.unread = unread;
        self
    }

    fn note_unread(&mut self) {
        let Some((unread, layer)) = &self.unread else {
            return;
        };
        let empty = self.inner.input().is_empty();
        unread.of(*layer).store(!empty, Ordering::Release);
        // The next read takes a buffer again (from the stash when one is there).
        if empty && unread.parked.load(Ordering::Acquire) {
            self.inner.give_back_input();
        }
    }

    /// The connection is idle: its buffers go back for another connection to use.
    pub fn give_back(&mut self) {
        self.inner.give_back();
    }

    /// Notes whether the bytes read so far end with the last chunk. ureq parses the body as it
    /// reads it, so the last chunk is often parsed (consumed) already when the caller asks:
    /// what matters is that it has been read from the connection, and nothing after it.
    fn note(&mut self, appended: usize) {
        let Some(end) = &self.end else {
            return;
        };
        let input = self.inner.input();
        let new = &input[input.len() - appended.min(input.len())..];
        let keep = LAST_CHUNK.len();
        if new.len() >= keep {
            self.tail.clear();
            self.tail.extend_from_slice(&new[new.len() - keep..]);
        } else {
            self.tail.extend_from_slice(new);
            let excess = self.tail.len().saturating_sub(keep);
            self.tail.drain(..excess);
        }
        end.0
            .store(self.tail.ends_with(LAST_CHUNK), Ordering::Release);
    }
}

impl Buffers for WatchedBuffers {
    fn output(&mut self) -> &mut [u8] {
        self.inner.output()
    }

    fn input(&self) -> &[u8] {
        self.inner.input()
    }

    fn input_append_buf(&mut self) -> &mut [u8] {
        self.inner.input_append_buf()
    }

    fn input_appended(&mut self, amount: usize) {
        self.inner.input_appended(amount);
        self.note(amount);
        self.note_unread();
    }

    fn input_consume(&mut self, amount: usize) {
        self.inner.input_consume(amount);
        self.note_unread();
    }

    fn tmp_and_output(&mut self) -> (&mut [u8], &mut [u8]) {
        self.inner.tmp_and_output()
    }

    fn can_use_input(&self) -> bool {
        self.inner.can_use_input()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append(buffers: &mut WatchedBuffers, bytes: &[u8]) {
        buffers.input_append_buf()[..bytes.len()].copy_from_slice(bytes);
        buffers.input_appended(bytes.len());
    }

    #[test]
    fn the_end_is_noted_once_read_whether_parsed_or_not_and_until_more_is_read() {
        let end = Arc::new(BodyEnd::default());
        let mut buffers =
            WatchedBuffers::new(ConnectionBuffers::new(1024, 1024), Some(end.clone()));
        append(&mut buffers, b"HTTP/1.1 200 OK\r\n\r\n5\r\nhello");
        assert!(!end.is_buffered(), "mid-chunk");
        append(&mut buffers, b"\r\n0\r\n");
        assert!(
            !end.is_buffered(),
            "the last chunk's line without the blank line after it"
        );
        append(&mut buffers, b"\r\n");
        assert!(end.is_buffered(), "the last chunk, read in three pieces");
        let all = buffers.input().len();
        buffers.input_consume(all);
        assert!(
            end.is_buffered(),
            "parsed to its end: still read, and nothing after it"
        );
        append(&mut buffers, b"HTTP/1.1 200 OK\r\n");
        assert!(!end.is_buffered(), "more read after it");
        for byte in b"\r\n0\r\n\r\n" {
            append(&mut buffers, &[*byte]);
        }
        assert!(
            end.is_buffered(),
            "an empty body's last chunk, a byte at a time"
        );
    }
}
