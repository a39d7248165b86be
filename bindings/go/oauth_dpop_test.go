package mcpc

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// dpopServer is an MCP server that is its own authorization server: it issues a DPoP-bound
// token only to a token request with a proof the client's key verifies, and serves only
// requests that present it as "DPoP <token>" with a verified proof holding its hash (ath).
type dpopServer struct {
	*httptest.Server
	keys   *keyServer // its verify checks a JWT against the client's public key
	mu     sync.Mutex
	proofs []map[string]any // the claims of each verified proof
}

func newDPoPServer(t *testing.T, keys *keyServer) *dpopServer {
	s := &dpopServer{keys: keys}
	const token = "dpop-token"
	tokenHash := sha256.Sum256([]byte(token))
	ath := base64.RawURLEncoding.EncodeToString(tokenHash[:])
	proof := func(r *http.Request, withToken bool) bool {
		claims, ok := s.keys.verify(r.Header.Get("DPoP"))
		if !ok || claims["htm"] != r.Method || claims["htu"] != s.URL+r.URL.Path ||
			(withToken && claims["ath"] != ath) {
			return false
		}
		s.mu.Lock()
		s.proofs = append(s.proofs, claims)
		s.mu.Unlock()
		return true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": s.URL + "/mcp", "authorization_servers": []string{s.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"issuer": s.URL, "token_endpoint": s.URL + "/token",
			"dpop_signing_alg_values_supported": []string{"ES256"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		if !proof(r, false) {
			writeJSON(w, 400, map[string]any{"error": "invalid_dpop_proof"})
			return
		}
		writeJSON(w, 200, map[string]any{"access_token": token, "token_type": "DPoP"})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(405)
			return
		}
		if r.Header.Get("Authorization") != "DPoP "+token || !proof(r, true) {
			w.Header().Set("WWW-Authenticate",
				fmt.Sprintf(`DPoP resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s.URL))
			w.WriteHeader(401)
			return
		}
		var message struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&message)
		if message.ID == nil {
			w.WriteHeader(202)
			return
		}
		result := map[string]any{}
		if message.Method == "initialize" {
			result = map[string]any{"protocolVersion": message.Params.ProtocolVersion, "capabilities": map[string]any{},
				"serverInfo": map[string]any{"name": "dpop-server", "version": "1"}}
		}
		writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": message.ID, "result": result})
	})
	s.Server = httptest.NewUnstartedServer(mux)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// DPoP with the host's key: the token request and each MCP request carry a proof the key
// verifies; the bound token goes as "DPoP <token>". A key that is not P-256 fails NewHTTP.
func TestOAuthDPoP(t *testing.T) {
	key, keyPEM := p256PEM(t)
	server := newDPoPServer(t, &keyServer{public: &key.PublicKey})
	c, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithOAuth(OAuth{
		ClientID: "machine", ClientSecret: "s", ClientCredentials: true, DPoP: true, DPoPKeyPEM: keyPEM,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	server.mu.Lock()
	proofs := len(server.proofs)
	server.mu.Unlock()
	if proofs < 3 { // the token request, initialize, the ping (and notifications)
		t.Fatalf("%d verified proofs", proofs)
	}

	_, err = NewHTTP(server.URL+"/mcp", WithOAuth(OAuth{
		ClientID: "machine", ClientCredentials: true, DPoP: true, DPoPKeyPEM: "not a key",
	}))
	if e := asError(t, err); e.Status != StatusInvalidArgument {
		t.Fatalf("a bad key: %v", e)
	}
}
