package mcpc_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	mcpc "github.com/mcpc/mcpc-go"
)

// A deadline cancels a slow tool call: the call returns when the deadline passes, and the
// server is sent notifications/cancelled with the reason "context deadline exceeded".
func Example_cancel() {
	server := os.Getenv("MCPC_TEST_SERVER") // the README's "my-mcp-server"
	client, err := mcpc.NewStdio([]string{server}, mcpc.WithClientInfo("example", "1.0"))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Connect(context.Background()); err != nil {
		log.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = client.CallTool(ctx, "slow", map[string]int{"ms": 10000})

	var e *mcpc.Error
	if errors.Is(err, context.DeadlineExceeded) && errors.As(err, &e) {
		fmt.Println(e.Status, e.CancelReason)
	}
	// Output: CANCELLED context deadline exceeded
}
