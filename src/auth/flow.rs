//! The flow behind a 401: what the transport calls (`headers` before each request,
//! `on_challenge` on a 401/403), and one authorization at a time that serves every call.
//!
//! On a challenge: read the server's resource metadata and its authorization server's
//! metadata (`discovery`), load what is stored for that issuer; use a stored token not tried
//! yet, else refresh, else authorize anew (client identity from `registration`, the person's
//! step through the host's callback, the token request in `tokens`), store the result and tell
//! the transport to send the request again.

use super::challenge::Challenge;
use super::discovery::{self, ServerMetadata};
use super::dpop::{Dpop, DPOP_HEADER, USE_NONCE_ERROR};
use super::enterprise::ExchangeFor;
use super::form::{self, failed, param, query_params};
use super::pkce::{random_text, Pkce};
use super::registration::{self, ClientCredentials};
use super::tokens::{self, Stored, Tokens};
use super::turn::Turns;
use super::workload::JWT_BEARER_GRANT;
use super::{AuthHooks, AuthorizationRequest, GrantType, OAuthConfig, TokenKey};
use crate::cancellation::CancellationToken;
use crate::error::{Error, Result, Status};
use crate::sync::lock;
use std::sync::{Arc, Mutex};

use super::LearnSecret;

/// What a request was sent with, taken just before it: the token generation and the DPoP
/// nonce its proof carried; handed back when it is refused.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sent {
    pub generation: u64,
    nonce: Option<String>,
}

/// The auth state of one HTTP transport.
pub(crate) struct Authorizer {
    hooks: AuthHooks,
    server_url: String,
    learn: LearnSecret,
    state: Mutex<State>,
    /// One authorization at a time, which the others then use.
    turns: Arc<Turns>,
    /// The proof key and server nonces, when the host turned DPoP on.
    dpop: Option<Dpop>,
}

#[derive(Default)]
struct State {
    /// The token requests carry now.
    current: Option<Tokens>,
    /// Counts token changes, so a refused request can tell whether a newer token exists.
    generation: u64,
    /// The scopes of the last authorization (a step-up asks for these and the new ones).
    scopes: Vec<String>,
}

impl Authorizer {
    pub fn new(hooks: &AuthHooks, server_url: &str, learn: LearnSecret) -> Option<Authorizer> {
        if hooks.oauth.is_none() && hooks.header_provider.is_none() {
            return None;
        }
        let dpop = hooks
            .oauth
            .as_ref()
            .and_then(|oauth| oauth.dpop.clone())
            .map(Dpop::new);
        if let Some(dpop) = &dpop {
            learn(dpop.proof_header());
        }
        Some(Authorizer {
            hooks: hooks.clone(),
            server_url: server_url.to_owned(),
            learn,
            state: Mutex::default(),
            turns: Arc::default(),
            dpop,
        })
    }

    /// The headers a request (`method` to `url`) to the MCP server carries: the provider's,
    /// then the token (unless the provider set Authorization itself): `Bearer`, or `DPoP`
    /// for a token bound to the DPoP key; with DPoP on, a fresh proof for this request.
    pub fn headers(&self, method: &str, url: &str) -> Result<Vec<(String, String)>> {
        let mut headers = match &self.hooks.header_provider {
            Some(provider) => provider(&self.server_url).map_err(|why| {
                Error::new(
                    Status::Unauthorized,
                    format!("the header provider failed: {why}"),
                )
            })?,
            None => Vec::new(),
        };
        for (_, value) in &headers {
            (self.learn)(value);
            if let Some((_, credential)) = value.split_once(' ') {
                (self.learn)(credential.trim());
            }
        }
        let has_authorization = headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        let current = lock(&self.state).current.clone();
        let token = current.filter(|_| !has_authorization);
        let bound = token
            .as_ref()
            .filter(|t| t.dpop_bound && self.dpop.is_some());
        if let Some(tokens) = &token {
            let scheme = if bound.is_some() { "DPoP" } else { "Bearer" };
            headers.push((
                "Authorization".to_owned(),
                format!("{scheme} {}", tokens.access_token),
            ));
        }
        if let Some(dpop) = &self.dpop {
            let proof = dpop.proof(method, url, bound.map(|t| t.access_token.as_str()))?;
            headers.push((DPOP_HEADER.to_owned(), proof));
        }
        Ok(headers)
    }

    /// A nonce the MCP server (at `url`) handed out with an accepted answer, for the next
    /// proofs (ignored without DPoP).
    pub fn next_nonce(&self, url: &str, nonce: &str) {
        if let Some(dpop) = &self.dpop {
            dpop.remember_nonce(url, nonce);
        }
    }

    /// What a request to the MCP server is about to be sent with (see [`Sent`]).
    pub fn before_request(&self) -> Sent {
        Sent {
            generation: self.generation(),
            nonce: self
                .dpop
                .as_ref()
                .and_then(|d| d.nonce_for(&self.server_url)),
        }
    }

    /// A 401 from the MCP server (to `url`) that carries a `DPoP-Nonce`: `Some(Ok)` when the
    /// refused proof did not carry that nonce, so the request should be sent again with it
    /// (within the request's retry limit); `Some(Err)` when the server wants a nonce the
    /// proof already had; `None` when this is not about a nonce (the flow runs as for any
    /// refusal).
    pub fn on_nonce_refusal(
        &self,
        url: &str,
        nonce: Option<&str>,
        challenge: &Challenge,
        refusals: u32,
        sent: &Sent,
    ) -> Option<Result<()>> {
        let (Some(dpop), Some(nonce), 401) = (&self.dpop, nonce, challenge.http_status) else {
            return None;
        };
        let limit = self
            .hooks
            .oauth
            .as_ref()
            .map_or(0, |o| o.max_authorizations);
        let wants_nonce = challenge.error.as_deref() == Some(USE_NONCE_ERROR);
        let nonce = nonce.trim();
        let new_to_the_proof = sent.nonce.as_deref() != Some(nonce);
        if new_to_the_proof && refusals <= limit {
            // Remembered for every request; one the proof cannot carry is not retried.
            dpop.remember_nonce(url, nonce);
            if dpop.nonce_for(url).as_deref() == Some(nonce) {
                return Some(Ok(()));
            }
        }
        wants_nonce.then(|| {
            Err(unauthorized(
                challenge,
                "the server refused the DPoP proof although it carried the server's nonce",
            ))
        })
    }

    /// The token generation; taken before a request, handed back to `on_challenge`.
    pub fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    /// A 401 or 403 from the MCP server to a request sent at token `generation`: `Ok` when a
    /// new token is in place and the request should be sent again; else the UNAUTHORIZED error
    /// (with the challenge as its data), or CANCELLED when `cancel` ended the host's step.
    pub fn on_challenge(
        &self,
        agent: &ureq::Agent,
        challenge: &Challenge,
        refusals: u32,
        generation: u64,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let Some(oauth) = &self.hooks.oauth else {
            return Err(unauthorized(
                challenge,
                "the server refused the credentials",
            ));
        };
        if refusals > oauth.max_authorizations {
            return Err(unauthorized(
                challenge,
                &format!(
                    "the server still refuses the request after {} authorizations",
                    oauth.max_authorizations
                ),
            ));
        }
        let Some(_turn) = self.turns.take(cancel) else {
            return Err(cancelled());
        };
        if self.generation() != generation {
            return Ok(()); // another request got a new token meanwhile
        }
        self.run(agent, oauth, challenge, cancel)
            .map_err(|error| with_challenge(error, challenge))
    }

    fn run(
        &self,
        agent: &ureq::Agent,
        oauth: &OAuthConfig,
        challenge: &Challenge,
        cancel: &CancellationToken,
    ) -> Result<()> {
        let resource_metadata = discovery::resource_metadata(agent, &self.server_url, challenge)?;
        let (issuer, resource, scopes_supported) = match &resource_metadata {
            Some(m) => (
                m.authorization_servers[0].clone(),
                m.resource.clone(),
                m.scopes_supported.clone(),
            ),
            None => (
                discovery::legacy_issuer(&self.server_url)?,
                canonical(&self.server_url),
                None,
            ),
        };
        let server = discovery::server_metadata(agent, &issuer, resource_metadata.is_none())?;
        still_wanted(cancel)?;
        let key = TokenKey {
            server_url: self.server_url.clone(),
            issuer: server.issuer.clone(),
        };
        let stored = oauth
            .token_store
            .load(&key)
            .map(|value| Stored::from_json(&value))
            .unwrap_or_default();
        self.learn_stored(&stored);
        if !challenge.is_insufficient_scope() {
            if let Some(tokens) = &stored.tokens {
                let current = lock(&self.state).current.clone();
                let untried =
                    current.as_ref().map(|t| &t.access_token) != Some(&tokens.access_token);
                // An expired one is not worth a request: straight to the refresh.
                let expired = tokens.expires_at.is_some_and(|at| at <= super::now());
                if untried && !expired {
                    self.install(tokens.clone(), None);
                    return Ok(());
                }
                if let Some(refreshed) =
                    self.refresh(agent, oauth, &server, &stored, tokens, &resource)
                {
                    self.save(oauth, &key, &refreshed, stored.client.clone());
                    self.install(refreshed, None);
                    return Ok(());
                }
            }
        }
        // A refresh cut short by the call's end must not lead to a new authorization.
        still_wanted(cancel)?;
        let scopes = self.scopes(oauth, challenge, scopes_supported, &server);
        let client = registration::identify(agent, oauth, &server, stored.client, &self.learn)?;
        still_wanted(cancel)?;
        let joined = (!scopes.is_empty()).then(|| scopes.join(" "));
        let tokens = match oauth.grant_type {
            GrantType::AuthorizationCode => self.authorization_code(
                agent,
                oauth,
                &server,
                &client,
                &resource,
                joined.as_deref(),
                cancel,
            )?,
            GrantType::ClientCredentials => self.grant(
                agent,
                &server,
                &client,
                &[("grant_type", "client_credentials")],
                &joined,
                &resource,
            )?,
            GrantType::JwtBearer | GrantType::EnterpriseManaged => {
                let assertion = self.grant_assertion(agent, oauth, &server, &resource, &joined)?;
                let grant = [("grant_type", JWT_BEARER_GRANT), ("assertion", &assertion)];
                self.grant(agent, &server, &client, &grant, &joined, &resource)?
            }
        };
        self.save(oauth, &key, &tokens, Some(client));
        self.install(tokens, Some(scopes));
        Ok(())
    }

    /// A token request: the grant's own params, then the scopes (when asked for) and the
    /// resource.
    fn grant(
        &self,
        agent: &ureq::Agent,
        server: &ServerMetadata,
        client: &ClientCredentials,
        grant: &[(&str, &str)],
        scope: &Option<String>,
        resource: &str,
    ) -> Result<Tokens> {
        let mut params = grant.to_vec();
        if let Some(scope) = scope {
            params.push(("scope", scope));
        }
        params.push(("resource", resource));
        tokens::request(
            agent,
            server,
            client,
            &params,
            &self.learn,
            self.dpop.as_ref(),
        )
    }

    /// The assertion the JWT-bearer grant presents: the workload's token, or (enterprise
    /// managed) the ID-JAG the identity provider gives for the person's identity assertion.
    fn grant_assertion(
        &self,
        agent: &ureq::Agent,
        oauth: &OAuthConfig,
        server: &ServerMetadata,
        resource: &str,
        scope: &Option<String>,
    ) -> Result<String> {
        let assertion = if oauth.grant_type == GrantType::EnterpriseManaged {
            let provider = oauth.identity_provider.as_ref().ok_or_else(|| {
                failed("the enterprise-managed grant needs the identity provider and assertion")
            })?;
            let target = ExchangeFor {
                audience: &server.issuer,
                resource,
                scope: scope.as_deref(),
            };
            provider.id_jag(agent, &target, &*self.learn)?
        } else {
            let source = oauth.workload_identity.as_ref().ok_or_else(|| {
                failed("the jwt-bearer grant needs the workload's token (a file or a provider)")
            })?;
            source.assertion()?
        };
        (self.learn)(&assertion);
        Ok(assertion)
    }

    /// A new token from the stored refresh token; `None` if there is none or it was refused
    /// (a new authorization follows).
    fn refresh(
        &self,
        agent: &ureq::Agent,
        oauth: &OAuthConfig,
        server: &ServerMetadata,
        stored: &Stored,
        tokens: &Tokens,
        resource: &str,
    ) -> Option<Tokens> {
        let refresh_token = tokens.refresh_token.as_deref()?;
        let client =
            registration::identify(agent, oauth, server, stored.client.clone(), &self.learn)
                .ok()?;
        let params = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("resource", resource),
        ];
        let mut refreshed = tokens::request(
            agent,
            server,
            &client,
            &params,
            &self.learn,
            self.dpop.as_ref(),
        )
        .ok()?;
        // The server may keep the refresh token as it is (RFC 6749 section 6).
        if refreshed.refresh_token.is_none() {
            refreshed.refresh_token = Some(refresh_token.to_owned());
        }
        Some(refreshed)
    }

    /// The scopes to ask for: the host's, else the challenge's, else the resource's
    /// `scopes_supported`, else none; a step-up adds those of the last authorization;
    /// `offline_access` is added when the authorization server lists it (for a refresh token).
    fn scopes(
        &self,
        oauth: &OAuthConfig,
        challenge: &Challenge,
        scopes_supported: Option<Vec<String>>,
        server: &ServerMetadata,
    ) -> Vec<String> {
        let base: Vec<String> = match (&oauth.scopes, &challenge.scope, scopes_supported) {
            (Some(scopes), _, _) | (None, Some(scopes), _) => {
                scopes.split_whitespace().map(str::to_owned).collect()
            }
            (None, None, Some(supported)) => supported,
            (None, None, None) => Vec::new(),
        };
        let mut scopes = Vec::new();
        if challenge.is_insufficient_scope() {
            scopes.extend(lock(&self.state).scopes.iter().cloned());
        }
        for scope in base {
            if !scopes.contains(&scope) {
                scopes.push(scope);
            }
        }
        let offers_offline = server
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        if offers_offline
            && oauth.grant_type == GrantType::AuthorizationCode
            && !scopes.is_empty()
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".to_owned());
        }
        scopes
    }

    #[allow(clippy::too_many_arguments)]
    fn authorization_code(
        &self,
        agent: &ureq::Agent,
        oauth: &OAuthConfig,
        server: &ServerMetadata,
        client: &ClientCredentials,
        resource: &str,
        scope: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<Tokens> {
        let redirect_uri = oauth
            .redirect_uri
            .as_deref()
            .ok_or_else(|| failed("no OAuth redirect URI is configured"))?;
        check_redirect_uri(redirect_uri)?;
        let authorize = oauth
            .authorize
            .as_ref()
            .ok_or_else(|| failed("no OAuth authorize callback is configured"))?;
        let endpoint = server.authorization_endpoint.as_deref().ok_or_else(|| {
            failed("the authorization server metadata has no authorization_endpoint")
        })?;
        let s256 = server
            .code_challenge_methods
            .as_ref()
            .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
        if !s256 && !server.fallback {
            return Err(failed(
                "the authorization server does not advertise PKCE S256 \
                 (code_challenge_methods_supported); not authorizing",
            ));
        }
        let pkce = Pkce::new()?;
        let state = random_text(16)?;
        (self.learn)(&pkce.verifier);
        let mut params = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", redirect_uri),
            ("code_challenge", &pkce.challenge),
            ("code_challenge_method", "S256"),
            ("state", &state),
            ("resource", resource),
        ];
        if let Some(scope) = scope {
            params.push(("scope", scope));
        }
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        let url = format!("{endpoint}{separator}{}", form::form(&params));
        let answer = authorize(&AuthorizationRequest {
            authorization_url: &url,
            redirect_uri,
            cancellation: cancel,
        });
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let redirect =
            answer.map_err(|why| failed(format!("the authorization was not given: {why}")))?;
        let params = query_params(&redirect);
        if param(&params, "state") != Some(state.as_str()) {
            return Err(failed(
                "the authorization redirect does not carry this request's state; not using it",
            ));
        }
        // RFC 9207, compared exactly; checked before anything else the redirect says.
        match param(&params, "iss") {
            Some(iss) if iss != server.issuer => {
                return Err(failed(
                    "the authorization redirect comes from another issuer (iss does not match); \
                     not using it",
                ))
            }
            None if server.iss_parameter_supported => {
                return Err(failed(
                    "the authorization redirect has no iss although the authorization server \
                     promises one; not using it",
                ))
            }
            _ => {}
        }
        if let Some(error) = param(&params, "error") {
            let code = registration::error_code(&serde_json::json!({ "error": error }));
            return Err(failed(format!(
                "the authorization server refused the authorization{code}"
            )));
        }
        let code = param(&params, "code")
            .ok_or_else(|| failed("the authorization redirect has no code"))?;
        (self.learn)(code);
        let grant = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", &pkce.verifier),
        ];
        self.grant(agent, server, client, &grant, &None, resource)
    }

    fn save(
        &self,
        oauth: &OAuthConfig,
        key: &TokenKey,
        tokens: &Tokens,
        client: Option<ClientCredentials>,
    ) {
        let stored = Stored {
            tokens: Some(tokens.clone()),
            client,
        };
        oauth.token_store.save(key, Some(&stored.to_json()));
    }

    fn install(&self, tokens: Tokens, scopes: Option<Vec<String>>) {
        let mut state = lock(&self.state);
        state.current = Some(tokens);
        state.generation += 1;
        if let Some(scopes) = scopes {
            state.scopes = scopes;
        }
    }

    fn learn_stored(&self, stored: &Stored) {
        if let Some(tokens) = &stored.tokens {
            (self.learn)(&tokens.access_token);
            if let Some(refresh) = &tokens.refresh_token {
                (self.learn)(refresh);
            }
        }
        if let Some(secret) = stored
            .client
            .as_ref()
            .and_then(|c| c.client_secret.as_ref())
        {
            (self.learn)(secret);
        }
    }
}

/// The redirect URI: HTTPS, http on loopback, or a native app's private-use scheme.
fn check_redirect_uri(uri: &str) -> Result<()> {
    match uri
        .split_once(':')
        .map(|(scheme, _)| scheme.to_ascii_lowercase())
    {
        Some(scheme) if scheme == "http" || scheme == "https" => {
            form::require_secure(uri, "redirect URI")
        }
        Some(scheme) if !scheme.is_empty() => Ok(()),
        _ => Err(failed("the redirect URI is not a URI")),
    }
}

/// The server URL as a resource indicator (RFC 8707): without its fragment.
fn canonical(url: &str) -> String {
    url.split('#').next().unwrap_or_default().to_owned()
}

/// CANCELLED once the call that needed the token has ended: no further step is taken for it.
fn still_wanted(cancel: &CancellationToken) -> Result<()> {
    match cancel.is_cancelled() {
        true => Err(cancelled()),
        false => Ok(()),
    }
}

fn cancelled() -> Error {
    Error::new(
        Status::Cancelled,
        "the call ended while it waited for the authorization",
    )
}

/// The challenge goes along with every UNAUTHORIZED error of the flow.
fn with_challenge(mut error: Error, challenge: &Challenge) -> Error {
    if error.status == Status::Unauthorized && error.data.is_none() {
        error.data = Some(challenge.to_json());
    }
    error
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
