//! The transport's two auth hooks, kept here so the exchange code calls one function each:
//! `add_headers` before every request to the MCP server (the header provider's headers, or
//! the OAuth bearer token), and `refused` on a 401/403 (run the OAuth flow, or end the call
//! with UNAUTHORIZED and the parsed challenge). The flow itself is `crate::auth`.

use super::connector::Exchange;
use super::headers;
use super::Shared;
use crate::auth::flow::{unauthorized, Sent};
use crate::auth::Challenge;
use crate::cancellation::CancellationToken;
use crate::error::Result;
use std::io::Read;
use std::sync::Arc;
use ureq::http::Response;
use ureq::{Body, ResponseExt};

/// How much of a refused request's body is read (so its connection can be reused).
const REFUSED_BODY_LIMIT: u64 = 64 * 1024;

/// Whether an HTTP status is one the auth hooks handle.
pub(super) fn is_refusal(status: u16) -> bool {
    matches!(status, 401 | 403)
}

/// Adds the auth headers to a request to the MCP server.
pub(super) fn add_headers<B>(
    shared: &Shared,
    mut request: ureq::RequestBuilder<B>,
) -> Result<ureq::RequestBuilder<B>> {
    if let Some(auth) = &shared.auth {
        let method = request
            .method_ref()
            .map_or("GET", |m| m.as_str())
            .to_owned();
        let url = request
            .uri_ref()
            .map_or_else(|| shared.config.url.clone(), |u| u.to_string());
        let added = auth.headers(&method, &url)?;
        // The provider's headers obey the rules of the configured ones.
        headers::check_extra(&added)?;
        for (name, value) in added {
            request = request.header(name, value);
        }
    }
    Ok(request)
}

/// A 401 or 403: `Ok` when the request should be sent again (a new token, or the DPoP nonce
/// the server asked for, is in place), else
/// the UNAUTHORIZED error with the challenge. `exchange` is the request's: aborting it (a
/// cancel, a timeout, close) cancels the host's authorization step too. `refusals` counts the
/// refusals of this request, for the retry limit.
pub(super) fn refused(
    shared: &Shared,
    exchange: Option<&Arc<Exchange>>,
    response: Response<Body>,
    refusals: &mut u32,
    sent: &Sent,
) -> Result<()> {
    let url = response.get_uri().to_string();
    let nonce = dpop_nonce(&response);
    let challenge = challenge(response);
    let Some(auth) = &shared.auth else {
        return Err(unauthorized(
            &challenge,
            "the server requires authorization",
        ));
    };
    *refusals += 1;
    if let Some(outcome) =
        auth.on_nonce_refusal(&url, nonce.as_deref(), &challenge, *refusals, sent)
    {
        return outcome;
    }
    let cancel = CancellationToken::new();
    let hook = exchange.map(|exchange| exchange.cancel_on_abort(&cancel));
    // Close reaches the flow also where no exchange does (a notification's).
    let on_close = shared.closing.on_cancel({
        let cancel = cancel.clone();
        move |reason| {
            cancel.cancel(reason);
        }
    });
    let outcome = auth.on_challenge(
        &shared.agent,
        &challenge,
        *refusals,
        sent.generation,
        &cancel,
    );
    if let (Some(exchange), Some(hook)) = (exchange, hook) {
        exchange.forget_on_abort(hook);
    }
    if let Some(on_close) = on_close {
        shared.closing.off_cancel(on_close);
    }
    outcome
}

/// A response the MCP server accepted: a `DPoP-Nonce` on it is the one the next proofs carry
/// (RFC 9449 section 9: a server may hand out its next nonce with any answer).
pub(super) fn accepted(shared: &Shared, response: &Response<Body>) {
    if let (Some(auth), Some(nonce)) = (&shared.auth, dpop_nonce(response)) {
        auth.next_nonce(&response.get_uri().to_string(), &nonce);
    }
}

fn dpop_nonce(response: &Response<Body>) -> Option<String> {
    response
        .headers()
        .get(crate::auth::dpop::NONCE_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// What a request is about to be sent with (see `Authorizer::before_request`), for `refused`.
pub(super) fn before_request(shared: &Shared) -> Sent {
    shared
        .auth
        .as_ref()
        .map_or_else(Sent::default, |auth| auth.before_request())
}

/// A 401 or 403 where no flow runs (a resumed or standalone stream, the session DELETE).
pub(super) fn refusal_error(response: Response<Body>) -> crate::error::Error {
    unauthorized(&challenge(response), "the server refused the credentials")
}

/// The challenge of a refusal; its body is read (so the connection can be reused) and dropped.
fn challenge(response: Response<Body>) -> Challenge {
    let status = response.status().as_u16();
    let header = response
        .headers()
        .get("www-authenticate")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let _ = std::io::copy(
        &mut response.into_body().into_reader().take(REFUSED_BODY_LIMIT),
        &mut std::io::sink(),
    );
    Challenge::parse(status, header.as_deref())
}
