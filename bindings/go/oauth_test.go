package mcpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// httpServer starts the test server over HTTP with flags and returns its MCP URL; it stops
// when the test ends (its stdin closes).
func httpServer(t *testing.T, flags ...string) string {
	t.Helper()
	cmd := exec.Command(testServer(t), append([]string{"--http", "0"}, flags...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the test server printed no URL: %v", err)
	}
	return strings.TrimPrefix(strings.TrimSpace(line), "listening on ")
}

// browse is the browser: it GETs the authorization URL and follows the redirect (to the
// loopback listener), returning the page it ended on.
func browse(url string) (string, error) {
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	return string(page), err
}

func TestOAuthThroughTheLoopback(t *testing.T) {
	url := httpServer(t, "--require-auth")
	loopback, err := NewLoopback("")
	if err != nil {
		t.Fatal(err)
	}
	defer loopback.Close()
	if !strings.HasPrefix(loopback.RedirectURI(), "http://127.0.0.1:") {
		t.Fatalf("redirect URI %q", loopback.RedirectURI())
	}
	var mu sync.Mutex
	var pages []string
	var saved json.RawMessage
	c, err := NewHTTP(url, WithMode(ModeLegacy),
		WithOAuth(OAuth{
			ClientName:  "go-host",
			RedirectURI: loopback.RedirectURI(),
			Authorize: loopback.Authorize(func(authorizationURL string) error {
				// "Open the browser": its request comes back to the listener.
				go func() {
					page, _ := browse(authorizationURL)
					mu.Lock()
					pages = append(pages, page)
					mu.Unlock()
				}()
				return nil
			}),
		}),
		WithTokenStore(
			func(serverURL, issuer string) (json.RawMessage, bool) { return nil, false },
			func(serverURL, issuer string, tokens json.RawMessage) {
				mu.Lock()
				saved = tokens
				mu.Unlock()
			}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	result, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"from go"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(result), "from go") {
		t.Fatalf("result %s", result)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pages) != 1 || !strings.Contains(pages[0], "You can close this window") {
		t.Fatalf("the browser saw %q", pages)
	}
	if !strings.Contains(string(saved), "access_token") {
		t.Fatalf("the store saved %s", saved)
	}
}

func TestOAuthDeclinedIsUnauthorized(t *testing.T) {
	url := httpServer(t, "--require-auth")
	c, err := NewHTTP(url, WithMode(ModeLegacy),
		WithOAuth(OAuth{
			RedirectURI: "http://127.0.0.1:9/callback",
			Authorize: func(ctx context.Context, authorizationURL, redirectURI string) (string, error) {
				return "", errors.New("the person said no")
			},
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Connect(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusUnauthorized ||
		!strings.Contains(e.Message, "the person said no") {
		t.Fatalf("want UNAUTHORIZED with the reason, got %v", err)
	}
	if StatusUnauthorized.String() != "UNAUTHORIZED" {
		t.Fatalf("status name %q", StatusUnauthorized.String())
	}
}

// The AuthorizeFunc's context ends when the call that needs the authorization is cancelled.
func TestOAuthStepEndsWithTheCall(t *testing.T) {
	url := httpServer(t, "--require-auth", "--auth-tools-scope", "mcp:write")
	loopback, err := NewLoopback("/cb")
	if err != nil {
		t.Fatal(err)
	}
	defer loopback.Close()
	waiting := make(chan struct{}, 1)
	ended := make(chan error, 1)
	first := true
	c, err := NewHTTP(url, WithMode(ModeLegacy),
		WithOAuth(OAuth{
			RedirectURI: loopback.RedirectURI(),
			Authorize: func(ctx context.Context, authorizationURL, _ string) (string, error) {
				if first { // the connect's authorization completes
					first = false
					go browse(authorizationURL)
					return loopback.Wait(ctx)
				}
				waiting <- struct{}{} // the step-up: nobody comes back
				got, err := loopback.Wait(ctx)
				ended <- err
				return got, err
			},
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "echo", json.RawMessage(`{"text":"x"}`))
		done <- err
	}()
	select {
	case <-waiting:
	case <-time.After(20 * time.Second):
		t.Fatal("the step-up did not reach the person")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("the call ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end with its context")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, ErrCancelled) {
			t.Fatalf("the loopback wait ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the loopback wait did not end")
	}
}

func TestHeaderProviderAddsTheTokenToEveryRequest(t *testing.T) {
	url := httpServer(t, "--require-auth")
	var calls int
	var mu sync.Mutex
	c, err := NewHTTP(url, WithMode(ModeLegacy),
		WithHeaderProvider(func(u string) (map[string]string, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if u != url {
				t.Errorf("provider asked for %q", u)
			}
			return map[string]string{"Authorization": "Bearer not-a-token"}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Connect(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusUnauthorized || len(e.Data) == 0 {
		t.Fatalf("want UNAUTHORIZED with the challenge, got %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls == 0 {
		t.Fatal("the provider was never asked")
	}
}

func TestLoopbackWaitEndsWithItsContext(t *testing.T) {
	if _, err := NewLoopback("no-slash"); err == nil {
		t.Fatal("a path without '/' was accepted")
	}
	loopback, err := NewLoopback("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = loopback.Wait(ctx)
	if !errors.Is(err, ErrCancelled) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait ended with %v", err)
	}
	go browse(loopback.RedirectURI() + "?code=c&state=s")
	got, err := loopback.Wait(context.Background())
	if err != nil || got != loopback.RedirectURI()+"?code=c&state=s" {
		t.Fatalf("Wait gave %q, %v", got, err)
	}
	loopback.Close()
	loopback.Close()
	if _, err := loopback.Wait(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Wait after Close gave %v", err)
	}
}

// The client_credentials grant: a pre-registered machine client, no person, no redirect.
func TestOAuthClientCredentials(t *testing.T) {
	url := httpServer(t, "--require-auth", "--auth-client", "machine:s3cret-machine")
	c, err := NewHTTP(url, WithOAuth(OAuth{
		ClientID:          "machine",
		ClientSecret:      "s3cret-machine",
		ClientCredentials: true,
		MaxAuthorizations: 2,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := c.CallTool(context.Background(), "echo", map[string]any{"text": "m2m"})
	if err != nil {
		t.Fatal(err)
	}
	if text := toolText(t, res); text != "m2m" {
		t.Fatalf("got %s", text)
	}

	wrong, err := NewHTTP(url, WithOAuth(OAuth{
		ClientID: "machine", ClientSecret: "not-the-secret", ClientCredentials: true,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	_, err = wrong.Connect(context.Background())
	if e := asError(t, err); e.Status != StatusUnauthorized {
		t.Fatalf("a wrong secret: %v", e)
	}
}
