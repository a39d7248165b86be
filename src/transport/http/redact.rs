//! Keeping credentials out of messages: what the transport says (errors, the log) may end up in
//! a host's log files, so it never quotes a URL's userinfo or query, a header value of the
//! host's, or the session id.
//!
//! Two layers: messages name the endpoint with [`display_url`] (`crate::display_url`) and never format a header value
//! or the session id; and every error leaving the transport goes through [`Secrets::scrub`],
//! which replaces any known secret still in its text (one a server echoed in an error body, or
//! one inside a library's error text) with `[redacted]`.

pub use crate::display_url::display_url;
use crate::error::Error;
use crate::protocol::jsonrpc::Incoming;
use crate::sync::lock;
use crate::transport::Inbound;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard};

const REDACTED: &str = "[redacted]";
/// Shorter values are not secrets worth the noise of redacting them from every message.
const MIN_SECRET_LEN: usize = 4;

/// The secrets of one transport, and the scrubbing of messages against them.
#[derive(Default)]
pub struct Secrets {
    known: Mutex<Vec<String>>,
}

impl Secrets {
    /// The secrets of a configuration: the URL's userinfo and query, and every header value.
    pub fn new(url: &str, headers: &[(String, String)]) -> Secrets {
        let secrets = Secrets::default();
        secrets.add_url(url);
        for (_, value) in headers {
            secrets.add(value);
            // "Bearer <token>", "Basic <credentials>": the credential alone, too.
            if let Some((_, credential)) = value.split_once(' ') {
                secrets.add(credential.trim());
            }
            // "a=1; b=2" (Cookie): each value alone.
            for item in value.split(';') {
                if let Some((_, value)) = item.split_once('=') {
                    secrets.add(value.trim());
                }
            }
        }
        secrets
    }

    /// Learns the secrets of a URL (the server's, or a proxy's): its userinfo and query.
    pub fn add_url(&self, url: &str) {
        if let Some(userinfo) = userinfo(url) {
            self.add(userinfo);
            if let Some((user, password)) = userinfo.split_once(':') {
                self.add(password);
                self.add(user);
            }
        }
        if let Some((_, query)) = url.split_once('?') {
            let query = query.split('#').next().unwrap_or_default();
            self.add(query);
            for pair in query.split('&') {
                self.add(pair.split_once('=').map_or(pair, |(_, value)| value));
            }
        }
    }

    /// Learns one more secret (a session id the server handed out).
    pub fn add(&self, secret: &str) {
        if secret.len() < MIN_SECRET_LEN {
            return;
        }
        let mut known = self.lock();
        if !known.iter().any(|s| s == secret) {
            known.push(secret.to_owned());
            // Longest first, so a secret containing another is replaced whole.
            known.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }

    /// The error with every known secret taken out of its message, data and reason.
    pub fn scrub(&self, mut error: Error) -> Error {
        let known = self.lock();
        if known.is_empty() {
            return error;
        }
        error.message = scrub_text(&known, error.message);
        if let Some(reason) = error.cancel_reason.take() {
            error.cancel_reason = Some(scrub_text(&known, reason));
        }
        if let Some(data) = error.data.as_mut() {
            scrub_value(&known, data);
        }
        error
    }

    fn lock(&self) -> MutexGuard<'_, Vec<String>> {
        lock(&self.known)
    }
}

/// The engine's side of the transport, with every error scrubbed on its way there.
pub struct Scrubbing {
    pub inner: Arc<dyn Inbound>,
    pub secrets: Arc<Secrets>,
}

impl Inbound for Scrubbing {
    /// A server's error answer is shown to the host as an error: it may echo what we sent.
    fn message(&self, message: Incoming) {
        let message = match message {
            Incoming::Response { id, mut frame } => {
                if let Some(error) = frame.get_mut("error") {
                    scrub_value(&self.secrets.lock(), error);
                }
                Incoming::Response { id, frame }
            }
            Incoming::Invalid(why) => Incoming::Invalid(scrub_text(&self.secrets.lock(), why)),
            other => other,
        };
        self.inner.message(message)
    }

    fn bad_frame(&self, error: Error, fatal_for_pending: bool) {
        self.inner
            .bad_frame(self.secrets.scrub(error), fatal_for_pending)
    }

    fn request_failed(&self, id: i64, error: Error) {
        self.inner.request_failed(id, self.secrets.scrub(error))
    }

    fn closed(&self, error: Error) {
        self.inner.closed(self.secrets.scrub(error))
    }
}

/// The `user:password` part of `scheme://user:password@host/...`, found by hand: a URL that
/// does not parse may still carry one.
fn userinfo(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next()?;
    authority.rsplit_once('@').map(|(userinfo, _)| userinfo)
}

fn scrub_text(known: &[String], text: String) -> String {
    if !known.iter().any(|secret| text.contains(secret.as_str())) {
        return text;
    }
    known
        .iter()
        .fold(text, |text, secret| text.replace(secret.as_str(), REDACTED))
}

fn scrub_value(known: &[String], value: &mut Value) {
    match value {
        Value::String(text) => *text = scrub_text(known, std::mem::take(text)),
        Value::Array(items) => items.iter_mut().for_each(|v| scrub_value(known, v)),
        Value::Object(map) => map.values_mut().for_each(|v| scrub_value(known, v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_secrets_are_scrubbed_from_errors() {
        let secrets = Secrets::new(
            "http://alice:s3cret-pw@host/mcp?api_key=k-12345",
            &[
                ("Authorization".into(), "Bearer tok-abcdef".into()),
                ("Cookie".into(), "a=ck-one; b=ck-two".into()),
            ],
        );
        secrets.add("session-0001");
        let mut error = Error::transport(
            "alice:s3cret-pw tok-abcdef k-12345 session-0001 and s3cret-pw alone, ck-two"
                .to_owned(),
        );
        error.data = Some(serde_json::json!({"echo": ["Bearer tok-abcdef"]}));
        let error = secrets.scrub(error);
        for secret in [
            "s3cret-pw",
            "tok-abcdef",
            "k-12345",
            "session-0001",
            "alice",
            "ck-two",
        ] {
            assert!(!error.message.contains(secret), "{}", error.message);
            assert!(!error.data.as_ref().unwrap().to_string().contains(secret));
        }
    }

    #[test]
    fn userinfo_is_found_even_in_urls_that_do_not_parse() {
        assert_eq!(userinfo("http://u:p w@h/x"), Some("u:p w"));
        assert_eq!(userinfo("http://h/x@y"), None);
    }
}
