package mcpc

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Error is a call that did not succeed: a local outcome (cancelled, timed out, closed,
// transport failure...) or a JSON-RPC error the server answered (StatusServerError, with its
// Code, Message and Data). Check it with errors.As, or errors.Is against ErrCancelled,
// ErrTimeout, ErrClosed; a call cancelled through its context also matches the context's error
// (errors.Is(err, context.DeadlineExceeded)).
type Error struct {
	Status Status
	// Code is the JSON-RPC error code for StatusServerError, else 0.
	Code int64
	// Message says what went wrong; for StatusServerError it is the server's message.
	Message string
	// Data is the JSON-RPC error's data, nil when the server sent none.
	Data json.RawMessage
	// RequestID is the JSON-RPC id of the request when one was sent, so a failure can be
	// matched with the server's log; 0 when nothing was sent.
	RequestID int64
	// CancelReason is the reason of a cancel (the context's error for a cancelled context)
	// or of a timeout ("timed out after N ms").
	CancelReason string

	// ctx is the context's error when the context cancelled the call.
	ctx error
}

// Sentinels for errors.Is: each matches every *Error of its status.
var (
	ErrCancelled = errors.New("mcpc: cancelled")
	ErrTimeout   = errors.New("mcpc: timed out")
	ErrClosed    = errors.New("mcpc: client closed")
)

func (e *Error) Error() string {
	msg := fmt.Sprintf("mcpc: %s", e.Status)
	switch {
	case e.Status == StatusServerError:
		msg += fmt.Sprintf(" %d: %s", e.Code, e.Message)
	case e.CancelReason != "":
		msg += ": " + e.CancelReason
	case e.Message != "":
		msg += ": " + e.Message
	}
	return msg
}

// Is makes errors.Is(err, ErrCancelled) (and ErrTimeout, ErrClosed) true for that status.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrCancelled:
		return e.Status == StatusCancelled
	case ErrTimeout:
		return e.Status == StatusTimeout
	case ErrClosed:
		return e.Status == StatusClosed
	}
	return false
}

// Unwrap gives the context's error (context.Canceled or context.DeadlineExceeded) when the
// context cancelled the call, else nil.
func (e *Error) Unwrap() error {
	return e.ctx
}
