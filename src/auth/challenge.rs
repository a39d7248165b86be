//! The server's `WWW-Authenticate` challenge (RFC 6750 section 3, RFC 9728 section 5.1): which
//! metadata to read, which scopes to ask for, and why the token was refused.

use serde_json::{json, Map, Value};

/// A 401 or 403 from the MCP server, as the host sees it in the error data of an UNAUTHORIZED
/// result (`{"httpStatus":401,"wwwAuthenticate":"...","resourceMetadata":"...","scope":"...",
/// "error":"..."}`, absent fields left out).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Challenge {
    /// 401 or 403.
    pub http_status: u16,
    /// The header as received (it holds no secret of ours).
    pub www_authenticate: Option<String>,
    /// `resource_metadata`: the Protected Resource Metadata URL (RFC 9728).
    pub resource_metadata: Option<String>,
    /// `scope`: what the request needs.
    pub scope: Option<String>,
    /// `error`, e.g. "invalid_token" or "insufficient_scope".
    pub error: Option<String>,
    pub error_description: Option<String>,
}

impl Challenge {
    /// Reads the Bearer challenge of a response's `WWW-Authenticate` header (if any).
    pub fn parse(http_status: u16, header: Option<&str>) -> Challenge {
        let mut challenge = Challenge {
            http_status,
            www_authenticate: header.map(str::to_owned),
            ..Challenge::default()
        };
        if let Some(params) = header.and_then(bearer_params) {
            for (name, value) in params {
                let slot = match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => &mut challenge.resource_metadata,
                    "scope" => &mut challenge.scope,
                    "error" => &mut challenge.error,
                    "error_description" => &mut challenge.error_description,
                    _ => continue,
                };
                slot.get_or_insert(value);
            }
        }
        challenge
    }

    /// A 403 that asks for more scopes (step-up authorization).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// The error data of an UNAUTHORIZED result.
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("httpStatus".into(), json!(self.http_status));
        let fields = [
            ("wwwAuthenticate", &self.www_authenticate),
            ("resourceMetadata", &self.resource_metadata),
            ("scope", &self.scope),
            ("error", &self.error),
            ("errorDescription", &self.error_description),
        ];
        for (name, value) in fields {
            if let Some(value) = value {
                map.insert(name.into(), json!(value));
            }
        }
        Value::Object(map)
    }
}

/// The auth-params of the `Bearer` (or `DPoP`) challenge in a header that may hold several challenges
/// (`Basic realm="x", Bearer scope="a b", error="insufficient_scope"`).
fn bearer_params(header: &str) -> Option<Vec<(String, String)>> {
    let mut tokens = Tokens {
        rest: header.trim_start(),
    };
    let mut in_bearer = false;
    let mut found = false;
    let mut params = Vec::new();
    while !tokens.rest.is_empty() {
        tokens.skip(|c| c == ',' || c == ' ' || c == '\t');
        let Some(word) = tokens.token() else {
            // Not a token (stray character): skip it.
            tokens.advance(tokens.rest.chars().next().map_or(0, char::len_utf8));
            continue;
        };
        tokens.skip(|c| c == ' ' || c == '\t');
        if tokens.rest.starts_with('=') && !tokens.rest.starts_with("==") {
            tokens.advance(1);
            tokens.skip(|c| c == ' ' || c == '\t');
            let value = tokens.value();
            if in_bearer {
                params.push((word.to_owned(), value));
            }
        } else {
            // A new scheme (a token68 after it, if any, is skipped as a stray word).
            // A DPoP challenge (RFC 9449 section 7.1) has the same parameters.
            in_bearer = word.eq_ignore_ascii_case("bearer") || word.eq_ignore_ascii_case("dpop");
            found |= in_bearer;
        }
    }
    found.then_some(params)
}

struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Tokens<'a> {
    fn advance(&mut self, n: usize) {
        self.rest = &self.rest[n..];
    }

    fn skip(&mut self, what: impl Fn(char) -> bool) {
        self.rest = self.rest.trim_start_matches(what);
    }

    /// An RFC 9110 token.
    fn token(&mut self) -> Option<&'a str> {
        let end = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)))
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        (!word.is_empty()).then_some(word)
    }

    /// A quoted-string (unescaped) or a token.
    fn value(&mut self) -> String {
        if let Some(quoted) = self.rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => {
                        self.rest = &quoted[i + 1..];
                        return value;
                    }
                    c => value.push(c),
                }
            }
            self.rest = "";
            return value;
        }
        let end = self.rest.find([',', ' ', '\t']).unwrap_or(self.rest.len());
        let (value, rest) = self.rest.split_at(end);
        self.rest = rest;
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bearer_parameters() {
        let c = Challenge::parse(
            403,
            Some(
                r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://a.example/.well-known/oauth-protected-resource/mcp""#,
            ),
        );
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://a.example/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn finds_bearer_among_other_schemes() {
        let c = Challenge::parse(
            401,
            Some(r#"Basic realm="x", Bearer realm="mcp", scope=read, error="invalid_token""#),
        );
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        let c = Challenge::parse(401, Some(r#"Bearer"#));
        assert_eq!(c.scope, None);
        let c = Challenge::parse(401, Some(r#"Basic realm="a\"b", scope="no""#));
        assert_eq!(c.scope, None);
    }
}
