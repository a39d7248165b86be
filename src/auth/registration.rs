//! Who the client is to an authorization server: a pre-registered client, a Client ID
//! Metadata Document URL, or a Dynamic Client Registration (RFC 7591); and how it
//! authenticates at the token endpoint. A registration belongs to one issuer and is stored
//! with its tokens, so it is never presented to another authorization server.

use super::discovery::ServerMetadata;
use super::form::{failed, post_json};
use super::signing_key::SigningKey;
use super::LearnSecret;
use super::{GrantType, OAuthConfig};
use crate::display_url::display_url;
use crate::error::Result;
use serde_json::{json, Value};

/// Token endpoint client authentication (RFC 6749 section 2.3, RFC 7591 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    Basic,
    Post,
    None,
    /// A JWT signed with the host's key (RFC 7523); pre-registered clients only.
    PrivateKeyJwt,
}

impl AuthMethod {
    fn name(self) -> &'static str {
        match self {
            AuthMethod::Basic => "client_secret_basic",
            AuthMethod::Post => "client_secret_post",
            AuthMethod::None => "none",
            AuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    fn from_name(name: &str) -> Option<AuthMethod> {
        match name {
            "client_secret_basic" => Some(AuthMethod::Basic),
            "client_secret_post" => Some(AuthMethod::Post),
            "none" => Some(AuthMethod::None),
            _ => None,
        }
    }
}

/// The client as one authorization server knows it.
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The host's key, for [`AuthMethod::PrivateKeyJwt`].
    pub key: Option<SigningKey>,
    pub method: AuthMethod,
    /// Made by dynamic registration (so it is stored with the tokens).
    pub registered: bool,
}

impl ClientCredentials {
    pub fn to_json(&self) -> Value {
        json!({
            "client_id": self.client_id,
            "client_secret": self.client_secret,
            "token_endpoint_auth_method": self.method.name(),
        })
    }

    pub fn from_json(value: &Value) -> Option<ClientCredentials> {
        Some(ClientCredentials {
            client_id: value.get("client_id")?.as_str()?.to_owned(),
            client_secret: value
                .get("client_secret")
                .and_then(Value::as_str)
                .map(str::to_owned),
            key: None,
            method: value
                .get("token_endpoint_auth_method")
                .and_then(Value::as_str)
                .and_then(AuthMethod::from_name)
                .unwrap_or(AuthMethod::None),
            registered: true,
        })
    }
}

/// The client's identity at `server`, in the spec's order: pre-registered, the registration
/// stored for this issuer, a metadata document URL (when supported), dynamic registration.
pub fn identify(
    agent: &ureq::Agent,
    config: &OAuthConfig,
    server: &ServerMetadata,
    stored: Option<ClientCredentials>,
    learn: &LearnSecret,
) -> Result<ClientCredentials> {
    let issuer_matches = config
        .client_issuer
        .as_ref()
        .is_none_or(|issuer| *issuer == server.issuer);
    if let (Some(client_id), true) = (&config.client_id, issuer_matches) {
        let secret = config.client_secret.clone();
        let method = match &config.client_key {
            Some(_) => AuthMethod::PrivateKeyJwt,
            None => choose_method(server, None, secret.is_some()),
        };
        return Ok(ClientCredentials {
            client_id: client_id.clone(),
            method,
            client_secret: secret,
            key: config.client_key.clone(),
            registered: false,
        });
    }
    if config.grant_type == GrantType::JwtBearer {
        // The workload's token identifies it; without a configured client there is no
        // client to present (nor any registration to make).
        return Ok(ClientCredentials {
            client_id: String::new(),
            client_secret: None,
            key: None,
            method: AuthMethod::None,
            registered: false,
        });
    }
    if let Some(stored) = stored {
        return Ok(stored);
    }
    if let (Some(url), true) = (
        &config.client_metadata_url,
        server.client_id_metadata_document_supported,
    ) {
        return Ok(ClientCredentials {
            client_id: url.clone(),
            client_secret: None,
            key: None,
            method: AuthMethod::None,
            registered: false,
        });
    }
    if config.grant_type == GrantType::ClientCredentials {
        return Err(failed(
            "the client_credentials grant needs a pre-registered client id (with its secret \
             or private key)",
        ));
    }
    if config.grant_type == GrantType::EnterpriseManaged {
        return Err(failed(
            "the enterprise-managed grant needs a pre-registered client id (the ID-JAG names \
             it)",
        ));
    }
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(failed(format!(
            "the authorization server {} offers no dynamic registration, and no client id \
             (or client metadata URL it supports) is configured",
            display_url(&server.issuer)
        )));
    };
    register(agent, config, server, endpoint, learn)
}

fn register(
    agent: &ureq::Agent,
    config: &OAuthConfig,
    server: &ServerMetadata,
    endpoint: &str,
    learn: &LearnSecret,
) -> Result<ClientCredentials> {
    let redirect_uri = config
        .redirect_uri
        .as_deref()
        .ok_or_else(|| failed("dynamic registration needs a redirect URI"))?;
    let wanted = match server.token_endpoint_auth_methods.as_deref() {
        // A native client is public unless the server insists on a secret.
        Some(methods) if !methods.iter().any(|m| m == "none") => {
            if methods.iter().any(|m| m == "client_secret_basic") {
                AuthMethod::Basic
            } else {
                AuthMethod::Post
            }
        }
        _ => AuthMethod::None,
    };
    let mut body = json!({
        "client_name": config.client_name.as_deref().unwrap_or("mcpc"),
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": wanted.name(),
        "application_type": config.application_type.as_deref().unwrap_or("native"),
    });
    if let Some(scopes) = &config.scopes {
        body["scope"] = json!(scopes);
    }
    let answer = post_json(agent, endpoint, &body)?;
    let client_id = answer.json.get("client_id").and_then(Value::as_str);
    let (true, Some(client_id)) = ((200..300).contains(&answer.status), client_id) else {
        return Err(failed(format!(
            "dynamic registration at {} failed (HTTP {}{})",
            display_url(endpoint),
            answer.status,
            error_code(&answer.json)
        )));
    };
    let secret = answer
        .json
        .get("client_secret")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if let Some(secret) = &secret {
        learn(secret);
    }
    let registered_method = answer
        .json
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str);
    Ok(ClientCredentials {
        client_id: client_id.to_owned(),
        method: choose_method(server, registered_method, secret.is_some()),
        client_secret: secret,
        key: None,
        registered: true,
    })
}

/// The method the registration named, else what the server supports for a client with (or
/// without) a secret; RFC 8414's default is client_secret_basic.
fn choose_method(server: &ServerMetadata, registered: Option<&str>, secret: bool) -> AuthMethod {
    if !secret {
        return AuthMethod::None;
    }
    match registered.and_then(AuthMethod::from_name) {
        Some(method) if method != AuthMethod::None => return method,
        _ => {}
    }
    match server.token_endpoint_auth_methods.as_deref() {
        Some(methods)
            if !methods.iter().any(|m| m == "client_secret_basic")
                && methods.iter().any(|m| m == "client_secret_post") =>
        {
            AuthMethod::Post
        }
        _ => AuthMethod::Basic,
    }
}

/// `, error=<code>` from an OAuth error body: the code only (a description may echo input).
pub fn error_code(body: &Value) -> String {
    match body.get("error").and_then(Value::as_str) {
        Some(code) if code.len() <= 64 && code.bytes().all(|b| b.is_ascii_graphic()) => {
            format!(", error={code}")
        }
        _ => String::new(),
    }
}
