//! Reading newline-delimited frames with a size limit, so a server that never sends a newline
//! cannot make us buffer without bound.

use std::io::{self, BufRead};

#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line is in the buffer, without its newline (or the last line before EOF).
    Complete,
    /// The line passed the limit; it was read to its end and thrown away.
    TooLong,
    Eof,
}

/// Reads one line into `buf` (cleared first), holding at most `max` bytes of it.
pub fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    buf.clear();
    let mut discarding = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(match (discarding, buf.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Eof,
                (false, false) => Line::Complete,
            });
        }
        let newline = memchr::memchr(b'\n', chunk);
        let take = newline.map_or(chunk.len(), |i| i + 1);
        if !discarding {
            let body = newline.unwrap_or(chunk.len());
            if buf.len() + body > max {
                discarding = true;
                buf.clear();
                buf.shrink_to(64 * 1024);
            } else {
                buf.extend_from_slice(&chunk[..body]);
            }
        }
        reader.consume(take);
        if newline.is_some() {
            if discarding {
                return Ok(Line::TooLong);
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Line::Complete);
        }
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
}
