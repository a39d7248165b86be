//! Just enough HTTP/1.1 for the test server, on std::net: requests with a Content-Length body
//! (what clients send to an MCP endpoint), and responses with a Content-Length body or a
//! chunked body that is written as it is produced (an SSE stream). Connections are kept alive.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// Limits that keep a broken client from making us buffer without bound.
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// In arrival order, names as sent.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    /// The first header of that name (names are case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// How many times a header appears.
    pub fn header_count(&self, name: &str) -> usize {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .count()
    }
}

/// Reads the next request; `None` when the client closed the connection between requests.
pub fn read_request(reader: &mut BufReader<TcpStream>) -> io::Result<Option<HttpRequest>> {
    let mut head_bytes = 0;
    let mut line = String::new();
    // Blank lines before a request line are allowed (RFC 9112 section 2.2).
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    head_bytes += line.len();
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path), Some(_version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(bad(format!("bad request line {line:?}")));
    };
    let (method, path) = (method.to_owned(), path.to_owned());

    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(bad("the connection closed inside the request head".into()));
        }
        head_bytes += line.len();
        if head_bytes > MAX_HEAD_BYTES {
            return Err(bad("the request head is too long".into()));
        }
        let text = line.trim_end_matches(['\r', '\n']);
        if text.is_empty() {
            break;
        }
        let Some((name, value)) = text.split_once(':') else {
            return Err(bad(format!("bad header line {text:?}")));
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }

    let mut request = HttpRequest {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if request.header("transfer-encoding").is_some() {
        return Err(bad("chunked request bodies are not supported".into()));
    }
    let length = match request.header("content-length") {
        Some(value) => value
            .parse::<usize>()
            .map_err(|_| bad(format!("bad Content-Length {value:?}")))?,
        None => 0,
    };
    if length > MAX_BODY_BYTES {
        return Err(bad("the request body is too large".into()));
    }
    request.body = vec![0; length];
    reader.read_exact(&mut request.body)?;
    Ok(Some(request))
}

fn bad(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// Writes a whole response with a Content-Length body.
pub fn write_response(
    stream: &mut impl Write,
    status: u16,
    headers: &[(&str, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut head = status_line(status);
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes)?;
    stream.flush()
}

/// Starts a response whose body follows in chunks.
pub fn start_chunked(
    stream: &mut impl Write,
    status: u16,
    headers: &[(&str, String)],
) -> io::Result<()> {
    let mut head = status_line(status);
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("Transfer-Encoding: chunked\r\n\r\n");
    stream.write_all(head.as_bytes())?;
    stream.flush()
}

pub fn write_chunk(stream: &mut impl Write, bytes: &[u8]) -> io::Result<()> {
    if bytes.is_empty() {
        return Ok(()); // an empty chunk would end the body
    }
    let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
    chunk.extend_from_slice(bytes);
    chunk.extend_from_slice(b"\r\n");
    stream.write_all(&chunk)?;
    stream.flush()
}

pub fn end_chunked(stream: &mut impl Write) -> io::Result<()> {
    stream.write_all(b"0\r\n\r\n")?;
    stream.flush()
}

fn status_line(status: u16) -> String {
    let reason = match status {
        200 => "OK",
        202 => "Accepted",
        307 => "Temporary Redirect",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        415 => "Unsupported Media Type",
        500 => "Internal Server Error",
        _ => "Status",
    };
    format!("HTTP/1.1 {status} {reason}\r\n")
}
