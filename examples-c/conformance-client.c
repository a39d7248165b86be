/*
 * mcp-conformance-client: the client the official MCP conformance suite
 * (@modelcontextprotocol/conformance) drives, written over the C API so that the C API is
 * what the suite tests.
 *
 *   MCP_CONFORMANCE_SCENARIO=tools_call mcp-conformance-client http://localhost:PORT/mcp
 *
 * The suite starts a mock server for one scenario and runs this program with the server's URL
 * as the last argument. The environment says which scenario (MCP_CONFORMANCE_SCENARIO), which
 * protocol version (MCP_CONFORMANCE_PROTOCOL_VERSION: 2025-11-25 and older mean the
 * `initialize` handshake, 2026-07-28 the modern era; unset means the handshake) and the
 * scenario's data (MCP_CONFORMANCE_CONTEXT, JSON). Each scenario is one function below that
 * follows the flow the mock expects. Exit 0 when the flow finished, 1 when it failed, 2 for an
 * unknown scenario or bad usage.
 */
#include "mcpc.h"

#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------------
 * A tiny JSON reader over spans of text: enough to pick fields out of results. It never builds
 * a tree; each function scans from the start of a value. Input comes from the library (valid
 * JSON), but every scan still stops at the end of the span.
 */

struct span {
    const char *p;
    size_t n;
};

static const struct span NO_SPAN = {NULL, 0};

static struct span span_of(const char *text) {
    struct span s = {text, text ? strlen(text) : 0};
    return s;
}

static size_t skip_ws(struct span s, size_t i) {
    while (i < s.n && (s.p[i] == ' ' || s.p[i] == '\t' || s.p[i] == '\n' || s.p[i] == '\r'))
        i++;
    return i;
}

/* The index just past the value starting at i (after whitespace), or s.n on malformed input. */
static size_t skip_value(struct span s, size_t i) {
    i = skip_ws(s, i);
    if (i >= s.n)
        return s.n;
    if (s.p[i] == '"') {
        for (i++; i < s.n; i++) {
            if (s.p[i] == '\\')
                i++;
            else if (s.p[i] == '"')
                return i + 1;
        }
        return s.n;
    }
    if (s.p[i] == '{' || s.p[i] == '[') {
        /* Brackets nest; strings may hold brackets, so step over them whole. */
        int depth = 0;
        while (i < s.n) {
            char c = s.p[i];
            if (c == '"') {
                i = skip_value(s, i);
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if ((c == '}' || c == ']') && --depth == 0)
                return i + 1;
            i++;
        }
        return s.n;
    }
    while (i < s.n && strchr(",}] \t\r\n", s.p[i]) == NULL) /* number, true, false, null */
        i++;
    return i;
}

/* The value at i, trimmed. */
static struct span value_at(struct span s, size_t i) {
    i = skip_ws(s, i);
    struct span v = {s.p + i, skip_value(s, i) - i};
    return v;
}

static bool is_kind(struct span v, char first) {
    return v.p != NULL && v.n > 0 && v.p[0] == first;
}

/* Decodes a JSON string value into a new NUL-terminated UTF-8 string (free it), or NULL. */
static char *string_value(struct span v) {
    if (!is_kind(v, '"') || v.n < 2)
        return NULL;
    char *out = malloc(v.n); /* decoding never grows the text */
    if (out == NULL)
        return NULL;
    size_t o = 0;
    for (size_t i = 1; i + 1 < v.n; i++) {
        char c = v.p[i];
        if (c != '\\') {
            out[o++] = c;
            continue;
        }
        c = v.p[++i];
        switch (c) {
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            unsigned long cp = strtoul((char[5]){v.p[i + 1], v.p[i + 2], v.p[i + 3], v.p[i + 4], 0},
                                       NULL, 16);
            i += 4;
            /* A surrogate pair is two escapes for one code point. */
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < v.n && v.p[i + 1] == '\\' &&
                v.p[i + 2] == 'u') {
                unsigned long lo = strtoul(
                    (char[5]){v.p[i + 3], v.p[i + 4], v.p[i + 5], v.p[i + 6], 0}, NULL, 16);
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
            if (cp < 0x80) {
                out[o++] = (char)cp;
            } else if (cp < 0x800) {
                out[o++] = (char)(0xC0 | (cp >> 6));
                out[o++] = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                out[o++] = (char)(0xE0 | (cp >> 12));
                out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[o++] = (char)(0x80 | (cp & 0x3F));
            } else {
                out[o++] = (char)(0xF0 | (cp >> 18));
                out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[o++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: out[o++] = c; break; /* \" \\ \/ */
        }
    }
    out[o] = '\0';
    return out;
}

/* Member `index` of an object: its value, with its key (a JSON string) in *key; NO_SPAN past
 * the last member. */
static struct span member_at(struct span obj, size_t index, struct span *key) {
    if (!is_kind(obj, '{'))
        return NO_SPAN;
    size_t i = 1;
    for (size_t k = 0;; k++) {
        i = skip_ws(obj, i);
        if (i >= obj.n || obj.p[i] != '"')
            return NO_SPAN;
        *key = value_at(obj, i);
        i = skip_ws(obj, i + key->n);
        if (i >= obj.n || obj.p[i] != ':')
            return NO_SPAN;
        struct span v = value_at(obj, i + 1);
        if (k == index)
            return v;
        i = skip_ws(obj, (size_t)(v.p - obj.p) + v.n);
        if (i >= obj.n || obj.p[i] != ',')
            return NO_SPAN;
        i++;
    }
}

/* The member `name` of an object, or NO_SPAN. */
static struct span member(struct span obj, const char *name) {
    struct span key, v;
    for (size_t k = 0; (v = member_at(obj, k, &key)).p != NULL; k++) {
        char *decoded = string_value(key);
        bool match = decoded != NULL && strcmp(decoded, name) == 0;
        free(decoded);
        if (match)
            return v;
    }
    return NO_SPAN;
}

/* Element `index` of an array, or NO_SPAN past its end. */
static struct span element(struct span arr, size_t index) {
    if (!is_kind(arr, '['))
        return NO_SPAN;
    size_t i = skip_ws(arr, 1);
    if (i < arr.n && arr.p[i] == ']')
        return NO_SPAN;
    for (size_t k = 0;; k++) {
        struct span v = value_at(arr, i);
        if (k == index)
            return v;
        i = skip_ws(arr, (size_t)(v.p - arr.p) + v.n);
        if (i >= arr.n || arr.p[i] != ',')
            return NO_SPAN;
        i++;
    }
}

/* A span copied into a new NUL-terminated string (free it). */
static char *span_dup(struct span v) {
    char *out = malloc(v.n + 1);
    if (out != NULL && v.n > 0)
        memcpy(out, v.p, v.n);
    if (out != NULL)
        out[v.n] = '\0';
    return out;
}

/* ---------------------------------------------------------------------------------------------
 * Calls, with their failures reported on stderr (the suite saves it next to its checks).
 */

static const char *scenario_name = "?";

/* Logs a failed result and frees it; returns false. */
static bool failed(const char *what, mcp_result *r) {
    fprintf(stderr, "conformance-client [%s]: %s failed: %s %s (code %lld)\n", scenario_name,
            what, mcp_status_name(mcp_result_status(r)), mcp_result_message(r),
            (long long)mcp_result_error_code(r));
    mcp_result_free(r);
    return false;
}

/* Runs a call whose result is only checked for success. */
static bool ok(const char *what, mcp_result *r) {
    if (mcp_result_status(r) != MCP_STATUS_OK)
        return failed(what, r);
    fprintf(stderr, "conformance-client [%s]: %s: %s\n", scenario_name, what, mcp_result_json(r));
    mcp_result_free(r);
    return true;
}

static bool call_tool(mcp_client *client, const char *name, const char *arguments) {
    char what[256];
    snprintf(what, sizeof what, "tools/call %s", name);
    return ok(what, mcp_client_call_tool(client, name, arguments, NULL));
}

/* Every tool, as a result the caller frees, or NULL after logging the failure. */
static mcp_result *list_tools(mcp_client *client) {
    mcp_result *r = mcp_client_tools(client, NULL);
    if (mcp_result_status(r) != MCP_STATUS_OK) {
        failed("tools/list", r);
        return NULL;
    }
    fprintf(stderr, "conformance-client [%s]: tools/list: %s\n", scenario_name,
            mcp_result_json(r));
    return r;
}

/* ---------------------------------------------------------------------------------------------
 * Scenarios. Each gets a connected client and the scenario's context (JSON, maybe empty).
 */

/* initialize: the handshake is the test; listing tools shows the session works. */
static bool scenario_initialize(mcp_client *client, struct span context) {
    (void)context;
    mcp_result *tools = list_tools(client);
    mcp_result_free(tools);
    return tools != NULL;
}

/* Lists the tools (as a client would before calling one), then calls `name`. */
static bool list_then_call(mcp_client *client, const char *name, const char *arguments) {
    mcp_result *tools = list_tools(client);
    mcp_result_free(tools);
    return tools != NULL && call_tool(client, name, arguments);
}

/* tools_call: add two numbers. */
static bool scenario_tools_call(mcp_client *client, struct span context) {
    (void)context;
    return list_then_call(client, "add_numbers", "{\"a\":5,\"b\":3}");
}

/* sse-retry: the mock ends the call's stream early; the library resumes it with a GET
 * carrying Last-Event-ID after the `retry` delay. */
static bool scenario_sse_retry(mcp_client *client, struct span context) {
    (void)context;
    return list_then_call(client, "test_reconnection", "{}");
}

/* elicitation-sep1034-client-defaults: the elicitation handler (see elicit_with_defaults)
 * accepts with the schema's defaults. */
static bool scenario_elicitation_defaults(mcp_client *client, struct span context) {
    (void)context;
    return list_then_call(client, "test_client_elicitation_defaults", "{}");
}

/* Answers `elicitation/create` by accepting with the defaults of the requested schema. */
static bool elicit_with_defaults(void *userdata, const char *method, const char *params_json,
                                 mcp_handler_reply *reply) {
    (void)userdata;
    fprintf(stderr, "conformance-client [%s]: %s %s\n", scenario_name, method, params_json);
    char *schema = span_dup(member(span_of(params_json), "requestedSchema"));
    mcp_result *filled = mcp_elicitation_defaults(schema && *schema ? schema : NULL, NULL);
    free(schema);
    if (mcp_result_status(filled) != MCP_STATUS_OK) {
        mcp_handler_reply_set_error(reply, -32603, mcp_result_message(filled));
        mcp_result_free(filled);
        return false;
    }
    const char *content = mcp_result_json(filled);
    size_t size = strlen(content) + 64;
    char *answer = malloc(size);
    bool set = answer != NULL;
    if (set) {
        snprintf(answer, size, "{\"action\":\"accept\",\"content\":%s}", content);
        set = mcp_handler_reply_set_result(reply, answer);
    }
    free(answer);
    mcp_result_free(filled);
    return set;
}

/* request-metadata: the mock rejects the first request's version (-32022) and checks `_meta`
 * and headers on every request; the library retries and stamps both. */
static bool scenario_request_metadata(mcp_client *client, struct span context) {
    return scenario_initialize(client, context);
}

/* Calls `name` with no handlers, expecting `input_required`: its interim result (free it). */
static mcp_result *call_expecting_input(mcp_client *client, const char *name) {
    mcp_result *r = mcp_client_call_tool(client, name, "{}", NULL);
    if (mcp_result_status(r) != MCP_STATUS_INPUT_REQUIRED) {
        failed(name, r);
        return NULL;
    }
    fprintf(stderr, "conformance-client [%s]: %s: input required: %s\n", scenario_name, name,
            mcp_result_json(r));
    return r;
}

/* Calls `name` again with one accepted answer to every input request of `interim`, and its
 * request state (if any) sent back unchanged. */
static bool retry_with_answers(mcp_client *client, const char *name, mcp_result *interim) {
    struct span result = span_of(mcp_result_json(interim));
    struct span requests = member(result, "inputRequests");
    char *state = string_value(member(result, "requestState"));

    /* {"<key>":{"action":"accept","content":{"confirmed":true}},...} */
    char answers[4096] = "{";
    size_t used = 1;
    struct span key;
    for (size_t k = 0; member_at(requests, k, &key).p != NULL && used < sizeof answers; k++)
        used += (size_t)snprintf(answers + used, sizeof answers - used,
                                 "%s%.*s:{\"action\":\"accept\",\"content\":{\"confirmed\":true}}",
                                 k > 0 ? "," : "", (int)key.n, key.p);
    if (used >= sizeof answers - 1) {
        fprintf(stderr, "conformance-client [%s]: too many input requests\n", scenario_name);
        free(state);
        return false;
    }
    snprintf(answers + used, sizeof answers - used, "}");

    mcp_request_options *options = mcp_request_options_new();
    mcp_request_options_set_input_responses(options, answers);
    if (state != NULL)
        mcp_request_options_set_request_state(options, state);
    char what[256];
    snprintf(what, sizeof what, "tools/call %s (retry%s)", name, state ? " with state" : "");
    bool done = ok(what, mcp_client_call_tool(client, name, "{}", options));
    mcp_request_options_free(options);
    free(state);
    return done;
}

/* sep-2322-client-request-state: answer `input_required` by hand. Between the first call and
 * its retry, an unrelated call carries no input fields; the retry echoes `requestState`
 * byte for byte (or sends none when the server gave none) under a new request id. A result
 * without `resultType` is complete. */
static bool scenario_request_state(mcp_client *client, struct span context) {
    (void)context;
    mcp_result *tools = list_tools(client);
    if (tools == NULL)
        return false;
    mcp_result_free(tools);

    mcp_result *interim = call_expecting_input(client, "test_mrtr_echo_state");
    if (interim == NULL)
        return false;
    bool done = call_tool(client, "test_mrtr_unrelated", "{}") &&
                retry_with_answers(client, "test_mrtr_echo_state", interim);
    mcp_result_free(interim);
    if (!done)
        return false;

    interim = call_expecting_input(client, "test_mrtr_no_state");
    if (interim == NULL)
        return false;
    done = retry_with_answers(client, "test_mrtr_no_state", interim);
    mcp_result_free(interim);
    return done && call_tool(client, "test_mrtr_no_result_type", "{}");
}

/* Calls `fn` with the string member `key` of every element of `list` (a JSON array). */
static bool for_each_name(mcp_client *client, struct span list, const char *key,
                          bool (*fn)(mcp_client *, const char *)) {
    struct span item;
    for (size_t i = 0; (item = element(list, i)).p != NULL; i++) {
        char *name = string_value(member(item, key));
        bool done = name != NULL && fn(client, name);
        free(name);
        if (!done)
            return false;
    }
    return true;
}

static bool call_named_tool(mcp_client *client, const char *name) {
    return call_tool(client, name, "{}");
}

static bool read_named_resource(mcp_client *client, const char *uri) {
    return ok(uri, mcp_client_read_resource(client, uri, NULL));
}

static bool get_named_prompt(mcp_client *client, const char *name) {
    return ok(name, mcp_client_get_prompt(client, name, NULL, NULL));
}

/* Lists with `list`, then applies `fn` to the `key` of each item in the result's `field`. */
static bool list_and_use(mcp_client *client, mcp_result *(*list)(mcp_client *,
                                                                   const mcp_request_options *),
                         const char *field, const char *key,
                         bool (*fn)(mcp_client *, const char *)) {
    mcp_result *r = list(client, NULL);
    if (mcp_result_status(r) != MCP_STATUS_OK)
        return failed(field, r);
    bool done = for_each_name(client, member(span_of(mcp_result_json(r)), field), key, fn);
    mcp_result_free(r);
    return done;
}

/* http-standard-headers: every request carries Mcp-Method, and Mcp-Name where it names a
 * tool, resource or prompt; the library sets both, so use each kind once per item. */
static bool scenario_standard_headers(mcp_client *client, struct span context) {
    (void)context;
    return list_and_use(client, mcp_client_tools, "tools", "name", call_named_tool) &&
           list_and_use(client, mcp_client_resources, "resources", "uri", read_named_resource) &&
           list_and_use(client, mcp_client_prompts, "prompts", "name", get_named_prompt);
}

/* http-custom-headers: make exactly the calls in the context's `toolCalls`; the library turns
 * the arguments the tool marks with `x-mcp-header` into Mcp-Param-* headers. */
static bool scenario_custom_headers(mcp_client *client, struct span context) {
    mcp_result *tools = list_tools(client); /* the library learns the headers from the list */
    if (tools == NULL)
        return false;
    mcp_result_free(tools);
    struct span calls = member(context, "toolCalls");
    struct span call;
    bool done = is_kind(calls, '[');
    for (size_t i = 0; done && (call = element(calls, i)).p != NULL; i++) {
        char *name = string_value(member(call, "name"));
        char *arguments = span_dup(member(call, "arguments"));
        done = name != NULL && arguments != NULL &&
               call_tool(client, name, *arguments ? arguments : NULL);
        free(name);
        free(arguments);
    }
    return done;
}

/* http-invalid-tool-headers: the library drops tools whose x-mcp-header is invalid, so
 * calling whatever it lists calls the valid tool and none of the others. */
static bool scenario_invalid_tool_headers(mcp_client *client, struct span context) {
    (void)context;
    return list_and_use(client, mcp_client_tools, "tools", "name", call_named_tool);
}

/* json-schema-ref-no-deref: listing must not fetch the network `$ref` in a tool's schema
 * (the library never dereferences schemas). */
static bool scenario_ref_no_deref(mcp_client *client, struct span context) {
    return scenario_initialize(client, context);
}

/* json-schema-2020-12-preservation: echo one tool's input schema back verbatim, as the
 * library gave it, to show that nothing in it was lost or rewritten. */
static bool scenario_schema_preservation(mcp_client *client, struct span context) {
    (void)context;
    mcp_result *tools = list_tools(client);
    if (tools == NULL)
        return false;
    struct span list = member(span_of(mcp_result_json(tools)), "tools");
    struct span schema = NO_SPAN, tool;
    for (size_t i = 0; schema.p == NULL && (tool = element(list, i)).p != NULL; i++) {
        char *name = string_value(member(tool, "name"));
        if (name != NULL && strcmp(name, "json_schema_2020_12_tool") == 0)
            schema = member(tool, "inputSchema");
        free(name);
    }
    bool done = false;
    if (schema.p == NULL) {
        fprintf(stderr, "conformance-client [%s]: json_schema_2020_12_tool not listed\n",
                scenario_name);
    } else {
        size_t size = schema.n + 16;
        char *arguments = malloc(size);
        if (arguments != NULL) {
            snprintf(arguments, size, "{\"schema\":%.*s}", (int)schema.n, schema.p);
            done = call_tool(client, "json_schema_echo", arguments);
        }
        free(arguments);
    }
    mcp_result_free(tools);
    return done;
}

/* ---------------------------------------------------------------------------------------------
 * The Skills extension (SEP-2640). The library reads no skill file on listing, and checks
 * each file it reads against the skill's entry (size, digest, and SKILL.md's frontmatter).
 */

/* Every skill entry, as a result the caller frees, or NULL after logging the failure. */
static mcp_result *list_skills(mcp_client *client) {
    mcp_result *r = mcp_client_skills(client, NULL);
    if (mcp_result_status(r) != MCP_STATUS_OK) {
        failed("skills/list", r);
        return NULL;
    }
    fprintf(stderr, "conformance-client [%s]: skills/list: %s\n", scenario_name,
            mcp_result_json(r));
    return r;
}

/* sep-2640-client-no-prefetch: list the skills and load none, so read nothing. */
static bool scenario_skills_no_prefetch(mcp_client *client, struct span context) {
    (void)context;
    mcp_result *skills = list_skills(client);
    mcp_result_free(skills);
    return skills != NULL;
}

/* Loads one skill: its SKILL.md (verified by the library), then, only if that was accepted,
 * each of its other files. */
static bool load_skill(mcp_client *client, struct span skill) {
    char *entry = span_dup(skill);
    char *skill_uri = string_value(member(skill, "uri"));
    bool done = entry != NULL && skill_uri != NULL &&
                ok(skill_uri, mcp_client_read_skill(client, entry, NULL, NULL));
    struct span file, files = member(skill, "resources");
    for (size_t i = 0; done && (file = element(files, i)).p != NULL; i++) {
        char *uri = string_value(member(file, "uri"));
        if (uri != NULL && strcmp(uri, skill_uri) != 0)
            done = ok(uri, mcp_client_read_skill(client, entry, uri, NULL));
        free(uri);
    }
    free(skill_uri);
    free(entry);
    return done;
}

/* sep-2640-client-verify-{digest,size,frontmatter}: load every listed skill. The mock serves
 * a SKILL.md that fails one check; the library refuses it, so the skill's other files are
 * never read and the program exits 1 (which these scenarios allow). */
static bool scenario_skills_load(mcp_client *client, struct span context) {
    (void)context;
    mcp_result *skills = list_skills(client);
    if (skills == NULL)
        return false;
    struct span skill, list = member(span_of(mcp_result_json(skills)), "skills");
    bool done = true;
    for (size_t i = 0; done && (skill = element(list, i)).p != NULL; i++)
        done = load_skill(client, skill);
    mcp_result_free(skills);
    return done;
}


/* ---------------------------------------------------------------------------------------------
 * OAuth (the auth/ scenarios). The library runs the flow; the client supplies its identity and
 * the person's step. The suite's mock authorization server redirects at once, so "the person"
 * is one plain-HTTP GET of the authorization URL whose redirect is not followed: its Location
 * is the redirect URL the flow waits for.
 */

/* The suite's fixed Client ID Metadata Document URL (auth/basic-cimd): used as client_id by
 * authorization servers that advertise CIMD support. It need not resolve. */
static const char CIMD_URL[] = "https://conformance-test.local/client-metadata.json";
/* Where the mock sends the browser back; nothing listens there (the GET does not follow). */
static const char REDIRECT_URI[] = "http://localhost:3000/callback";

/* GETs an http:// URL (no TLS: the mock is on localhost) and returns the Location header of
 * its redirect (free it), or NULL after logging why. */
static char *redirect_location(const char *url) {
    const char *rest = strncmp(url, "http://", 7) == 0 ? url + 7 : NULL;
    if (rest == NULL) {
        fprintf(stderr, "conformance-client [%s]: not an http URL: %s\n", scenario_name, url);
        return NULL;
    }
    size_t authority_len = strcspn(rest, "/?#");
    const char *target = rest[authority_len] == '/' ? rest + authority_len : "/";
    char host[256], port[16] = "80";
    if (authority_len == 0 || authority_len >= sizeof host)
        return NULL;
    memcpy(host, rest, authority_len);
    host[authority_len] = '\0';
    char *colon = strrchr(host, ':');
    if (colon != NULL && strchr(colon, ']') == NULL) {
        snprintf(port, sizeof port, "%s", colon + 1);
        *colon = '\0';
    }

    struct addrinfo hints = {0}, *addresses = NULL;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &addresses) != 0) {
        fprintf(stderr, "conformance-client [%s]: cannot resolve %s\n", scenario_name, host);
        return NULL;
    }
    int fd = -1;
    for (struct addrinfo *a = addresses; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(addresses);
    if (fd < 0) {
        fprintf(stderr, "conformance-client [%s]: cannot connect to %s:%s\n", scenario_name, host,
                port);
        return NULL;
    }
    struct timeval limit = {10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);

    size_t request_size = strlen(target) + authority_len + 64;
    char *request = malloc(request_size);
    char response[16384];
    size_t used = 0;
    bool sent = false;
    if (request != NULL) {
        int n = snprintf(request, request_size,
                         "GET %s HTTP/1.1\r\nHost: %.*s\r\nConnection: close\r\n\r\n", target,
                         (int)authority_len, rest);
        sent = n > 0 && send(fd, request, (size_t)n, 0) == n;
    }
    free(request);
    /* The head is all we need: read until the blank line (or the end). */
    while (sent && used + 1 < sizeof response) {
        ssize_t n = recv(fd, response + used, sizeof response - 1 - used, 0);
        if (n <= 0)
            break;
        used += (size_t)n;
        response[used] = '\0';
        if (strstr(response, "\r\n\r\n") != NULL)
            break;
    }
    close(fd);
    response[used] = '\0';

    if (strncmp(response, "HTTP/1.1 3", 10) != 0 && strncmp(response, "HTTP/1.0 3", 10) != 0) {
        fprintf(stderr, "conformance-client [%s]: the authorization URL did not redirect: %.80s\n",
                scenario_name, response);
        return NULL;
    }
    for (char *line = strstr(response, "\r\n"); line != NULL; line = strstr(line, "\r\n")) {
        line += 2;
        if (strncasecmp(line, "Location:", 9) == 0) {
            const char *value = line + 9;
            while (*value == ' ' || *value == '\t')
                value++;
            size_t length = strcspn(value, "\r\n");
            char *location = malloc(length + 1);
            if (location != NULL) {
                memcpy(location, value, length);
                location[length] = '\0';
            }
            return location;
        }
    }
    fprintf(stderr, "conformance-client [%s]: the redirect had no Location\n", scenario_name);
    return NULL;
}

/* The person's step: "open" the authorization URL and hand back where it redirected. */
static bool authorize_by_get(void *userdata, const char *authorization_url,
                             const char *redirect_uri, mcp_auth_reply *reply) {
    (void)userdata;
    (void)redirect_uri;
    fprintf(stderr, "conformance-client [%s]: authorize: %s\n", scenario_name, authorization_url);
    char *location = redirect_location(authorization_url);
    if (location == NULL) {
        mcp_auth_reply_set_error(reply, "the authorization URL gave no redirect");
        return false;
    }
    fprintf(stderr, "conformance-client [%s]: redirected to %s\n", scenario_name, location);
    bool set = mcp_auth_reply_set_redirect_url(reply, location);
    free(location);
    return set;
}

/* The workload token file of auth/wif-jwt-bearer (removed at exit). */
static char workload_token_file[64];

static void remove_workload_token_file(void) {
    if (workload_token_file[0] != '\0')
        unlink(workload_token_file);
}

/* auth/wif-jwt-bearer: the platform's token for this workload is the context's valid_jwt.
 * A platform keeps it in a file, which the library reads for each token request: so here. */
static void set_workload_token(mcp_client_options *options, struct span context) {
    char *jwt = string_value(member(context, "valid_jwt"));
    snprintf(workload_token_file, sizeof workload_token_file, "/tmp/mcpc-wif-XXXXXX");
    int fd = jwt != NULL ? mkstemp(workload_token_file) : -1;
    if (fd < 0) {
        fprintf(stderr, "conformance-client [%s]: no workload token file\n", scenario_name);
        workload_token_file[0] = '\0';
        free(jwt);
        return;
    }
    atexit(remove_workload_token_file);
    size_t length = strlen(jwt);
    bool written = write(fd, jwt, length) == (ssize_t)length;
    close(fd);
    free(jwt);
    if (written) {
        mcp_client_options_set_oauth_grant(options, MCP_OAUTH_GRANT_JWT_BEARER);
        mcp_client_options_set_oauth_workload_token_file(options, workload_token_file);
    }
}

/* auth/enterprise-managed-authorization: the person's identity assertion is the context's
 * idp_id_token, which a host would have from its sign-in at the identity provider. */
static char *identity_assertion;

static size_t give_identity_assertion(void *userdata, char *buffer, size_t capacity) {
    (void)userdata;
    size_t length = identity_assertion != NULL ? strlen(identity_assertion) : 0;
    if (length > capacity)
        return 0;
    memcpy(buffer, identity_assertion, length);
    return length;
}

static void set_identity_provider(mcp_client_options *options, struct span context) {
    char *token_endpoint = string_value(member(context, "idp_token_endpoint"));
    char *idp_client_id = string_value(member(context, "idp_client_id"));
    identity_assertion = string_value(member(context, "idp_id_token"));
    mcp_client_options_set_oauth_grant(options, MCP_OAUTH_GRANT_ENTERPRISE_MANAGED);
    mcp_client_options_set_oauth_identity_provider(options, token_endpoint, idp_client_id, NULL,
                                                   give_identity_assertion, NULL);
    free(token_endpoint);
    free(idp_client_id);
}

/* The OAuth settings for an auth scenario: pre-registered credentials when the context has
 * them (auth/pre-registration, auth/client-credentials-basic: a secret;
 * auth/client-credentials-jwt: a private key, for private_key_jwt), the CIMD URL, the
 * redirect URI and the person's step; the client_credentials grant (no person) where the
 * scenario is it. */
static void set_oauth(mcp_client_options *options, struct span context) {
    if (strncmp(scenario_name, "auth/client-credentials-", 24) == 0)
        mcp_client_options_set_oauth_grant(options, MCP_OAUTH_GRANT_CLIENT_CREDENTIALS);
    char *client_id = string_value(member(context, "client_id"));
    char *client_secret = string_value(member(context, "client_secret"));
    char *private_key = string_value(member(context, "private_key_pem"));
    if (client_id != NULL)
        mcp_client_options_set_oauth_client(options, client_id, client_secret);
    if (private_key != NULL)
        mcp_client_options_set_oauth_client_key(options, private_key, NULL);
    free(client_id);
    free(client_secret);
    free(private_key);
    if (strcmp(scenario_name, "auth/wif-jwt-bearer") == 0)
        set_workload_token(options, context);
    if (strcmp(scenario_name, "auth/enterprise-managed-authorization") == 0 ||
        strcmp(scenario_name, "auth/cross-app-access-complete-flow") == 0)
        set_identity_provider(options, context);
    if (strncmp(scenario_name, "auth/dpop", 9) == 0)
        mcp_client_options_set_oauth_dpop(options, true, NULL);
    mcp_client_options_set_oauth_client_metadata_url(options, CIMD_URL);
    mcp_client_options_set_oauth_registration(options, "mcpc-conformance-client", "native");
    mcp_client_options_set_oauth_redirect_uri(options, REDIRECT_URI);
    mcp_client_options_set_oauth_authorize_callback(options, authorize_by_get, NULL);
}

/* Every auth scenario: the flow is the library's; the MCP part is list, then call. Where the
 * client must refuse (a mismatched resource or issuer, endless step-ups) the connect or a call
 * fails with MCP_STATUS_UNAUTHORIZED and the program exits 1, which those scenarios allow. */
static bool scenario_auth(mcp_client *client, struct span context) {
    (void)context;
    return list_then_call(client, "test-tool", "{}");
}

/* ---------------------------------------------------------------------------------------------
 * main: pick the scenario, set the client up for its era, connect, run the flow.
 */

static const struct {
    const char *name;
    bool (*run)(mcp_client *, struct span);
    bool elicitation; /* handles elicitation/create (and so declares the capability) */
    bool no_listen;   /* opens no standalone GET stream (see sse-retry below) */
    bool oauth;       /* an auth/ scenario: the library's OAuth flow (set_oauth) */
} SCENARIOS[] = {
    {"initialize", scenario_initialize, false, false, false},
    {"tools_call", scenario_tools_call, false, false, false},
    /* The mock sends its elicitation/create on the standalone GET stream. */
    {"elicitation-sep1034-client-defaults", scenario_elicitation_defaults, true, false, false},
    /* The mock takes any GET for the resumption of the call's stream, so a standalone GET
     * (without Last-Event-ID) racing the call would fail its check. */
    {"sse-retry", scenario_sse_retry, false, true, false},
    {"request-metadata", scenario_request_metadata, false, false, false},
    {"sep-2322-client-request-state", scenario_request_state, false, false, false},
    {"http-standard-headers", scenario_standard_headers, false, false, false},
    {"http-custom-headers", scenario_custom_headers, false, false, false},
    {"http-invalid-tool-headers", scenario_invalid_tool_headers, false, false, false},
    {"json-schema-ref-no-deref", scenario_ref_no_deref, false, false, false},
    {"json-schema-2020-12-preservation", scenario_schema_preservation, false, false, false},
    /* The auth/ scenarios' mock servers serve no standalone stream. */
    {"auth/metadata-default", scenario_auth, false, true, true},
    {"auth/metadata-var1", scenario_auth, false, true, true},
    {"auth/metadata-var2", scenario_auth, false, true, true},
    {"auth/metadata-var3", scenario_auth, false, true, true},
    {"auth/basic-cimd", scenario_auth, false, true, true},
    {"auth/scope-from-www-authenticate", scenario_auth, false, true, true},
    {"auth/scope-from-scopes-supported", scenario_auth, false, true, true},
    {"auth/scope-omitted-when-undefined", scenario_auth, false, true, true},
    {"auth/scope-step-up", scenario_auth, false, true, true},
    {"auth/scope-retry-limit", scenario_auth, false, true, true},
    {"auth/token-endpoint-auth-basic", scenario_auth, false, true, true},
    {"auth/token-endpoint-auth-post", scenario_auth, false, true, true},
    {"auth/token-endpoint-auth-none", scenario_auth, false, true, true},
    {"auth/pre-registration", scenario_auth, false, true, true},
    {"auth/resource-mismatch", scenario_auth, false, true, true},
    {"auth/offline-access-scope", scenario_auth, false, true, true},
    {"auth/offline-access-not-supported", scenario_auth, false, true, true},
    {"auth/authorization-server-migration", scenario_auth, false, true, true},
    {"auth/iss-supported", scenario_auth, false, true, true},
    {"auth/iss-not-advertised", scenario_auth, false, true, true},
    {"auth/iss-supported-missing", scenario_auth, false, true, true},
    {"auth/iss-wrong-issuer", scenario_auth, false, true, true},
    {"auth/iss-unexpected", scenario_auth, false, true, true},
    {"auth/iss-normalized", scenario_auth, false, true, true},
    {"auth/metadata-issuer-mismatch", scenario_auth, false, true, true},
    /* 2025-03-26 servers: no resource metadata; the authorization server is the MCP
     * server's origin, its metadata at the root, else the default endpoints there. */
    {"auth/2025-03-26-oauth-metadata-backcompat", scenario_auth, false, true, true},
    {"auth/2025-03-26-oauth-endpoint-fallback", scenario_auth, false, true, true},
    /* Extension scenarios (io.modelcontextprotocol/oauth-client-credentials). */
    {"auth/client-credentials-basic", scenario_auth, false, true, true},
    {"auth/client-credentials-jwt", scenario_auth, false, true, true},
    /* io.modelcontextprotocol/auth/wif: the JWT-bearer grant with a workload's token. */
    {"auth/wif-jwt-bearer", scenario_auth, false, true, true},
    /* io.modelcontextprotocol/enterprise-managed-authorization: the identity assertion
     * exchanged for an ID-JAG, then the JWT-bearer grant. */
    {"auth/enterprise-managed-authorization", scenario_auth, false, true, true},
    /* 0.1.16's name for the same flow. */
    {"auth/cross-app-access-complete-flow", scenario_auth, false, true, true},
    /* io.modelcontextprotocol/auth/dpop: proof of possession (RFC 9449), with a generated key;
     * -nonce: both servers want their DPoP nonce in the proofs. */
    {"auth/dpop", scenario_auth, false, true, true},
    {"auth/dpop-nonce", scenario_auth, false, true, true},
    /* io.modelcontextprotocol/skills (SEP-2640). */
    {"sep-2640-client-no-prefetch", scenario_skills_no_prefetch, false, false, false},
    {"sep-2640-client-verify-digest", scenario_skills_load, false, false, false},
    {"sep-2640-client-verify-size", scenario_skills_load, false, false, false},
    {"sep-2640-client-verify-frontmatter", scenario_skills_load, false, false, false},
};

static void log_library(void *userdata, mcp_log_level level, const char *message) {
    (void)userdata;
    fprintf(stderr, "conformance-client [%s]: library (%d): %s\n", scenario_name, (int)level,
            message);
}

int main(int argc, char **argv) {
    const char *scenario = getenv("MCP_CONFORMANCE_SCENARIO");
    const char *version = getenv("MCP_CONFORMANCE_PROTOCOL_VERSION");
    const char *context = getenv("MCP_CONFORMANCE_CONTEXT");
    if (argc < 2 || scenario == NULL) {
        fprintf(stderr, "usage: MCP_CONFORMANCE_SCENARIO=NAME mcp-conformance-client URL\n");
        return 2;
    }
    scenario_name = scenario;
    size_t which = 0, count = sizeof SCENARIOS / sizeof SCENARIOS[0];
    while (which < count && strcmp(SCENARIOS[which].name, scenario) != 0)
        which++;
    if (which == count) {
        fprintf(stderr, "mcp-conformance-client: unknown scenario: %s\n", scenario);
        return 2;
    }

    /* Version strings are dates, so they compare as text: after 2025-11-25 is the modern era. */
    bool modern = version != NULL && *version != '\0' && strcmp(version, "2025-11-25") > 0;
    mcp_client_options *options = mcp_client_options_new();
    mcp_client_options_set_client_info(options, "mcpc-conformance-client", mcp_version());
    mcp_client_options_set_mode(options, modern ? MCP_CONNECT_MODE_MODERN
                                                : MCP_CONNECT_MODE_LEGACY);
    if (version != NULL && *version != '\0')
        mcp_client_options_set_protocol_version(options, version);
    mcp_client_options_set_timeout_ms(options, 20000); /* inside the suite's 30 s */
    mcp_client_options_set_log_callback(options, log_library, NULL);
    if (SCENARIOS[which].no_listen)
        mcp_client_options_set_http_listen(options, false);
    if (SCENARIOS[which].oauth)
        set_oauth(options, span_of(context));
    if (SCENARIOS[which].elicitation)
        mcp_client_options_set_request_handler(options, "elicitation/create",
                                               elicit_with_defaults, NULL);
    mcp_client *client = mcp_client_new_http(argv[argc - 1], options);
    mcp_client_options_free(options);

    bool passed = ok("connect", mcp_client_connect(client)) &&
                  SCENARIOS[which].run(client, span_of(context));
    mcp_client_free(client);
    return passed ? 0 : 1;
}
