//! The client options of the OAuth flow and the header provider: the client identity and
//! scopes, the person's step, the token store, the per-request headers. Every setter here (but
//! the header provider's) turns the library's OAuth flow on for a client made by
//! `mcp_client_new_http` with these options. The callback types and their replies are in
//! `ffi::auth_reply`, `ffi::token_slot` and `ffi::header_list`.

use super::mcp_client_options;
use crate::auth::{
    AuthorizationRequest, DpopKey, GrantType, HeaderProvider, IdentityProvider, OAuthConfig,
    SigningKey, WorkloadIdentity,
};
use crate::error::Error;
use crate::ffi::auth_reply::{mcp_auth_reply, mcp_authorize_callback};
use crate::ffi::callbacks::UserData;
use crate::ffi::credential_callbacks::{
    assertion_provider, host_signer, mcp_assertion_callback, mcp_sign_callback,
};
use crate::ffi::header_list::{mcp_header_list, mcp_header_provider};
use crate::ffi::setter::set;
use crate::ffi::status::mcp_status;
use crate::ffi::strings::{optional_str, to_cstring};
use crate::ffi::token_slot::{mcp_token_load_callback, mcp_token_save_callback, CStore};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

/// A pre-registered OAuth client: its `client_id` and, for a confidential client, its
/// `client_secret` (NULL: a public client). NULL `client_id` clears both.
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_client(
    options: *mut mcp_client_options,
    client_id: *const c_char,
    client_secret: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let id = optional_str(client_id, "client id")?.map(str::to_owned);
        let secret = optional_str(client_secret, "client secret")?.map(str::to_owned);
        let oauth = oauth(o);
        oauth.client_secret = id.as_ref().and(secret);
        oauth.client_id = id;
        Ok(())
    })
}

/// The pre-registered client's private key, for `private_key_jwt` client authentication
/// (RFC 7523): at the token endpoint the client sends a fresh assertion signed with it instead
/// of a secret. `private_key_pem` is PKCS#8 ("BEGIN PRIVATE KEY": ECDSA P-256, signing ES256,
/// or RSA, signing RS256) or PKCS#1 ("BEGIN RSA PRIVATE KEY"); `key_id` (NULL: none) goes in
/// each assertion's `kid`. The key is parsed here (a bad one: MCP_STATUS_INVALID_ARGUMENT;
/// a build without TLS: MCP_STATUS_NOT_SUPPORTED) and the text is not kept. Set the client id
/// with `mcp_client_options_set_oauth_client`. NULL `private_key_pem` clears the key.
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_client_key(
    options: *mut mcp_client_options,
    private_key_pem: *const c_char,
    key_id: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let key_id = optional_str(key_id, "key id")?;
        let key = match optional_str(private_key_pem, "private key")? {
            Some(pem) => Some(SigningKey::from_pem(pem, key_id)?),
            None => None,
        };
        oauth(o).client_key = key;
        Ok(())
    })
}

/// The pre-registered client's private key kept by the host (in an HSM or a keychain), for
/// `private_key_jwt` like `mcp_client_options_set_oauth_client_key`: each client assertion's
/// signing input goes to `callback` (see `mcp_sign_callback`), which signs it with JWS
/// algorithm `algorithm` ("ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256",
/// "PS384", "PS512" or "EdDSA"; another: MCP_STATUS_INVALID_ARGUMENT). `key_id` (NULL: none)
/// goes in each assertion's `kid`. It replaces a PEM key set before; NULL `callback` clears
/// the key.
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated; `callback` is safe to
/// call from any thread with `userdata` for as long as a client made from these options is
/// alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_client_signer(
    options: *mut mcp_client_options,
    algorithm: *const c_char,
    key_id: *const c_char,
    callback: mcp_sign_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let algorithm = optional_str(algorithm, "signing algorithm")?;
        let key_id = optional_str(key_id, "key id")?;
        let key = match callback {
            None => None,
            Some(callback) => {
                let algorithm = algorithm
                    .ok_or_else(|| Error::invalid("the signing algorithm must not be NULL"))?;
                let sign = host_signer(callback, UserData(userdata));
                Some(SigningKey::from_host_signer(algorithm, key_id, sign)?)
            }
        };
        oauth(o).client_key = key;
        Ok(())
    })
}

/// DPoP (RFC 9449): with `enable`, every token request and every request to the MCP server
/// carries a fresh proof signed with this client's key, the servers' DPoP nonces are honoured
/// (the request sent once more with a new one), and tokens of type DPoP (bound to the key) are
/// accepted and sent as "Authorization: DPoP <token>". The key is `key_pem` (PKCS#8 "BEGIN
/// PRIVATE KEY", ECDSA P-256; the text is not kept) or, when NULL, a P-256 key generated
/// here for clients made from these options. A key that is not P-256, or not a key:
/// MCP_STATUS_INVALID_ARGUMENT; a build without TLS: MCP_STATUS_NOT_SUPPORTED. `enable` false
/// turns DPoP off.
///
/// # Safety
/// `options` is NULL or live; `key_pem` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_dpop(
    options: *mut mcp_client_options,
    enable: bool,
    key_pem: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let pem = optional_str(key_pem, "DPoP key")?;
        let key = match (enable, pem) {
            (false, _) => None,
            (true, Some(pem)) => Some(DpopKey::from_pem(pem)?),
            (true, None) => Some(DpopKey::generate()?),
        };
        oauth(o).dpop = key;
        Ok(())
    })
}

/// The file that holds the workload's JWT for the JWT-bearer grant
/// (MCP_OAUTH_GRANT_JWT_BEARER; workload identity federation), e.g. a Kubernetes projected
/// service account token. It is read again for every token request, so the platform may
/// rotate it; a file that cannot be read, or does not hold a compact JWT, fails the request
/// with MCP_STATUS_UNAUTHORIZED (its content never quoted). NULL clears it.
///
/// # Safety
/// `options` is NULL or live; `path` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_workload_token_file(
    options: *mut mcp_client_options,
    path: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let path = optional_str(path, "workload token file")?;
        oauth(o).workload_identity = path.map(|p| WorkloadIdentity::File(p.into()));
        Ok(())
    })
}

/// The workload's JWT for the JWT-bearer grant (MCP_OAUTH_GRANT_JWT_BEARER) from the host's
/// callback (see `mcp_assertion_callback`), asked for every token request, instead of a file
/// (it replaces one set by `mcp_client_options_set_oauth_workload_token_file`). What it gives
/// must be a compact JWT; else the request fails with MCP_STATUS_UNAUTHORIZED (the text never
/// quoted). NULL `callback` clears it.
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from any thread with `userdata` for
/// as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_workload_token_callback(
    options: *mut mcp_client_options,
    callback: mcp_assertion_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        oauth(o).workload_identity = callback.map(|callback| {
            WorkloadIdentity::Provider(assertion_provider(callback, userdata, "workload token"))
        });
        Ok(())
    })
}

/// Enterprise-managed authorization (MCP_OAUTH_GRANT_ENTERPRISE_MANAGED): the enterprise's
/// identity provider (IdP) and the host's callback that gives the person's identity assertion
/// (an OpenID Connect ID token from that IdP; see `mcp_assertion_callback`). For each token
/// request the library asks the callback, exchanges the assertion at `idp_token_endpoint`
/// (RFC 8693, for an ID-JAG addressed to the MCP server's authorization server and resource),
/// then presents the ID-JAG there as a JWT-bearer grant with the client of
/// `mcp_client_options_set_oauth_client`. `idp_client_id` and `idp_client_secret` (both may be
/// NULL) are this client at the IdP (with a secret: HTTP Basic). The endpoint must be HTTPS
/// (http only on loopback). The assertion and the ID-JAG never appear in messages. NULL
/// `callback` clears the setting.
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated; `callback` is safe to
/// call from any thread with `userdata` for as long as a client made from these options is
/// alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_identity_provider(
    options: *mut mcp_client_options,
    idp_token_endpoint: *const c_char,
    idp_client_id: *const c_char,
    idp_client_secret: *const c_char,
    callback: mcp_assertion_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let endpoint = optional_str(idp_token_endpoint, "identity provider token endpoint")?;
        let client_id = optional_str(idp_client_id, "identity provider client id")?;
        let secret = optional_str(idp_client_secret, "identity provider client secret")?;
        let Some(callback) = callback else {
            oauth(o).identity_provider = None;
            return Ok(());
        };
        let endpoint = endpoint.ok_or_else(|| {
            Error::invalid("the identity provider's token endpoint must not be NULL")
        })?;
        crate::auth::require_secure(endpoint, "identity provider's token endpoint")
            .map_err(|e| Error::invalid(e.message))?;
        oauth(o).identity_provider = Some(IdentityProvider {
            token_endpoint: endpoint.to_owned(),
            client_id: client_id.map(str::to_owned),
            client_secret: secret.map(str::to_owned),
            assertion: assertion_provider(callback, UserData(userdata), "identity assertion"),
        });
        Ok(())
    })
}

/// Binds the pre-registered client to one authorization server: with another issuer (the
/// server moved to a new one) the client id and secret are not presented, and the flow
/// registers or uses a client metadata document instead. NULL: any issuer (the default).
///
/// # Safety
/// `options` is NULL or live; `issuer` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_client_issuer(
    options: *mut mcp_client_options,
    issuer: *const c_char,
) -> mcp_status {
    set(options, |o| {
        oauth(o).client_issuer = optional_str(issuer, "client issuer")?.map(str::to_owned);
        Ok(())
    })
}

/// The HTTPS URL of the host's Client ID Metadata Document, used verbatim as `client_id` by
/// authorization servers that support it (NULL: none).
///
/// # Safety
/// `options` is NULL or live; `url` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_client_metadata_url(
    options: *mut mcp_client_options,
    url: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let url = optional_str(url, "client metadata URL")?;
        if let Some(url) = url {
            if !url.starts_with("https://") {
                return Err(Error::invalid("the client metadata URL must be https"));
            }
        }
        oauth(o).client_metadata_url = url.map(str::to_owned);
        Ok(())
    })
}

/// What Dynamic Client Registration (RFC 7591) registers: `client_name` (NULL: "mcpc") and
/// `application_type` ("native", the default when NULL, or "web").
///
/// # Safety
/// `options` is NULL or live; the strings are NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_registration(
    options: *mut mcp_client_options,
    client_name: *const c_char,
    application_type: *const c_char,
) -> mcp_status {
    set(options, |o| {
        let name = optional_str(client_name, "client name")?.map(str::to_owned);
        let kind = optional_str(application_type, "application type")?.map(str::to_owned);
        let oauth = oauth(o);
        oauth.client_name = name;
        oauth.application_type = kind;
        Ok(())
    })
}

/// The redirect URI the authorization server sends the person back to, e.g.
/// "http://127.0.0.1:8765/callback" (required for the authorization code grant).
///
/// # Safety
/// `options` is NULL or live; `uri` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_redirect_uri(
    options: *mut mcp_client_options,
    uri: *const c_char,
) -> mcp_status {
    set(options, |o| {
        oauth(o).redirect_uri = optional_str(uri, "redirect URI")?.map(str::to_owned);
        Ok(())
    })
}

/// Scopes to ask for (space-separated) instead of those the server names (NULL: the server's).
///
/// # Safety
/// `options` is NULL or live; `scopes` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_scopes(
    options: *mut mcp_client_options,
    scopes: *const c_char,
) -> mcp_status {
    set(options, |o| {
        oauth(o).scopes = optional_str(scopes, "scopes")?.map(str::to_owned);
        Ok(())
    })
}

/// The grant: an `mcp_oauth_grant` value (default MCP_OAUTH_GRANT_AUTHORIZATION_CODE).
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_grant(
    options: *mut mcp_client_options,
    grant: std::ffi::c_int,
) -> mcp_status {
    set(options, |o| {
        oauth(o).grant_type = match grant {
            g if g == GrantType::AuthorizationCode as std::ffi::c_int => {
                GrantType::AuthorizationCode
            }
            g if g == GrantType::ClientCredentials as std::ffi::c_int => {
                GrantType::ClientCredentials
            }
            g if g == GrantType::JwtBearer as std::ffi::c_int => GrantType::JwtBearer,
            g if g == GrantType::EnterpriseManaged as std::ffi::c_int => {
                GrantType::EnterpriseManaged
            }
            _ => return Err(Error::invalid(format!("unknown OAuth grant {grant}"))),
        };
        Ok(())
    })
}

/// How many new authorizations one request may go through (a 401, or a 403
/// insufficient_scope, after a fresh token) before it fails with MCP_STATUS_UNAUTHORIZED
/// (default 3); must be positive.
///
/// # Safety
/// `options` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_max_authorizations(
    options: *mut mcp_client_options,
    max: u32,
) -> mcp_status {
    set(options, |o| {
        if max == 0 {
            return Err(Error::invalid("max authorizations must be positive"));
        }
        oauth(o).max_authorizations = max;
        Ok(())
    })
}

/// The person's step (see `mcp_authorize_callback`); NULL removes it.
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from another thread with `userdata`
/// for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_authorize_callback(
    options: *mut mcp_client_options,
    callback: mcp_authorize_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        oauth(o).authorize = callback.map(|callback| -> crate::auth::AuthorizeHandler {
            Arc::new(move |request: &AuthorizationRequest| {
                let userdata = userdata;
                let url = to_cstring(request.authorization_url);
                let redirect = to_cstring(request.redirect_uri);
                let mut reply = mcp_auth_reply {
                    redirect_url: None,
                    error: None,
                    cancellation: request.cancellation.clone(),
                };
                // SAFETY: the setter's contract.
                let ok =
                    unsafe { callback(userdata.0, url.as_ptr(), redirect.as_ptr(), &mut reply) };
                match (ok, reply.redirect_url, reply.error) {
                    (true, Some(url), _) => Ok(url),
                    (_, _, Some(error)) => Err(error),
                    (true, None, None) => Err("the authorize callback gave no redirect URL".into()),
                    (false, _, None) => Err("authorization declined".into()),
                }
            })
        });
        Ok(())
    })
}

/// A token store of the host's (see `mcp_token_load_callback`, `mcp_token_save_callback`);
/// both NULL: back to the in-memory default. Without one, tokens live in memory, shared by the
/// clients made from these options.
///
/// # Safety
/// `options` is NULL or live; the callbacks are safe to call from any thread with `userdata`
/// for as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_oauth_token_store(
    options: *mut mcp_client_options,
    load: mcp_token_load_callback,
    save: mcp_token_save_callback,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        oauth(o).token_store = match (load, save) {
            (None, None) => Arc::new(crate::auth::MemoryTokenStore::default()),
            (Some(load), Some(save)) => Arc::new(CStore {
                load,
                save,
                userdata: UserData(userdata),
            }),
            _ => {
                return Err(Error::invalid(
                    "a token store needs both the load and the save callback",
                ))
            }
        };
        Ok(())
    })
}

/// The host's per-request header provider (see `mcp_header_provider`); NULL removes it. It
/// works with or without the library's OAuth flow (its headers come first).
///
/// # Safety
/// `options` is NULL or live; `callback` is safe to call from any thread with `userdata` for
/// as long as a client made from these options is alive.
#[no_mangle]
pub unsafe extern "C" fn mcp_client_options_set_header_provider(
    options: *mut mcp_client_options,
    callback: mcp_header_provider,
    userdata: *mut c_void,
) -> mcp_status {
    set(options, |o| {
        let userdata = UserData(userdata);
        o.http.auth.header_provider = callback.map(|callback| -> HeaderProvider {
            Arc::new(move |url: &str| {
                let userdata = userdata;
                let url = to_cstring(url);
                let mut list = mcp_header_list {
                    headers: Vec::new(),
                };
                // SAFETY: the setter's contract.
                match unsafe { callback(userdata.0, url.as_ptr(), &mut list) } {
                    true => Ok(list.headers),
                    false => Err("the header provider returned false".into()),
                }
            })
        });
        Ok(())
    })
}

/// The OAuth settings of the options, made on first use.
fn oauth(options: &mut mcp_client_options) -> &mut OAuthConfig {
    options
        .http
        .auth
        .oauth
        .get_or_insert_with(OAuthConfig::default)
}
