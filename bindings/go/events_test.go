package mcpc

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestEventCallbacks(t *testing.T) {
	messages := make(chan LogMessage, 4)
	kinds := make(chan string, 4)
	uris := make(chan string, 4)
	c := connect(t, nil,
		WithMessageFunc(func(m LogMessage) { messages <- m }),
		WithListChangedFunc(func(kind string) { kinds <- kind }),
		WithResourceUpdatedFunc(func(uri string) { uris <- uri }))
	notify := func(method string, params any) {
		args := map[string]any{"kind": "notify", "method": method, "params": params}
		if _, err := c.CallTool(context.Background(), "fault", args); err != nil {
			t.Fatal(err)
		}
	}
	notify("notifications/message", map[string]any{"level": "warning", "logger": "db", "data": map[string]any{"x": 1}})
	notify("notifications/prompts/list_changed", nil)
	notify("notifications/resources/updated", map[string]any{"uri": "test://hello"})
	wait := func(what string, ch any) any {
		timeout := time.After(5 * time.Second)
		switch ch := ch.(type) {
		case chan LogMessage:
			select {
			case v := <-ch:
				return v
			case <-timeout:
			}
		case chan string:
			select {
			case v := <-ch:
				return v
			case <-timeout:
			}
		}
		t.Fatalf("no %s", what)
		return nil
	}
	m := wait("message", messages).(LogMessage)
	if m.Level != "warning" || m.Logger != "db" || string(m.Data) != `{"x":1}` {
		t.Fatalf("message %+v", m)
	}
	if kind := wait("list change", kinds); kind != "prompts" {
		t.Fatalf("list changed %v", kind)
	}
	if uri := wait("resource update", uris); uri != "test://hello" {
		t.Fatalf("resource updated %v", uri)
	}
}

func TestLogFuncHearsTheLibrary(t *testing.T) {
	logs := make(chan string, 8)
	c := connect(t, []string{"--modern"}, WithMode(ModeModern), WithLogFunc(func(level LogLevel, message string) {
		if level == LogWarning {
			logs <- message
		}
	}))
	// A tool with an invalid header annotation is dropped, and the library says so.
	if _, err := c.Tools(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-logs:
		if !strings.Contains(m, "header_bad") {
			t.Fatalf("log %q", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no library log")
	}
}

func TestStateAndSubscriptions(t *testing.T) {
	c, err := NewStdio([]string{testServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	if c.State() != StateNotConnected {
		t.Fatalf("state %v", c.State())
	}
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.State() != StateConnected {
		t.Fatalf("state %v", c.State())
	}
	if err := c.SubscribeResource(context.Background(), "test://hello"); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if err := c.UnsubscribeResource(context.Background(), "test://hello"); err != nil {
		t.Fatalf("unsubscribe: %v", err)
	}
	c.Close()
	if c.State() != StateClosed {
		t.Fatalf("state %v", c.State())
	}

	modern := connect(t, []string{"--modern"}, WithMode(ModeModern))
	if err := modern.SubscribeResource(context.Background(), "test://hello"); asError(t, err).Status != StatusNotSupported {
		t.Fatalf("modern subscribe: %v", err)
	}
}

func TestCallOptions(t *testing.T) {
	c := connect(t, nil)
	ctx := context.Background()
	_, err := c.CallTool(ctx, "slow", map[string]any{"ms": 5000}, CallTimeout(100*time.Millisecond))
	if e := asError(t, err); e.Status != StatusTimeout {
		t.Fatalf("CallTimeout: %v", err)
	}
	// Progress every 50 ms keeps a 300 ms timeout from passing during 600 ms of work...
	_, err = c.CallTool(ctx, "slow", map[string]any{"ms": 600}, CallTimeout(300*time.Millisecond),
		CallResetTimeoutOnProgress(), CallProgress(func(Progress) {}))
	if err != nil {
		t.Fatalf("CallResetTimeoutOnProgress: %v", err)
	}
	// ...but not past the maximum total.
	_, err = c.CallTool(ctx, "slow", map[string]any{"ms": 5000}, CallTimeout(300*time.Millisecond),
		CallResetTimeoutOnProgress(), CallMaxTotalTimeout(400*time.Millisecond), CallProgress(func(Progress) {}))
	if e := asError(t, err); e.Status != StatusTimeout || !strings.Contains(e.CancelReason, "maximum") {
		t.Fatalf("CallMaxTotalTimeout: %v", err)
	}
	tokens := make(chan string, 8)
	_, err = c.CallTool(ctx, "progress", map[string]any{"steps": 1}, CallProgressToken("go-token"),
		CallProgress(func(p Progress) { tokens <- string(p.Token) }))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case token := <-tokens:
		if token != `"go-token"` {
			t.Fatalf("token %s", token)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress")
	}
	if err := c.Ping(ctx, CallProgressToken("bad\xfftoken")); asError(t, err).Status != StatusInvalidArgument {
		t.Fatalf("a token that is not UTF-8: %v", err)
	}
}

func TestClientOptionsAreCheckedAndApplied(t *testing.T) {
	for name, opt := range map[string]Option{
		"proxy":   WithProxy("ftp://proxy"),
		"CA file": WithCAFile("/nonexistent/ca.pem"),
		"CA dir":  WithCADir("/nonexistent"),
		"CA PEM":  WithCAPEM("not a certificate"),
		"cert":    WithClientCert("/nonexistent/c.pem", "/nonexistent/k.pem"),
		"timeout": WithHTTPConnectTimeout(0),
	} {
		if _, err := NewHTTP("http://127.0.0.1:1/mcp", opt); asError(t, err).Status != StatusInvalidArgument {
			t.Errorf("%s: %v", name, err)
		}
	}
	c, err := NewHTTP("http://127.0.0.1:1/mcp", WithNoProxy("*"), WithProxyFromEnv(), WithCAReplace(),
		WithSystemRoots(), WithHTTPIdleTimeout(time.Second), WithHTTPListen(false), WithDiscoverTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	paged := connect(t, []string{"--page-size", "1"}, WithMaxPages(1))
	if _, err := paged.Tools(context.Background()); asError(t, err).Status != StatusPaginationLimit {
		t.Fatalf("WithMaxPages: %v", err)
	}
	short := connect(t, nil, WithMaxLineBytes(1024))
	_, err = short.CallTool(context.Background(), "oversized", map[string]any{"bytes": 4096})
	if asError(t, err).Status != StatusProtocolError {
		t.Fatalf("WithMaxLineBytes: %v", err)
	}
	rounds := connect(t, []string{"--modern"}, WithMode(ModeModern), WithInputRequiredMaxRounds(2),
		WithRequestHandler("elicitation/create", func(context.Context, string, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"action":"decline"}`), nil
		}))
	if _, err := rounds.CallTool(context.Background(), "always_input", nil); asError(t, err).Status != StatusInputRequired {
		t.Fatalf("WithInputRequiredMaxRounds: %v", err)
	}
}
