package mcpc

import (
	"testing"
	"time"
)

// With WithCloseInBackground, Close does not wait for a server that ignores its stdin's end
// and SIGTERM (a Close that waits takes two 2 s graces before its SIGKILL).
func TestCloseInBackgroundDoesNotWaitForTheServer(t *testing.T) {
	c := connect(t, []string{"--ignore-stdin-eof", "--ignore-sigterm"}, WithCloseInBackground())
	start := time.Now()
	c.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %v", took)
	}
}
