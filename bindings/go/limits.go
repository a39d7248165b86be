package mcpc

/*
#include "mcpc.h"
*/
import "C"

import "time"

// WithDiscoverTimeout bounds the auto mode's server/discover probe (default 5 s).
func WithDiscoverTimeout(d time.Duration) Option {
	return withSetter("discover timeout", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_discover_timeout_ms(o, millis(d))
	})
}

// WithMaxPages is the most pages an all-pages call fetches (default 1000).
func WithMaxPages(pages uint32) Option {
	return withSetter("max pages", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_max_pages(o, C.uint32_t(pages))
	})
}

// WithMaxLineBytes is the longest line accepted from a stdio server, and the largest
// JSON body or SSE event from an HTTP server (default 100 MiB).
func WithMaxLineBytes(bytes uint) Option {
	return withSetter("max line bytes", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_max_line_bytes(o, C.size_t(bytes))
	})
}

// WithInputRequiredMaxRounds is the most input_required rounds one call may take (default 10).
func WithInputRequiredMaxRounds(rounds uint32) Option {
	return withSetter("input required max rounds", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_input_required_max_rounds(o, C.uint32_t(rounds))
	})
}

// WithLazyConnect makes the client connect on its first request instead of at Connect:
// NewStdio and NewHTTP then start nothing (no process, socket or thread). The requests that
// find no connection wait for one connect, each bounded by its own context; when it fails,
// they fail with its status and a message starting "lazy connect failed", and the next
// request tries again. Connect still connects at once.
func WithLazyConnect() Option {
	return withSetter("lazy connect", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_lazy_connect(o, C.bool(true))
	})
}

// WithIdleShutdown stops a stdio server that has had no request for d (none in flight, no
// listen open), as Close stops one; the next request starts it again, as a lazy connect does.
// 0 means never (the default). HTTP clients ignore it.
func WithIdleShutdown(d time.Duration) Option {
	return withSetter("idle shutdown", func(o *C.mcp_client_options) C.mcp_status {
		return C.mcp_client_options_set_idle_shutdown_ms(o, millis(d))
	})
}
