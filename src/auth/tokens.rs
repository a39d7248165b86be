//! Token requests (authorization code, refresh, client credentials) and what is stored per
//! server and issuer: the tokens and the client registration made with that issuer.

use super::client_assertion::{client_assertion, JWT_BEARER_ASSERTION};
use super::discovery::ServerMetadata;
use super::dpop::{Dpop, USE_NONCE_ERROR};
use super::form::{self, failed, post_form};
use super::registration::{error_code, AuthMethod, ClientCredentials};
use super::{now, LearnSecret};
use crate::display_url::display_url;
use crate::error::Result;
use serde_json::{json, Value};

/// The longest access token accepted (see `mcpc::limits`).
pub const TOKEN_LIMIT: usize = 16 * 1024;

/// Tokens from one token response.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    pub expires_at: Option<u64>,
    pub scope: Option<String>,
    /// token_type DPoP: bound to the client's DPoP key, sent with a proof.
    pub dpop_bound: bool,
}

/// What the token store holds for one server and issuer.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    pub tokens: Option<Tokens>,
    pub client: Option<ClientCredentials>,
}

impl Stored {
    pub fn to_json(&self) -> Value {
        let mut value = json!({});
        if let Some(tokens) = &self.tokens {
            value["access_token"] = json!(tokens.access_token);
            value["refresh_token"] = json!(tokens.refresh_token);
            value["expires_at"] = json!(tokens.expires_at);
            value["scope"] = json!(tokens.scope);
            if tokens.dpop_bound {
                value["token_type"] = json!("DPoP");
            }
        }
        if let Some(client) = self.client.as_ref().filter(|c| c.registered) {
            value["client"] = client.to_json();
        }
        value
    }

    pub fn from_json(value: &Value) -> Stored {
        let text = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
        Stored {
            tokens: text("access_token").map(|access_token| Tokens {
                access_token,
                refresh_token: text("refresh_token"),
                expires_at: value.get("expires_at").and_then(Value::as_u64),
                scope: text("scope"),
                dpop_bound: text("token_type").is_some_and(|t| t.eq_ignore_ascii_case("dpop")),
            }),
            client: value.get("client").and_then(ClientCredentials::from_json),
        }
    }
}

/// POSTs a token request with the client's authentication (and a DPoP proof when `dpop`
/// is on), and reads the tokens. An authorization server that wants its DPoP nonce
/// (`use_dpop_nonce` with a new `DPoP-Nonce`) gets the request once more, with it.
pub fn request(
    agent: &ureq::Agent,
    server: &ServerMetadata,
    client: &ClientCredentials,
    params: &[(&str, &str)],
    learn: &LearnSecret,
    dpop: Option<&Dpop>,
) -> Result<Tokens> {
    let mut answer = post_once(agent, server, client, params, learn, dpop)?;
    if let (Some(dpop), Some(nonce)) = (dpop, &answer.dpop_nonce) {
        let wants_nonce = answer.status == 400
            && answer.json.get("error").and_then(Value::as_str) == Some(USE_NONCE_ERROR);
        if wants_nonce && dpop.remember_nonce(&server.token_endpoint, nonce) {
            answer = post_once(agent, server, client, params, learn, Some(dpop))?;
        }
    }
    // A nonce handed out with the tokens is for the next token request (a refresh).
    if let (Some(dpop), Some(nonce), true) = (
        dpop,
        &answer.dpop_nonce,
        (200..300).contains(&answer.status),
    ) {
        dpop.remember_nonce(&server.token_endpoint, nonce);
    }
    read_tokens(server, answer, learn, dpop.is_some())
}

/// One token request: a fresh client assertion and DPoP proof each time.
fn post_once(
    agent: &ureq::Agent,
    server: &ServerMetadata,
    client: &ClientCredentials,
    params: &[(&str, &str)],
    learn: &LearnSecret,
    dpop: Option<&Dpop>,
) -> Result<form::Answer> {
    let mut pairs: Vec<(&str, &str)> = params.to_vec();
    let assertion;
    let basic = match (client.method, &client.client_secret, &client.key) {
        // No client at all (the JWT-bearer grant without a configured client).
        _ if client.client_id.is_empty() => None,
        (AuthMethod::PrivateKeyJwt, _, Some(key)) => {
            // The audience is the authorization server, named by its issuer.
            assertion = client_assertion(key, &client.client_id, &server.issuer)?;
            learn(&assertion);
            pairs.push(("client_id", &client.client_id));
            pairs.push(("client_assertion_type", JWT_BEARER_ASSERTION));
            pairs.push(("client_assertion", &assertion));
            None
        }
        (AuthMethod::Basic, Some(secret), _) => {
            // RFC 6749 section 2.3.1: each part form-encoded, then base64.
            let pair = format!(
                "{}:{}",
                form::encode(&client.client_id),
                form::encode(secret)
            );
            let encoded = crate::protocol::base64::base64(pair.as_bytes());
            learn(&encoded);
            Some(encoded)
        }
        (AuthMethod::Post, Some(secret), _) => {
            pairs.push(("client_id", &client.client_id));
            pairs.push(("client_secret", secret));
            None
        }
        _ => {
            pairs.push(("client_id", &client.client_id));
            None
        }
    };
    let proof = match dpop {
        Some(dpop) => Some(dpop.proof("POST", &server.token_endpoint, None)?),
        None => None,
    };
    post_form(
        agent,
        &server.token_endpoint,
        &form::form(&pairs),
        basic.as_deref(),
        proof.as_deref(),
    )
}

/// The tokens of a token response; `dpop`: the request carried a proof, so a DPoP-bound
/// token is usable.
fn read_tokens(
    server: &ServerMetadata,
    answer: form::Answer,
    learn: &LearnSecret,
    dpop: bool,
) -> Result<Tokens> {
    let access_token = answer.json.get("access_token").and_then(Value::as_str);
    let (true, Some(access_token)) = ((200..300).contains(&answer.status), access_token) else {
        return Err(failed(format!(
            "the token endpoint {} refused the request (HTTP {}{})",
            display_url(&server.token_endpoint),
            answer.status,
            error_code(&answer.json)
        )));
    };
    // Bearer tokens, and DPoP-bound ones when this client makes proofs.
    let token_type = answer.json.get("token_type").and_then(Value::as_str);
    let dpop_bound = token_type.is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
    if token_type.is_some_and(|t| !t.eq_ignore_ascii_case("bearer")) && !(dpop && dpop_bound) {
        learn(access_token);
        return Err(failed(format!(
            "the token endpoint {} issued a token of an unsupported type",
            display_url(&server.token_endpoint)
        )));
    }
    // It goes in a header of every request: refused here, as the server's fault, rather
    // than at the first request as if the host had set a bad header.
    if access_token.len() > TOKEN_LIMIT || !access_token.bytes().all(|b| b.is_ascii_graphic()) {
        learn(access_token);
        return Err(failed(format!(
            "the token endpoint {} issued an access token that cannot be sent in a header \
             (over {} KiB, or not visible ASCII)",
            display_url(&server.token_endpoint),
            TOKEN_LIMIT / 1024
        )));
    }
    let text = |name: &str| {
        answer
            .json
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let tokens = Tokens {
        access_token: access_token.to_owned(),
        refresh_token: text("refresh_token"),
        expires_at: answer
            .json
            .get("expires_in")
            .and_then(Value::as_u64)
            .map(|seconds| now().saturating_add(seconds)),
        scope: text("scope"),
        dpop_bound,
    };
    learn(&tokens.access_token);
    if let Some(refresh) = &tokens.refresh_token {
        learn(refresh);
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_tokens_round_trip_and_keep_only_registered_clients() {
        let registered = ClientCredentials {
            client_id: "c1".into(),
            client_secret: Some("s1".into()),
            key: None,
            method: AuthMethod::Post,
            registered: true,
        };
        let stored = Stored {
            tokens: Some(Tokens {
                access_token: "a".into(),
                refresh_token: Some("r".into()),
                expires_at: Some(42),
                scope: Some("x y".into()),
                dpop_bound: false,
            }),
            client: Some(registered),
        };
        let back = Stored::from_json(&stored.to_json());
        let tokens = back.tokens.unwrap();
        assert_eq!(
            (
                tokens.access_token.as_str(),
                tokens.refresh_token.as_deref()
            ),
            ("a", Some("r"))
        );
        assert_eq!(
            (tokens.expires_at, tokens.scope.as_deref()),
            (Some(42), Some("x y"))
        );
        let client = back.client.unwrap();
        assert_eq!(
            (client.client_id.as_str(), client.method),
            ("c1", AuthMethod::Post)
        );
        assert_eq!(client.client_secret.as_deref(), Some("s1"));

        // A pre-registered client is the host's configuration, not stored.
        let pre = Stored {
            tokens: None,
            client: Some(ClientCredentials {
                registered: false,
                ..client
            }),
        };
        assert_eq!(pre.to_json(), json!({}));
        assert!(Stored::from_json(&json!({"access_token": 5}))
            .tokens
            .is_none());
    }
}
