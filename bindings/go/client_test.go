package mcpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestVersion(t *testing.T) {
	if v := Version(); !strings.HasPrefix(v, "0.") {
		t.Fatalf("Version() = %q", v)
	}
	if s := StatusCancelled.String(); s != "CANCELLED" {
		t.Fatalf("StatusCancelled.String() = %q", s)
	}
}

func TestConnectAndServerInfo(t *testing.T) {
	c := connect(t, nil, WithClientInfo("go-test", "1.2.3"))
	if v := c.ProtocolVersion(); v != "2025-11-25" {
		t.Errorf("ProtocolVersion() = %q", v)
	}
	if c.IsModern() {
		t.Error("IsModern() = true for a handshake-era server")
	}
	if impl := string(c.ServerImplementation()); !strings.Contains(impl, `"mcpc-test-server"`) {
		t.Errorf("ServerImplementation() = %s", impl)
	}
	if caps := string(c.ServerCapabilities()); !strings.Contains(caps, `"tools"`) {
		t.Errorf("ServerCapabilities() = %s", caps)
	}
	if got := c.Instructions(); got != "Test server for mcpc." {
		t.Errorf("Instructions() = %q", got)
	}
	if info := string(c.ServerInfo()); !strings.Contains(info, `"protocolVersion":"2025-11-25"`) {
		t.Errorf("ServerInfo() = %s", info)
	}
}

// Every request method, once, against the test server's fixed answers.
func TestEveryMethod(t *testing.T) {
	c := connect(t, []string{"--page-size", "1"})
	ctx := context.Background()
	check := func(what string, result json.RawMessage, err error, want string) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", what, err)
		} else if !strings.Contains(string(result), want) {
			t.Errorf("%s = %s, want it to contain %s", what, result, want)
		}
	}

	if err := c.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	result, err := c.ListTools(ctx, "")
	check("ListTools page 1", result, err, `"nextCursor":"c1"`)
	result, err = c.ListTools(ctx, "c1")
	check("ListTools page 2", result, err, `"name":"add"`)
	result, err = c.Tools(ctx)
	check("Tools", result, err, `"name":"always_input"`)
	result, err = c.ListResources(ctx, "")
	check("ListResources", result, err, `"uri":"test://hello"`)
	result, err = c.Resources(ctx)
	check("Resources", result, err, `"uri":"test://big"`)
	result, err = c.ListResourceTemplates(ctx, "")
	check("ListResourceTemplates", result, err, `"uriTemplate":"test://items/{id}"`)
	result, err = c.ResourceTemplates(ctx)
	check("ResourceTemplates", result, err, `"uriTemplate":"test://items/{id}"`)
	result, err = c.ListPrompts(ctx, "")
	check("ListPrompts", result, err, `"name":"greet"`)
	result, err = c.Prompts(ctx)
	check("Prompts", result, err, `"name":"greet"`)
	result, err = c.CallTool(ctx, "add", map[string]int{"a": 2, "b": 3})
	check("CallTool", result, err, `"structuredContent":{"sum":5}`)
	result, err = c.ReadResource(ctx, "test://hello")
	check("ReadResource", result, err, `"text":"Hello, world"`)
	result, err = c.GetPrompt(ctx, "greet", map[string]string{"name": "Go"})
	check("GetPrompt", result, err, `"text":"Hello, Go!"`)
	result, err = c.Complete(ctx, json.RawMessage(`{"type":"ref/prompt","name":"greet"}`),
		map[string]string{"name": "name", "value": "ga"}, nil)
	check("Complete", result, err, `"values":["gamma","gamut"]`)
	result, err = c.Request(ctx, "resources/read", map[string]string{"uri": "test://items/7"})
	check("Request", result, err, `"text":"item 7"`)
	// The test server serves logging/setLevel since the listen work (issue 19); an unknown
	// level is its -32602.
	if err := c.SetLoggingLevel(ctx, "debug"); err != nil {
		t.Errorf("SetLoggingLevel: %v", err)
	}
	if err := c.SetLoggingLevel(ctx, "loud"); err == nil || asError(t, err).Code != -32602 {
		t.Errorf("SetLoggingLevel(loud): got %v, want the server's -32602", err)
	}

	// A handshake-era server does not know server/discover.
	_, err = c.Discover(ctx)
	if e := asError(t, err); e.Status != StatusServerError || e.Code != -32601 {
		t.Errorf("Discover: %v", err)
	}
}

func TestModernEra(t *testing.T) {
	c := connect(t, []string{"--modern"})
	if !c.IsModern() {
		t.Fatalf("IsModern() = false (version %q)", c.ProtocolVersion())
	}
	result, err := c.Discover(context.Background())
	if err != nil || !strings.Contains(string(result), "2026-07-28") {
		t.Fatalf("Discover = %s, %v", result, err)
	}
	result, err = c.CallTool(context.Background(), "echo", map[string]string{"text": "modern"})
	if err != nil || toolText(t, result) != "modern" {
		t.Fatalf("CallTool = %s, %v", result, err)
	}
}

func TestServerErrors(t *testing.T) {
	c := connect(t, nil)
	_, err := c.CallTool(context.Background(), "nope", nil)
	e := asError(t, err)
	if e.Status != StatusServerError || e.Code != -32602 || e.Message != "Unknown tool: nope" || e.RequestID <= 0 {
		t.Errorf("unknown tool: %#v", e)
	}
	if want := "mcpc: SERVER_ERROR -32602: Unknown tool: nope"; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err, want)
	}
	if errors.Is(err, ErrCancelled) || errors.Is(err, ErrClosed) {
		t.Error("a server error matches a local sentinel")
	}

	_, err = c.ReadResource(context.Background(), "test://nope")
	if e := asError(t, err); e.Code != -32002 || string(e.Data) != `{"uri":"test://nope"}` {
		t.Errorf("missing resource: %#v (data %s)", e, e.Data)
	}

	// Bad JSON never reaches the server.
	_, err = c.CallTool(context.Background(), "echo", json.RawMessage(`{not json`))
	if e := asError(t, err); e.Status != StatusInvalidArgument {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestBadOptionIsAnError(t *testing.T) {
	_, err := NewStdio([]string{testServer(t)}, WithConnectTimeout(0))
	if e := asError(t, err); e.Status != StatusInvalidArgument || !strings.Contains(e.Message, "connect timeout") {
		t.Fatalf("WithConnectTimeout(0): %v", err)
	}
}

func TestNotConnected(t *testing.T) {
	c, err := NewStdio([]string{testServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(context.Background()); asError(t, err).Status != StatusNotConnected {
		t.Fatalf("Ping before Connect: %v", err)
	}
}

// Many goroutines share one client; each response must reach the goroutine that asked.
func TestConcurrentCalls(t *testing.T) {
	const goroutines, calls = 16, 50
	c := connect(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				want := fmt.Sprintf("goroutine %d call %d", g, i)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				result, err := c.CallTool(ctx, "echo", map[string]string{"text": want})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", want, err)
					return
				}
				var r struct{ Content []struct{ Text string } }
				if err := json.Unmarshal(result, &r); err != nil || len(r.Content) != 1 || r.Content[0].Text != want {
					errs <- fmt.Errorf("%s: got %s", want, result)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
