package mcpc

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// keyServer is an MCP server that is its own authorization server and only issues a token
// for a client_credentials request whose client assertion the client's public key verifies.
type keyServer struct {
	*httptest.Server
	public crypto.PublicKey // *ecdsa.PublicKey (ES256) or *rsa.PublicKey (RS256)
	mu     sync.Mutex
	claims []map[string]any // of each verified assertion
	// workloadToken: the JWT-bearer grant's assertion it accepts (also a token).
	workloadToken  string
	workloadGrants int
	// identityAssertion: the subject token its identity provider (/idp/token) exchanges for
	// workloadToken as the ID-JAG.
	identityAssertion string
	exchanges         int
}

func newKeyServer(t *testing.T, public crypto.PublicKey) *keyServer {
	s := &keyServer{public: public}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": s.URL + "/mcp", "authorization_servers": []string{s.URL}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer": s.URL, "token_endpoint": s.URL + "/token",
			"grant_types_supported":                 []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"private_key_jwt"},
		})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer" {
			s.mu.Lock()
			ok := s.workloadToken != "" && r.PostForm.Get("assertion") == s.workloadToken
			if ok {
				s.workloadGrants++
			}
			s.mu.Unlock()
			if !ok {
				writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
			writeJSON(w, 200, map[string]any{"access_token": "key-token", "token_type": "Bearer"})
			return
		}
		claims, ok := s.verify(r.PostForm.Get("client_assertion"))
		if !ok || r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("client_secret") != "" ||
			r.PostForm.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" {
			writeJSON(w, 401, map[string]any{"error": "invalid_client"})
			return
		}
		s.mu.Lock()
		s.claims = append(s.claims, claims)
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"access_token": "key-token", "token_type": "Bearer"})
	})
	mux.HandleFunc("/idp/token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		s.mu.Lock()
		ok := s.identityAssertion != "" && r.PostForm.Get("subject_token") == s.identityAssertion &&
			r.PostForm.Get("grant_type") == "urn:ietf:params:oauth:grant-type:token-exchange" &&
			r.PostForm.Get("requested_token_type") == "urn:ietf:params:oauth:token-type:id-jag" &&
			r.PostForm.Get("audience") == s.URL && r.PostForm.Get("resource") == s.URL+"/mcp"
		if ok {
			s.exchanges++
		}
		idJag := s.workloadToken
		s.mu.Unlock()
		if !ok {
			writeJSON(w, 400, map[string]any{"error": "invalid_request"})
			return
		}
		writeJSON(w, 200, map[string]any{"access_token": idJag, "token_type": "N_A",
			"issued_token_type": "urn:ietf:params:oauth:token-type:id-jag"})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer key-token" {
			w.Header().Set("WWW-Authenticate",
				fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s.URL))
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
				"serverInfo": map[string]any{"name": "key-server", "version": "1"}}
		}
		writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": message.ID, "result": result})
	})
	// Assigned before it serves: the handlers read s.URL.
	s.Server = httptest.NewUnstartedServer(mux)
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// setWorkloadToken sets the JWT-bearer assertion the server accepts, under its lock: its
// handlers read it on the server's goroutines.
func (s *keyServer) setWorkloadToken(token string) {
	s.mu.Lock()
	s.workloadToken = token
	s.mu.Unlock()
}

// verify checks a JWT against the client's public key (ES256 or RS256, as the key and the
// header's alg say) and returns its claims.
func (s *keyServer) verify(assertion string) (map[string]any, bool) {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return nil, false
	}
	signature, err := base64.RawURLEncoding.DecodeString(parts[2])
	header, headerErr := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || headerErr != nil {
		return nil, false
	}
	var alg struct {
		Alg string `json:"alg"`
	}
	_ = json.Unmarshal(header, &alg)
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	switch public := s.public.(type) {
	case *ecdsa.PublicKey:
		if alg.Alg != "ES256" || len(signature) != 64 {
			return nil, false
		}
		r, sig := new(big.Int).SetBytes(signature[:32]), new(big.Int).SetBytes(signature[32:])
		if !ecdsa.Verify(public, digest[:], r, sig) {
			return nil, false
		}
	case *rsa.PublicKey:
		if alg.Alg != "RS256" || rsa.VerifyPKCS1v15(public, crypto.SHA256, digest[:], signature) != nil {
			return nil, false
		}
	default:
		return nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	if err != nil || json.Unmarshal(payload, &claims) != nil {
		return nil, false
	}
	return claims, true
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func p256PEM(t *testing.T) (*ecdsa.PrivateKey, string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return key, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// private_key_jwt: the client_credentials grant with a key instead of a secret; the server
// verifies the assertion with the public key. A key the library cannot use fails NewHTTP.
func TestOAuthClientCredentialsWithPrivateKeyJWT(t *testing.T) {
	key, keyPEM := p256PEM(t)
	server := newKeyServer(t, &key.PublicKey)
	c, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithOAuth(OAuth{
		ClientID: "machine", ClientKeyPEM: keyPEM, ClientKeyID: "key-1", ClientCredentials: true,
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
	claims := server.claims
	server.mu.Unlock()
	if len(claims) != 1 || claims[0]["iss"] != "machine" || claims[0]["sub"] != "machine" || claims[0]["aud"] != server.URL {
		t.Fatalf("verified assertions: %v", claims)
	}

	_, other := p256PEM(t)
	wrong, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithOAuth(OAuth{
		ClientID: "machine", ClientKeyPEM: other, ClientCredentials: true, MaxAuthorizations: 1,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	_, err = wrong.Connect(context.Background())
	if e := asError(t, err); e.Status != StatusUnauthorized {
		t.Fatalf("another key: %v", e)
	}

	_, err = NewHTTP(server.URL+"/mcp", WithOAuth(OAuth{
		ClientID: "machine", ClientKeyPEM: "not a key", ClientCredentials: true,
	}))
	if e := asError(t, err); e.Status != StatusInvalidArgument {
		t.Fatalf("a bad key: %v", e)
	}
}

// An RSA key signs RS256.
func TestOAuthPrivateKeyJWTWithAnRSAKey(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	server := newKeyServer(t, &key.PublicKey)
	c, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithOAuth(OAuth{
		ClientID: "machine", ClientKeyPEM: keyPEM, ClientCredentials: true,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The JWT-bearer grant with the workload's token from a file, read at the token request.
func TestOAuthWorkloadTokenFile(t *testing.T) {
	key, _ := p256PEM(t)
	server := newKeyServer(t, &key.PublicKey)
	const token = "eyJhbGciOiJFUzI1NiJ9.d29ya2xvYWQ.c2ln"
	server.setWorkloadToken(token)
	file := t.TempDir() + "/token"
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithOAuth(OAuth{WorkloadTokenFile: file}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	server.mu.Lock()
	grants := server.workloadGrants
	server.mu.Unlock()
	if grants != 1 {
		t.Fatalf("%d JWT-bearer grants", grants)
	}
}

// The JWT-bearer grant with the workload's token from the host's function.
func TestOAuthWorkloadTokenFunction(t *testing.T) {
	key, _ := p256PEM(t)
	server := newKeyServer(t, &key.PublicKey)
	const token = "eyJhbGciOiJFUzI1NiJ9.d29ya2xvYWQ.c2ln"
	server.setWorkloadToken(token)
	var asked atomic.Int32 // the function runs on a library thread
	give := func() (string, error) { asked.Add(1); return token, nil }
	c, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithOAuth(OAuth{WorkloadToken: give}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	server.mu.Lock()
	grants := server.workloadGrants
	server.mu.Unlock()
	if grants != 1 || asked.Load() != 1 {
		t.Fatalf("%d JWT-bearer grants, the function asked %d times", grants, asked.Load())
	}
}

// Enterprise-managed authorization: the host's identity assertion exchanged at the identity
// provider for an ID-JAG, which the authorization server takes as the JWT-bearer grant; a
// host without an assertion gets StatusUnauthorized.
func TestOAuthEnterpriseManaged(t *testing.T) {
	key, _ := p256PEM(t)
	server := newKeyServer(t, &key.PublicKey)
	const assertion = "eyJhbGciOiJFUzI1NiJ9.aWQtdG9rZW4.c2ln"
	server.setWorkloadToken("eyJ0eXAiOiJvYXV0aC1pZC1qYWcrand0In0.aWQtamFn.c2ln")
	server.mu.Lock()
	server.identityAssertion = assertion
	server.mu.Unlock()
	idp := &IdentityProvider{TokenEndpoint: server.URL + "/idp/token", ClientID: "idp-client",
		Assertion: func() (string, error) { return assertion, nil }}
	c, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy),
		WithOAuth(OAuth{ClientID: "enterprise-app", IdentityProvider: idp}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	server.mu.Lock()
	exchanges, grants := server.exchanges, server.workloadGrants
	server.mu.Unlock()
	if exchanges != 1 || grants != 1 {
		t.Fatalf("%d token exchanges, %d JWT-bearer grants", exchanges, grants)
	}

	none := &IdentityProvider{TokenEndpoint: server.URL + "/idp/token",
		Assertion: func() (string, error) { return "", fmt.Errorf("nobody signed in") }}
	c2, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy),
		WithOAuth(OAuth{ClientID: "enterprise-app", IdentityProvider: none}))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.Connect(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Status != StatusUnauthorized {
		t.Fatalf("got %v, want StatusUnauthorized", err)
	}
}

// private_key_jwt with a key the host keeps: ClientSign makes the signature (here with the
// test's ECDSA key, converted to the raw r||s JWS wants), which the server verifies.
func TestOAuthClientSign(t *testing.T) {
	key, _ := p256PEM(t)
	server := newKeyServer(t, &key.PublicKey)
	sign := func(input []byte) ([]byte, error) {
		digest := sha256.Sum256(input)
		r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
		if err != nil {
			return nil, err
		}
		signature := make([]byte, 64)
		r.FillBytes(signature[:32])
		s.FillBytes(signature[32:])
		return signature, nil
	}
	c, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithOAuth(OAuth{
		ClientID: "machine", ClientSign: sign, ClientSignAlgorithm: "ES256", ClientKeyID: "hsm",
		ClientCredentials: true,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	server.mu.Lock()
	claims := server.claims
	server.mu.Unlock()
	if len(claims) != 1 || claims[0]["iss"] != "machine" {
		t.Fatalf("verified assertions: %v", claims)
	}

	failing := func([]byte) ([]byte, error) { return nil, errors.New("the HSM is locked") }
	locked, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithOAuth(OAuth{
		ClientID: "machine", ClientSign: failing, ClientSignAlgorithm: "ES256", ClientCredentials: true,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer locked.Close()
	_, err = locked.Connect(context.Background())
	if e := asError(t, err); e.Status != StatusUnauthorized {
		t.Fatalf("a signer that fails: %v", e)
	}
}
