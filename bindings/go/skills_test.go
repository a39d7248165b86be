package mcpc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A server of the Skills extension whose SKILL.md is served with a body other than the one
// its entry's digest covers: Skills lists it, ReadSkill refuses it with StatusProtocolError,
// and the supporting file, which matches, is read.
func TestReadSkillRefusesContentThatIsNotTheEntrys(t *testing.T) {
	const skillURI, formsURI = "skill://demo/SKILL.md", "skill://demo/FORMS.md"
	listed := "---\nname: demo\ndescription: Demo\n---\nBody.\n"
	served := strings.Replace(listed, "Body.", "Evil.", 1)
	forms := "Forms.\n"
	file := func(uri, content string) map[string]any {
		sum := sha256.Sum256([]byte(content))
		return map[string]any{"uri": uri, "digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(content)}
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(405)
			return
		}
		var message struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				URI             string `json:"uri"`
			} `json:"params"`
		}
		_ = json.NewDecoder(r.Body).Decode(&message)
		if message.ID == nil {
			w.WriteHeader(202)
			return
		}
		var result any
		switch message.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": message.Params.ProtocolVersion,
				"capabilities": map[string]any{"resources": map[string]any{},
					"extensions": map[string]any{"io.modelcontextprotocol/skills": map[string]any{}}},
				"serverInfo": map[string]any{"name": "skills", "version": "1"}}
		case "skills/list":
			result = map[string]any{"skills": []any{map[string]any{"uri": skillURI,
				"frontmatter": map[string]any{"name": "demo", "description": "Demo"},
				"resources":   []any{file(skillURI, listed), file(formsURI, forms)}}}}
		case "resources/read":
			text := served
			if message.Params.URI == formsURI {
				text = forms
			}
			result = map[string]any{"contents": []any{map[string]any{"uri": message.Params.URI, "text": text}}}
		default:
			result = map[string]any{}
		}
		writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": message.ID, "result": result})
	}))
	t.Cleanup(server.Close)

	c, err := NewHTTP(server.URL+"/mcp", WithMode(ModeLegacy), WithHTTPListen(false), WithTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if _, err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	list, err := c.Skills(ctx)
	if err != nil {
		t.Fatalf("Skills: %v", err)
	}
	var skills struct {
		Skills []json.RawMessage `json:"skills"`
	}
	if err := json.Unmarshal(list, &skills); err != nil || len(skills.Skills) != 1 {
		t.Fatalf("Skills: %s (%v)", list, err)
	}
	_, err = c.ReadSkill(ctx, skills.Skills[0], "")
	if e := asError(t, err); e.Status != StatusProtocolError || !strings.Contains(e.Message, "digest") {
		t.Errorf("ReadSkill(SKILL.md): %v", err)
	}
	result, err := c.ReadSkill(ctx, skills.Skills[0], formsURI)
	if err != nil || !strings.Contains(string(result), `"text":"Forms.\n"`) {
		t.Errorf("ReadSkill(FORMS.md): %s, %v", result, err)
	}
}
