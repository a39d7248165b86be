//! The flow behind a 401: what the transport calls (`headers` before each request,
//! `on_challenge` on a 401/403), and the one authorization at a time that serves every call.

use super::challenge::Challenge;
use super::AuthHooks;
use crate::cancellation::CancellationToken;
use crate::error::{Error, Result, Status};
use std::sync::Arc;

/// Learns a secret so the transport's messages never quote it.
pub(crate) type LearnSecret = Arc<dyn Fn(&str) + Send + Sync>;

/// The auth state of one HTTP transport.
pub(crate) struct Authorizer {
    hooks: AuthHooks,
    #[allow(dead_code)]
    server_url: String,
    #[allow(dead_code)]
    learn: LearnSecret,
}

impl Authorizer {
    pub fn new(hooks: &AuthHooks, server_url: &str, learn: LearnSecret) -> Option<Authorizer> {
        if hooks.oauth.is_none() && hooks.header_provider.is_none() {
            return None;
        }
        Some(Authorizer {
            hooks: hooks.clone(),
            server_url: server_url.to_owned(),
            learn,
        })
    }

    /// The headers a request to the MCP server carries: the provider's, or the bearer token.
    pub fn headers(&self) -> Result<Vec<(String, String)>> {
        if let Some(provider) = &self.hooks.header_provider {
            return provider(&self.server_url).map_err(|why| {
                Error::new(
                    Status::Unauthorized,
                    format!("the header provider failed: {why}"),
                )
            });
        }
        Ok(Vec::new())
    }

    /// A 401 or 403 from the MCP server: `Ok` when a new token was obtained and the request
    /// should be sent again; else the UNAUTHORIZED error (with the challenge as its data).
    pub fn on_challenge(
        &self,
        _agent: &ureq::Agent,
        challenge: &Challenge,
        _refusals: u32,
        _cancel: &CancellationToken,
    ) -> Result<()> {
        Err(unauthorized(challenge, "the server requires authorization"))
    }
}

/// The UNAUTHORIZED error for a challenge the flow could not (or may not) answer.
pub(crate) fn unauthorized(challenge: &Challenge, why: &str) -> Error {
    let mut error = Error::new(
        Status::Unauthorized,
        format!("HTTP {}: {why}", challenge.http_status),
    );
    error.data = Some(challenge.to_json());
    error
}
