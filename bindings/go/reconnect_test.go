package mcpc

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"
)

// A crashed server is started again by the next call, and the state func hears each step.
func TestReconnectHealsTheNextCall(t *testing.T) {
	var mu sync.Mutex
	var states []ConnectionState
	c := connect(t, nil,
		WithReconnect(10*time.Millisecond, 100*time.Millisecond, 0.2, 3),
		WithStateFunc(func(s ConnectionState) {
			mu.Lock()
			defer mu.Unlock()
			states = append(states, s)
		}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.CallTool(ctx, "crash", nil)
	if e := asError(t, err); e.Status != StatusTransportError {
		t.Fatalf("crash: %v", err)
	}
	if _, err := c.CallTool(ctx, "echo", map[string]any{"text": "back"}); err != nil {
		t.Fatalf("the call after the crash: %v", err)
	}
	if s := c.State(); s != StateConnected {
		t.Fatalf("state %v", s)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	want := []ConnectionState{StateConnecting, StateConnected, StateFailed, StateReconnecting,
		StateConnected, StateClosed}
	if !reflect.DeepEqual(states, want) {
		t.Fatalf("states %v, want %v", states, want)
	}
}

// A policy the library refuses is the client's error.
func TestReconnectRefusesABadPolicy(t *testing.T) {
	_, err := NewStdio([]string{testServer(t)}, WithReconnect(0, time.Second, 0.2, 3))
	if e := asError(t, err); e.Status != StatusInvalidArgument {
		t.Fatalf("got %v", err)
	}
}
