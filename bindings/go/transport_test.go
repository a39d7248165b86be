package mcpc

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeTransport is a tiny MCP server in Go behind the Transport interface: it answers
// initialize and the tools echo and never (which waits for its notifications/cancelled).
type fakeTransport struct {
	mu        sync.Mutex
	cancelled map[string]chan struct{} // by request id
	notices   []string
	closed    chan struct{}
	closeOnce sync.Once
}

func newFakeTransport() *fakeTransport {
	return &fakeTransport{cancelled: map[string]chan struct{}{}, closed: make(chan struct{})}
}

func (f *fakeTransport) SendRequest(request json.RawMessage, sent func()) (json.RawMessage, error) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, err
	}
	f.mu.Lock()
	gone := make(chan struct{})
	f.cancelled[string(req.ID)] = gone
	f.mu.Unlock()
	sent()
	answer := func(result string) (json.RawMessage, error) {
		return json.RawMessage(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":` + result + `}`), nil
	}
	switch {
	case req.Method == "initialize":
		return answer(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`)
	case req.Method == "tools/call" && req.Params.Name == "echo":
		return answer(`{"content":[{"type":"text","text":"echo"}]}`)
	case req.Method == "tools/call" && req.Params.Name == "never":
		select {
		case <-gone:
			return nil, errors.New("cancelled")
		case <-f.closed:
			return nil, errors.New("closed")
		}
	}
	return json.RawMessage(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"no"}}`), nil
}

func (f *fakeTransport) SendNotification(notification json.RawMessage) error {
	var n struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if err := json.Unmarshal(notification, &n); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notices = append(f.notices, n.Method)
	if ch, ok := f.cancelled[string(n.Params.RequestID)]; ok && n.Method == "notifications/cancelled" {
		close(ch)
		delete(f.cancelled, string(n.Params.RequestID))
	}
	return nil
}

func (f *fakeTransport) Close() { f.closeOnce.Do(func() { close(f.closed) }) }

func TestCustomTransport(t *testing.T) {
	f := newFakeTransport()
	c, err := NewCustom(f, WithMode(ModeLegacy))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "echo", nil)
	if err != nil || toolText(t, res) != "echo" {
		t.Fatalf("echo: %s %v", res, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := c.CallTool(cctx, "never", nil); !errors.Is(err, ErrCancelled) {
		t.Fatalf("never: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.notices)
		f.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// initialized, then the cancel
	if len(f.notices) != 2 || f.notices[1] != "notifications/cancelled" {
		t.Fatalf("notifications %q", f.notices)
	}
}
