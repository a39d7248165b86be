package mcpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRequestHandlerAnswersTheServer(t *testing.T) {
	roots := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"roots":[{"uri":"file:///go-root","name":"go"}]}`), nil
	}
	c := connect(t, nil, WithRequestHandler("roots/list", roots))
	res, err := c.CallTool(context.Background(), "ask_client", map[string]any{"method": "roots/list"})
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); !strings.Contains(text, "file:///go-root") {
		t.Fatalf("the server did not get the handler's roots: %s", text)
	}
}

func TestRequestHandlerErrorReachesTheServer(t *testing.T) {
	reject := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return nil, &HandlerError{Code: -1, Message: "User rejected sampling request"}
	}
	c := connect(t, nil, WithRequestHandler("sampling/createMessage", reject))
	res, err := c.CallTool(context.Background(), "ask_client",
		map[string]any{"method": "sampling/createMessage", "params": map[string]any{"messages": []any{}}})
	if err != nil {
		t.Fatal(err)
	}
	text := toolText(t, res)
	if !strings.Contains(text, `"code":-1`) || !strings.Contains(text, "User rejected") {
		t.Fatalf("the server did not get the handler's error: %s", text)
	}
}

func TestRequestHandlerContextEndsWhenTheServerCancels(t *testing.T) {
	var sawCancel atomic.Bool
	slow := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		select {
		case <-ctx.Done():
			sawCancel.Store(true)
			return nil, ctx.Err()
		case <-time.After(5 * time.Second):
			return json.RawMessage(`{"roots":[]}`), nil
		}
	}
	c := connect(t, nil, WithRequestHandler("roots/list", slow))
	res, err := c.CallTool(context.Background(), "ask_client",
		map[string]any{"method": "roots/list", "cancel_after_ms": 100})
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); text != "cancelled; no reply" {
		t.Fatalf("the cancelled handler's answer was sent: %s", text)
	}
	if !sawCancel.Load() {
		t.Fatal("the handler's context did not end when the server cancelled")
	}
}

func TestModernInputRoundsGoThroughTheHandler(t *testing.T) {
	accept := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		if method != "elicitation/create" {
			return nil, errors.New("unexpected " + method)
		}
		return json.RawMessage(`{"action":"accept","content":{"ok":true}}`), nil
	}
	c := connect(t, []string{"--modern"}, WithMode(ModeModern), WithRequestHandler("elicitation/create", accept))
	res, err := c.CallTool(context.Background(), "confirm", nil)
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); !strings.HasPrefix(text, "confirmed: ") || !strings.Contains(text, `"ok":true`) {
		t.Fatalf("got %s", text)
	}
}

func TestInputResponsesByHand(t *testing.T) {
	c := connect(t, []string{"--modern"}, WithMode(ModeModern))
	interim, err := c.CallTool(context.Background(), "confirm", nil)
	if e := asError(t, err); e.Status != StatusInputRequired {
		t.Fatalf("got %v, want StatusInputRequired", err)
	}
	var r struct {
		RequestState  string                     `json:"requestState"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
	}
	if err := json.Unmarshal(interim, &r); err != nil || r.InputRequests["confirm"] == nil {
		t.Fatalf("not an interim result: %s", interim)
	}
	responses := json.RawMessage(`{"confirm":{"action":"decline"}}`)
	res, err := c.CallTool(context.Background(), "confirm", nil, CallInputResponses(responses, r.RequestState))
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); text != `confirmed: {"action":"decline"}` {
		t.Fatalf("got %s", text)
	}
}

func TestHandlerFeaturesAreDeclared(t *testing.T) {
	answer := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	}
	c := connect(t, []string{"--modern"}, WithMode(ModeModern),
		WithRequestHandler("elicitation/create", answer), WithRequestHandler("sampling/createMessage", answer),
		WithElicitationURL(), WithSamplingTools(), WithTasks())
	res, err := c.CallTool(context.Background(), "client_capabilities", nil)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		StructuredContent struct {
			Capabilities struct {
				Elicitation map[string]json.RawMessage `json:"elicitation"`
				Sampling    map[string]json.RawMessage `json:"sampling"`
				Extensions  map[string]json.RawMessage `json:"extensions"`
			} `json:"capabilities"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	caps := r.StructuredContent.Capabilities
	if caps.Elicitation["url"] == nil || caps.Sampling["tools"] == nil || caps.Extensions["io.modelcontextprotocol/tasks"] == nil {
		t.Fatalf("capabilities declared: %s", res)
	}
}

func TestURLElicitationRequiredHasItsOwnStatus(t *testing.T) {
	completed := make(chan string, 1)
	c := connect(t, nil, WithNotificationFunc(func(method string, params json.RawMessage) {
		if method == "notifications/elicitation/complete" {
			completed <- string(params)
		}
	}))
	_, err := c.CallTool(context.Background(), "url_elicit", map[string]any{"elicitation_id": "go-1"})
	e := asError(t, err)
	if e.Status != StatusURLElicitationRequired || e.Code != -32042 || e.Status.String() != "URL_ELICITATION_REQUIRED" {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(string(e.Data), `"elicitationId":"go-1"`) || !strings.Contains(string(e.Data), `"url":"https://example.com/`) {
		t.Fatalf("the error data lacks the elicitation: %s", e.Data)
	}
	select {
	case params := <-completed:
		if !strings.Contains(params, "go-1") {
			t.Fatalf("completion params %s", params)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("notifications/elicitation/complete did not reach the host")
	}
}

func TestElicitationDefaults(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"Ada"},"n":{"type":"integer"}}}`)
	filled, err := ElicitationDefaults(schema, json.RawMessage(`{"n":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(filled, &got); err != nil || got["name"] != "Ada" || got["n"] != float64(3) {
		t.Fatalf("got %s", filled)
	}
	if _, err := ElicitationDefaults(nil, nil); asError(t, err).Status != StatusInvalidArgument {
		t.Fatalf("a missing schema: %v", err)
	}
}
