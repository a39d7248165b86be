//! OAuth 2.1 for Streamable HTTP servers (the MCP authorization spec), and the simpler hooks
//! for hosts that run their own auth.
//!
//! Two ways in, both set on [`crate::HttpConfig`]:
//! - [`OAuthConfig`]: the library runs the whole flow when the server answers 401 (or 403
//!   `insufficient_scope`): discovery (`discovery`), client identity (`registration`), the
//!   authorization code with PKCE through the host's [`AuthorizeHandler`], tokens and refresh
//!   (`tokens`), kept in the host's [`TokenStore`]. `flow` ties them together.
//! - [`HeaderProvider`]: called before every HTTP request for headers (a bearer token that
//!   rotates); a 401/403 then ends the call with [`crate::Status::Unauthorized`] and the parsed
//!   challenge ([`Challenge`]) as the error data.
//!
//! Tokens, secrets, codes and verifiers never appear in messages: every error of the flow is
//! scrubbed by the transport's `redact` module, which learns each secret as it appears.

mod challenge;
mod client_assertion;
mod discovery;
pub(crate) mod dpop;
mod enterprise;
pub(crate) mod flow;
mod form;
mod loopback;
mod pkce;
mod registration;
mod signing_key;
mod tokens;
mod turn;
mod workload;

pub use challenge::Challenge;
pub use dpop::DpopKey;
pub use enterprise::IdentityProvider;
pub(crate) use form::{require_secure, ANSWER_LIMIT, REQUEST_TIMEOUT};
pub use loopback::LoopbackRedirect;
pub(crate) use signing_key::SIGNATURE_LIMIT;
pub use signing_key::{HostSigner, SigningKey};
pub(crate) use tokens::TOKEN_LIMIT;
pub use workload::{AssertionProvider, WorkloadIdentity};

use crate::cancellation::CancellationToken;
use crate::sync::lock;
use serde_json::Value;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// What the host's authorization step receives: the URL to open in a browser, and where the
/// authorization server will send the person back.
pub struct AuthorizationRequest<'a> {
    /// The full authorization URL (with `state`, the PKCE challenge, `resource`, `scope`).
    /// It holds no secret, but it is single-use.
    pub authorization_url: &'a str,
    /// The redirect URI the flow registered and put in the URL.
    pub redirect_uri: &'a str,
    /// Cancelled when the call that needed the authorization is cancelled, times out, or the
    /// client closes: the host should then give up (its answer is ignored).
    pub cancellation: &'a CancellationToken,
}

/// The person's step: open `authorization_url`, wait for the redirect to `redirect_uri`, and
/// return the full URL the browser was sent to (with its `code`, `state`, maybe `iss`), or an
/// error text (the person declined, the host gave up). Runs on the thread of the exchange that
/// met the 401, and blocks it; other calls that need a token wait for it.
pub type AuthorizeHandler =
    Arc<dyn Fn(&AuthorizationRequest) -> Result<String, String> + Send + Sync>;

/// Learns a secret so the transport's messages never quote it.
pub(crate) type LearnSecret = Arc<dyn Fn(&str) + Send + Sync>;

/// Seconds since the Unix epoch: the clock of token expiries and of the JWTs the flow signs.
pub(crate) fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Extra headers for one HTTP request to the MCP server (`url`), e.g.
/// `("Authorization", "Bearer ...")`, asked for before each request so a token can rotate.
/// An error fails the request with UNAUTHORIZED and that text.
pub type HeaderProvider = Arc<dyn Fn(&str) -> Result<Vec<(String, String)>, String> + Send + Sync>;

/// Which tokens: the MCP server's URL and the issuer of the authorization server that issued
/// them. Tokens and client registrations are never shared between issuers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenKey {
    pub server_url: String,
    pub issuer: String,
}

/// Where tokens are kept between flows (and runs). The stored value is a JSON object the
/// library writes and reads back as is (access and refresh token, expiry, scope, and the
/// client registration made with that authorization server); treat it as a secret.
pub trait TokenStore: Send + Sync {
    fn load(&self, key: &TokenKey) -> Option<Value>;
    /// `None`: forget what is stored under `key` (the tokens were refused).
    fn save(&self, key: &TokenKey, value: Option<&Value>);
}

/// The default store: in memory, for the life of the client's options.
#[derive(Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<TokenKey, Value>>,
}

impl TokenStore for MemoryTokenStore {
    fn load(&self, key: &TokenKey) -> Option<Value> {
        lock(&self.tokens).get(key).cloned()
    }

    fn save(&self, key: &TokenKey, value: Option<&Value>) {
        let mut tokens = lock(&self.tokens);
        match value {
            Some(value) => tokens.insert(key.clone(), value.clone()),
            None => tokens.remove(key),
        };
    }
}

/// Which OAuth grant the flow uses. The numbers are part of the C ABI.
// C knows it as `mcp_oauth_grant`: cbindgen.toml renames it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GrantType {
    /// Authorization code with PKCE, through the host's authorize handler (the default).
    #[default]
    AuthorizationCode = 0,
    /// `client_credentials` (machine to machine): needs a pre-registered client id and its
    /// client secret or client key; no person, no callback.
    ClientCredentials = 1,
    /// The JWT-bearer grant (RFC 7523 section 2.1) for workload identity federation: the
    /// platform's token for this workload (the workload identity option) is the grant. A
    /// client id is sent (and authenticated) only when one is configured.
    JwtBearer = 2,
    /// Enterprise-managed authorization: the person's identity assertion, from the host (the
    /// identity provider option; in C `mcp_client_options_set_oauth_identity_provider`), is
    /// exchanged at the enterprise's identity provider for an ID-JAG (RFC 8693), which is then
    /// the JWT-bearer grant (RFC 7523) at the MCP server's authorization server. Needs a
    /// pre-registered client id (the ID-JAG names it); no person's step.
    EnterpriseManaged = 3,
}

/// The library's OAuth client. Client identity, in the order tried: a pre-registered
/// `client_id` (with `client_secret` for a confidential client); else `client_metadata_url`
/// when the authorization server supports Client ID Metadata Documents; else Dynamic Client
/// Registration (RFC 7591) with `client_name`, `redirect_uri` and `application_type`.
#[derive(Clone)]
pub struct OAuthConfig {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// The pre-registered client's private key: with it the client authenticates at the
    /// token endpoint by `private_key_jwt` (RFC 7523), a fresh signed assertion per request,
    /// instead of a secret (it wins over `client_secret`).
    pub client_key: Option<SigningKey>,
    /// The issuer the pre-registered client belongs to: with another authorization server the
    /// client is not presented (the flow registers instead). `None`: any issuer.
    pub client_issuer: Option<String>,
    /// An HTTPS URL of the host's client metadata document, used verbatim as `client_id`.
    pub client_metadata_url: Option<String>,
    /// The `client_name` registered dynamically (default "mcpc").
    pub client_name: Option<String>,
    /// Where the authorization server sends the person back (registered, and sent in the
    /// authorization and token requests). Required for the authorization code grant.
    pub redirect_uri: Option<String>,
    /// RFC 7591 `application_type` for dynamic registration: "native" (default) or "web".
    pub application_type: Option<String>,
    /// Scopes to ask for, space-separated, instead of those the server names.
    pub scopes: Option<String>,
    pub grant_type: GrantType,
    /// DPoP (RFC 9449): with a key, every token request and every request to the MCP server
    /// carries a fresh proof signed with it, and tokens of type DPoP (bound to the key) are
    /// accepted and sent as `Authorization: DPoP <token>`.
    pub dpop: Option<DpopKey>,
    /// Where the JWT-bearer grant gets the workload's token.
    pub workload_identity: Option<WorkloadIdentity>,
    /// Where the enterprise-managed grant exchanges the person's identity assertion.
    pub identity_provider: Option<IdentityProvider>,
    /// The person's step (authorization code grant).
    pub authorize: Option<AuthorizeHandler>,
    /// Where tokens live; [`MemoryTokenStore`] by default.
    pub token_store: Arc<dyn TokenStore>,
    /// How many times one request is retried after a new authorization (a 401 or a 403
    /// `insufficient_scope` after a fresh token), before it fails with UNAUTHORIZED.
    pub max_authorizations: u32,
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            client_id: None,
            client_secret: None,
            client_key: None,
            client_issuer: None,
            client_metadata_url: None,
            client_name: None,
            redirect_uri: None,
            application_type: None,
            scopes: None,
            grant_type: GrantType::AuthorizationCode,
            dpop: None,
            workload_identity: None,
            identity_provider: None,
            authorize: None,
            token_store: Arc::new(MemoryTokenStore::default()),
            max_authorizations: 3,
        }
    }
}

impl fmt::Debug for OAuthConfig {
    /// Never the secret.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("client_key", &self.client_key)
            .field("client_issuer", &self.client_issuer)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("redirect_uri", &self.redirect_uri)
            .field("scopes", &self.scopes)
            .field("grant_type", &self.grant_type)
            .field("dpop", &self.dpop.is_some())
            .field("workload_identity", &self.workload_identity)
            .field("identity_provider", &self.identity_provider)
            .field("authorize", &self.authorize.is_some())
            .finish_non_exhaustive()
    }
}

/// The host's auth hooks on an HTTP config, kept together so `HttpConfig` stays `Debug`.
#[derive(Clone, Default)]
pub struct AuthHooks {
    pub oauth: Option<OAuthConfig>,
    pub header_provider: Option<HeaderProvider>,
}

impl fmt::Debug for AuthHooks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthHooks")
            .field("oauth", &self.oauth)
            .field("header_provider", &self.header_provider.is_some())
            .finish()
    }
}
