package mcpc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// starts reads the pids a counted server wrote, one per start.
func starts(t *testing.T, marker string) []string {
	t.Helper()
	data, err := os.ReadFile(marker)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func TestLazyConnectAndIdleShutdown(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "starts")
	script := fmt.Sprintf("echo $$ >> '%s'; exec '%s'", marker, testServer(t))
	c, err := NewStdio([]string{"/bin/sh", "-c", script},
		WithLazyConnect(), WithIdleShutdown(300*time.Millisecond))
	if err != nil {
		t.Fatalf("NewStdio: %v", err)
	}
	defer c.Close()
	time.Sleep(300 * time.Millisecond)
	if got := starts(t, marker); len(got) != 0 {
		t.Fatalf("a server started before any request: %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("the first request connects: %v", err)
	}
	if got := starts(t, marker); len(got) != 1 {
		t.Fatalf("starts after the first request: %v", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.State() != StateNotConnected {
		if time.Now().After(deadline) {
			t.Fatal("the idle server was not stopped within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("the next request starts the server again: %v", err)
	}
	if got := starts(t, marker); len(got) != 2 || got[0] == got[1] {
		t.Fatalf("starts after idle shutdown: %v", got)
	}
}

func TestLazyConnectFailureIsTheRequests(t *testing.T) {
	c, err := NewStdio([]string{"/nonexistent/mcpc-no-such-server"}, WithLazyConnect())
	if err != nil {
		t.Fatalf("NewStdio: %v", err)
	}
	defer c.Close()
	err = c.Ping(context.Background())
	e := asError(t, err)
	if e.Status != StatusTransportError || !strings.HasPrefix(e.Message, "lazy connect failed") {
		t.Fatalf("got %v", err)
	}
}
