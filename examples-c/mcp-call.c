/*
 * mcp-call: call one method of an MCP server from the command line, like curl for MCP.
 *
 *   mcp-call [options] --stdio PROGRAM [ARG...]
 *   mcp-call [options] --http URL
 *
 * The server is started as PROGRAM with its ARGs (everything after PROGRAM belongs to it),
 * mcp-call performs the handshake, makes one call, prints the outcome and closes the session.
 * Run `mcp-call --help` for the options and exit codes.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include "mcpc.h"
#include "portable.h" /* threads, timed wait, paths: POSIX or Windows */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#ifndef _WIN32
#include <pthread.h>
#endif
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Exit codes: part of the tool's interface, so scripts can tell outcomes apart. */
enum {
    EXIT_OK = 0,
    EXIT_SERVER_ERROR = 1, /* the server answered with a JSON-RPC error */
    EXIT_USAGE = 2,        /* bad command line or invalid argument (e.g. malformed JSON) */
    EXIT_CANCELLED = 3,
    EXIT_TIMEOUT = 4,
    EXIT_FAILED = 5, /* transport, connection, protocol or closed */
    EXIT_UNSUPPORTED = 6, /* the server refused to connect in the era or version asked for */
};

/* JSON-RPC codes with which a server refuses the connect (server/discover or initialize) of an
 * era or version it does not speak. */
#define METHOD_NOT_FOUND (-32601)
#define UNSUPPORTED_PROTOCOL_VERSION (-32022)

static const char USAGE[] =
    "usage: mcp-call [options] --stdio PROGRAM [ARG...]\n"
    "       mcp-call [options] --http URL\n"
    "\n"
    "Starts PROGRAM as an MCP server on stdio (everything after PROGRAM is its argv), or\n"
    "talks to the Streamable HTTP endpoint URL, makes one call and prints the result JSON\n"
    "on stdout. Without an action it prints the server's initialize (or discover) result.\n"
    "\n"
    "actions (at most one):\n"
    "  --call NAME [--args JSON]    call a tool (JSON: an object of arguments)\n"
    "  --list-tools                 list every tool (all pages)\n"
    "  --read URI                   read a resource\n"
    "  --prompt NAME [--args JSON]  get a prompt (JSON: an object of strings)\n"
    "  --ping                       ping the server\n"
    "  --discover                   server/discover (newer servers only)\n"
    "  --list-resources             list every resource (all pages)\n"
    "  --list-templates             list every resource template (all pages)\n"
    "  --list-prompts               list every prompt (all pages)\n"
    "  --listen                     listen: print each notification as one JSON line\n"
    "                               {\"method\":...,\"params\":...} on stdout until\n"
    "                               --listen-ms passes or the run is interrupted (exit 0)\n"
    "\n"
    "call options:\n"
    "  --timeout-ms N        give up after N ms (exit 4); the server is told to stop\n"
    "  --cancel-after-ms N   cancel from another thread N ms after the call starts\n"
    "  --reason TEXT         the reason sent with a cancel (default: none)\n"
    "  --precancel           cancel before calling: nothing is sent (exit 3)\n"
    "  --progress            print the call's progress on stderr, one JSON line each\n"
    "  --task                allow tasks: the server may answer --call with a task, which is\n"
    "                        polled to its end; a cancel or timeout then sends tasks/cancel\n"
    "                        for it (modern era: the tasks extension; 2025-11-25: the tools\n"
    "                        are listed first, and a tool listed as task-capable runs as one)\n"
    "\n"
    "listen options: the listen hears tools, prompts and resources list changes, and\n"
    "  --listen-ms N         end the listen after N ms\n"
    "  --listen-uri URI      also resource updates of URI (repeatable)\n"
    "  --listen-level L      also log messages from level L up (debug, info, warning...)\n"
    "\n"
    "connection options:\n"
    "  --mode auto|legacy|modern   protocol era (default auto: server/discover, then\n"
    "                              the initialize handshake)\n"
    "  --protocol-version V   pin a protocol version (e.g. 2025-11-25 or 2026-07-28)\n"
    "  --log                  print the server's log messages on stderr, one JSON line each\n"
    "  --reconnect            when the connection fails (the stdio server exits, the HTTP\n"
    "                         session ends), connect again by itself: a --listen listens\n"
    "                         again there (waits of 100 ms doubling to 30 s, 5 attempts\n"
    "                         at a time); each change of the connection's state is printed\n"
    "                         on stderr as {\"state\":\"connected\"} (connecting, failed...)\n"
    "  --roots DIR            answer the server's roots/list with DIR\n"
    "  --header 'Name: value' add a header to every HTTP request (repeatable)\n"
    "  --sse                  speak the old HTTP+SSE transport (2024-11-05): URL is the\n"
    "                         server's event stream (without it, found by itself)\n"
    "  --lazy                 connect with the call instead of before it (a failed connect is\n"
    "                         that call's failure, with the same exit codes)\n"
    "  --trace                print every JSON-RPC frame in and out on stderr, one JSON line\n"
    "                         each: {\"direction\":\"in\"|\"out\",\"transport\":...,\"frame\":...}\n"
    "  --proxy URL            HTTP(S) proxy: http://[user:password@]host[:port] or https://...\n"
    "                         (without it, HTTPS_PROXY, HTTP_PROXY, ALL_PROXY as curl does)\n"
    "  --noproxy LIST         hosts reached without the proxy (comma-separated; '*' for all)\n"
    "  --cacert FILE          trust the CA certificates of this PEM file instead of the\n"
    "                         bundled roots (repeatable, with --capath)\n"
    "  --capath DIR           the same with every PEM file of DIR\n"
    "  --cert FILE            client certificate (PEM) for servers that ask for one\n"
    "  --key FILE             its private key (PEM; default: the --cert file)\n"
    "\n"
    "OAuth (with --http; tokens are kept in memory for this run only):\n"
    "  --oauth                run the OAuth flow when the server asks for it: the\n"
    "                         authorization URL is printed on stderr; open it in a browser,\n"
    "                         which comes back to a listener on 127.0.0.1\n"
    "  --oauth-manual         the same, but paste the URL the browser was sent to on stdin\n"
    "  --client-id ID         a pre-registered client (else the client metadata URL, else\n"
    "                         dynamic registration)\n"
    "  --client-secret S      its secret (confidential clients)\n"
    "  --client-key FILE      its private key (PEM: PKCS#8 ECDSA P-256 or RSA): the client\n"
    "                         authenticates with signed assertions (private_key_jwt)\n"
    "  --client-credentials   the client_credentials grant instead of --oauth: no person;\n"
    "                         needs --client-id with --client-secret or --client-key\n"
    "  --workload-token-file FILE  the JWT-bearer grant (workload identity federation): FILE\n"
    "                         holds the platform's token for this workload, read again for\n"
    "                         each token request; no person (--client-id optional)\n"
    "  --identity-assertion-file FILE  enterprise-managed authorization: FILE holds the\n"
    "                         person's identity assertion (an ID token from the identity\n"
    "                         provider), read again for each token request; it is exchanged\n"
    "                         at --idp-token-endpoint for an ID-JAG, the grant presented with\n"
    "                         --client-id; no person's step\n"
    "  --idp-token-endpoint URL  the identity provider's token endpoint (RFC 8693)\n"
    "  --idp-client-id ID     this client at the identity provider\n"
    "  --dpop                 DPoP (RFC 9449): a proof signed with a key generated for this\n"
    "                         run on every token and MCP request; DPoP-bound tokens\n"
    "  --dpop-key FILE        the same with this key (PEM: PKCS#8 ECDSA P-256)\n"
    "  --client-metadata-url URL  an https client ID metadata document, used as client_id\n"
    "                         where the authorization server supports it\n"
    "  --scope SCOPES         scopes to ask for (space-separated) instead of the server's\n"
    "  --help                show this help\n"
    "\n"
    "output: the result JSON on stdout; on a server error (exit 1 or 6), the JSON-RPC error\n"
    "object {\"code\":...,\"message\":...,\"data\":...} on stdout. Other failures print one\n"
    "line on stderr: `cancelled: request N (reason: R)` for a cancel (N is 0 when the request\n"
    "was never sent, as with --precancel; `(no reason)` when none was given), else the status\n"
    "name and message.\n"
    "\n"
    "exit codes: 0 ok, 1 JSON-RPC error from the server, 2 usage or invalid argument,\n"
    "3 cancelled, 4 timeout, 5 transport, connection, protocol, closed or authorization\n"
    "error (UNAUTHORIZED),\n"
    "6 the server does not speak the protocol era or version asked for: it refused the\n"
    "connect (server/discover or initialize) as an unknown method or an unsupported\n"
    "protocol version; try another --mode or --protocol-version. A failed connect decides\n"
    "the exit code before any call is made, --precancel included.\n";

enum action { ACTION_NONE, ACTION_CALL, ACTION_LIST_TOOLS, ACTION_READ, ACTION_PROMPT,
              ACTION_PING, ACTION_DISCOVER,
              /* issue 19 (listen, trace, lists) */
              ACTION_LIST_RESOURCES, ACTION_LIST_TEMPLATES, ACTION_LIST_PROMPTS, ACTION_LISTEN };

struct command_line {
    enum action action;
    const char *target; /* tool name, prompt name or URI */
    const char *args_json;
    bool has_timeout;
    uint64_t timeout_ms;
    bool has_cancel_after;
    uint64_t cancel_after_ms;
    const char *reason;
    bool precancel;
    bool progress;
    int mode; /* an mcp_connect_mode */
    const char *protocol_version;
    bool log;
    bool reconnect; /* --reconnect */
    const char *roots_dir;
    const char *http_url;
    bool sse; /* --sse: the HTTP+SSE transport */
    const char *headers[32]; /* "Name: value" */
    int header_count;
    const char *proxy;
    const char *noproxy;
    const char *cacerts[16]; /* --cacert FILE and --capath DIR, in order */
    bool cacert_is_dir[16];
    int cacert_count;
    const char *cert;
    const char *key;
    /* OAuth */
    bool oauth;        /* --oauth: the loopback listener */
    bool oauth_manual; /* --oauth-manual: the redirect URL from stdin */
    const char *client_id;
    const char *client_secret;
    const char *client_key; /* --client-key FILE */
    bool client_credentials; /* --client-credentials: the grant without a person */
    const char *workload_token_file; /* --workload-token-file: the JWT-bearer grant */
    const char *identity_assertion_file; /* --identity-assertion-file: enterprise-managed */
    const char *idp_token_endpoint;      /* --idp-token-endpoint */
    const char *idp_client_id;           /* --idp-client-id */
    bool dpop;                       /* --dpop: proofs with a generated key */
    const char *dpop_key;            /* --dpop-key FILE: proofs with this key */
    const char *client_metadata_url;
    const char *scope;
    char **server_argv; /* NULL-terminated: it is the tail of main's argv */
    bool task;          /* --task */
    /* issue 19: --listen's options and --trace */
    bool has_listen_ms;
    uint64_t listen_ms;
    const char *listen_uris[16];
    int listen_uri_count;
    const char *listen_level;
    bool trace;
    bool lazy; /* --lazy */
};

static int usage_error(const char *what, const char *arg) {
    fprintf(stderr, "mcp-call: %s%s%s\nTry `mcp-call --help`.\n", what, arg ? ": " : "",
            arg ? arg : "");
    return EXIT_USAGE;
}

static bool parse_ms(const char *text, uint64_t *out) {
    if (text == NULL || *text < '0' || *text > '9') /* strtoull would accept "-1" and " 1" */
        return false;
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = value;
    return true;
}

static bool set_action(struct command_line *cl, enum action action, const char *target) {
    if (cl->action != ACTION_NONE)
        return false;
    cl->action = action;
    cl->target = target;
    return true;
}

/* Returns -1 when the command line is good, else the exit code. */
static int parse_command_line(int argc, char **argv, struct command_line *cl) {
    memset(cl, 0, sizeof *cl);
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        /* Every option but the flags takes the next word as its value. */
        bool is_flag = strcmp(opt, "--help") == 0 || strcmp(opt, "--list-tools") == 0 ||
                       strcmp(opt, "--ping") == 0 || strcmp(opt, "--discover") == 0 ||
                       strcmp(opt, "--precancel") == 0 || strcmp(opt, "--progress") == 0 ||
                       strcmp(opt, "--log") == 0 || strcmp(opt, "--stdio") == 0 ||
                       strcmp(opt, "--task") == 0 || strcmp(opt, "--sse") == 0 ||
                       /* issue 19 */
                       strcmp(opt, "--list-resources") == 0 ||
                       strcmp(opt, "--list-templates") == 0 ||
                       strcmp(opt, "--list-prompts") == 0 || strcmp(opt, "--listen") == 0 ||
                       strcmp(opt, "--trace") == 0 || strcmp(opt, "--lazy") == 0 ||
                       strcmp(opt, "--reconnect") == 0 ||
                       strcmp(opt, "--oauth") == 0 || strcmp(opt, "--oauth-manual") == 0 ||
                       strcmp(opt, "--client-credentials") == 0 || strcmp(opt, "--dpop") == 0;
        const char *value = NULL;
        if (!is_flag) {
            if (strncmp(opt, "--", 2) != 0)
                return usage_error("unexpected argument (options come before --stdio)", opt);
            if (i + 1 >= argc)
                return usage_error("missing value for", opt);
            value = argv[++i];
        }
        bool one_action = true;
        if (strcmp(opt, "--help") == 0) {
            fputs(USAGE, stdout);
            return EXIT_OK;
        } else if (strcmp(opt, "--stdio") == 0) {
            if (i + 1 >= argc)
                return usage_error("--stdio needs a PROGRAM", NULL);
            cl->server_argv = &argv[i + 1]; /* argv[argc] is NULL, so this is terminated */
            break;
        } else if (strcmp(opt, "--call") == 0) {
            one_action = set_action(cl, ACTION_CALL, value);
        } else if (strcmp(opt, "--list-tools") == 0) {
            one_action = set_action(cl, ACTION_LIST_TOOLS, NULL);
        } else if (strcmp(opt, "--read") == 0) {
            one_action = set_action(cl, ACTION_READ, value);
        } else if (strcmp(opt, "--prompt") == 0) {
            one_action = set_action(cl, ACTION_PROMPT, value);
        } else if (strcmp(opt, "--ping") == 0) {
            one_action = set_action(cl, ACTION_PING, NULL);
        } else if (strcmp(opt, "--discover") == 0) {
            one_action = set_action(cl, ACTION_DISCOVER, NULL);
        } else if (strcmp(opt, "--args") == 0) {
            cl->args_json = value;
        } else if (strcmp(opt, "--timeout-ms") == 0) {
            if (!parse_ms(value, &cl->timeout_ms))
                return usage_error("--timeout-ms needs a number of milliseconds", value);
            cl->has_timeout = true;
        } else if (strcmp(opt, "--cancel-after-ms") == 0) {
            if (!parse_ms(value, &cl->cancel_after_ms))
                return usage_error("--cancel-after-ms needs a number of milliseconds", value);
            cl->has_cancel_after = true;
        } else if (strcmp(opt, "--reason") == 0) {
            cl->reason = value;
        } else if (strcmp(opt, "--precancel") == 0) {
            cl->precancel = true;
        } else if (strcmp(opt, "--progress") == 0) {
            cl->progress = true;
        } else if (strcmp(opt, "--task") == 0) {
            cl->task = true;
        } else if (strcmp(opt, "--mode") == 0) {
            if (strcmp(value, "auto") == 0)
                cl->mode = MCP_CONNECT_MODE_AUTO;
            else if (strcmp(value, "legacy") == 0)
                cl->mode = MCP_CONNECT_MODE_LEGACY;
            else if (strcmp(value, "modern") == 0)
                cl->mode = MCP_CONNECT_MODE_MODERN;
            else
                return usage_error("--mode is auto, legacy or modern, not", value);
        } else if (strcmp(opt, "--protocol-version") == 0) {
            cl->protocol_version = value;
        } else if (strcmp(opt, "--log") == 0) {
            cl->log = true;
        } else if (strcmp(opt, "--reconnect") == 0) {
            cl->reconnect = true;
        } else if (strcmp(opt, "--roots") == 0) {
            cl->roots_dir = value;
        } else if (strcmp(opt, "--http") == 0) {
            cl->http_url = value;
        } else if (strcmp(opt, "--sse") == 0) {
            cl->sse = true;
        } else if (strcmp(opt, "--header") == 0) {
            if (cl->header_count == (int)(sizeof cl->headers / sizeof cl->headers[0]))
                return usage_error("too many --header options", NULL);
            cl->headers[cl->header_count++] = value;
        } else if (strcmp(opt, "--proxy") == 0) {
            cl->proxy = value;
        } else if (strcmp(opt, "--noproxy") == 0) {
            cl->noproxy = value;
        } else if (strcmp(opt, "--cacert") == 0 || strcmp(opt, "--capath") == 0) {
            if (cl->cacert_count == (int)(sizeof cl->cacerts / sizeof cl->cacerts[0]))
                return usage_error("too many --cacert and --capath options", NULL);
            cl->cacert_is_dir[cl->cacert_count] = strcmp(opt, "--capath") == 0;
            cl->cacerts[cl->cacert_count++] = value;
        } else if (strcmp(opt, "--cert") == 0) {
            cl->cert = value;
        } else if (strcmp(opt, "--key") == 0) {
            cl->key = value;
        /* ---- issue 19: more lists, --listen and --trace ---- */
        } else if (strcmp(opt, "--list-resources") == 0) {
            one_action = set_action(cl, ACTION_LIST_RESOURCES, NULL);
        } else if (strcmp(opt, "--list-templates") == 0) {
            one_action = set_action(cl, ACTION_LIST_TEMPLATES, NULL);
        } else if (strcmp(opt, "--list-prompts") == 0) {
            one_action = set_action(cl, ACTION_LIST_PROMPTS, NULL);
        } else if (strcmp(opt, "--listen") == 0) {
            one_action = set_action(cl, ACTION_LISTEN, NULL);
        } else if (strcmp(opt, "--listen-ms") == 0) {
            if (!parse_ms(value, &cl->listen_ms))
                return usage_error("--listen-ms needs a number of milliseconds", value);
            cl->has_listen_ms = true;
        } else if (strcmp(opt, "--listen-uri") == 0) {
            if (cl->listen_uri_count == (int)(sizeof cl->listen_uris / sizeof cl->listen_uris[0]))
                return usage_error("too many --listen-uri options", NULL);
            cl->listen_uris[cl->listen_uri_count++] = value;
        } else if (strcmp(opt, "--listen-level") == 0) {
            cl->listen_level = value;
        } else if (strcmp(opt, "--trace") == 0) {
            cl->trace = true;
        } else if (strcmp(opt, "--lazy") == 0) {
            cl->lazy = true;
        } else if (strcmp(opt, "--oauth") == 0) {
            cl->oauth = true;
        } else if (strcmp(opt, "--oauth-manual") == 0) {
            cl->oauth_manual = true;
        } else if (strcmp(opt, "--client-id") == 0) {
            cl->client_id = value;
        } else if (strcmp(opt, "--client-secret") == 0) {
            cl->client_secret = value;
        } else if (strcmp(opt, "--client-key") == 0) {
            cl->client_key = value;
        } else if (strcmp(opt, "--client-credentials") == 0) {
            cl->client_credentials = true;
        } else if (strcmp(opt, "--workload-token-file") == 0) {
            cl->workload_token_file = value;
        } else if (strcmp(opt, "--identity-assertion-file") == 0) {
            cl->identity_assertion_file = value;
        } else if (strcmp(opt, "--idp-token-endpoint") == 0) {
            cl->idp_token_endpoint = value;
        } else if (strcmp(opt, "--idp-client-id") == 0) {
            cl->idp_client_id = value;
        } else if (strcmp(opt, "--dpop") == 0) {
            cl->dpop = true;
        } else if (strcmp(opt, "--dpop-key") == 0) {
            cl->dpop_key = value;
        } else if (strcmp(opt, "--client-metadata-url") == 0) {
            cl->client_metadata_url = value;
        } else if (strcmp(opt, "--scope") == 0) {
            cl->scope = value;
        } else {
            return usage_error("unknown option", opt);
        }
        if (!one_action)
            return usage_error("only one action may be given; the second is", opt);
    }

    if ((cl->server_argv == NULL) == (cl->http_url == NULL))
        return usage_error("give one server: --stdio PROGRAM [ARG...] or --http URL", NULL);
    if (cl->header_count > 0 && cl->http_url == NULL)
        return usage_error("--header goes with --http", NULL);
    if (cl->sse && cl->http_url == NULL)
        return usage_error("--sse goes with --http", NULL);
    bool network = cl->proxy != NULL || cl->noproxy != NULL || cl->cacert_count > 0 ||
                   cl->cert != NULL || cl->key != NULL;
    if (network && cl->http_url == NULL)
        return usage_error("--proxy, --noproxy, --cacert, --capath, --cert and --key go with --http",
                           NULL);
    if (cl->key != NULL && cl->cert == NULL)
        return usage_error("--key goes with --cert", NULL);
    bool workload = cl->workload_token_file != NULL;
    bool enterprise = cl->identity_assertion_file != NULL;
    if (cl->oauth + cl->oauth_manual + cl->client_credentials + workload + enterprise > 1)
        return usage_error("give one of --oauth, --oauth-manual, --client-credentials, "
                           "--workload-token-file and --identity-assertion-file", NULL);
    bool oauth = cl->oauth || cl->oauth_manual || cl->client_credentials || workload || enterprise;
    if (oauth && cl->http_url == NULL)
        return usage_error("--oauth, --oauth-manual, --client-credentials, "
                           "--workload-token-file and --identity-assertion-file go with --http",
                           NULL);
    if ((cl->idp_token_endpoint != NULL || cl->idp_client_id != NULL) && !enterprise)
        return usage_error("--idp-token-endpoint and --idp-client-id go with "
                           "--identity-assertion-file", NULL);
    if (enterprise && (cl->idp_token_endpoint == NULL || cl->client_id == NULL))
        return usage_error("--identity-assertion-file needs --idp-token-endpoint and "
                           "--client-id", NULL);
    bool oauth_options = cl->client_id != NULL || cl->client_secret != NULL ||
                         cl->client_key != NULL || cl->client_metadata_url != NULL ||
                         cl->scope != NULL || cl->dpop || cl->dpop_key != NULL;
    if (oauth_options && !oauth)
        return usage_error("--client-id, --client-secret, --client-key, --dpop, --dpop-key, "
                           "--client-metadata-url and --scope go with --oauth, --oauth-manual, --client-credentials or "
                           "--workload-token-file",
                           NULL);
    if ((cl->client_secret != NULL || cl->client_key != NULL) && cl->client_id == NULL)
        return usage_error("--client-secret and --client-key go with --client-id", NULL);
    if (cl->client_credentials && cl->client_secret == NULL && cl->client_key == NULL)
        return usage_error("--client-credentials needs --client-secret or --client-key", NULL);
    if (cl->task && cl->action != ACTION_CALL)
        return usage_error("--task goes with --call", NULL);
    if (cl->args_json != NULL && cl->action != ACTION_CALL && cl->action != ACTION_PROMPT)
        return usage_error("--args goes with --call or --prompt", NULL);
    bool call_options = cl->has_timeout || cl->has_cancel_after || cl->reason != NULL ||
                        cl->precancel || cl->progress;
    if (call_options && cl->action == ACTION_NONE)
        return usage_error("call options need an action (--call, --ping, ...)", NULL);
    bool listen_options = cl->has_listen_ms || cl->listen_uri_count > 0 || cl->listen_level;
    if (listen_options && cl->action != ACTION_LISTEN)
        return usage_error("--listen-ms, --listen-uri and --listen-level go with --listen", NULL);
    return -1;
}

/* ---- The canceller thread (--cancel-after-ms) ------------------------------------------ */

/* It waits for the call's end until the deadline, so that a call that ends sooner can wake it
 * and let it go without cancelling anything. */
struct canceller {
    struct port_signal call_done;
    long after_ms;
    mcp_cancellation *token;
    const char *reason;
};

static void *canceller_main(void *arg) {
    struct canceller *c = arg;
    if (!port_signal_wait_ms(&c->call_done, c->after_ms)) /* on a monotonic clock */
        mcp_cancellation_cancel(c->token, c->reason); /* safe from any thread, never blocks */
    return NULL;
}

static bool canceller_start(struct canceller *c, port_thread *thread, uint64_t after_ms,
                            mcp_cancellation *token, const char *reason) {
    port_signal_init(&c->call_done);
    c->after_ms = after_ms > LONG_MAX ? LONG_MAX : (long)after_ms;
    c->token = token;
    c->reason = reason;
    return port_thread_start(thread, canceller_main, c);
}

static void canceller_finish(struct canceller *c, port_thread thread) {
    port_signal_set(&c->call_done);
    port_thread_join(thread);
    port_signal_destroy(&c->call_done);
}

/* ---- Output ---------------------------------------------------------------------------- */

/* Writes `text` as a JSON string literal. */
static void print_json_string(FILE *out, const char *text) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\r': fputs("\\r", out); break;
        case '\t': fputs("\\t", out); break;
        default:
            if (*p < 0x20)
                fprintf(out, "\\u%04x", *p);
            else
                fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* Prints the outcome of a call (or of connect) and returns the exit code for it. */
static int report(const mcp_result *result) {
    mcp_status status = mcp_result_status(result);
    int64_t id = mcp_result_request_id(result);
    switch (status) {
    case MCP_STATUS_OK:
        puts(mcp_result_json(result));
        return EXIT_OK;
    case MCP_STATUS_SERVER_ERROR:
    case MCP_STATUS_URL_ELICITATION_REQUIRED: { /* its data lists the URLs to visit */
        /* The JSON-RPC error object, rebuilt from its parts. */
        const char *data = mcp_result_error_data(result);
        printf("{\"code\":%" PRId64 ",\"message\":", mcp_result_error_code(result));
        print_json_string(stdout, mcp_result_message(result));
        if (data != NULL)
            printf(",\"data\":%s", data);
        puts("}");
        return EXIT_SERVER_ERROR;
    }
    case MCP_STATUS_CANCELLED: {
        /* id 0: cancelled before it was sent, so the server never heard of it */
        const char *reason = mcp_result_cancel_reason(result);
        fprintf(stderr, "cancelled: request %" PRId64, id);
        if (reason != NULL)
            fprintf(stderr, " (reason: %s)\n", reason);
        else
            fputs(" (no reason)\n", stderr);
        return EXIT_CANCELLED;
    }
    case MCP_STATUS_TIMEOUT:
        fprintf(stderr, "TIMEOUT: %s (request %" PRId64 ")\n", mcp_result_message(result), id);
        return EXIT_TIMEOUT;
    case MCP_STATUS_INVALID_ARGUMENT:
        fprintf(stderr, "INVALID_ARGUMENT: %s\n", mcp_result_message(result));
        return EXIT_USAGE;
    default:
        fprintf(stderr, "%s: %s\n", mcp_status_name((int)status), mcp_result_message(result));
        return EXIT_FAILED;
    }
}

/* A connect the server refused because it does not speak the era or version asked for. */
static bool refused_protocol(const mcp_result *result) {
    int64_t code = mcp_result_error_code(result);
    return mcp_result_status(result) == MCP_STATUS_SERVER_ERROR &&
           (code == METHOD_NOT_FOUND || code == UNSUPPORTED_PROTOCOL_VERSION);
}

/* Prints the outcome of a connect that failed, and returns the exit code for it. */
static int report_connect_failure(const mcp_result *result) {
    int code = report(result);
    if (!refused_protocol(result))
        return code;
    fputs("mcp-call: the server does not speak the protocol era or version asked for "
          "(see --mode and --protocol-version)\n", stderr);
    return EXIT_UNSUPPORTED;
}

/* --lazy: the call's failure is the connect's. */
static bool lazy_connect_failed(const mcp_result *result) {
    const char *message = mcp_result_message(result);
    const char *prefix = "lazy connect failed";
    return message != NULL && strncmp(message, prefix, strlen(prefix)) == 0;
}

/* ---- Callbacks (--progress, --log, --roots) ---------------------------------------------- */

/* They run on the library's callback thread while main blocks in the call; stderr is
 * line-buffered enough for one fprintf per line. */
static void on_progress(void *userdata, const char *token_json, double progress, double total,
                        const char *message) {
    (void)userdata;
    fprintf(stderr, "{\"progressToken\":%s,\"progress\":%g", token_json, progress);
    if (total >= 0)
        fprintf(stderr, ",\"total\":%g", total);
    if (message != NULL) {
        fputs(",\"message\":", stderr);
        print_json_string(stderr, message);
    }
    fputs("}\n", stderr);
}

static void on_message(void *userdata, const char *level, const char *logger,
                       const char *data_json) {
    (void)userdata;
    fputs("{\"level\":", stderr);
    print_json_string(stderr, level);
    if (logger != NULL) {
        fputs(",\"logger\":", stderr);
        print_json_string(stderr, logger);
    }
    fprintf(stderr, ",\"data\":%s}\n", data_json);
}

/* --reconnect: each transition of the connection, on the library's state-callback thread. */
static void on_state(void *userdata, mcp_connection_state state) {
    (void)userdata;
    /* Indexed by the enum's stable numbers. */
    static const char *const NAMES[] = {"not_connected", "connecting", "connected",
                                        "failed",        "closed",     "reconnecting"};
    unsigned index = (unsigned)state;
    const char *name = index < sizeof NAMES / sizeof NAMES[0] ? NAMES[index] : "unknown";
    fprintf(stderr, "{\"state\":\"%s\"}\n", name);
}

/* Answers roots/list with the directory given to --roots (userdata: its file:// URI). */
static bool on_roots(void *userdata, const char *method, const char *params_json,
                     mcp_handler_reply *reply) {
    (void)method;
    (void)params_json;
    const char *uri = userdata;
    char json[4200];
    int n = snprintf(json, sizeof json, "{\"roots\":[{\"uri\":\"%s\"}]}", uri);
    if (n < 0 || (size_t)n >= sizeof json) {
        mcp_handler_reply_set_error(reply, -32603, "root path too long");
        return false;
    }
    return mcp_handler_reply_set_result(reply, json);
}

/* The file:// URI of a directory, or NULL if it does not exist or cannot be written as one. */
static char *directory_uri(const char *dir) {
    char *path = port_directory_uri_path(dir);
    if (path == NULL)
        return NULL;
    bool plain = true; /* keep the JSON above trivially valid: no quotes, backslashes or controls */
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        plain = plain && *p >= 0x20 && *p != '"' && *p != '\\';
    size_t size = strlen(path) + sizeof "file://";
    char *uri = plain && size < 4096 ? malloc(size) : NULL;
    if (uri != NULL)
        snprintf(uri, size, "file://%s", path);
    free(path);
    return uri;
}

/* ---- issue 19: --listen and --trace ------------------------------------------------------ */

/* The reasons mcp-call itself gives the listen's cancel: the listen then ended as asked. */
static const char LISTEN_TIME_UP[] = "--listen-ms passed";
static const char LISTEN_INTERRUPTED[] = "interrupted";

/* Every notification, as one JSON line on stdout (on the library's callback thread). */
static void on_listen_notification(void *userdata, const char *method, const char *params_json) {
    (void)userdata;
    fputs("{\"method\":", stdout);
    print_json_string(stdout, method);
    if (params_json != NULL)
        fprintf(stdout, ",\"params\":%s", params_json);
    fputs("}\n", stdout);
    fflush(stdout); /* a reader of a pipe sees each line as it comes */
}

/* Every frame, as one JSON line on stderr (on the library's trace thread). */
static void on_trace(void *userdata, mcp_trace_direction direction, const char *transport,
                     const char *json) {
    (void)userdata;
    fprintf(stderr, "{\"direction\":\"%s\",\"transport\":",
            direction == MCP_TRACE_DIRECTION_IN ? "in" : "out");
    print_json_string(stderr, transport);
    fprintf(stderr, ",\"frame\":%s}\n", json);
}

/* SIGINT and SIGTERM are taken by a thread of their own (sigwait), which cancels the listen:
 * a cancel is not safe from a signal handler. SIGUSR1 lets that thread go once the listen is
 * over. The mask is set before the client exists, so every library thread inherits it. */
static mcp_cancellation *listen_token;
#ifdef _WIN32
/* Windows has no sigwait: Ctrl-C ends the process there; --listen-ms ends a listen. */
typedef int signal_thread_t;
static bool block_listen_signals(void) { return false; }
static bool start_signal_thread(signal_thread_t *thread) {
    (void)thread;
    return false;
}
static void stop_signal_thread(signal_thread_t thread) { (void)thread; }
#else
typedef pthread_t signal_thread_t;
static sigset_t listen_signals;

static void *signal_main(void *arg) {
    (void)arg;
    int signal_number = 0;
    if (sigwait(&listen_signals, &signal_number) == 0 && signal_number != SIGUSR1)
        mcp_cancellation_cancel(listen_token, LISTEN_INTERRUPTED);
    return NULL;
}

static bool block_listen_signals(void) {
    sigemptyset(&listen_signals);
    sigaddset(&listen_signals, SIGINT);
    sigaddset(&listen_signals, SIGTERM);
    sigaddset(&listen_signals, SIGUSR1);
    return pthread_sigmask(SIG_BLOCK, &listen_signals, NULL) == 0;
}

static bool start_signal_thread(signal_thread_t *thread) {
    return pthread_create(thread, NULL, signal_main, NULL) == 0;
}

static void stop_signal_thread(signal_thread_t thread) {
    pthread_kill(thread, SIGUSR1);
    pthread_join(thread, NULL);
}
#endif

static mcp_listen *make_listen(const struct command_line *cl) {
    mcp_listen *listen = mcp_listen_new();
    mcp_listen_set_tools_list_changed(listen, true);
    mcp_listen_set_prompts_list_changed(listen, true);
    mcp_listen_set_resources_list_changed(listen, true);
    for (int i = 0; i < cl->listen_uri_count; i++)
        mcp_listen_add_resource(listen, cl->listen_uris[i]);
    if (cl->listen_level != NULL)
        mcp_listen_set_log_level(listen, cl->listen_level);
    /* Without --reconnect nothing connects again: a failed connection ends the listen (exit 5).
     * With it, the listen connects again itself and listens there. */
    mcp_listen_set_end_on_failure(listen, !cl->reconnect);
    return listen; /* a bad value is reported by mcp_client_listen (exit 2) */
}

/* A listen cancelled by --listen-ms or an interrupt ended as asked. */
static bool listen_ended_as_asked(const mcp_result *result) {
    const char *reason = mcp_result_cancel_reason(result);
    return mcp_result_status(result) == MCP_STATUS_CANCELLED && reason != NULL &&
           (strcmp(reason, LISTEN_TIME_UP) == 0 || strcmp(reason, LISTEN_INTERRUPTED) == 0);
}

/* ---- main ------------------------------------------------------------------------------ */

static mcp_result *run_action(mcp_client *client, const struct command_line *cl,
                              const mcp_request_options *ropts) {
    switch (cl->action) {
    case ACTION_CALL: return mcp_client_call_tool(client, cl->target, cl->args_json, ropts);
    case ACTION_LIST_TOOLS: return mcp_client_tools(client, ropts);
    case ACTION_READ: return mcp_client_read_resource(client, cl->target, ropts);
    case ACTION_PROMPT: return mcp_client_get_prompt(client, cl->target, cl->args_json, ropts);
    case ACTION_PING: return mcp_client_ping(client, ropts);
    case ACTION_DISCOVER: return mcp_client_discover(client, ropts);
    case ACTION_LIST_RESOURCES: return mcp_client_resources(client, ropts);
    case ACTION_LIST_TEMPLATES: return mcp_client_resource_templates(client, ropts);
    case ACTION_LIST_PROMPTS: return mcp_client_prompts(client, ropts);
    case ACTION_LISTEN: {
        mcp_listen *listen = make_listen(cl);
        mcp_result *result = mcp_client_listen(client, listen, ropts);
        mcp_listen_free(listen);
        return result;
    }
    case ACTION_NONE: break;
    }
    return NULL; /* not reached: main handles ACTION_NONE */
}

/* Applies the call options; returns the first status that is not OK. */
static mcp_status set_request_options(mcp_request_options *ropts, const struct command_line *cl,
                                      const mcp_cancellation *token) {
    mcp_status s = mcp_request_options_set_cancellation(ropts, token);
    if (s == MCP_STATUS_OK && cl->has_timeout)
        s = mcp_request_options_set_timeout_ms(ropts, cl->timeout_ms);
    if (s == MCP_STATUS_OK && cl->progress)
        s = mcp_request_options_set_progress_callback(ropts, on_progress, NULL);
    return s;
}

/* ---- OAuth (--oauth, --oauth-manual) ---------------------------------------------------- */

/* The person's step. The library calls it when the server asks for authorization, on the
 * thread of the request that met the 401, and waits for the redirect URL it gives back. */
struct oauth_step {
    mcp_loopback *loopback; /* --oauth: where the browser comes back; NULL for --oauth-manual */
};

static bool on_authorize(void *userdata, const char *authorization_url, const char *redirect_uri,
                         mcp_auth_reply *reply) {
    struct oauth_step *step = userdata;
    fprintf(stderr, "mcp-call: to authorize, open this URL in a browser:\n%s\n",
            authorization_url);
    if (step->loopback != NULL) {
        fprintf(stderr, "mcp-call: waiting for the browser to come back to %s\n", redirect_uri);
        /* Ends when the browser comes back, or with the call (--timeout-ms, a cancel). */
        return mcp_loopback_wait_authorization(step->loopback, reply, 0) == MCP_STATUS_OK;
    }
    fprintf(stderr, "mcp-call: then paste here the URL the browser was sent to (%s...):\n",
            redirect_uri);
    char line[16384];
    if (fgets(line, sizeof line, stdin) == NULL) {
        mcp_auth_reply_set_error(reply, "no redirect URL on stdin");
        return false;
    }
    line[strcspn(line, "\r\n")] = '\0';
    return mcp_auth_reply_set_redirect_url(reply, line);
}

/* The whole of a small file (the --client-key PEM) as a string (free it), or NULL after a
 * message. */
static char *read_small_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "mcp-call: cannot open %s\n", path);
        return NULL;
    }
    size_t limit = 64 * 1024, used = 0;
    char *text = malloc(limit + 1);
    if (text != NULL)
        used = fread(text, 1, limit + 1, f);
    bool read_all = text != NULL && !ferror(f) && used <= limit;
    fclose(f);
    if (!read_all) {
        fprintf(stderr, "mcp-call: cannot read %s (or it is over 64 KiB)\n", path);
        free(text);
        return NULL;
    }
    text[used] = '\0';
    return text;
}

/* Sets the private key of --client-key. False (after a message) when the file cannot be
 * read; a key the library refuses is reported by connect (exit 2). */
static bool set_client_key(mcp_client_options *copts, const char *path) {
    char *pem = read_small_file(path);
    if (pem == NULL)
        return false;
    mcp_client_options_set_oauth_client_key(copts, pem, NULL);
    memset(pem, 0, strlen(pem)); /* a private key: not left in freed memory */
    free(pem);
    return true;
}

/* Turns DPoP on for --dpop (a generated key) or --dpop-key FILE. False (after a message)
 * when the file cannot be read; a key the library refuses is reported by connect (exit 2). */
static bool set_dpop(mcp_client_options *copts, const struct command_line *cl) {
    if (cl->dpop_key == NULL) {
        if (cl->dpop)
            mcp_client_options_set_oauth_dpop(copts, true, NULL);
        return true;
    }
    char *pem = read_small_file(cl->dpop_key);
    if (pem == NULL)
        return false;
    mcp_client_options_set_oauth_dpop(copts, true, pem);
    memset(pem, 0, strlen(pem)); /* a private key: not left in freed memory */
    free(pem);
    return true;
}

/* --identity-assertion-file: the file is read for each token request, so the host may
 * renew the assertion in it; nothing of it is printed. */
static size_t give_identity_assertion(void *userdata, char *buffer, size_t capacity) {
    char *text = read_small_file((const char *)userdata);
    size_t length = text != NULL ? strlen(text) : 0;
    if (length > capacity)
        length = 0;
    if (length > 0)
        memcpy(buffer, text, length);
    if (text != NULL) {
        memset(text, 0, strlen(text)); /* a credential: not left in freed memory */
        free(text);
    }
    return length;
}

/* Sets the OAuth options; for --oauth, opens the loopback listener first (its URL is the
 * redirect URI). False (after a message) when the listener cannot open or the key file
 * cannot be read. */
static bool set_oauth(mcp_client_options *copts, const struct command_line *cl,
                      struct oauth_step *step) {
    if (cl->client_key != NULL && !set_client_key(copts, cl->client_key))
        return false;
    if (!set_dpop(copts, cl))
        return false;
    if (cl->client_credentials || cl->workload_token_file != NULL ||
        cl->identity_assertion_file != NULL) {
        if (cl->identity_assertion_file != NULL) {
            mcp_client_options_set_oauth_grant(copts, MCP_OAUTH_GRANT_ENTERPRISE_MANAGED);
            mcp_client_options_set_oauth_identity_provider(
                copts, cl->idp_token_endpoint, cl->idp_client_id, NULL, give_identity_assertion,
                (void *)cl->identity_assertion_file);
        } else if (cl->workload_token_file != NULL) {
            mcp_client_options_set_oauth_grant(copts, MCP_OAUTH_GRANT_JWT_BEARER);
            mcp_client_options_set_oauth_workload_token_file(copts, cl->workload_token_file);
        } else {
            mcp_client_options_set_oauth_grant(copts, MCP_OAUTH_GRANT_CLIENT_CREDENTIALS);
        }
        if (cl->client_id != NULL)
            mcp_client_options_set_oauth_client(copts, cl->client_id, cl->client_secret);
        if (cl->scope != NULL)
            mcp_client_options_set_oauth_scopes(copts, cl->scope);
        return true;
    }
    const char *redirect_uri = "http://127.0.0.1/callback"; /* --oauth-manual: never reached */
    if (cl->oauth) {
        step->loopback = mcp_loopback_new(NULL);
        redirect_uri = mcp_loopback_redirect_uri(step->loopback);
        if (redirect_uri == NULL) {
            fprintf(stderr, "mcp-call: cannot open the loopback listener: %s\n",
                    mcp_loopback_message(step->loopback));
            return false;
        }
    }
    mcp_client_options_set_oauth_redirect_uri(copts, redirect_uri);
    mcp_client_options_set_oauth_registration(copts, "mcp-call", "native");
    if (cl->client_id != NULL)
        mcp_client_options_set_oauth_client(copts, cl->client_id, cl->client_secret);
    if (cl->client_metadata_url != NULL)
        mcp_client_options_set_oauth_client_metadata_url(copts, cl->client_metadata_url);
    if (cl->scope != NULL)
        mcp_client_options_set_oauth_scopes(copts, cl->scope);
    mcp_client_options_set_oauth_authorize_callback(copts, on_authorize, step);
    return true;
}

int main(int argc, char **argv) {
    struct command_line cl;
    int code = parse_command_line(argc, argv, &cl);
    if (code >= 0)
        return code;

    char *roots_uri = NULL;
    if (cl.roots_dir != NULL && (roots_uri = directory_uri(cl.roots_dir)) == NULL)
        return usage_error("--roots needs an existing directory", cl.roots_dir);

    mcp_client_options *copts = mcp_client_options_new();
    mcp_client_options_set_client_info(copts, "mcp-call", MCPC_VERSION);
    mcp_client_options_set_mode(copts, cl.mode);
    if (cl.protocol_version != NULL)
        mcp_client_options_set_protocol_version(copts, cl.protocol_version);
    if (cl.log)
        mcp_client_options_set_message_callback(copts, on_message, NULL);
    if (cl.reconnect) {
        mcp_client_options_set_reconnect_policy(copts, 100, 30000, 0.2, 5);
        mcp_client_options_set_state_callback(copts, on_state, NULL);
    }
    if (roots_uri != NULL)
        mcp_client_options_set_request_handler(copts, "roots/list", on_roots, roots_uri);
    if (cl.task)
        mcp_client_options_set_tasks(copts, true);
    /* issue 19 */
    if (cl.action == ACTION_LISTEN)
        mcp_client_options_set_notification_callback(copts, on_listen_notification, NULL);
    if (cl.trace)
        mcp_client_options_set_trace_callback(copts, on_trace, NULL);
    /* With an action, --lazy leaves the connect to the call; without one, the connect is the
     * action. */
    bool lazy = cl.lazy && cl.action != ACTION_NONE;
    if (lazy)
        mcp_client_options_set_lazy_connect(copts, true);
    signal_thread_t signal_thread;
    bool signals_taken = cl.action == ACTION_LISTEN && block_listen_signals();
    for (int i = 0; i < cl.header_count; i++) {
        /* "Name: value" -> name, value; the library rejects bad names and CR/LF in values. */
        char name[256];
        const char *colon = strchr(cl.headers[i], ':');
        size_t length = colon ? (size_t)(colon - cl.headers[i]) : 0;
        if (colon == NULL || length == 0 || length >= sizeof name) {
            mcp_client_options_free(copts);
            free(roots_uri);
            return usage_error("--header wants 'Name: value', not", cl.headers[i]);
        }
        memcpy(name, cl.headers[i], length);
        name[length] = '\0';
        const char *value = colon + 1;
        while (*value == ' ')
            value++;
        mcp_client_options_add_header(copts, name, value);
    }
    /* As curl: the proxy of the environment unless --proxy, and --cacert/--capath replace the
     * bundled roots. There is no --insecure: verification cannot be turned off. */
    mcp_client_options_set_proxy_from_env(copts, true);
    if (cl.sse)
        mcp_client_options_set_http_transport(copts, MCP_HTTP_TRANSPORT_LEGACY_SSE);
    if (cl.proxy != NULL)
        mcp_client_options_set_proxy(copts, cl.proxy);
    if (cl.noproxy != NULL)
        mcp_client_options_set_noproxy(copts, cl.noproxy);
    for (int i = 0; i < cl.cacert_count; i++) {
        if (cl.cacert_is_dir[i])
            mcp_client_options_add_ca_dir(copts, cl.cacerts[i]);
        else
            mcp_client_options_add_ca_file(copts, cl.cacerts[i]);
    }
    if (cl.cacert_count > 0)
        mcp_client_options_set_ca_replace(copts, true);
    if (cl.cert != NULL)
        mcp_client_options_set_client_cert(copts, cl.cert, cl.key != NULL ? cl.key : cl.cert);
    struct oauth_step oauth_step = {NULL};
    if ((cl.oauth || cl.oauth_manual || cl.client_credentials || cl.workload_token_file != NULL ||
         cl.identity_assertion_file != NULL) &&
        !set_oauth(copts, &cl, &oauth_step)) {
        mcp_client_options_free(copts);
        mcp_loopback_free(oauth_step.loopback);
        free(roots_uri);
        return EXIT_FAILED;
    }
    /* A bad option value is remembered by the options and reported by connect (exit 2). */
    mcp_client *client = cl.http_url != NULL
                             ? mcp_client_new_http(cl.http_url, copts)
                             : mcp_client_new_stdio((const char *const *)cl.server_argv, copts);
    mcp_client_options_free(copts); /* copied by the client */

    /* Starting the server and the handshake: a failure here is exit 5 (2 for bad argv, 6 for
     * an era or version the server refused). It comes first: no call, so no cancel either. */
    mcp_result *result = lazy ? NULL : mcp_client_connect(client);
    if (result != NULL && mcp_result_status(result) != MCP_STATUS_OK) {
        code = report_connect_failure(result);
        mcp_result_free(result);
        mcp_client_free(client);
        mcp_loopback_free(oauth_step.loopback); /* after the client: its callback uses it */
        free(roots_uri);
        return code;
    }
    /* 2025-11-25 tasks are only for tools listed as task-capable: list them first. */
    if (cl.task && !mcp_client_is_modern(client))
        mcp_result_free(mcp_client_tools(client, NULL));
    if (cl.action == ACTION_NONE) {
        code = report(result); /* the initialize (or discover) result */
        mcp_result_free(result);
        mcp_client_free(client);
        mcp_loopback_free(oauth_step.loopback);
        free(roots_uri);
        return code;
    }
    mcp_result_free(result);

    /* Every call gets a token, so that --precancel and --cancel-after-ms can use it. */
    mcp_cancellation *token = mcp_cancellation_new();
    /* issue 19: an interrupt and --listen-ms end a listen through the same token. */
    listen_token = token;
    if (signals_taken)
        signals_taken = start_signal_thread(&signal_thread);
    struct canceller listen_timer;
    port_thread listen_timer_thread;
    bool listen_timing = cl.has_listen_ms &&
                         canceller_start(&listen_timer, &listen_timer_thread, cl.listen_ms, token,
                                         LISTEN_TIME_UP);
    mcp_request_options *ropts = mcp_request_options_new();
    mcp_status s = set_request_options(ropts, &cl, token);
    if (s != MCP_STATUS_OK) {
        fprintf(stderr, "%s: cannot set the call options\n", mcp_status_name((int)s));
        code = s == MCP_STATUS_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_FAILED;
    } else {
        if (cl.precancel) /* the call then returns CANCELLED at once and sends nothing */
            mcp_cancellation_cancel(token, cl.reason);

        struct canceller canceller;
        port_thread thread;
        bool cancelling = false;
        if (cl.has_cancel_after) {
            cancelling = canceller_start(&canceller, &thread, cl.cancel_after_ms, token,
                                         cl.reason);
            if (!cancelling)
                fputs("mcp-call: cannot start the canceller thread\n", stderr);
        }
        if (!cl.has_cancel_after || cancelling) {
            result = run_action(client, &cl, ropts);
            if (cancelling)
                canceller_finish(&canceller, thread);
            if (listen_ended_as_asked(result))
                code = EXIT_OK; /* the notifications are the output */
            else if (lazy && lazy_connect_failed(result))
                code = report_connect_failure(result);
            else
                code = report(result);
            mcp_result_free(result);
        } else {
            code = EXIT_FAILED;
        }
    }

    /* issue 19: let the listen's timer and signal threads go. */
    if (listen_timing)
        canceller_finish(&listen_timer, listen_timer_thread);
    if (signals_taken)
        stop_signal_thread(signal_thread);
    mcp_request_options_free(ropts);
    mcp_cancellation_free(token);
    mcp_client_free(client); /* closes the session: the server's stdin is closed */
    mcp_loopback_free(oauth_step.loopback);
    free(roots_uri);           /* after free: the roots handler may run until then */
    return code;
}
