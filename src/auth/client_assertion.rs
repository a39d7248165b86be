//! The client assertion of `private_key_jwt` (RFC 7523 sections 2.2 and 3, RFC 7521 section
//! 4.2): a short-lived JWT, signed with the host's key, that stands in for a client secret at
//! the token endpoint. A fresh one (new `jti`) goes with every token request.

use super::now;
use super::pkce::{base64url, random_text};
use super::signing_key::SigningKey;
use crate::error::Result;
use serde_json::json;

/// The `client_assertion_type` of a JWT client assertion.
pub const JWT_BEARER_ASSERTION: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// How long an assertion is valid: long enough for one token request over a slow network,
/// short enough that a captured one is soon useless.
const LIFETIME_SECONDS: u64 = 300;

/// A signed assertion that `client_id` is making this request to the authorization server
/// whose issuer is `audience` (RFC 7523 section 3: `iss` and `sub` are the client, `aud`
/// identifies the authorization server).
pub fn client_assertion(key: &SigningKey, client_id: &str, audience: &str) -> Result<String> {
    let mut header = json!({ "alg": key.algorithm(), "typ": "JWT" });
    if let Some(key_id) = key.key_id() {
        header["kid"] = json!(key_id);
    }
    let issued_at = now();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": issued_at,
        "exp": issued_at + LIFETIME_SECONDS,
        "jti": random_text(16)?,
    });
    let signing_input = format!(
        "{}.{}",
        base64url(header.to_string().as_bytes()),
        base64url(claims.to_string().as_bytes())
    );
    let signature = key.sign(signing_input.as_bytes())?;
    Ok(format!("{signing_input}.{}", base64url(&signature)))
}
