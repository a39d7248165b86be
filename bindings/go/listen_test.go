package mcpc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// heard collects what the event funcs of a client get.
type heard struct {
	mu     sync.Mutex
	events []string
	acked  chan struct{}
	once   sync.Once
}

func (h *heard) add(e string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
}

func (h *heard) has(e string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, got := range h.events {
		if got == e {
			return true
		}
	}
	return false
}

func (h *heard) options() []Option {
	return []Option{
		WithListChangedFunc(func(kind string) { h.add("list " + kind) }),
		WithResourceUpdatedFunc(func(uri string) { h.add("updated " + uri) }),
		WithMessageFunc(func(m LogMessage) { h.add("log " + m.Level) }),
		WithNotificationFunc(func(method string, params json.RawMessage) {
			if method == "notifications/subscriptions/acknowledged" {
				h.once.Do(func() { close(h.acked) })
			}
		}),
	}
}

// listenUntilHeard listens with filter, emits events once the listen is acknowledged, and
// cancels it once every one of want was heard.
func listenUntilHeard(t *testing.T, c *Client, h *heard, filter ListenFilter, emit string, want []string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.acked:
		case <-time.After(10 * time.Second):
			return
		}
		if _, err := c.Request(context.Background(), "test/emit", json.RawMessage(`{"events":`+emit+`}`)); err != nil {
			t.Errorf("test/emit: %v", err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			all := true
			for _, w := range want {
				all = all && h.has(w)
			}
			if all {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	_, err := c.Listen(ctx, filter)
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("the listen ended with %v, want its context's cancel", err)
	}
	for _, w := range want {
		if !h.has(w) {
			t.Errorf("not heard: %s (heard %q)", w, h.events)
		}
	}
}

func TestListenInBothEras(t *testing.T) {
	filter := ListenFilter{Tools: true, ResourceURIs: []string{"test://hello"}, LogLevel: "info"}
	emit := `[{"kind":"tools"},{"kind":"updated","uri":"test://hello"},{"kind":"log","level":"warning","data":"w"}]`
	want := []string{"list tools", "updated test://hello", "log warning"}
	for _, era := range []struct {
		name  string
		flags []string
		mode  Mode
	}{{"modern", []string{"--modern"}, ModeModern}, {"legacy", nil, ModeLegacy}} {
		t.Run(era.name, func(t *testing.T) {
			h := &heard{acked: make(chan struct{})}
			c := connect(t, era.flags, append(h.options(), WithMode(era.mode))...)
			listenUntilHeard(t, c, h, filter, emit, want)
		})
	}
}

func TestNotifyAndRootsListChanged(t *testing.T) {
	roots := func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"roots":[]}`), nil
	}
	c, log := connectLogged(t, WithRequestHandler("roots/list", roots))
	if err := c.Notify("notifications/go_custom", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.NotifyRootsListChanged(); err != nil {
		t.Fatal(err)
	}
	syncLog(t, c, log)
	data, _ := os.ReadFile(log)
	if !strings.Contains(string(data), `"method":"notifications/go_custom","params":{"n":1}`) ||
		!strings.Contains(string(data), `"method":"notifications/roots/list_changed"`) {
		t.Fatalf("the server read:\n%s", data)
	}
	if err := c.Notify("notifications/x", json.RawMessage(`[1]`)); asError(t, err).Status != StatusInvalidArgument {
		t.Fatalf("params that are not an object: %v", err)
	}
	plain := connect(t, nil)
	if err := plain.NotifyRootsListChanged(); asError(t, err).Status != StatusInvalidArgument {
		t.Fatalf("without a roots handler: %v", err)
	}
}

func TestTraceSeesEveryFrame(t *testing.T) {
	var mu sync.Mutex
	var frames []string
	c := connect(t, nil, WithTraceFunc(func(direction TraceDirection, transport string, frame json.RawMessage) {
		mu.Lock()
		defer mu.Unlock()
		dir := "in"
		if direction == TraceOut {
			dir = "out"
		}
		frames = append(frames, dir+" "+transport+" "+string(frame))
	}))
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		var out, in bool
		for _, f := range frames {
			out = out || strings.HasPrefix(f, "out stdio ") && strings.Contains(f, `"method":"ping"`)
			in = in || strings.HasPrefix(f, "in stdio ") && strings.Contains(f, `"result":{}`)
		}
		mu.Unlock()
		if out && in {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the trace lacks the ping or its answer: %q", frames)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestBypassCache(t *testing.T) {
	log := filepath.Join(t.TempDir(), "server.log")
	c := connect(t, []string{"--modern", "--ttl-ms", "60000", "--log", log}, WithMode(ModeModern))
	lists := func() int {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), `"method":"tools/list"`)
	}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := c.Tools(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := lists(); n != 1 {
		t.Fatalf("%d tools/list sent; the second walk should come from the cache", n)
	}
	if _, err := c.Tools(ctx, CallBypassCache()); err != nil {
		t.Fatal(err)
	}
	if n := lists(); n != 2 {
		t.Fatalf("%d tools/list sent; the bypass should ask the server", n)
	}
}
