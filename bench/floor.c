/*
 * The floor: the least a client can do for one MCP call. It writes the same JSON-RPC line the
 * clients send to the same test server and reads the reply, with no JSON parsing, no id
 * routing and no threads of its own, so what it measures is the pipe (or the socket) and the
 * server.
 *
 *   floor stdio SERVER ITERATIONS SECONDS   sequential ping and echo, then 1/8/16 in flight
 *   floor stdio-modern SERVER ITERATIONS SECONDS   sequential echo in the modern era (the
 *                                           test server only)
 *   floor http  SERVER ITERATIONS SECONDS   the same over kept-alive HTTP/1.1 connections,
 *                                           in each era (legacy: its session; modern: the
 *                                           envelope and routing headers, no ping)
 *
 * SERVER is the project's test server or bench/echo_server.c (stdio only); run.sh tags the
 * output with which.
 *
 * Output: `key=value` lines, as bench.c prints them, read by bench/table.py.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static char echo_line[2048];
/* The same echo in the modern era: the envelope in params._meta, as mcpc sends it. */
static char modern_echo_line[2048];
static const char *ping_line = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
static const char *init_line =
    "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
    "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"floor\",\"version\":\"1\"}}}\n";
static const char *initialized_line =
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";

/* A line reader over a file descriptor: one read() serves many lines. */
typedef struct {
    int fd;
    char buf[1 << 16];
    size_t start, end;
} reader;

static void write_all(int fd, const char *data, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n <= 0) die("floor: write failed");
        data += n;
        len -= (size_t)n;
    }
}

/* Fills the buffer until it holds `needle`; returns the offset just past it. */
static size_t read_until(reader *r, const char *needle) {
    size_t nlen = strlen(needle);
    for (;;) {
        char *hit = memmem(r->buf + r->start, r->end - r->start, needle, nlen);
        if (hit) return (size_t)(hit - r->buf) + nlen;
        if (r->start > 0) {
            memmove(r->buf, r->buf + r->start, r->end - r->start);
            r->end -= r->start;
            r->start = 0;
        }
        if (r->end == sizeof r->buf) die("floor: reply too long");
        ssize_t n = read(r->fd, r->buf + r->end, sizeof r->buf - r->end);
        if (n <= 0) die("floor: the server closed the stream");
        r->end += (size_t)n;
    }
}

static void read_line(reader *r) { r->start = read_until(r, "\n"); }

/* ---- stdio ---- */

static void floor_stdio(const char *server, int iterations, double seconds) {
    char *argv[] = {(char *)server, NULL};
    int to_server, from_server;
    pid_t pid = spawn(argv, &to_server, &from_server);
    reader *r = calloc(1, sizeof *r);
    r->fd = from_server;
    write_all(to_server, init_line, strlen(init_line));
    read_line(r);
    write_all(to_server, initialized_line, strlen(initialized_line));

    const char *lines[] = {ping_line, echo_line};
    const char *cases[] = {"stdio.ping", "stdio.echo"};
    for (int c = 0; c < 2; c++) {
        size_t len = strlen(lines[c]);
        double *samples = malloc(sizeof(double) * (size_t)iterations);
        for (int i = 0; i < warmup(iterations); i++) {
            write_all(to_server, lines[c], len);
            read_line(r);
        }
        usage_mark since = usage_now();
        for (int i = 0; i < iterations; i++) {
            double t0 = now_us();
            write_all(to_server, lines[c], len);
            read_line(r);
            samples[i] = now_us() - t0;
        }
        report("floor", cases[c], samples, iterations, &since);
        free(samples);
    }

    /* In flight: keep `window` requests written ahead (pipelined on the one pipe): each
     * read() takes every reply that has arrived, and one write() sends as many new requests. */
    size_t len = strlen(echo_line);
    char *batch = malloc(len * MAX_IN_FLIGHT);
    for (int i = 0; i < MAX_IN_FLIGHT; i++) memcpy(batch + i * len, echo_line, len);
    for (int w = 0; w < IN_FLIGHT_CASES; w++) {
        int window = in_flight_counts[w];
        long calls = 0;
        usage_mark since = usage_now();
        double start = now_us(), end = start + seconds * 1e6;
        write_all(to_server, batch, len * (size_t)window);
        int outstanding = window;
        while (outstanding > 0) {
            read_line(r);
            calls++;
            outstanding--;
            /* Refill once every reply already read is taken (the buffer holds no full line). */
            if (!memchr(r->buf + r->start, '\n', r->end - r->start) && now_us() < end) {
                write_all(to_server, batch, len * (size_t)(window - outstanding));
                outstanding = window;
            }
        }
        char name[32];
        snprintf(name, sizeof name, "stdio.tput%d", window);
        report_rate("floor", name, calls, (now_us() - start) / 1e6, since);
    }
    free(batch);
    close(to_server);
    waitpid(pid, NULL, 0);
}

/* The modern era over stdio, against the test server started with --modern: no handshake
 * (a modern client's server/discover is part of connecting, not of a call), each echo line
 * carrying the envelope in params._meta as mcpc's does. Sequential echo only: the modern era
 * has no ping, and the throughput rows are legacy. */
static void floor_stdio_modern(const char *server, int iterations) {
    char *argv[] = {(char *)server, "--modern", NULL};
    int to_server, from_server;
    pid_t pid = spawn(argv, &to_server, &from_server);
    reader *r = calloc(1, sizeof *r);
    r->fd = from_server;
    size_t len = strlen(modern_echo_line);
    double *samples = malloc(sizeof(double) * (size_t)iterations);
    for (int i = 0; i < warmup(iterations); i++) {
        write_all(to_server, modern_echo_line, len);
        read_line(r);
    }
    usage_mark since = usage_now();
    for (int i = 0; i < iterations; i++) {
        double t0 = now_us();
        write_all(to_server, modern_echo_line, len);
        read_line(r);
        samples[i] = now_us() - t0;
    }
    report("floor", "stdio.modern.echo", samples, iterations, &since);
    free(samples);
    free(r);
    close(to_server);
    waitpid(pid, NULL, 0);
}

/* ---- HTTP: one kept-alive connection per thread ---- */

typedef struct {
    int port;
    const char *headers;
    const char *body;
    double end_us;
    long calls;
} http_job;

static int http_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) die("floor: connect failed");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* One POST with `headers` (each ending in CRLF) and its whole response (JSON with
 * Content-Length, or a chunked SSE stream). Copies the Mcp-Session-Id header into `session`
 * when asked. */
static void http_exchange(reader *r, int port, const char *headers, const char *body,
                          char *session_out) {
    char request[4096];
    size_t blen = strlen(body) - 1; /* the lines end in '\n'; HTTP bodies need not */
    int n = snprintf(request, sizeof request,
                     "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                     "Content-Type: application/json\r\n"
                     "Accept: application/json, text/event-stream\r\n"
                     "%s"
                     "Content-Length: %zu\r\n\r\n",
                     port, headers, blen);
    write_all(r->fd, request, (size_t)n);
    write_all(r->fd, body, blen);

    size_t head_end = read_until(r, "\r\n\r\n");
    char *head = r->buf + r->start;
    size_t head_len = head_end - r->start;
    if (session_out) {
        char *s = memmem(head, head_len, "Mcp-Session-Id: ", 16);
        if (!s) die("floor: no session id");
        s += 16;
        size_t len = strcspn(s, "\r");
        memcpy(session_out, s, len);
        session_out[len] = 0;
    }
    char *cl = memmem(head, head_len, "Content-Length: ", 16);
    int chunked = memmem(head, head_len, "chunked", 7) != NULL;
    r->start = head_end;
    if (cl && !chunked) {
        size_t want = (size_t)atol(cl + 16);
        while (r->end - r->start < want) {
            if (r->start > 0) {
                memmove(r->buf, r->buf + r->start, r->end - r->start);
                r->end -= r->start;
                r->start = 0;
            }
            ssize_t got = read(r->fd, r->buf + r->end, sizeof r->buf - r->end);
            if (got <= 0) die("floor: short body");
            r->end += (size_t)got;
        }
        r->start += want;
    } else if (chunked) {
        /* Skip chunks up to the last (zero-length) one; the SSE event is inside. */
        r->start = read_until(r, "\r\n0\r\n\r\n");
    }
}

static void *http_worker(void *arg) {
    http_job *job = arg;
    reader *r = calloc(1, sizeof *r);
    r->fd = http_connect(job->port);
    while (now_us() < job->end_us) {
        http_exchange(r, job->port, job->headers, job->body, NULL);
        job->calls++;
    }
    close(r->fd);
    free(r);
    return NULL;
}

/* One era's calls over HTTP: the headers and bodies a client of that era sends (read off
 * mcpc's own requests), so each era is measured against a floor that does the same on the
 * wire. The modern era has no session and no handshake: each request carries the envelope in
 * `params._meta`, and the method (and tool) in routing headers; it has no ping (the
 * 2026-07-28 era dropped it), so `ping` is NULL there. */
typedef struct {
    const char *name;
    int modern;
    char ping_headers[256], echo_headers[256];
    const char *ping, *echo;
} http_era;


static void floor_http_era(const char *server, http_era *era, int iterations, double seconds) {
    char url[256];
    int to_server;
    pid_t pid = spawn_http_server(server, era->modern, NULL, url, &to_server);
    int port = atoi(strrchr(url, ':') + 1);
    reader *r = calloc(1, sizeof *r);
    r->fd = http_connect(port);
    if (!era->modern) {
        char session[128], headers[256];
        http_exchange(r, port, "", init_line, session);
        snprintf(headers, sizeof headers,
                 "Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n", session);
        http_exchange(r, port, headers, initialized_line, NULL);
        strcpy(era->ping_headers, headers);
        strcpy(era->echo_headers, headers);
    }

    const char *lines[] = {era->ping, era->echo};
    const char *headers[] = {era->ping_headers, era->echo_headers};
    const char *kinds[] = {"ping", "echo"};
    for (int c = 0; c < 2; c++) {
        if (!lines[c]) continue;
        double *samples = malloc(sizeof(double) * (size_t)iterations);
        for (int i = 0; i < warmup(iterations); i++)
            http_exchange(r, port, headers[c], lines[c], NULL);
        usage_mark since = usage_now();
        for (int i = 0; i < iterations; i++) {
            double t0 = now_us();
            http_exchange(r, port, headers[c], lines[c], NULL);
            samples[i] = now_us() - t0;
        }
        char name[32];
        snprintf(name, sizeof name, "http.%s.%s", era->name, kinds[c]);
        report("floor", name, samples, iterations, &since);
        free(samples);
    }
    close(r->fd);

    for (int t = 0; t < IN_FLIGHT_CASES; t++) {
        int threads = in_flight_counts[t];
        http_job jobs[MAX_IN_FLIGHT];
        pthread_t ids[MAX_IN_FLIGHT];
        usage_mark since = usage_now();
        double start = now_us();
        for (int i = 0; i < threads; i++) {
            jobs[i] = (http_job){port, era->echo_headers, era->echo, start + seconds * 1e6, 0};
            pthread_create(&ids[i], NULL, http_worker, &jobs[i]);
        }
        long calls = 0;
        for (int i = 0; i < threads; i++) {
            pthread_join(ids[i], NULL);
            calls += jobs[i].calls;
        }
        char name[32];
        snprintf(name, sizeof name, "http.%s.tput%d", era->name, threads);
        report_rate("floor", name, calls, (now_us() - start) / 1e6, since);
    }
    close(to_server);
    waitpid(pid, NULL, 0);
}

static void floor_http(const char *server, int iterations, double seconds) {
    http_era legacy = {.name = "legacy", .modern = 0, .ping = ping_line, .echo = echo_line};
    http_era modern = {
        .name = "modern",
        .modern = 1,
        .echo_headers =
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n",
        .echo = modern_echo_line,
    };
    floor_http_era(server, &legacy, iterations, seconds);
    floor_http_era(server, &modern, iterations, seconds);
}

int main(int argc, char **argv) {
    if (argc != 5) die("usage: floor stdio|stdio-modern|http SERVER ITERATIONS SECONDS");
    signal(SIGPIPE, SIG_IGN);
    snprintf(echo_line, sizeof echo_line,
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"text\":\"%s\"}}}\n",
             kib_text());
    const char *meta =
        "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
        "\"io.modelcontextprotocol/clientInfo\":{\"name\":\"floor\",\"version\":\"1\"},"
        "\"io.modelcontextprotocol/clientCapabilities\":{}}";
    snprintf(modern_echo_line, sizeof modern_echo_line,
             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"echo\",\"arguments\":{\"text\":\"%s\"},%s}}\n",
             kib_text(), meta);
    if (strcmp(argv[1], "stdio") == 0)
        floor_stdio(argv[2], atoi(argv[3]), atof(argv[4]));
    else if (strcmp(argv[1], "stdio-modern") == 0)
        floor_stdio_modern(argv[2], atoi(argv[3]));
    else
        floor_http(argv[2], atoi(argv[3]), atof(argv[4]));
    return 0;
}
