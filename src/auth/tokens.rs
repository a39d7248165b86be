//! Token requests (authorization code, refresh, client credentials) and what is stored per
//! server and issuer: the tokens and the client registration made with that issuer.

use super::discovery::ServerMetadata;
use super::flow::LearnSecret;
use super::form::{self, failed, post_form};
use super::registration::{error_code, AuthMethod, ClientCredentials};
use crate::error::Result;
use crate::transport::http::redact::display_url;
use serde_json::{json, Value};
use std::time::{SystemTime, UNIX_EPOCH};

/// Tokens from one token response.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    /// Seconds since the Unix epoch.
    pub expires_at: Option<u64>,
    pub scope: Option<String>,
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
            }),
            client: value.get("client").and_then(ClientCredentials::from_json),
        }
    }
}

/// POSTs a token request with the client's authentication, and reads the tokens.
pub fn request(
    agent: &ureq::Agent,
    server: &ServerMetadata,
    client: &ClientCredentials,
    params: &[(&str, &str)],
    learn: &LearnSecret,
) -> Result<Tokens> {
    let mut pairs: Vec<(&str, &str)> = params.to_vec();
    let basic = match (client.method, &client.client_secret) {
        (AuthMethod::Basic, Some(secret)) => {
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
        (AuthMethod::Post, Some(secret)) => {
            pairs.push(("client_id", &client.client_id));
            pairs.push(("client_secret", secret));
            None
        }
        _ => {
            pairs.push(("client_id", &client.client_id));
            None
        }
    };
    let answer = post_form(
        agent,
        &server.token_endpoint,
        &form::form(&pairs),
        basic.as_deref(),
    )?;
    let access_token = answer.json.get("access_token").and_then(Value::as_str);
    let (true, Some(access_token)) = ((200..300).contains(&answer.status), access_token) else {
        return Err(failed(format!(
            "the token endpoint {} refused the request (HTTP {}{})",
            display_url(&server.token_endpoint),
            answer.status,
            error_code(&answer.json)
        )));
    };
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
    };
    learn(&tokens.access_token);
    if let Some(refresh) = &tokens.refresh_token {
        learn(refresh);
    }
    Ok(tokens)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
