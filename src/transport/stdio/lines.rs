//! Reading newline-delimited frames with a size limit, so a server that never sends a newline
//! cannot make us buffer without bound.

use std::io::{self, BufRead};

#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line is in the buffer, without its newline (or the last line before EOF).
    Complete,
    /// The line passed the limit. Reported as soon as it does, not at its end (a line that
    /// never ends must still be noticed); the rest of it, up to its newline, is skipped.
    TooLong,
    Eof,
}

/// Reads one line into `buf` (cleared first), holding at most `max` bytes of it. A line over
/// the limit is read to its end and thrown away before `TooLong` is returned.
#[cfg(test)]
pub fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    let mut lines = LineReader::new(max);
    std::mem::swap(&mut lines.line, buf);
    lines.line.clear();
    let result = lines.read(reader);
    if matches!(result, Ok(Line::TooLong)) {
        lines.skip_rest(reader)?;
    }
    std::mem::swap(&mut lines.line, buf);
    result
}

/// What a line buffer keeps between lines: a longer line's buffer is given back once handled.
const KEEP_BYTES: usize = 64 * 1024;

/// Reads lines one after another, keeping a partial line between calls: when the reader fails
/// (`WouldBlock` from a non-blocking pipe, say), the next `read` goes on where this one stopped.
pub struct LineReader {
    line: Vec<u8>,
    max: usize,
    /// The line in progress passed the limit: its bytes are skipped up to its newline.
    discarding: bool,
    /// `line` holds a whole line, to be cleared before the next one is read.
    complete: bool,
}

impl LineReader {
    pub fn new(max: usize) -> LineReader {
        LineReader {
            line: Vec::new(),
            max,
            discarding: false,
            complete: false,
        }
    }

    /// The line `read` last returned as `Complete`, without its newline.
    pub fn line(&self) -> &[u8] {
        &self.line
    }

    /// Gives back the memory of a long line once it was handled, so that a large result costs
    /// its size once more only while it is being read, and an idle connection holds little.
    pub fn shrink(&mut self) {
        if self.line.capacity() > KEEP_BYTES {
            self.line = Vec::new();
        }
    }

    /// Reads up to the end of the next line (or of the stream). After `TooLong`, the next call
    /// first skips the rest of the long line: the stream recovers at its newline.
    pub fn read(&mut self, reader: &mut impl BufRead) -> io::Result<Line> {
        if std::mem::take(&mut self.complete) {
            self.line.clear();
        }
        self.skip_rest(reader)?;
        loop {
            let chunk = match reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                self.complete = true;
                return Ok(match self.line.is_empty() {
                    true => Line::Eof,
                    false => Line::Complete,
                });
            }
            let newline = memchr::memchr(b'\n', chunk);
            let take = newline.map_or(chunk.len(), |i| i + 1);
            let body = newline.unwrap_or(chunk.len());
            if self.line.len() + body > self.max {
                self.line.clear();
                self.line.shrink_to(KEEP_BYTES);
                reader.consume(take);
                self.discarding = newline.is_none();
                return Ok(Line::TooLong);
            }
            self.line.extend_from_slice(&chunk[..body]);
            reader.consume(take);
            if newline.is_some() {
                self.complete = true;
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                return Ok(Line::Complete);
            }
        }
    }

    /// Skips what is left of a line over the limit, up to and with its newline (or EOF).
    fn skip_rest(&mut self, reader: &mut impl BufRead) -> io::Result<()> {
        while self.discarding {
            let chunk = match reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            match memchr::memchr(b'\n', chunk) {
                Some(i) => {
                    reader.consume(i + 1);
                    self.discarding = false;
                }
                None if chunk.is_empty() => self.discarding = false,
                None => {
                    let n = chunk.len();
                    reader.consume(n);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufReader;

    fn lines(input: &[u8], max: usize) -> Vec<(Line, String)> {
        // A tiny buffer makes lines span many fill_buf calls.
        let mut reader = BufReader::with_capacity(3, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let line = read_line(&mut reader, &mut buf, max).unwrap();
            if line == Line::Eof {
                return out;
            }
            out.push((line, String::from_utf8_lossy(&buf).into_owned()));
        }
    }

    #[test]
    fn splits_lines_and_strips_cr() {
        let got = lines(b"ab\r\n\ncdef\nlast", 10);
        let want = [
            ("ab", Line::Complete),
            ("", Line::Complete),
            ("cdef", Line::Complete),
            ("last", Line::Complete),
        ];
        assert_eq!(got.len(), want.len());
        for ((line, text), (wtext, wline)) in got.iter().zip(want) {
            assert_eq!((line, text.as_str()), (&wline, wtext));
        }
    }

    #[test]
    fn too_long_line_is_skipped_and_reading_goes_on() {
        let got = lines(b"0123456789abc\nok\n", 5);
        assert_eq!(got[0].0, Line::TooLong);
        assert_eq!(got[1], (Line::Complete, "ok".to_owned()));
        assert_eq!(
            lines(b"12345\n", 5)[0],
            (Line::Complete, "12345".to_owned())
        );
        assert_eq!(lines(b"123456", 5)[0].0, Line::TooLong);
    }

    /// A reader that hands out its bytes a few at a time and says WouldBlock in between.
    struct Trickle<'a> {
        bytes: &'a [u8],
        blocked: bool,
    }

    impl io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            self.blocked = !self.blocked;
            if self.blocked && !self.bytes.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = self.bytes.len().min(out.len()).min(2);
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_line_interrupted_by_would_block_goes_on_where_it_stopped() {
        let input = Trickle {
            bytes: b"first line\n0123456789abc\nlast",
            blocked: false,
        };
        let mut reader = BufReader::with_capacity(3, input);
        let mut lines = LineReader::new(10);
        let mut got = Vec::new();
        loop {
            match lines.read(&mut reader) {
                Ok(Line::Eof) => break,
                Ok(line) => got.push((line, String::from_utf8_lossy(lines.line()).into_owned())),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(
            got,
            [
                (Line::Complete, "first line".to_owned()),
                (Line::TooLong, String::new()),
                (Line::Complete, "last".to_owned()),
            ]
        );
    }

    /// A server that writes one endless line: the limit is reported as soon as it is passed,
    /// not at a newline that never comes; the rest is skipped and the next line is read.
    #[test]
    fn a_line_without_end_is_reported_as_soon_as_it_passes_the_limit() {
        let mut stream = Vec::new();
        stream.resize(100, b'x');
        let input = Trickle {
            bytes: &stream,
            blocked: false,
        };
        let mut reader = BufReader::with_capacity(7, input);
        let mut lines = LineReader::new(10);
        let first = loop {
            match lines.read(&mut reader) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => break other.unwrap(),
            }
        };
        assert_eq!(first, Line::TooLong);
        assert!(
            reader.get_ref().bytes.len() > 50,
            "reported before the stream ended"
        );

        let mut reader = BufReader::with_capacity(7, &b"xxxxxxxxxxxxxxxxxxxxxx\nok\n"[..]);
        let mut lines = LineReader::new(10);
        assert_eq!(lines.read(&mut reader).unwrap(), Line::TooLong);
        assert_eq!(lines.read(&mut reader).unwrap(), Line::Complete);
        assert_eq!(lines.line(), b"ok", "the stream recovers at the newline");
        assert_eq!(lines.read(&mut reader).unwrap(), Line::Eof);
    }
}
