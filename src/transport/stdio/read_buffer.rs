//! The buffer stdout is read through: small while the connection is idle, grown while reads
//! fill it (a large result streams through in few system calls), and given back once the
//! connection is idle again, so that a thousand idle connections hold a few KiB each.

use std::io::{self, BufRead, Read};

/// The size of an idle connection's buffer.
pub const SMALL: usize = 4 * 1024;
/// The largest the buffer grows to.
pub const LARGE: usize = 64 * 1024;

pub struct ReadBuffer<R> {
    inner: R,
    /// Its whole length is initialized memory that reads may fill.
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    /// The last read filled the buffer: the next one gets a larger one.
    last_read_full: bool,
}

impl<R: Read> ReadBuffer<R> {
    pub fn new(inner: R) -> ReadBuffer<R> {
        ReadBuffer {
            inner,
            buf: Vec::new(),
            pos: 0,
            filled: 0,
            last_read_full: false,
        }
    }

    /// The bytes read and not yet consumed.
    pub fn buffer(&self) -> &[u8] {
        &self.buf[self.pos..self.filled]
    }

    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// Whether the buffer is larger than an idle connection's.
    pub fn is_grown(&self) -> bool {
        self.buf.len() > SMALL
    }

    /// Gives the memory of a grown buffer back, when nothing is buffered.
    pub fn shrink(&mut self) {
        if self.is_grown() && self.pos == self.filled {
            self.buf = Vec::new();
            self.pos = 0;
            self.filled = 0;
            self.last_read_full = false;
        }
    }
}

impl<R: Read> Read for ReadBuffer<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let available = self.fill_buf()?;
            let n = available.len().min(out.len());
            out[..n].copy_from_slice(&available[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for ReadBuffer<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.filled {
            self.pos = 0;
            self.filled = 0;
            let size = match (self.buf.len(), self.last_read_full) {
                (0, _) => SMALL,
                (len, true) => (len * 2).min(LARGE),
                (len, false) => len,
            };
            if size != self.buf.len() {
                self.buf.resize(size, 0);
            }
            let n = self.inner.read(&mut self.buf)?;
            self.filled = n;
            self.last_read_full = n == self.buf.len();
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.filled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out what it holds, up to `per_read` bytes a read.
    struct Source {
        data: Vec<u8>,
        per_read: usize,
        reads: Vec<usize>,
    }

    impl Read for Source {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads.push(buf.len());
            let n = buf.len().min(self.per_read).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data.drain(..n);
            Ok(n)
        }
    }

    #[test]
    fn it_starts_small_grows_while_reads_fill_it_and_shrinks_when_drained() {
        let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let source = Source {
            data: data.clone(),
            per_read: usize::MAX,
            reads: Vec::new(),
        };
        let mut buffer = ReadBuffer::new(source);
        let mut got = Vec::new();
        buffer.read_to_end(&mut got).unwrap();
        assert_eq!(got, data);
        let reads = &buffer.get_mut().reads;
        assert_eq!(reads[..5], [SMALL, 2 * SMALL, 4 * SMALL, 8 * SMALL, LARGE]);
        assert!(reads.iter().all(|&size| size <= LARGE));
        assert!(buffer.is_grown());
        buffer.shrink();
        assert!(!buffer.is_grown());
        assert_eq!(buffer.buf.capacity(), 0, "the memory is given back");

        // Reads that never fill it keep it small.
        let source = Source {
            data: vec![1; 50_000],
            per_read: 100,
            reads: Vec::new(),
        };
        let mut buffer = ReadBuffer::new(source);
        buffer.read_to_end(&mut Vec::new()).unwrap();
        assert!(buffer.get_mut().reads.iter().all(|&size| size == SMALL));
    }
}
