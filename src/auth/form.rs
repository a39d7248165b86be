//! The flow's plumbing: URLs (encoding, queries, origins, loopback), and the JSON and form
//! requests to the authorization server, made with the transport's agent (same proxy, TLS
//! trust and socket tracking: aborting the call's exchange ends them).

use crate::display_url::display_url;
use crate::error::{Error, Result, Status};
use serde_json::Value;
use std::io::Read;
use std::net::IpAddr;
use std::time::Duration;
use ureq::http::Uri;

/// The most bytes read from an authorization server's answer (see `mcpc::limits`).
pub const ANSWER_LIMIT: usize = 256 * 1024;
/// How long one request to the authorization server may take (see `mcpc::limits`).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// An error of the flow: UNAUTHORIZED, as every way the flow can fail leaves the call without
/// credentials (the caller adds the challenge).
pub fn failed(message: impl Into<String>) -> Error {
    Error::new(Status::Unauthorized, message)
}

/// `application/x-www-form-urlencoded` / query component encoding (unreserved kept).
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// Decodes a query or form component (`+` is a space).
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() && text.is_char_boundary(i + 3) => {
                match u8::from_str_radix(&text[i + 1..i + 3], 16) {
                    Ok(byte) => {
                        out.push(byte);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `a=1&b=2` from pairs.
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(name, value)| format!("{}={}", encode(name), encode(value)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The query parameters of a URL (the first of each name).
pub fn query_params(url: &str) -> Vec<(String, String)> {
    let without_fragment = url.split('#').next().unwrap_or_default();
    let Some((_, query)) = without_fragment.split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

pub fn param<'a>(params: &'a [(String, String)], name: &str) -> Option<&'a str> {
    params
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, value)| value.as_str())
}

/// A URL taken apart: scheme and host lower case, the port made explicit, the path.
pub struct Parts {
    pub scheme: String,
    pub host: String,
    pub port: u16,
    pub path: String,
}

pub fn parts(url: &str) -> Option<Parts> {
    let uri: Uri = url.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let host = uri.host()?.to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(match scheme.as_str() {
        "https" => 443,
        _ => 80,
    });
    Some(Parts {
        scheme,
        host,
        port,
        path: uri.path().to_owned(),
    })
}

/// `scheme://host[:port]` as written in the URL (for well-known URLs).
pub fn origin(url: &str) -> Option<String> {
    let uri: Uri = url.parse().ok()?;
    Some(format!(
        "{}://{}",
        uri.scheme_str()?,
        uri.authority()?.as_str()
    ))
}

/// The host is this machine: `localhost`, 127.0.0.0/8 or ::1.
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Authorization endpoints must be HTTPS, except on this machine.
pub fn require_secure(url: &str, what: &str) -> Result<()> {
    match parts(url) {
        Some(p) if p.scheme == "https" => Ok(()),
        Some(p) if p.scheme == "http" && is_loopback_host(&p.host) => Ok(()),
        Some(_) => Err(failed(format!(
            "the {what} {} is not HTTPS (only loopback may use http)",
            display_url(url)
        ))),
        None => Err(failed(format!("the {what} is not a valid URL"))),
    }
}

/// What a GET for a JSON document found.
pub enum Fetched {
    Document(Value),
    /// Nothing there: a 4xx or 5xx, or a body that is not a JSON object.
    Absent,
    /// A redirect, which is not followed: the error to report if no other place has it.
    Redirected(Error),
}

/// A JSON document fetched by GET.
pub fn get_json(agent: &ureq::Agent, url: &str) -> Result<Fetched> {
    let response = agent
        .get(url)
        .config()
        .timeout_global(Some(REQUEST_TIMEOUT))
        .build()
        .header("Accept", "application/json")
        .call()
        .map_err(|e| unreachable_error(url, e))?;
    let status = response.status();
    if status.is_redirection() {
        return Ok(Fetched::Redirected(redirected(url, status.as_u16())));
    }
    if !status.is_success() {
        return Ok(Fetched::Absent);
    }
    Ok(match read_json(url, response.into_body())? {
        Some(document) if document.is_object() => Fetched::Document(document),
        _ => Fetched::Absent,
    })
}

/// What an authorization server answered to a POST.
pub struct Answer {
    pub status: u16,
    /// The body as JSON (`Null` if it is not JSON).
    pub json: Value,
    /// The `DPoP-Nonce` header, if any (RFC 9449 section 8).
    pub dpop_nonce: Option<String>,
}

/// POSTs a form (token requests), with HTTP Basic client authentication and a DPoP proof
/// when given.
pub fn post_form(
    agent: &ureq::Agent,
    url: &str,
    body: &str,
    basic: Option<&str>,
    dpop_proof: Option<&str>,
) -> Result<Answer> {
    let mut request = agent
        .post(url)
        .config()
        .timeout_global(Some(REQUEST_TIMEOUT))
        .build()
        .header("Accept", "application/json")
        .header("Content-Type", "application/x-www-form-urlencoded");
    if let Some(credentials) = basic {
        request = request.header("Authorization", format!("Basic {credentials}"));
    }
    if let Some(proof) = dpop_proof {
        request = request.header(super::dpop::DPOP_HEADER, proof);
    }
    let response = request.send(body).map_err(|e| unreachable_error(url, e))?;
    answer(url, response)
}

/// POSTs a JSON document (dynamic client registration).
pub fn post_json(agent: &ureq::Agent, url: &str, body: &Value) -> Result<Answer> {
    let response = agent
        .post(url)
        .config()
        .timeout_global(Some(REQUEST_TIMEOUT))
        .build()
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .map_err(|e| unreachable_error(url, e))?;
    answer(url, response)
}

/// A POST's answer; a redirect is refused (a token request must never go anywhere else).
fn answer(url: &str, response: ureq::http::Response<ureq::Body>) -> Result<Answer> {
    let status = response.status();
    if status.is_redirection() {
        return Err(redirected(url, status.as_u16()));
    }
    let dpop_nonce = response
        .headers()
        .get(super::dpop::NONCE_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    Ok(Answer {
        status: status.as_u16(),
        dpop_nonce,
        json: read_json(url, response.into_body())?.unwrap_or(Value::Null),
    })
}

/// The body as JSON (`None` if it is not JSON); an error if it is larger than the limit or
/// cannot be read to its end.
fn read_json(url: &str, body: ureq::Body) -> Result<Option<Value>> {
    let mut bytes = Vec::new();
    body.into_reader()
        .take(ANSWER_LIMIT as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            failed(format!(
                "cannot read the answer of {}: {e}",
                display_url(url)
            ))
        })?;
    if bytes.len() > ANSWER_LIMIT {
        return Err(failed(format!(
            "the answer of {} is larger than {} KiB; not reading it",
            display_url(url),
            ANSWER_LIMIT / 1024
        )));
    }
    Ok(serde_json::from_slice(&bytes).ok())
}

fn redirected(url: &str, status: u16) -> Error {
    failed(format!(
        "{} answered with a redirect (HTTP {status}), which is not followed",
        display_url(url)
    ))
}

fn unreachable_error(url: &str, error: ureq::Error) -> Error {
    let why = match &error {
        ureq::Error::Timeout(what) => format!("timed out ({what})"),
        ureq::Error::HostNotFound => "host not found".to_owned(),
        other => other.to_string(),
    };
    failed(format!("cannot reach {}: {why}", display_url(url)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips() {
        let text = "a b&c=d/é~";
        assert_eq!(encode(text), "a%20b%26c%3Dd%2F%C3%A9~");
        assert_eq!(decode(&encode(text)), text);
        assert_eq!(decode("a+b%2"), "a b%2");
    }

    #[test]
    fn query_params_are_decoded() {
        let params = query_params("http://127.0.0.1/cb?code=x%2By&state=s+1&iss=#frag");
        assert_eq!(param(&params, "code"), Some("x+y"));
        assert_eq!(param(&params, "state"), Some("s 1"));
        assert_eq!(param(&params, "iss"), Some(""));
        assert_eq!(param(&params, "nope"), None);
    }

    #[test]
    fn loopback_and_https_rules() {
        assert!(require_secure("https://as.example/token", "token endpoint").is_ok());
        assert!(require_secure("http://localhost:8080/token", "token endpoint").is_ok());
        assert!(require_secure("http://127.0.0.2/token", "token endpoint").is_ok());
        assert!(require_secure("http://[::1]:9/token", "token endpoint").is_ok());
        assert!(require_secure("http://as.example/token", "token endpoint").is_err());
        assert!(require_secure("ftp://as.example/token", "token endpoint").is_err());
    }
}
