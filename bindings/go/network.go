package mcpc

/*
#include <stdlib.h>
#include "mcpc.h"
*/
import "C"

import (
	"time"
	"unsafe"
)

// Options for clients made by NewHTTP on company networks, with curl's meanings.

func withStringSetter(what, value string, set func(*C.mcp_client_options, *C.char) C.mcp_status) Option {
	return withSetter(what, func(o *C.mcp_client_options) C.mcp_status {
		cvalue := C.CString(value)
		defer C.free(unsafe.Pointer(cvalue))
		return set(o, cvalue)
	})
}

// WithProxy sends every HTTP request through this proxy: http://[user:password@]host[:port]
// or https://... ("" removes it).
func WithProxy(url string) Option {
	return withStringSetter("proxy", url, func(o *C.mcp_client_options, v *C.char) C.mcp_status {
		return C.mcp_client_options_set_proxy(o, v)
	})
}

// WithNoProxy lists the hosts reached without the proxy (curl's NO_PROXY syntax; "*" for all).
func WithNoProxy(list string) Option {
	return withStringSetter("noproxy", list, func(o *C.mcp_client_options, v *C.char) C.mcp_status {
		return C.mcp_client_options_set_noproxy(o, v)
	})
}

// WithProxyFromEnv takes the proxy from HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY.
func WithProxyFromEnv() Option {
	return withSetter("proxy from env", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_proxy_from_env(o, true)
	})
}

// WithCAFile trusts the CA certificates of a PEM file (besides the bundled roots).
func WithCAFile(path string) Option {
	return withStringSetter("CA file "+path, path, func(o *C.mcp_client_options, v *C.char) C.mcp_status {
		return C.mcp_client_options_add_ca_file(o, v)
	})
}

// WithCADir trusts the CA certificates of every PEM file in a directory.
func WithCADir(path string) Option {
	return withStringSetter("CA dir "+path, path, func(o *C.mcp_client_options, v *C.char) C.mcp_status {
		return C.mcp_client_options_add_ca_dir(o, v)
	})
}

// WithCAPEM trusts the CA certificates of a PEM text.
func WithCAPEM(pem string) Option {
	return withStringSetter("CA PEM", pem, func(o *C.mcp_client_options, v *C.char) C.mcp_status {
		return C.mcp_client_options_add_ca_pem(o, v)
	})
}

// WithCAReplace makes the added CAs (and the system store, if used) replace the bundled roots.
func WithCAReplace() Option {
	return withSetter("CA replace", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_ca_replace(o, true)
	})
}

// WithSystemRoots also trusts the operating system's certificate store.
func WithSystemRoots() Option {
	return withSetter("system roots", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_use_system_roots(o, true)
	})
}

// WithClientCert shows this client certificate (PEM chain) and key (PEM) to servers that ask.
func WithClientCert(certFile, keyFile string) Option {
	return withSetter("client certificate", func(o *C.mcp_client_options) C.mcp_status {
		ccert, ckey := C.CString(certFile), C.CString(keyFile)
		defer C.free(unsafe.Pointer(ccert))
		defer C.free(unsafe.Pointer(ckey))
		return C.mcp_client_options_set_client_cert(o, ccert, ckey)
	})
}

// WithHTTPConnectTimeout bounds opening an HTTP connection (default 10 s).
func WithHTTPConnectTimeout(d time.Duration) Option {
	return withSetter("http connect timeout", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_http_connect_timeout_ms(o, millis(d))
	})
}

// WithHTTPIdleTimeout fails a call whose HTTP response is silent this long (0: never).
func WithHTTPIdleTimeout(d time.Duration) Option {
	return withSetter("http idle timeout", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_http_idle_timeout_ms(o, millis(d))
	})
}

// WithHTTPListen says whether a handshake-era HTTP client opens the standalone GET stream
// (default true).
func WithHTTPListen(listen bool) Option {
	return withSetter("http listen", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_http_listen(o, C.bool(listen))
	})
}

// HTTPTransport is the HTTP transport a client speaks.
type HTTPTransport int

const (
	// HTTPTransportAuto speaks Streamable HTTP, unless the server refuses the initialize POST
	// with 400, 404 or 405 and its URL opens an HTTP+SSE event stream (remembered for
	// reconnects).
	HTTPTransportAuto HTTPTransport = C.MCP_HTTP_TRANSPORT_AUTO
	// HTTPTransportStreamable speaks Streamable HTTP only.
	HTTPTransportStreamable HTTPTransport = C.MCP_HTTP_TRANSPORT_STREAMABLE
	// HTTPTransportLegacySSE speaks the 2024-11-05 HTTP+SSE transport only (handshake era):
	// the URL is the server's event stream.
	HTTPTransportLegacySSE HTTPTransport = C.MCP_HTTP_TRANSPORT_LEGACY_SSE
)

// WithHTTPTransport chooses the HTTP transport (default HTTPTransportAuto).
func WithHTTPTransport(transport HTTPTransport) Option {
	return withSetter("http transport", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_http_transport(o, C.int(transport))
	})
}
