package mcpc

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// taskEvents is what the test server recorded about its tasks, in order.
func taskEvents(t *testing.T, c *Client) []string {
	t.Helper()
	res, err := c.CallTool(context.Background(), "task_events", nil)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		StructuredContent struct {
			Events []string `json:"events"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	return r.StructuredContent.Events
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

func TestTaskBackedCallReturnsTheResultAndReportsStatus(t *testing.T) {
	c := connect(t, []string{"--modern"}, WithMode(ModeModern), WithTasks())
	var mu sync.Mutex
	var messages []string
	res, err := c.CallTool(context.Background(), "task", map[string]any{"steps": 2},
		CallProgress(func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			messages = append(messages, p.Message)
		}))
	mu.Lock()
	defer mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); text != "task done after 2 steps" {
		t.Fatalf("got %s", text)
	}
	if len(messages) == 0 || messages[len(messages)-1] != "completed: done" {
		t.Fatalf("status reports %q", messages)
	}
}

// A 2025-11-25 server's experimental tasks: once listed as task-capable, the tool runs as a
// task and the call returns what tasks/result gave.
func TestLegacyTaskBackedCallReturnsTheResult(t *testing.T) {
	c := connect(t, []string{"--legacy-tasks"}, WithMode(ModeLegacy), WithTasks())
	ctx := context.Background()
	if _, err := c.Tools(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(ctx, "task", map[string]any{"steps": 2})
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); text != "task done after 2 steps" {
		t.Fatalf("got %s", text)
	}
	if events := taskEvents(t, c); countPrefix(events, "result task-1") != 1 {
		t.Fatalf("the server gave no tasks/result: %q", events)
	}
}

func TestCancellingATaskBackedCallSendsOneTasksCancel(t *testing.T) {
	c := connect(t, []string{"--modern"}, WithMode(ModeModern), WithTasks())
	ctx, cancel := context.WithCancel(context.Background())
	created := make(chan struct{}, 1)
	go func() {
		<-created
		cancel()
	}()
	start := time.Now()
	_, err := c.CallTool(ctx, "task", map[string]any{"outcome": "never", "steps": 0},
		CallProgress(func(Progress) {
			select {
			case created <- struct{}{}:
			default:
			}
		}))
	e := asError(t, err)
	if e.Status != StatusCancelled || !strings.Contains(string(e.Data), `"taskId":"task-1"`) {
		t.Fatalf("got %v (data %s)", err, e.Data)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatal("the cancel did not return at once")
	}
	deadline := time.Now().Add(5 * time.Second)
	for countPrefix(taskEvents(t, c), "cancel ") == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	events := taskEvents(t, c) // a later request: a second cancel would be recorded by now
	if countPrefix(events, "cancel ") != 1 || events[0] != "created task-1" {
		t.Fatalf("the server saw %q", events)
	}
}

func TestTasksByHand(t *testing.T) {
	c := connect(t, []string{"--modern"}, WithMode(ModeModern), WithTasks())
	ctx := context.Background()
	task, err := c.CallTool(ctx, "task", map[string]any{"outcome": "input", "steps": 0}, CallReturnTask())
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if err := json.Unmarshal(task, &created); err != nil || created.ResultType != "task" {
		t.Fatalf("not a task: %s", task)
	}
	waitStatus := func(want string) json.RawMessage {
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, err := c.GetTask(ctx, created.TaskID)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(got), `"status":"`+want+`"`) {
				return got
			}
			if time.Now().After(deadline) {
				t.Fatalf("the task never got to %s: %s", want, got)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitStatus("input_required")
	if _, err := c.UpdateTask(ctx, created.TaskID, map[string]any{"answer-1": map[string]any{"action": "accept"}}); err != nil {
		t.Fatal(err)
	}
	done := waitStatus("completed")
	if !strings.Contains(string(done), `answered: {\"action\":\"accept\"}`) {
		t.Fatalf("got %s", done)
	}
	if _, err := c.CancelTask(ctx, created.TaskID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTask(ctx, "no-such-task"); asError(t, err).Code != -32602 {
		t.Fatalf("an unknown task: %v", err)
	}
}
