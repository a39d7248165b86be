//! URLs in messages: errors and the log may end up in a host's log files, so they name an
//! endpoint without its credentials. Used by the HTTP transport and the OAuth flow alike.

use ureq::http::Uri;

/// The URL as messages show it: scheme, host, port and path; never its userinfo, its query or
/// its fragment (`?key=...` is a common place for an API key).
pub fn display_url(url: &str) -> String {
    match url.parse::<Uri>() {
        Ok(uri) if uri.host().is_some() => {
            let scheme = uri.scheme_str().unwrap_or("");
            let host = uri.host().unwrap_or("");
            let port = uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default();
            format!("{scheme}://{host}{port}{}", uri.path())
        }
        // Not a URL we can take apart: show nothing of it rather than guess where its
        // secrets are.
        _ => "(the URL given)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_shown_without_userinfo_query_or_fragment() {
        assert_eq!(
            display_url("http://user:pw@example.com:8080/mcp?key=k1#frag"),
            "http://example.com:8080/mcp"
        );
        assert_eq!(
            display_url("https://example.com/mcp"),
            "https://example.com/mcp"
        );
        assert_eq!(display_url("not a url @ all"), "(the URL given)");
    }
}
