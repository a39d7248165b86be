package mcpc

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bounds, with wide margins: a cancelled call returns within milliseconds; these only catch a
// call that waited for the tool.
var slowArgs = json.RawMessage(`{"ms":5000}`)

const (
	returnsSoon  = 2 * time.Second
	cancelAfter  = 200 * time.Millisecond
	neverReached = 5 * time.Second
)

// A context deadline cancels a slow tool: the call returns at once with an error that matches
// both context.DeadlineExceeded and ErrCancelled, and the server is sent
// notifications/cancelled for the request, with the deadline as the reason.
func TestDeadlineCancelsSlowTool(t *testing.T) {
	c, log := connectLogged(t)
	ctx, cancel := context.WithTimeout(context.Background(), cancelAfter)
	defer cancel()

	start := time.Now()
	_, err := c.CallTool(ctx, "slow", slowArgs)
	elapsed := time.Since(start)

	if elapsed < cancelAfter || elapsed > returnsSoon {
		t.Errorf("the call returned after %v; the deadline was %v", elapsed, cancelAfter)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want one matching context.DeadlineExceeded and ErrCancelled", err)
	}
	e := asError(t, err)
	if e.Status != StatusCancelled || e.CancelReason != "context deadline exceeded" || e.RequestID <= 0 {
		t.Fatalf("err = %#v", e)
	}

	line := waitForLog(t, log, "notifications/cancelled for the request", cancelNoticeFor(e.RequestID))
	if m, _ := parseLogLine(line); !strings.Contains(m.Params.Reason, "deadline") {
		t.Errorf("the cancel's reason does not mention the deadline: %s", line)
	}
	t.Logf("returned after %v; the server read: %s", elapsed, line)
}

// Cancelling the context from another goroutine cancels the call; the reason is
// "context canceled".
func TestCancelFromAnotherGoroutine(t *testing.T) {
	c, log := connectLogged(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(cancelAfter, cancel)

	start := time.Now()
	_, err := c.CallTool(ctx, "slow", slowArgs)
	if elapsed := time.Since(start); elapsed > returnsSoon {
		t.Errorf("the call returned after %v", elapsed)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v", err)
	}
	e := asError(t, err)
	if e.CancelReason != "context canceled" {
		t.Errorf("CancelReason = %q", e.CancelReason)
	}
	line := waitForLog(t, log, "notifications/cancelled", cancelNoticeFor(e.RequestID))
	if m, _ := parseLogLine(line); m.Params.Reason != "context canceled" {
		t.Errorf("the server read %s", line)
	}
}

// A context that has already ended sends nothing: the call fails at once, without a request id,
// and the server never sees the tool call.
func TestCancelledContextSendsNothing(t *testing.T) {
	c, log := connectLogged(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	_, err := c.CallTool(ctx, "slow", slowArgs)
	if e := asError(t, err); e.Status != StatusCancelled || e.RequestID != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %#v", e)
	}
	syncLog(t, c, log)
	logLacks(t, log, `"slow"`)
}

// One context cancels every call made with it, on many goroutines; each request gets its own
// notice.
func TestOneContextCancelsManyCalls(t *testing.T) {
	const calls = 8
	c, log := connectLogged(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(cancelAfter, cancel)

	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = c.CallTool(ctx, "slow", slowArgs)
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		e := asError(t, err)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		waitForLog(t, log, "a cancel notice", cancelNoticeFor(e.RequestID))
	}
}

// A call that finishes before its deadline is not cancelled, and nothing is sent after it.
func TestDeadlineNotReached(t *testing.T) {
	c, log := connectLogged(t)
	ctx, cancel := context.WithTimeout(context.Background(), neverReached)
	defer cancel()
	result, err := c.CallTool(ctx, "echo", map[string]string{"text": "in time"})
	if err != nil || toolText(t, result) != "in time" {
		t.Fatalf("CallTool = %s, %v", result, err)
	}
	cancel()
	syncLog(t, c, log)
	logLacks(t, log, "notifications/cancelled")
}

// The client's own timeout is a cancel with a reason, reported as ErrTimeout.
func TestClientTimeout(t *testing.T) {
	c, log := connectLogged(t, WithTimeout(cancelAfter))
	_, err := c.CallTool(context.Background(), "slow", slowArgs)
	if !errors.Is(err, ErrTimeout) || errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrTimeout", err)
	}
	e := asError(t, err)
	if e.CancelReason != "timed out after 200 ms" {
		t.Errorf("CancelReason = %q", e.CancelReason)
	}
	waitForLog(t, log, "a cancel notice", cancelNoticeFor(e.RequestID))
}

// Close ends the calls still running, and every call after it, with ErrClosed.
func TestCloseEndsPendingCalls(t *testing.T) {
	c := connect(t, nil)
	done := make(chan error)
	for i := 0; i < 4; i++ {
		go func() {
			_, err := c.CallTool(context.Background(), "slow", slowArgs)
			done <- err
		}()
	}
	time.Sleep(cancelAfter) // let the calls reach the server
	start := time.Now()
	c.Close()
	for i := 0; i < 4; i++ {
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("a pending call: %v", err)
		}
	}
	if elapsed := time.Since(start); elapsed > neverReached {
		t.Errorf("Close took %v", elapsed)
	}
	if err := c.Ping(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close: %v", err)
	}
	if v := c.ProtocolVersion(); v != "" {
		t.Errorf("ProtocolVersion after Close = %q", v)
	}
	c.Close() // twice is harmless
}

// Connect cannot be cancelled on the wire: a context that ends first closes the client.
func TestConnectContextClosesClient(t *testing.T) {
	// A server that never answers: sh reads stdin and says nothing.
	c, err := NewStdio([]string{"/bin/sh", "-c", "cat >/dev/null"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), cancelAfter)
	defer cancel()
	start := time.Now()
	_, err = c.Connect(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Connect: %v", err)
	}
	if elapsed := time.Since(start); elapsed > returnsSoon {
		t.Errorf("Connect returned after %v", elapsed)
	}
}
