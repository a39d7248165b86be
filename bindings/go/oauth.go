package mcpc

/*
#include <stdlib.h>
#include "oauth.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"sync"
	"time"
	"unsafe"
)

// AuthorizeFunc is the person's step of the OAuth flow: open authorizationURL (in a browser),
// wait for the authorization server to send the person to redirectURI, and return the full
// URL the browser was sent to (with its code, state, maybe iss), or an error to give up. It
// runs on a library thread, blocking the request that met the 401; ctx ends when that request
// is cancelled, times out or the client closes (the answer is then ignored). It must not wait
// for a call of the same client to return.
type AuthorizeFunc func(ctx context.Context, authorizationURL, redirectURI string) (string, error)

// OAuth turns on the library's OAuth flow for a client made by NewHTTP: when the server
// answers 401 (or 403 insufficient_scope), the library discovers the authorization server,
// finds the client's identity (ClientID if set; else ClientMetadataURL where the
// authorization server supports Client ID Metadata Documents; else dynamic registration),
// runs the authorization code flow with PKCE through Authorize, and retries with the token.
// Tokens are kept in memory unless WithTokenStore is given.
type OAuth struct {
	// ClientID and ClientSecret: a pre-registered client (ClientSecret empty: public).
	ClientID, ClientSecret string
	// ClientKeyPEM is the pre-registered client's private key (PEM: PKCS#8 ECDSA P-256 or
	// RSA, or PKCS#1 RSA): the client then authenticates at the token endpoint with a signed
	// assertion (private_key_jwt, RFC 7523) instead of ClientSecret. ClientKeyID, if set, is
	// the assertion's kid. A key the library cannot use fails NewHTTP with
	// StatusInvalidArgument.
	ClientKeyPEM, ClientKeyID string
	// ClientSign, instead of ClientKeyPEM, signs with a key the host keeps (in an HSM or a
	// keychain): it gets each client assertion's JWS signing input and returns the JWS
	// signature (for ES256 the raw 64-byte r||s, not ASN.1) made with algorithm
	// ClientSignAlgorithm ("ES256", "RS256", "PS256", ...; ClientKeyID is the kid). It runs on
	// a library thread; an error fails the token request with StatusUnauthorized.
	ClientSign          func(signingInput []byte) ([]byte, error)
	ClientSignAlgorithm string
	// ClientIssuer binds the pre-registered client to one authorization server: with another
	// issuer it is not presented (the flow registers instead). Empty: any issuer.
	ClientIssuer string
	// ClientCredentials uses the client_credentials grant (machine to machine: ClientID and
	// ClientSecret or ClientKeyPEM, no person; RedirectURI and Authorize are then not needed) instead of the
	// authorization code flow.
	ClientCredentials bool
	// WorkloadTokenFile uses the JWT-bearer grant (RFC 7523; workload identity federation):
	// the file holds the token the platform issued to this workload (a Kubernetes projected
	// service account token, say) and is read again for every token request, so it may
	// rotate. No person; ClientID is sent only if set.
	WorkloadTokenFile string
	// WorkloadToken, instead of WorkloadTokenFile, gives the workload's JWT from the host
	// (asked for every token request, on a library thread); an error fails the request with
	// StatusUnauthorized.
	WorkloadToken func() (string, error)
	// IdentityProvider uses enterprise-managed authorization (SEP-990): the person's identity
	// assertion is exchanged at the enterprise's identity provider for an ID-JAG (RFC 8693),
	// which is then the JWT-bearer grant at the MCP server's authorization server, with the
	// pre-registered ClientID. No person's step.
	IdentityProvider *IdentityProvider
	// DPoP turns on proof of possession (RFC 9449): a fresh proof, signed with the client's
	// key, on every token request and every request to the MCP server; the servers' DPoP
	// nonces honoured; tokens of type DPoP accepted and sent as "Authorization: DPoP ...".
	// DPoPKeyPEM is the key (PKCS#8 ECDSA P-256); empty: one generated for this client. A key
	// that is not P-256 fails NewHTTP with StatusInvalidArgument.
	DPoP       bool
	DPoPKeyPEM string
	// MaxAuthorizations: how many new authorizations one request may go through before it
	// fails with StatusUnauthorized (0: the library's default, 3).
	MaxAuthorizations int
	// ClientMetadataURL: an https URL of the client's metadata document, used as client_id.
	ClientMetadataURL string
	// ClientName is registered by dynamic registration (default "mcpc").
	ClientName string
	// RedirectURI, e.g. Loopback.RedirectURI(); required for the authorization code flow.
	RedirectURI string
	// Scopes (space-separated) to ask for instead of those the server names.
	Scopes string
	// Authorize is the person's step; required for the authorization code flow.
	Authorize AuthorizeFunc
}

// IdentityProvider is the enterprise's identity provider of OAuth.IdentityProvider.
type IdentityProvider struct {
	// TokenEndpoint is where the token exchange is made (HTTPS; http only on loopback).
	TokenEndpoint string
	// ClientID and ClientSecret: this client at the identity provider (both may be empty;
	// with a secret, HTTP Basic).
	ClientID, ClientSecret string
	// Assertion gives the person's current identity assertion (an OpenID Connect ID token
	// from this identity provider); asked for every token request, on a library thread.
	Assertion func() (string, error)
}

// WithOAuth sets the OAuth flow (see OAuth).
func WithOAuth(cfg OAuth) Option {
	str := func(s string) *C.char {
		if s == "" {
			return nil
		}
		return C.CString(s)
	}
	return func(c *config) {
		c.callbacks.authorize = cfg.Authorize
		c.callbacks.workloadToken = cfg.WorkloadToken
		c.callbacks.clientSign = cfg.ClientSign
		c.callbacks.clientSignAlgorithm, c.callbacks.clientKeyID = cfg.ClientSignAlgorithm, cfg.ClientKeyID
		c.callbacks.identityProvider = cfg.IdentityProvider
		c.setters = append(c.setters, setter{"oauth", func(o *C.mcp_client_options) C.mcp_status {
			id, secret, url := str(cfg.ClientID), str(cfg.ClientSecret), str(cfg.ClientMetadataURL)
			name, redirect, scopes := str(cfg.ClientName), str(cfg.RedirectURI), str(cfg.Scopes)
			issuer, key, keyID := str(cfg.ClientIssuer), str(cfg.ClientKeyPEM), str(cfg.ClientKeyID)
			workload, dpopKey := str(cfg.WorkloadTokenFile), str(cfg.DPoPKeyPEM)
			for _, s := range []*C.char{id, secret, url, name, redirect, scopes, issuer, key, keyID, workload, dpopKey} {
				defer C.free(unsafe.Pointer(s))
			}
			status := C.mcp_status(C.MCP_STATUS_OK)
			then := func(s C.mcp_status) {
				if status == C.MCP_STATUS_OK {
					status = s
				}
			}
			machine := cfg.ClientCredentials || workload != nil || cfg.WorkloadToken != nil ||
				cfg.IdentityProvider != nil
			if redirect != nil || !machine {
				then(C.mcp_client_options_set_oauth_redirect_uri(o, redirect))
			}
			if cfg.ClientCredentials {
				then(C.mcp_client_options_set_oauth_grant(o, C.MCP_OAUTH_GRANT_CLIENT_CREDENTIALS))
			}
			if workload != nil || cfg.WorkloadToken != nil {
				then(C.mcp_client_options_set_oauth_grant(o, C.MCP_OAUTH_GRANT_JWT_BEARER))
			}
			if workload != nil {
				then(C.mcp_client_options_set_oauth_workload_token_file(o, workload))
			}
			if cfg.IdentityProvider != nil {
				then(C.mcp_client_options_set_oauth_grant(o, C.MCP_OAUTH_GRANT_ENTERPRISE_MANAGED))
			}
			if issuer != nil {
				then(C.mcp_client_options_set_oauth_client_issuer(o, issuer))
			}
			if cfg.MaxAuthorizations > 0 {
				then(C.mcp_client_options_set_oauth_max_authorizations(o, C.uint32_t(cfg.MaxAuthorizations)))
			}
			then(C.mcp_client_options_set_oauth_registration(o, name, nil))
			if id != nil {
				then(C.mcp_client_options_set_oauth_client(o, id, secret))
			}
			if key != nil {
				then(C.mcp_client_options_set_oauth_client_key(o, key, keyID))
			}
			if cfg.DPoP || dpopKey != nil {
				then(C.mcp_client_options_set_oauth_dpop(o, true, dpopKey))
			}
			if url != nil {
				then(C.mcp_client_options_set_oauth_client_metadata_url(o, url))
			}
			if scopes != nil {
				then(C.mcp_client_options_set_oauth_scopes(o, scopes))
			}
			return status
		}})
	}
}

// WithTokenStore keeps the OAuth tokens the host's way instead of in memory. load returns what
// save last stored for the MCP server's URL and the authorization server's issuer (false when
// nothing is); save stores it (nil: forget it). The value holds tokens and the client's
// registration: treat it as a secret. Both run on library threads.
func WithTokenStore(load func(serverURL, issuer string) (json.RawMessage, bool),
	save func(serverURL, issuer string, tokens json.RawMessage)) Option {
	return func(c *config) {
		c.callbacks.tokenLoad = load
		c.callbacks.tokenSave = save
	}
}

// WithHeaderProvider is for hosts that run their own auth: fn gives headers (e.g.
// "Authorization": "Bearer ...") for each HTTP request to the MCP server at url, so a token
// can rotate; an error fails the request with StatusUnauthorized. A 401 or 403 then fails
// the call with StatusUnauthorized and the server's challenge in Error.Data. fn runs on
// library threads.
func WithHeaderProvider(fn func(url string) (map[string]string, error)) Option {
	return func(c *config) { c.callbacks.headers = fn }
}

// StatusUnauthorized: the server refused the request (401/403) and the OAuth flow could not
// get a token it accepts, or the host's header provider failed.
const StatusUnauthorized Status = C.MCP_STATUS_UNAUTHORIZED

// installAuth registers the OAuth callbacks that are set, under the client's handle h.
func (cb *callbacks) installAuth(o *C.mcp_client_options, h C.uintptr_t, set func(C.mcp_status)) {
	if cb.authorize != nil {
		set(C.mcpc_go_authorize(o, h))
	}
	if cb.tokenLoad != nil || cb.tokenSave != nil {
		set(C.mcpc_go_token_store(o, h))
	}
	if cb.headers != nil {
		set(C.mcpc_go_header_provider(o, h))
	}
	if cb.workloadToken != nil {
		set(C.mcpc_go_workload_token(o, h))
	}
	if cb.clientSign != nil {
		alg, kid := C.CString(cb.clientSignAlgorithm), optionalCString(cb.clientKeyID)
		set(C.mcpc_go_client_signer(o, alg, kid, h))
		C.free(unsafe.Pointer(alg))
		C.free(unsafe.Pointer(kid))
	}
	if idp := cb.identityProvider; idp != nil {
		endpoint, id, secret := C.CString(idp.TokenEndpoint), optionalCString(idp.ClientID),
			optionalCString(idp.ClientSecret)
		set(C.mcpc_go_identity_provider(o, endpoint, id, secret, h))
		for _, s := range []*C.char{endpoint, id, secret} {
			C.free(unsafe.Pointer(s))
		}
	}
}

func (cb *callbacks) anyAuth() bool {
	return cb.authorize != nil || cb.tokenLoad != nil || cb.tokenSave != nil || cb.headers != nil ||
		cb.workloadToken != nil || cb.identityProvider != nil || cb.clientSign != nil
}

//export mcpcGoClientSign
func mcpcGoClientSign(h C.uintptr_t, input *C.uint8_t, length C.size_t, signature *C.uint8_t,
	capacity C.size_t) C.size_t {
	sign := callbacksOf(h).clientSign
	if sign == nil {
		return 0
	}
	signed, err := sign(C.GoBytes(unsafe.Pointer(input), C.int(length)))
	if err != nil || len(signed) == 0 || len(signed) > int(capacity) {
		return 0
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(signature)), int(capacity)), signed)
	return C.size_t(len(signed))
}

// optionalCString is NULL for "", else a C copy (free it).
func optionalCString(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

// giveAssertion copies what get gives into the library's buffer (0: none, or too long).
func giveAssertion(get func() (string, error), buffer *C.char, capacity C.size_t) C.size_t {
	if get == nil {
		return 0
	}
	text, err := get()
	if err != nil || text == "" || len(text) > int(capacity) {
		return 0
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(buffer)), int(capacity)), text)
	return C.size_t(len(text))
}

//export mcpcGoWorkloadToken
func mcpcGoWorkloadToken(h C.uintptr_t, buffer *C.char, capacity C.size_t) C.size_t {
	return giveAssertion(callbacksOf(h).workloadToken, buffer, capacity)
}

//export mcpcGoIdentityAssertion
func mcpcGoIdentityAssertion(h C.uintptr_t, buffer *C.char, capacity C.size_t) C.size_t {
	idp := callbacksOf(h).identityProvider
	if idp == nil {
		return 0
	}
	return giveAssertion(idp.Assertion, buffer, capacity)
}

// replyContext is a context that ends when the library says the request needing the
// authorization is over. The C API tells that only when asked, so it is asked every 50 ms
// while the AuthorizeFunc runs; stop ends the watch.
func replyContext(reply *C.mcp_auth_reply) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(50 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				if C.mcp_auth_reply_is_cancelled(reply) {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, func() {
		close(done)
		wg.Wait() // the reply is valid only during the callback
		cancel()
	}
}

//export mcpcGoAuthorize
func mcpcGoAuthorize(h C.uintptr_t, url, redirect *C.char, reply *C.mcp_auth_reply) C.bool {
	ctx, stop := replyContext(reply)
	got, err := callbacksOf(h).authorize(ctx, C.GoString(url), C.GoString(redirect))
	stop()
	if err != nil {
		msg := C.CString(err.Error())
		defer C.free(unsafe.Pointer(msg))
		C.mcp_auth_reply_set_error(reply, msg)
		return false
	}
	curl := C.CString(got)
	defer C.free(unsafe.Pointer(curl))
	return C.mcp_auth_reply_set_redirect_url(reply, curl)
}

//export mcpcGoTokenLoad
func mcpcGoTokenLoad(h C.uintptr_t, server, issuer *C.char, slot *C.mcp_token_slot) C.bool {
	load := callbacksOf(h).tokenLoad
	if load == nil {
		return false
	}
	tokens, ok := load(C.GoString(server), C.GoString(issuer))
	if !ok {
		return false
	}
	ctokens := C.CString(string(tokens))
	defer C.free(unsafe.Pointer(ctokens))
	return C.mcp_token_slot_set(slot, ctokens)
}

//export mcpcGoTokenSave
func mcpcGoTokenSave(h C.uintptr_t, server, issuer, tokens *C.char) {
	if save := callbacksOf(h).tokenSave; save != nil {
		save(C.GoString(server), C.GoString(issuer), optionalJSON(tokens))
	}
}

//export mcpcGoHeaders
func mcpcGoHeaders(h C.uintptr_t, url *C.char, list *C.mcp_header_list) C.bool {
	headers, err := callbacksOf(h).headers(C.GoString(url))
	if err != nil {
		return false
	}
	for name, value := range headers {
		cname, cvalue := C.CString(name), C.CString(value)
		C.mcp_header_list_add(list, cname, cvalue)
		C.free(unsafe.Pointer(cname))
		C.free(unsafe.Pointer(cvalue))
	}
	return true
}

// Loopback is the redirect listener of a native host (RFC 8252): it listens on 127.0.0.1 at a
// port the system picks, and its RedirectURI is where the authorization server sends the
// browser back. It serves every authorization of a client until closed.
type Loopback struct {
	mu  sync.Mutex // one Wait at a time, and Close after it
	raw *C.mcp_loopback
}

// NewLoopback opens the listener; path is the redirect URI's path ("" for "/callback").
func NewLoopback(path string) (*Loopback, error) {
	var cpath *C.char
	if path != "" {
		cpath = C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
	}
	raw := C.mcp_loopback_new(cpath)
	if C.mcp_loopback_redirect_uri(raw) == nil {
		// It did not open: the wait returns at once, with the status and message of why.
		status := Status(C.mcp_loopback_wait(raw, nil, 1))
		err := &Error{Status: status, Message: C.GoString(C.mcp_loopback_message(raw))}
		C.mcp_loopback_free(raw)
		return nil, err
	}
	return &Loopback{raw: raw}, nil
}

// RedirectURI is the URI to put in OAuth.RedirectURI, e.g. "http://127.0.0.1:53124/callback".
func (l *Loopback) RedirectURI() string {
	return C.GoString(C.mcp_loopback_redirect_uri(l.raw))
}

// Wait waits for the browser's request to the redirect URI (answering it with a short page)
// and returns its full URL. It ends early with ctx; a redirect that came before the call is
// returned at once.
func (l *Loopback) Wait(ctx context.Context) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.raw == nil {
		return "", errClosed()
	}
	token := C.mcp_cancellation_new()
	defer C.mcp_cancellation_free(token)
	stop := watch(ctx, func(err error) {
		reason := C.CString(err.Error())
		defer C.free(unsafe.Pointer(reason))
		C.mcp_cancellation_cancel(token, reason)
	})
	status := Status(C.mcp_loopback_wait(l.raw, token, 0))
	ctxErr := stop()
	if status != StatusOK {
		return "", &Error{Status: status, Message: C.GoString(C.mcp_loopback_message(l.raw)),
			ctx: ctxErr}
	}
	return C.GoString(C.mcp_loopback_url(l.raw)), nil
}

// Authorize is an AuthorizeFunc for this listener: it calls open with the authorization URL
// (to start the browser, or print the URL), then waits for the browser to come back.
func (l *Loopback) Authorize(open func(authorizationURL string) error) AuthorizeFunc {
	return func(ctx context.Context, authorizationURL, _ string) (string, error) {
		if err := open(authorizationURL); err != nil {
			return "", err
		}
		return l.Wait(ctx)
	}
}

// Close stops the listener (after a Wait in progress returns). Closing twice is harmless.
func (l *Loopback) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	C.mcp_loopback_free(l.raw)
	l.raw = nil
	return nil
}
