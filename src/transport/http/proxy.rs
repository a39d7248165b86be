//! HTTP proxies: which requests go through one, and the CONNECT tunnel they go through.
//!
//! Every proxied request, http or https, goes through a CONNECT tunnel opened on a socket of
//! our connector, so a cancel shuts the tunnel down like any direct connection. The proxy is
//! reached over plain TCP (`http://`) or TLS (`https://`, verified like any server);
//! credentials in its URL (`http://user:password@proxy:3128`, percent-encoded) are sent as
//! `Proxy-Authorization: Basic` on the CONNECT and never appear in a message: the proxy is
//! always shown without them.

use crate::error::{Error, Result};
use crate::protocol::base64::base64;
use std::fmt;
use std::io::Write;
use std::sync::Arc;
use ureq::http::Uri;
use ureq::unversioned::resolver::{DefaultResolver, ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{ConnectionDetails, NextTimeout, Transport, TransportAdapter};

/// One proxy.
#[derive(Clone)]
pub struct Proxy {
    https: bool,
    host: String,
    port: u16,
    /// The `Proxy-Authorization` value, if the URL had credentials.
    authorization: Option<String>,
}

impl Proxy {
    /// Parses `http://[user[:password]@]host[:port]` (or https://). `source` names where the
    /// URL came from in messages, which never quote the credentials.
    pub fn parse(url: &str, source: &str) -> Result<Proxy> {
        let url = url.trim();
        let (scheme, rest) = match url.split_once("://") {
            Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
            None => ("http".to_owned(), url),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((userinfo, hostport)) => (Some(userinfo), hostport),
            None => (None, authority),
        };
        let bad = |why: &str| {
            Error::invalid(format!(
                "{source}: invalid proxy URL {}: {why}",
                shown(&scheme, hostport)
            ))
        };
        let https = match scheme.as_str() {
            "http" => false,
            "https" => true,
            _ => return Err(bad("the scheme must be http or https")),
        };
        let parsed: Uri = format!("{scheme}://{hostport}/")
            .parse()
            .map_err(|_| bad("no valid host"))?;
        let host = parsed.host().unwrap_or_default();
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let authorization = match userinfo {
            Some(userinfo) => {
                let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                let user = percent_decode(user).ok_or_else(|| bad("bad %-escape in the user"))?;
                let password =
                    percent_decode(password).ok_or_else(|| bad("bad %-escape in the password"))?;
                Some(format!(
                    "Basic {}",
                    base64(format!("{user}:{password}").as_bytes())
                ))
            }
            None => None,
        };
        Ok(Proxy {
            https,
            host: host.to_owned(),
            port: parsed.port_u16().unwrap_or(if https { 443 } else { 80 }),
            authorization,
        })
    }

    /// The name to verify the proxy's certificate against, for an https proxy.
    pub fn tls_host(&self) -> Option<&str> {
        self.https.then_some(self.host.as_str())
    }

    fn uri(&self) -> Uri {
        // Checked in parse.
        format!("http://{}:{}/", self.host, self.port)
            .parse()
            .expect("a proxy URI parsed before")
    }
}

/// The proxy as messages show it: scheme, host and port, never the credentials.
impl fmt::Display for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

impl fmt::Debug for Proxy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Proxy({self})")
    }
}

fn shown(scheme: &str, hostport: &str) -> String {
    format!("{scheme}://{hostport}")
}

/// Which proxy, if any, each request uses.
#[derive(Debug, Default)]
pub struct Routes {
    https: Option<Proxy>,
    http: Option<Proxy>,
    no_proxy: Vec<String>,
}

impl Routes {
    /// From the explicit proxy (for every request), the explicit no-proxy list, and, if
    /// `from_env`, the environment: HTTPS_PROXY for https targets, HTTP_PROXY for http ones
    /// (ALL_PROXY for both; lower case first, as curl), and NO_PROXY. The explicit setting
    /// wins.
    pub fn new(proxy: Option<&str>, no_proxy: Option<&str>, from_env: bool) -> Result<Routes> {
        let mut routes = Routes::default();
        if from_env {
            routes.https = env_proxy(&["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"])?;
            routes.http = env_proxy(&["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"])?;
            if let Some(list) = env_value(&["no_proxy", "NO_PROXY"]) {
                routes.no_proxy = parse_no_proxy(&list.1);
            }
        }
        if let Some(url) = proxy.filter(|url| !url.trim().is_empty()) {
            let proxy = Proxy::parse(url, "proxy")?;
            routes.https = Some(proxy.clone());
            routes.http = Some(proxy);
        }
        if let Some(list) = no_proxy {
            routes.no_proxy = parse_no_proxy(list);
        }
        Ok(routes)
    }

    /// The proxy for a request to `uri`, if it takes one.
    pub fn for_uri(&self, uri: &Uri) -> Option<&Proxy> {
        let proxy = match uri.scheme_str() {
            Some("https") => self.https.as_ref(),
            _ => self.http.as_ref(),
        }?;
        let host = uri.host()?;
        (!bypassed(&self.no_proxy, host)).then_some(proxy)
    }
}

fn env_value(names: &[&str]) -> Option<(String, String)> {
    names.iter().find_map(|name| {
        std::env::var(name)
            .ok()
            .filter(|value| !value.trim().is_empty())
            .map(|value| ((*name).to_owned(), value))
    })
}

fn env_proxy(names: &[&str]) -> Result<Option<Proxy>> {
    env_value(names)
        .map(|(name, url)| Proxy::parse(&url, &format!("the {name} environment variable")))
        .transpose()
}

/// curl's NO_PROXY: comma- or space-separated host names, domain suffixes (with or without a
/// leading dot or "*.") and IP addresses; `*` alone means every host.
fn parse_no_proxy(list: &str) -> Vec<String> {
    list.split([',', ' '])
        .map(|entry| {
            entry
                .trim()
                .trim_start_matches("*.")
                .trim_start_matches('.')
        })
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let entry = entry.trim_start_matches('[');
            // "host:port" entries: the port is ignored, as by most clients.
            let entry = match entry.split_once(']') {
                Some((ipv6, _)) => ipv6,
                None if entry.matches(':').count() == 1 => entry.split(':').next().unwrap_or(""),
                None => entry,
            };
            entry.to_ascii_lowercase()
        })
        .collect()
}

fn bypassed(no_proxy: &[String], host: &str) -> bool {
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    no_proxy.iter().any(|entry| {
        entry == "*"
            || host == *entry
            || (host.ends_with(entry.as_str())
                && host.as_bytes()[host.len() - entry.len() - 1] == b'.')
    })
}

/// Resolves the proxy's name instead of the target's when the request goes through a proxy:
/// the target may have no address outside the company network, and the proxy resolves it.
#[derive(Debug)]
pub struct ProxyResolver {
    pub routes: Arc<Routes>,
    pub inner: DefaultResolver,
}

impl Resolver for ProxyResolver {
    fn resolve(
        &self,
        uri: &Uri,
        config: &ureq::config::Config,
        timeout: NextTimeout,
    ) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        match self.routes.for_uri(uri) {
            Some(proxy) => self.inner.resolve(&proxy.uri(), config, timeout),
            None => self.inner.resolve(uri, config, timeout),
        }
    }
}

/// Asks the proxy at the other end of `transport` for a tunnel to the request's host.
pub fn tunnel(
    proxy: &Proxy,
    details: &ConnectionDetails,
    transport: Box<dyn Transport>,
) -> std::result::Result<Box<dyn Transport>, ureq::Error> {
    let uri = details.uri;
    let host = uri.host().unwrap_or_default();
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    let target = format!("{host}:{port}");
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(authorization) = &proxy.authorization {
        request.push_str(&format!("Proxy-Authorization: {authorization}\r\n"));
    }
    request.push_str("\r\n");
    let mut adapter = TransportAdapter::new(transport, details.current_time.clone());
    adapter.set_timeout(details.timeout);
    adapter.write_all(request.as_bytes())?;
    adapter.flush()?;
    let mut transport = adapter.into_inner();
    // The answer's head; nothing else comes before our first byte through the tunnel.
    let head = loop {
        let buffers = transport.buffers();
        if let Some(end) = find(buffers.input(), b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffers.input()[..end]).into_owned();
            buffers.input_consume(end + 4);
            break head;
        }
        if buffers.input().len() > 16 * 1024 {
            return Err(proxy_failed(proxy, &target, "an answer head over 16 KiB"));
        }
        if !transport.await_input(details.timeout)? {
            return Err(proxy_failed(proxy, &target, "it closed the connection"));
        }
    };
    let status_line = head.lines().next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (version, code) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if !version.starts_with("HTTP/1.") || code.len() != 3 {
        return Err(proxy_failed(proxy, &target, "its answer is not HTTP"));
    }
    if !code.starts_with('2') {
        let status = status_line.chars().filter(|c| !c.is_control()).take(200);
        let status: String = status.collect();
        return Err(proxy_failed(
            proxy,
            &target,
            &format!("it answered \"{status}\""),
        ));
    }
    Ok(transport)
}

fn proxy_failed(proxy: &Proxy, target: &str, why: &str) -> ureq::Error {
    ureq::Error::ConnectProxyFailed(format!(
        "the proxy {proxy} opened no tunnel to {target}: {why}"
    ))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_decoded_and_never_shown() {
        let proxy = Proxy::parse("http://us%40er:s3cr%3At@proxy.corp:3128", "proxy").unwrap();
        assert_eq!(proxy.to_string(), "http://proxy.corp:3128");
        assert_eq!(
            proxy.authorization.as_deref(),
            Some(format!("Basic {}", base64(b"us@er:s3cr:t")).as_str())
        );
        let error = Proxy::parse("socks5://user:s3cret@proxy:1080", "proxy").unwrap_err();
        assert!(!error.message.contains("s3cret"), "{}", error.message);
        assert_eq!(Proxy::parse("proxy.corp", "proxy").unwrap().port, 80);
        assert_eq!(
            Proxy::parse("https://proxy.corp", "proxy").unwrap().port,
            443
        );
    }

    #[test]
    fn no_proxy_matches_hosts_and_domains() {
        let list = parse_no_proxy("localhost, .corp.example,*.internal 10.0.0.1,[::1]:8080");
        assert!(bypassed(&list, "localhost"));
        assert!(bypassed(&list, "a.corp.example"));
        assert!(bypassed(&list, "corp.example"));
        assert!(bypassed(&list, "x.internal"));
        assert!(bypassed(&list, "10.0.0.1"));
        assert!(bypassed(&list, "[::1]"));
        assert!(!bypassed(&list, "notcorp.example"));
        assert!(!bypassed(&list, "example.com"));
        assert!(bypassed(&parse_no_proxy("*"), "anything"));
    }
}
