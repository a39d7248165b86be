//! Enterprise-managed authorization (the MCP extension
//! `io.modelcontextprotocol/enterprise-managed-authorization`, SEP-990): the person signed in
//! to the enterprise's identity provider (IdP), and the host holds an identity assertion from
//! it (an OpenID Connect ID token). The library exchanges that assertion at the IdP for an
//! Identity Assertion JWT Authorization Grant (ID-JAG) addressed to the MCP server's
//! authorization server (RFC 8693 token exchange), then presents the ID-JAG there as a
//! JWT-bearer grant (RFC 7523) for an access token. No browser, no person's step.

use super::form::{self, failed, post_form};
use super::registration::error_code;
use super::workload::{compact_jwt, AssertionProvider};
use crate::display_url::display_url;
use crate::error::Result;
use serde_json::Value;
use std::fmt;

/// The `grant_type` of RFC 8693 token exchange.
const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type the library asks the IdP for: an ID-JAG.
const ID_JAG_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// The type of the host's assertion: an OpenID Connect ID token.
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";

/// The enterprise's identity provider and the host's way to the person's identity assertion.
#[derive(Clone)]
pub struct IdentityProvider {
    /// The IdP's token endpoint, where the token exchange is made (HTTPS, or http on
    /// loopback).
    pub token_endpoint: String,
    /// This client's id at the IdP (sent in the exchange; with `client_secret`, by HTTP Basic).
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// Gives the person's current identity assertion (an ID token from this IdP). Called for
    /// every exchange, so the host may renew it; runs on the thread of the token request, with
    /// no lock held.
    pub assertion: AssertionProvider,
}

impl fmt::Debug for IdentityProvider {
    /// Never the secret nor the assertion.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .finish_non_exhaustive()
    }
}

/// What the exchange is for: the authorization server (`audience`, its issuer) and the MCP
/// server (`resource`) the ID-JAG will be presented to, and the scopes asked for.
pub struct ExchangeFor<'a> {
    pub audience: &'a str,
    pub resource: &'a str,
    pub scope: Option<&'a str>,
}

impl IdentityProvider {
    /// Exchanges the host's identity assertion at the IdP for an ID-JAG. Both are handed to
    /// `learn` before anything could quote them; a refusal names the endpoint, the HTTP status
    /// and the IdP's error code, never a token.
    pub fn id_jag(
        &self,
        agent: &ureq::Agent,
        target: &ExchangeFor,
        learn: &dyn Fn(&str),
    ) -> Result<String> {
        form::require_secure(&self.token_endpoint, "identity provider's token endpoint")?;
        let text = (self.assertion)()
            .map_err(|why| failed(format!("the identity assertion provider failed: {why}")))?;
        learn(text.trim());
        let assertion = compact_jwt(&text, "identity assertion")?;
        let mut pairs = vec![
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("requested_token_type", ID_JAG_TOKEN_TYPE),
            ("audience", target.audience),
            ("resource", target.resource),
            ("subject_token", assertion.as_str()),
            ("subject_token_type", ID_TOKEN_TYPE),
        ];
        if let Some(scope) = target.scope {
            pairs.push(("scope", scope));
        }
        // With a secret the client authenticates by HTTP Basic (RFC 6749 section 2.3.1);
        // without one, it names itself in the body.
        let basic = match (&self.client_id, &self.client_secret) {
            (Some(id), Some(secret)) => {
                learn(secret);
                let pair = format!("{}:{}", form::encode(id), form::encode(secret));
                let encoded = crate::protocol::base64::base64(pair.as_bytes());
                learn(&encoded);
                Some(encoded)
            }
            (Some(id), None) => {
                pairs.push(("client_id", id));
                None
            }
            (None, _) => None,
        };
        let answer = post_form(
            agent,
            &self.token_endpoint,
            &form::form(&pairs),
            basic.as_deref(),
            None,
        )?;
        let id_jag = answer.json.get("access_token").and_then(Value::as_str);
        if let Some(id_jag) = id_jag {
            learn(id_jag);
        }
        let endpoint = display_url(&self.token_endpoint);
        let (true, Some(id_jag)) = ((200..300).contains(&answer.status), id_jag) else {
            return Err(failed(format!(
                "the identity provider's token endpoint {endpoint} refused the token exchange \
                 (HTTP {}{})",
                answer.status,
                error_code(&answer.json)
            )));
        };
        let issued_type = answer.json.get("issued_token_type").and_then(Value::as_str);
        if issued_type != Some(ID_JAG_TOKEN_TYPE) {
            return Err(failed(format!(
                "the identity provider's token endpoint {endpoint} issued a token that is not \
                 an ID-JAG (issued_token_type is not {ID_JAG_TOKEN_TYPE})"
            )));
        }
        compact_jwt(id_jag, "ID-JAG")
    }
}
