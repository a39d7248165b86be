package mcpc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests run against the project's own test server: $MCPC_TEST_SERVER, else cargo's
// release build in this repository (bindings/go/test.sh builds it and sets the variable).
func testServer(t *testing.T) string {
	t.Helper()
	path := os.Getenv("MCPC_TEST_SERVER")
	if path == "" {
		path = filepath.Join("..", "..", "target", "release", "mcpc-test-server")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("no test server (cargo build --release, or set MCPC_TEST_SERVER): %v", err)
	}
	return abs
}

// connect starts the test server with flags and connects; the client is closed when the
// test ends.
func connect(t *testing.T, flags []string, opts ...Option) *Client {
	t.Helper()
	c, err := NewStdio(append([]string{testServer(t)}, flags...), opts...)
	if err != nil {
		t.Fatalf("NewStdio: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return c
}

// connectLogged is connect with the server appending every line it reads to a log file,
// whose path it returns.
func connectLogged(t *testing.T, opts ...Option) (*Client, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "server.log")
	return connect(t, []string{"--log", log}, opts...), log
}

// waitForLog waits until a line of the server's log satisfies match, and returns it.
func waitForLog(t *testing.T, path string, what string, match func(line string) bool) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, _ := os.ReadFile(path)
		for _, line := range strings.Split(string(data), "\n") {
			if match(line) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's log has no %s; it has:\n%s", what, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// syncLog pings and waits for the server to log the ping: on stdio the server reads lines in
// order, so the log then holds everything sent before.
func syncLog(t *testing.T, c *Client, log string) {
	t.Helper()
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, log, "ping", func(line string) bool {
		m, ok := parseLogLine(line)
		return ok && m.Method == "ping"
	})
}

// logLacks fails the test if the server's log contains text.
func logLacks(t *testing.T, log, text string) {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), text) {
		t.Fatalf("the server was sent %s:\n%s", text, data)
	}
}

// logMessage is the part of a logged JSON-RPC line the tests look at.
type logMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		RequestID json.RawMessage `json:"requestId"`
		Reason    string          `json:"reason"`
	} `json:"params"`
}

func parseLogLine(line string) (logMessage, bool) {
	var m logMessage
	return m, json.Unmarshal([]byte(line), &m) == nil
}

// cancelNoticeFor matches the server's log line notifications/cancelled for request id.
func cancelNoticeFor(id int64) func(string) bool {
	want := json.RawMessage(jsonNumber(id))
	return func(line string) bool {
		m, ok := parseLogLine(line)
		return ok && m.Method == "notifications/cancelled" && string(m.Params.RequestID) == string(want)
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// asError is errors.As for *Error, failing the test when err is not one.
func asError(t *testing.T, err error) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want an *mcpc.Error", err, err)
	}
	return e
}

// toolText is the text of a tool result's first content item.
func toolText(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("not a tool result with content: %s (%v)", result, err)
	}
	return r.Content[0].Text
}
