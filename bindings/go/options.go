package mcpc

/*
#include <stdlib.h>
#include "mcpc.h"
*/
import "C"

import (
	"encoding/json"
	"time"
	"unsafe"
)

// Mode is the protocol era a client speaks.
type Mode int

const (
	// ModeAuto probes with server/discover and falls back to the initialize handshake.
	ModeAuto Mode = C.MCP_CONNECT_MODE_AUTO
	// ModeLegacy uses the initialize handshake only (2025-11-25 and older).
	ModeLegacy Mode = C.MCP_CONNECT_MODE_LEGACY
	// ModeModern uses server/discover and per-request _meta only (2026-07-28).
	ModeModern Mode = C.MCP_CONNECT_MODE_MODERN
)

// StderrMode says what happens to a stdio server's stderr.
type StderrMode int

const (
	// StderrTail keeps the last lines, quoted when the server exits unexpectedly (default).
	StderrTail StderrMode = C.MCP_STDERR_MODE_TAIL
	// StderrInherit lets the server write to this process's stderr.
	StderrInherit StderrMode = C.MCP_STDERR_MODE_INHERIT
	// StderrDiscard throws it away.
	StderrDiscard StderrMode = C.MCP_STDERR_MODE_DISCARD
)

// Progress is one notifications/progress of a call.
type Progress struct {
	// Token is the call's progress token, as JSON.
	Token    json.RawMessage
	Progress float64
	// Total is negative when the server gave none.
	Total   float64
	Message string
}

// An Option configures a client (see NewStdio and NewHTTP).
type Option func(*config)

// config is what the options collect: setters for the C options, and the callbacks, which
// are installed through one cgo handle per client.
type config struct {
	setters   []setter
	callbacks callbacks
}

type setter struct {
	what  string // for the error when the library rejects it
	apply func(*C.mcp_client_options) C.mcp_status
}

func withSetter(what string, apply func(*C.mcp_client_options) C.mcp_status) Option {
	return func(c *config) { c.setters = append(c.setters, setter{what, apply}) }
}

// WithClientInfo sets the clientInfo sent in initialize (default: "mcpc" and the library's
// version).
func WithClientInfo(name, version string) Option {
	return withSetter("client info", func(o *C.mcp_client_options) C.mcp_status {
		cname, cversion := C.CString(name), C.CString(version)
		defer C.free(unsafe.Pointer(cname))
		defer C.free(unsafe.Pointer(cversion))
		return C.mcp_client_options_set_client_info(o, cname, cversion)
	})
}

// WithCapabilities sets the client capabilities, a JSON object.
func WithCapabilities(capabilities json.RawMessage) Option {
	return withSetter("capabilities", func(o *C.mcp_client_options) C.mcp_status {
		ccaps := C.CString(string(capabilities))
		defer C.free(unsafe.Pointer(ccaps))
		return C.mcp_client_options_set_capabilities(o, ccaps)
	})
}

// WithMode chooses the protocol era (default ModeAuto).
func WithMode(mode Mode) Option {
	return withSetter("mode", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_mode(o, C.int(mode))
	})
}

// WithProtocolVersion pins a protocol version, e.g. "2025-11-25".
func WithProtocolVersion(version string) Option {
	return withSetter("protocol version", func(o *C.mcp_client_options) C.mcp_status {
		cversion := C.CString(version)
		defer C.free(unsafe.Pointer(cversion))
		return C.mcp_client_options_set_protocol_version(o, cversion)
	})
}

// WithTimeout bounds every request (0: no timeout, the default), all its legs together
// (input rounds, task polls, tasks/result). A request that times out
// fails with StatusTimeout and the server is told, as for a cancel. A context deadline does
// the same for one call.
func WithTimeout(d time.Duration) Option {
	return withSetter("timeout", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_timeout_ms(o, millis(d))
	})
}

// WithConnectTimeout bounds the whole of Connect (default 30 s): the probe, a proxy tunnel,
// TLS, the handshake and OAuth discovery share one deadline.
func WithConnectTimeout(d time.Duration) Option {
	return withSetter("connect timeout", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_connect_timeout_ms(o, millis(d))
	})
}

// WithEnv adds (or overrides) an environment variable of a stdio server; the rest of this
// process's environment is inherited.
func WithEnv(name, value string) Option {
	return withSetter("env", func(o *C.mcp_client_options) C.mcp_status {
		cname, cvalue := C.CString(name), C.CString(value)
		defer C.free(unsafe.Pointer(cname))
		defer C.free(unsafe.Pointer(cvalue))
		return C.mcp_client_options_set_env(o, cname, cvalue)
	})
}

// WithDir sets the working directory of a stdio server.
func WithDir(path string) Option {
	return withSetter("dir", func(o *C.mcp_client_options) C.mcp_status {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		return C.mcp_client_options_set_cwd(o, cpath)
	})
}

// WithStderr says what happens to a stdio server's stderr (default StderrTail).
func WithStderr(mode StderrMode) Option {
	return withSetter("stderr", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_stderr(o, C.int(mode))
	})
}

// WithSigpipeIgnored promises that SIGPIPE is ignored in this process, for as long as the
// client lives (call signal.Ignore(syscall.SIGPIPE) first): writes to a stdio server then skip
// the two signal-mask calls around each one on Linux before 6.18 (later kernels need none
// either way). Connect fails with StatusInvalidArgument
// when SIGPIPE is not ignored then. Go's runtime already survives a SIGPIPE raised by a write
// to a pipe other than stdout or stderr, so this only saves those system calls.
func WithSigpipeIgnored() Option {
	return withSetter("sigpipe ignored", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_sigpipe_ignored(o, C.bool(true))
	})
}

// WithCloseInBackground makes Close of a stdio client return without waiting for its server
// to exit (unix): the library ends the server (stdin closed, SIGTERM to its process group after
// 2 s, SIGKILL after 2 s more) and reaps it in the background, so closing many clients costs
// no wait per server. Processes of the server's group may run for up to about 4 s after Close
// and Free return. Without it Close returns once none is left.
func WithCloseInBackground() Option {
	return withSetter("close in background", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_close_in_background(o, C.bool(true))
	})
}

// WithHeader adds an HTTP header to every request of a client made by NewHTTP.
func WithHeader(name, value string) Option {
	return withSetter("header "+name, func(o *C.mcp_client_options) C.mcp_status {
		cname, cvalue := C.CString(name), C.CString(value)
		defer C.free(unsafe.Pointer(cname))
		defer C.free(unsafe.Pointer(cvalue))
		return C.mcp_client_options_add_header(o, cname, cvalue)
	})
}

// WithProgressFunc hears the progress of every call; the library then gives every request
// a progress token. fn runs on the client's callback thread, which also delivers
// notifications, one at a time in the server's order: it should return soon. It may make
// calls on the client, but must not Close it.
func WithProgressFunc(fn func(Progress)) Option {
	return func(c *config) { c.callbacks.progress = fn }
}

// WithNotificationFunc hears every notification the server sends but progress (method and
// params, nil when it had none). fn runs on the client's callback thread, as for
// WithProgressFunc.
func WithNotificationFunc(fn func(method string, params json.RawMessage)) Option {
	return func(c *config) { c.callbacks.notification = fn }
}

// WithStderrFunc receives each line a stdio server writes to stderr, in order, one line at a
// time per client, on one of the library's shared threads (the tail is kept too).
func WithStderrFunc(fn func(line string)) Option {
	return func(c *config) { c.callbacks.stderr = fn }
}

// A CallOption configures one call.
type CallOption func(*callConfig)

type callConfig struct {
	progress func(Progress)
	meta     json.RawMessage
	callExtras
}

// CallProgress hears the progress of this call (before the client's progress func), on the
// client's callback thread. The library makes the call a progress token of its own. The
// callback thread may run behind the call: progress it delivers after the call has returned
// (typically the last report before the result) is dropped.
func CallProgress(fn func(Progress)) CallOption {
	return func(c *callConfig) { c.progress = fn }
}

// CallMeta adds entries to the request's params._meta, a JSON object.
func CallMeta(meta json.RawMessage) CallOption {
	return func(c *callConfig) { c.meta = meta }
}

// millis rounds up, so that a positive duration never becomes 0 ("no timeout").
func millis(d time.Duration) C.uint64_t {
	if d <= 0 {
		return 0
	}
	return C.uint64_t((d + time.Millisecond - 1) / time.Millisecond)
}
