//! A Server-Sent Events parser (the WHATWG `text/event-stream` format), reading from any byte
//! stream, with a limit on the size of one event so a server cannot make us buffer without bound.
//!
//! Lines end in CRLF, LF or CR. `data:` lines accumulate (joined by "\n"); a blank line
//! dispatches the event; lines starting with `:` are comments; `id:` sets the last event id
//! (kept across events, as the format says) and `retry:` the reconnection delay, when it is
//! all digits. An event with no data is not dispatched, but its `id:` still counts: that is how
//! a server primes a stream for resumption.

use std::io::{self, BufRead};
use std::time::Duration;

/// What the line buffer keeps between lines.
const KEEP_BYTES: usize = 64 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The `event:` field; "message" when absent.
    pub kind: String,
    pub data: String,
    /// The last event id when this event was dispatched.
    pub id: Option<String>,
}

#[derive(Debug)]
pub enum SseError {
    Io(io::Error),
    /// One event (or one line) passed the limit.
    TooLarge(usize),
}

pub struct SseReader<R> {
    reader: R,
    max_event_bytes: usize,
    /// The event being built.
    data: String,
    kind: String,
    has_data: bool,
    pending_bytes: usize,
    last_event_id: Option<String>,
    retry: Option<Duration>,
    /// The last line ended in CR: a LF right after it belongs to the same line end.
    after_cr: bool,
    at_start: bool,
    line: Vec<u8>,
}

impl<R> SseReader<std::io::BufReader<R>> {
    /// Whether bytes already read from the stream wait in the buffer.
    pub fn has_buffered(&self) -> bool {
        !self.reader.buffer().is_empty() || !self.line.is_empty()
    }
}

impl<R: BufRead> SseReader<R> {
    pub fn new(reader: R, max_event_bytes: usize) -> Self {
        SseReader {
            reader,
            max_event_bytes,
            data: String::new(),
            kind: String::new(),
            has_data: false,
            pending_bytes: 0,
            last_event_id: None,
            retry: None,
            after_cr: false,
            at_start: true,
            line: Vec::new(),
        }
    }

    /// The id of the last event that carried one (kept across events).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection delay the server asked for, if it did.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// The next event, or `None` at the end of the stream (a half-built event is dropped).
    pub fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        loop {
            if !self.read_line()? {
                return Ok(None);
            }
            if let Some(event) = self.process_line()? {
                return Ok(Some(event));
            }
        }
    }

    /// Reads one line into `self.line`, without its line end. False at the end of the stream
    /// (a last line without a line end is incomplete, and dropped).
    fn read_line(&mut self) -> Result<bool, SseError> {
        self.line.clear();
        // A long line's buffer is not kept for the next (short) ones.
        self.line.shrink_to(KEEP_BYTES);
        // What the event holds so far counts against the limit too.
        let room = self.max_event_bytes.saturating_sub(self.pending_bytes);
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(SseError::Io(e)),
            };
            if chunk.is_empty() {
                return Ok(false);
            }
            let skip_lf = std::mem::take(&mut self.after_cr) && chunk[0] == b'\n';
            let start = usize::from(skip_lf);
            let rest = &chunk[start..];
            let end = memchr::memchr2(b'\n', b'\r', rest);
            let content = &rest[..end.unwrap_or(rest.len())];
            if self.line.len() + content.len() > room {
                return Err(SseError::TooLarge(self.max_event_bytes));
            }
            self.line.extend_from_slice(content);
            match end {
                Some(end) => {
                    self.after_cr = rest[end] == b'\r';
                    self.reader.consume(start + end + 1);
                    self.strip_bom();
                    return Ok(true);
                }
                None => {
                    let taken = start + rest.len();
                    self.reader.consume(taken);
                }
            }
        }
    }

    /// A byte order mark may start the stream; it is not part of the first field.
    fn strip_bom(&mut self) {
        if std::mem::take(&mut self.at_start) && self.line.starts_with("\u{feff}".as_bytes()) {
            self.line.drain(..3);
        }
    }

    fn process_line(&mut self) -> Result<Option<Event>, SseError> {
        if self.line.is_empty() {
            return Ok(self.dispatch());
        }
        if self.line[0] == b':' {
            return Ok(None);
        }
        if !self.has_data && self.line.len() > KEEP_BYTES && self.take_line_as_data() {
            return Ok(None);
        }
        // Valid UTF-8 is the rule: check it the fast way, and repair only when it is not.
        let line = match std::str::from_utf8(&self.line) {
            Ok(line) => std::borrow::Cow::Borrowed(line),
            Err(_) => String::from_utf8_lossy(&self.line),
        };
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "event" => self.kind = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
                self.pending_bytes = self.data.len() + self.kind.len();
                // Repaired UTF-8 grows (one bad byte becomes three): the limit holds for what
                // we would hand on, not only for what was read.
                if self.pending_bytes > self.max_event_bytes {
                    return Err(SseError::TooLarge(self.max_event_bytes));
                }
            }
            "id" if !value.contains('\0') => self.last_event_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // All digits, but perhaps too many for a u64: then it is simply very long.
                let ms = value.parse().unwrap_or(u64::MAX);
                self.retry = Some(Duration::from_millis(ms));
            }
            _ => {}
        }
        Ok(None)
    }

    /// The first `data:` line of an event becomes its data without a copy (an event is
    /// usually one line, and may be a result of many MiB): the line buffer is handed over and
    /// the field name cut off in place. False, having done nothing, for any other line.
    /// Only for long lines: a short one is copied, which keeps the line buffer for the next.
    fn take_line_as_data(&mut self) -> bool {
        let prefix = match () {
            _ if self.line.starts_with(b"data: ") => 6,
            _ if self.line.starts_with(b"data:") => 5,
            _ => return false,
        };
        let mut data = match String::from_utf8(std::mem::take(&mut self.line)) {
            Ok(data) => data,
            Err(not_utf8) => {
                self.line = not_utf8.into_bytes(); // repaired by the general path
                return false;
            }
        };
        data.drain(..prefix);
        self.data = data;
        self.has_data = true;
        self.pending_bytes = self.data.len() + self.kind.len();
        true
    }

    fn dispatch(&mut self) -> Option<Event> {
        let kind = std::mem::take(&mut self.kind);
        let data = std::mem::take(&mut self.data);
        let had_data = std::mem::take(&mut self.has_data);
        self.pending_bytes = 0;
        had_data.then(|| Event {
            kind: if kind.is_empty() {
                "message".to_owned()
            } else {
                kind
            },
            data,
            id: self.last_event_id.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    fn events(text: &str) -> Vec<Event> {
        let mut reader = SseReader::new(text.as_bytes(), 1024);
        std::iter::from_fn(|| reader.next_event().unwrap()).collect()
    }

    fn data(text: &str) -> Vec<String> {
        events(text).into_iter().map(|e| e.data).collect()
    }

    /// Long data lines become the event's data without a copy; the event reads the same.
    #[test]
    fn long_data_lines_read_as_short_ones_do() {
        let long = "y".repeat(KEEP_BYTES + 10);
        let text = format!(
            "event: big\ndata: {long}\ndata: second\n\ndata:{long}\n\ndata\n\n: c\ndata: after\n\n"
        );
        let mut reader = SseReader::new(text.as_bytes(), 4 * KEEP_BYTES);
        let got: Vec<Event> = std::iter::from_fn(|| reader.next_event().unwrap()).collect();
        let got: Vec<(&str, &str)> = got.iter().map(|e| (&*e.kind, &*e.data)).collect();
        let joined = format!("{long}\nsecond");
        assert_eq!(
            got,
            [
                ("big", joined.as_str()),
                ("message", long.as_str()),
                ("message", ""),
                ("message", "after"),
            ]
        );
    }

    #[test]
    fn fields_and_default_kind() {
        let got = events("event: progress\ndata: {\"a\":1}\nid: 7\n\ndata:plain\n\n");
        assert_eq!(
            got,
            vec![
                Event {
                    kind: "progress".into(),
                    data: "{\"a\":1}".into(),
                    id: Some("7".into())
                },
                // The id is kept for later events.
                Event {
                    kind: "message".into(),
                    data: "plain".into(),
                    id: Some("7".into())
                },
            ]
        );
    }

    #[test]
    fn multi_line_data_is_joined_with_newlines() {
        assert_eq!(data("data: one\ndata: two\ndata:\n\n"), vec!["one\ntwo\n"]);
        // Only one leading space is removed.
        assert_eq!(data("data:  spaced\n\n"), vec![" spaced"]);
        // A line with no colon is a field name with an empty value.
        assert_eq!(data("data\n\n"), vec![""]);
    }

    #[test]
    fn comments_and_unknown_fields_are_ignored() {
        assert_eq!(
            data(": keep-alive\nfoo: bar\ndata: x\n: more\n\n"),
            vec!["x"]
        );
    }

    #[test]
    fn every_line_end_works() {
        for text in [
            "data: a\r\n\r\ndata: b\r\n\r\n",
            "data: a\n\ndata: b\n\n",
            "data: a\r\rdata: b\r\r",
            "data: a\r\n\ndata: b\r\r",
        ] {
            assert_eq!(data(text), vec!["a", "b"], "{text:?}");
        }
    }

    #[test]
    fn crlf_split_across_reads_is_one_line_end() {
        // One byte per read: a CR at the end of one read and its LF at the start of the next.
        struct OneByte<'a>(&'a [u8]);
        impl Read for OneByte<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                match self.0.split_first() {
                    Some((b, rest)) if !buf.is_empty() => {
                        buf[0] = *b;
                        self.0 = rest;
                        Ok(1)
                    }
                    _ => Ok(0),
                }
            }
        }
        let text = b"data: a\r\ndata: b\r\n\r\nid: 3\r\n\r\n";
        let mut reader = SseReader::new(BufReader::with_capacity(1, OneByte(text)), 100);
        let event = reader.next_event().unwrap().unwrap();
        assert_eq!(event.data, "a\nb");
        assert!(reader.next_event().unwrap().is_none());
        assert_eq!(reader.last_event_id(), Some("3"));
    }

    #[test]
    fn events_without_data_are_not_dispatched_but_their_id_counts() {
        let mut reader = SseReader::new("id: prime-1\nretry: 250\ndata:\n\n".as_bytes(), 100);
        // `data:` with an empty value is data: a priming event is an empty message.
        assert_eq!(reader.next_event().unwrap().unwrap().data, "");
        let mut reader = SseReader::new("id: prime-1\nretry: 250\n\n".as_bytes(), 100);
        assert!(reader.next_event().unwrap().is_none());
        assert_eq!(reader.last_event_id(), Some("prime-1"));
        assert_eq!(reader.retry(), Some(Duration::from_millis(250)));
    }

    #[test]
    fn retry_must_be_all_digits() {
        for bad in ["-5", "abc", "1e6", "500ms", ""] {
            let text = format!("retry: {bad}\n\n");
            let mut reader = SseReader::new(text.as_bytes(), 100);
            assert!(reader.next_event().unwrap().is_none());
            assert_eq!(reader.retry(), None, "{bad:?}");
        }
    }

    #[test]
    fn an_id_with_nul_is_ignored_and_an_empty_id_resets() {
        let mut reader = SseReader::new("id: a\0b\ndata: x\n\n".as_bytes(), 100);
        assert_eq!(reader.next_event().unwrap().unwrap().id, None);
        let mut reader = SseReader::new("id: 1\n\nid\ndata: x\n\n".as_bytes(), 100);
        assert_eq!(reader.next_event().unwrap().unwrap().id, Some("".into()));
    }

    #[test]
    fn an_unfinished_event_at_the_end_is_dropped() {
        assert_eq!(data("data: done\n\ndata: half"), vec!["done"]);
        assert_eq!(data("data: half\n"), Vec::<String>::new());
    }

    #[test]
    fn a_leading_byte_order_mark_is_skipped() {
        assert_eq!(data("\u{feff}data: x\n\n"), vec!["x"]);
    }

    #[test]
    fn invalid_utf8_is_repaired_and_the_repair_counts_against_the_limit() {
        // Four bad bytes fit a 10-byte line, but become 12 bytes of U+FFFD.
        let mut reader = SseReader::new(&b"data: \xff\xff\xff\xff\n\n"[..], 10);
        assert!(matches!(reader.next_event(), Err(SseError::TooLarge(10))));
        let mut reader = SseReader::new(&b"data: a\xffb\n\n"[..], 100);
        assert_eq!(reader.next_event().unwrap().unwrap().data, "a\u{fffd}b");
    }

    #[test]
    fn an_event_over_the_limit_fails_without_buffering_it_all() {
        let big = format!("data: {}\n\n", "x".repeat(200));
        let mut reader = SseReader::new(big.as_bytes(), 100);
        assert!(matches!(reader.next_event(), Err(SseError::TooLarge(100))));
        // Many small data lines add up to the same event.
        let many = "data: 0123456789\n".repeat(20) + "\n";
        let mut reader = SseReader::new(many.as_bytes(), 100);
        assert!(matches!(reader.next_event(), Err(SseError::TooLarge(100))));
        // A line that never ends is bounded too.
        let endless = std::io::repeat(b'x').take(10_000);
        let mut reader = SseReader::new(BufReader::new(endless), 100);
        assert!(matches!(reader.next_event(), Err(SseError::TooLarge(100))));
    }

    #[test]
    fn events_up_to_the_limit_pass() {
        let text = format!("data: {}\n\n", "x".repeat(90));
        let mut reader = SseReader::new(text.as_bytes(), 100);
        assert_eq!(reader.next_event().unwrap().unwrap().data.len(), 90);
    }
}
