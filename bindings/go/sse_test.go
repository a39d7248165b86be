package mcpc

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// The 2024-11-05 HTTP+SSE transport (the test server's --sse mode): found by itself, pinned
// with WithHTTPTransport, and the modern mode then refused.
func TestHTTPTransportLegacySSE(t *testing.T) {
	url := httpServer(t, "--sse")
	for _, opts := range [][]Option{
		nil,
		{WithHTTPTransport(HTTPTransportLegacySSE)},
	} {
		c, err := NewHTTP(url, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Connect(context.Background()); err != nil {
			t.Fatalf("connect over HTTP+SSE: %v", err)
		}
		result, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "over sse"})
		if err != nil || !strings.Contains(string(result), "over sse") {
			t.Fatalf("echo: %s, %v", result, err)
		}
		c.Close()
	}

	c, err := NewHTTP(url, WithHTTPTransport(HTTPTransportLegacySSE), WithMode(ModeModern))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Connect(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusInvalidArgument {
		t.Fatalf("want INVALID_ARGUMENT for the modern mode, got %v", err)
	}
	if _, err := NewHTTP(url, WithHTTPTransport(HTTPTransport(9))); err == nil {
		t.Fatal("an unknown transport was taken")
	}
}
