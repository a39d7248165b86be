package mcpc

/*
#include "handlers.h"
*/
import "C"

import "encoding/json"

// LogLevel is how serious a library log message is.
type LogLevel int

const (
	LogDebug   LogLevel = C.MCP_LOG_LEVEL_DEBUG
	LogInfo    LogLevel = C.MCP_LOG_LEVEL_INFO
	LogWarning LogLevel = C.MCP_LOG_LEVEL_WARNING
	LogError   LogLevel = C.MCP_LOG_LEVEL_ERROR
)

// LogMessage is one notifications/message (the server's log).
type LogMessage struct {
	Level  string
	Logger string // "" when none
	Data   json.RawMessage
}

// WithLogFunc receives the library's own log (dropped tools, skipped frames, era fallback,
// dropped callbacks), on the client's callback thread or the thread that noticed.
func WithLogFunc(fn func(level LogLevel, message string)) Option {
	return func(c *config) { c.callbacks.log = fn }
}

// WithMessageFunc hears the server's log (notifications/message), on the callback thread.
func WithMessageFunc(fn func(LogMessage)) Option {
	return func(c *config) { c.callbacks.message = fn }
}

// WithListChangedFunc hears notifications/{tools,prompts,resources}/list_changed: kind is
// "tools", "prompts" or "resources". On the callback thread.
func WithListChangedFunc(fn func(kind string)) Option {
	return func(c *config) { c.callbacks.listChanged = fn }
}

// WithResourceUpdatedFunc hears notifications/resources/updated, on the callback thread.
func WithResourceUpdatedFunc(fn func(uri string)) Option {
	return func(c *config) { c.callbacks.resourceUpdated = fn }
}

// installEvents registers the set event callbacks under the client's callbacks handle.
func (cb *callbacks) installEvents(o *C.mcp_client_options, h C.uintptr_t) Status {
	type install struct {
		set bool
		fn  func(*C.mcp_client_options, C.uintptr_t) C.mcp_status
	}
	for _, i := range []install{
		{cb.log != nil, func(o *C.mcp_client_options, h C.uintptr_t) C.mcp_status { return C.mcpc_go_log(o, h) }},
		{cb.message != nil, func(o *C.mcp_client_options, h C.uintptr_t) C.mcp_status { return C.mcpc_go_message(o, h) }},
		{cb.listChanged != nil, func(o *C.mcp_client_options, h C.uintptr_t) C.mcp_status { return C.mcpc_go_list_changed(o, h) }},
		{cb.resourceUpdated != nil, func(o *C.mcp_client_options, h C.uintptr_t) C.mcp_status {
			return C.mcpc_go_resource_updated(o, h)
		}},
		{cb.trace != nil, func(o *C.mcp_client_options, h C.uintptr_t) C.mcp_status { return C.mcpc_go_trace(o, h) }},
	} {
		if i.set {
			if status := Status(i.fn(o, h)); status != StatusOK {
				return status
			}
		}
	}
	return StatusOK
}

//export mcpcGoLog
func mcpcGoLog(h C.uintptr_t, level C.int, message *C.char) {
	callbacksOf(h).log(LogLevel(level), C.GoString(message))
}

//export mcpcGoMessage
func mcpcGoMessage(h C.uintptr_t, level, logger, data *C.char) {
	var name string
	if logger != nil {
		name = C.GoString(logger)
	}
	callbacksOf(h).message(LogMessage{Level: C.GoString(level), Logger: name, Data: optionalJSON(data)})
}

//export mcpcGoListChanged
func mcpcGoListChanged(h C.uintptr_t, kind *C.char) {
	callbacksOf(h).listChanged(C.GoString(kind))
}

//export mcpcGoResourceUpdated
func mcpcGoResourceUpdated(h C.uintptr_t, uri *C.char) {
	callbacksOf(h).resourceUpdated(C.GoString(uri))
}

//export mcpcGoTrace
func mcpcGoTrace(h C.uintptr_t, direction C.int, transport, frame *C.char) {
	callbacksOf(h).trace(TraceDirection(direction), C.GoString(transport), json.RawMessage(C.GoString(frame)))
}
