package mcpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Many requests in flight from one goroutine, each result matched to its call.
func TestStartManyInFlightFromOneGoroutine(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()
	pending := make([]*Pending, 64)
	for i := range pending {
		pending[i] = c.StartCallTool(ctx, "echo", map[string]any{"text": fmt.Sprintf("go %d", i)})
	}
	for i, p := range pending {
		select {
		case <-p.Done():
		case <-time.After(20 * time.Second):
			t.Fatalf("call %d never completed", i)
		}
		res, err := p.Wait()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if !strings.Contains(string(res), fmt.Sprintf(`"go %d"`, i)) {
			t.Fatalf("call %d got %s", i, res)
		}
	}
	tools, err := c.StartTools(ctx).Wait()
	var all struct{ Tools []json.RawMessage }
	if err != nil || json.Unmarshal(tools, &all) != nil || len(all.Tools) == 0 {
		t.Fatalf("StartTools: %s %v", tools, err)
	}
}

// A started call cancelled through its context completes at once, and the server is told.
func TestStartCancelledByContext(t *testing.T) {
	c, log := connectLogged(t)
	ctx, cancel := context.WithCancel(context.Background())
	p := c.StartCallTool(ctx, "slow", map[string]any{"ms": 30000})
	waitForLog(t, log, "the tools/call", func(l string) bool { return strings.Contains(l, `"tools/call"`) })
	cancel()
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the cancelled call did not complete")
	}
	_, err := p.Wait()
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("want cancelled, got %v", err)
	}
	waitForLog(t, log, "the cancel notice", func(l string) bool { return strings.Contains(l, "notifications/cancelled") })
}

// Close completes every pending start with ErrClosed before it returns.
func TestStartPendingAtClose(t *testing.T) {
	c, log := connectLogged(t)
	p := c.StartCallTool(context.Background(), "slow", map[string]any{"ms": 30000})
	waitForLog(t, log, "the tools/call", func(l string) bool { return strings.Contains(l, `"tools/call"`) })
	c.Close()
	select {
	case <-p.Done():
	default:
		t.Fatal("Close returned before the pending call completed")
	}
	if _, err := p.Wait(); !errors.Is(err, ErrClosed) {
		t.Fatalf("want closed, got %v", err)
	}
	if _, err := c.StartPing(context.Background()).Wait(); !errors.Is(err, ErrClosed) {
		t.Fatalf("a start after close: %v", err)
	}
}

// Every Start* function, started together from one goroutine, gets what its blocking
// counterpart gets.
func TestStartEveryRequestKind(t *testing.T) {
	c := connect(t, []string{"--page-size", "1"})
	ctx := context.Background()
	cases := []struct {
		name    string
		pending *Pending
		want    string
	}{
		{"StartListTools page 2", c.StartListTools(ctx, "c1"), `"name":"add"`},
		{"StartListTools page 1", c.StartListTools(ctx, ""), `"nextCursor":"c1"`},
		{"StartListResources", c.StartListResources(ctx, ""), `"uri":"test://hello"`},
		{"StartResources", c.StartResources(ctx), `"uri":"test://big"`},
		{"StartListResourceTemplates", c.StartListResourceTemplates(ctx, ""), `"uriTemplate":"test://items/{id}"`},
		{"StartResourceTemplates", c.StartResourceTemplates(ctx), `"uriTemplate":"test://items/{id}"`},
		{"StartListPrompts", c.StartListPrompts(ctx, ""), `"name":"greet"`},
		{"StartPrompts", c.StartPrompts(ctx), `"name":"greet"`},
		{"StartReadResource", c.StartReadResource(ctx, "test://hello"), `"text":"Hello, world"`},
		{"StartGetPrompt", c.StartGetPrompt(ctx, "greet", map[string]string{"name": "Go"}), `"text":"Hello, Go!"`},
		{"StartComplete", c.StartComplete(ctx, json.RawMessage(`{"type":"ref/prompt","name":"greet"}`),
			map[string]string{"name": "name", "value": "ga"}, nil), `"values":["gamma","gamut"]`},
		{"StartSetLoggingLevel", c.StartSetLoggingLevel(ctx, "debug"), `{}`},
		{"StartSubscribeResource", c.StartSubscribeResource(ctx, "test://hello"), `{}`},
		{"StartUnsubscribeResource", c.StartUnsubscribeResource(ctx, "test://hello"), `{}`},
	}
	for _, tc := range cases {
		select {
		case <-tc.pending.Done():
		case <-time.After(20 * time.Second):
			t.Fatalf("%s never completed", tc.name)
		}
		res, err := tc.pending.Wait()
		if err != nil || !strings.Contains(string(res), tc.want) {
			t.Errorf("%s = %s, %v; want %s in it", tc.name, res, err, tc.want)
		}
	}
	// A server error and a bad argument complete like their blocking forms.
	if _, err := c.StartSetLoggingLevel(ctx, "loud").Wait(); err == nil || asError(t, err).Code != -32602 {
		t.Errorf("StartSetLoggingLevel(loud): %v, want the server's -32602", err)
	}
	if _, err := c.StartGetPrompt(ctx, "greet", func() {}).Wait(); err == nil || asError(t, err).Status != StatusInvalidArgument {
		t.Errorf("StartGetPrompt with args Go cannot encode: %v", err)
	}
	// A handshake-era server does not know server/discover.
	if _, err := c.StartDiscover(ctx).Wait(); err == nil || asError(t, err).Code != -32601 {
		t.Errorf("StartDiscover: %v", err)
	}
}
