package mcpc

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// recorder collects what callbacks hear, from the library's threads.
type recorder struct {
	mu    sync.Mutex
	lines []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
}

// waitFor waits until the recorder holds want (callbacks run behind the calls).
func (r *recorder) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r.mu.Lock()
		got := strings.Join(r.lines, "\n")
		r.mu.Unlock()
		missing := ""
		for _, w := range want {
			if !strings.Contains(got, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("callbacks never heard %q; they heard:\n%s", missing, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestProgressCallbacks(t *testing.T) {
	var client, call recorder
	c := connect(t, nil, WithProgressFunc(func(p Progress) {
		client.add("client %v/%v %s", p.Progress, p.Total, p.Message)
	}))
	result, err := c.CallTool(context.Background(), "progress", map[string]int{"steps": 3})
	if err != nil || toolText(t, result) != "done" {
		t.Fatalf("CallTool = %s, %v", result, err)
	}
	client.waitFor(t, "client 1/3 step 1", "client 2/3 step 2", "client 3/3 step 3")

	// A call's own progress func hears its progress while it runs: slow reports every 50 ms,
	// 6 times in 300 ms. (Progress delivered after the call has returned is dropped.)
	result, err = c.CallTool(context.Background(), "slow", map[string]int{"ms": 300},
		CallProgress(func(p Progress) { call.add("call %s %v/%v", p.Token, p.Progress, p.Total) }))
	if err != nil || toolText(t, result) != "slept 300 ms" {
		t.Fatalf("CallTool = %s, %v", result, err)
	}
	call.mu.Lock()
	heard := strings.Join(call.lines, "\n")
	call.mu.Unlock()
	if !strings.Contains(heard, `call "mcpc-`) || !strings.Contains(heard, "1/6") {
		t.Fatalf("the call's progress func heard: %q", heard)
	}
	client.waitFor(t, "client 1/6 ")

	// A cancelled call's late progress is dropped safely.
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Millisecond)
	defer cancel()
	_, err = c.CallTool(ctx, "slow", slowArgs, CallProgress(func(Progress) {}))
	if asError(t, err).Status != StatusCancelled {
		t.Fatalf("slow: %v", err)
	}
	client.waitFor(t, "client 1/100 ")
}

func TestNotificationCallback(t *testing.T) {
	var heard recorder
	connect(t, []string{"--notify-before-init"}, WithNotificationFunc(func(method string, params json.RawMessage) {
		heard.add("%s %s", method, params)
	}))
	heard.waitFor(t,
		"notifications/tools/list_changed ",
		`notifications/message {"data":"starting","level":"info"}`)
}

// A stdio server gets the environment variable and working directory the options give, and
// its stderr lines reach the stderr func.
func TestEnvDirAndStderr(t *testing.T) {
	var stderr recorder
	dir := t.TempDir()
	script := `echo "FOO=$MCPC_GO_FOO" >&2; echo "PWD=$(pwd)" >&2; exec "$0" "$@"`
	c, err := NewStdio([]string{"/bin/sh", "-c", script, testServer(t)},
		WithEnv("MCPC_GO_FOO", "bar"), WithDir(dir),
		WithStderrFunc(func(line string) { stderr.add("%s", line) }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, "FOO=bar", "PWD="+dir)
}

// A notification func may call back into the client (on the callback thread).
func TestCallbackMayCallTheClient(t *testing.T) {
	var heard recorder
	var c *Client
	ready := make(chan struct{})
	c = connect(t, []string{"--notify-before-init"}, WithNotificationFunc(func(method string, _ json.RawMessage) {
		if method != "notifications/tools/list_changed" {
			return
		}
		<-ready // c is set once connect returns
		result, err := c.CallTool(context.Background(), "echo", map[string]string{"text": "from a callback"})
		heard.add("%s %v", result, err)
	}))
	close(ready)
	heard.waitFor(t, "from a callback")
}

// WithSigpipeIgnored is a promise: refused while SIGPIPE is not ignored, kept once it is.
func TestSigpipeIgnoredIsCheckedAtConnect(t *testing.T) {
	c, err := NewStdio([]string{testServer(t)}, WithSigpipeIgnored())
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Connect(context.Background())
	c.Close()
	if e := asError(t, err); e.Status != StatusInvalidArgument || !strings.Contains(e.Message, "SIGPIPE") {
		t.Fatalf("a false promise: %v", err)
	}
	signal.Ignore(syscall.SIGPIPE)
	defer signal.Reset(syscall.SIGPIPE)
	c = connect(t, nil, WithSigpipeIgnored())
	result, err := c.CallTool(context.Background(), "echo", map[string]string{"text": "kept"})
	if err != nil || !strings.Contains(string(result), "kept") {
		t.Fatalf("echo with the promise kept: %s %v", result, err)
	}
}
