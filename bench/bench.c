/*
 * mcpc measured through its public C API, as a host sees it, against the project's test server.
 *
 *   bench SERVER ITERATIONS SECONDS CANCELS
 *
 * ITERATIONS sequential calls per latency case, SECONDS per throughput case, CANCELS cancels per
 * cancellation case. Output: `key=value` lines (see common.h), read by bench/table.py.
 * MCPC_BENCH_SECTIONS (a comma-separated list of stdio, modern, http, cancel, cost, connect;
 * all by default) picks what runs: against bench/echo_server.c only `stdio` makes sense.
 * MCPC_BENCH_SIGPIPE_OPTION=1 makes the stdio clients promise that SIGPIPE is ignored (it is:
 * main ignores it), so their writes skip the signal-mask calls.
 *
 * Where the server must be watched (cancellation, calls in flight), its --log file is a FIFO
 * that a thread of ours reads: the server writes each line it reads there before handling it,
 * so the time we read a line is the time the server read it, plus one pipe hop.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../include/mcpc.h"
#include "common.h"

static const char *server;
static char echo_args[1100];

static void check(mcp_result *result, const char *what) {
    if (mcp_result_status(result) != MCP_STATUS_OK) {
        fprintf(stderr, "bench: %s failed: status %d: %s\n", what, mcp_result_status(result),
                mcp_result_message(result) ? mcp_result_message(result) : "");
        exit(1);
    }
    mcp_result_free(result);
}

/* ---- the server's log, through a FIFO ---- */

typedef struct {
    char path[64];
    int fd;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    long calls;          /* lines holding a tools/call */
    long cancels;        /* lines saying a cancel arrived: the notice, or the stream closing */
    double last_cancel;  /* when we read the last of those */
} server_log;

static void *log_reader(void *arg) {
    server_log *log = arg;
    char buf[1 << 16];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(log->fd, buf + len, sizeof buf - len);
        if (n <= 0) return NULL;
        double at = now_us();
        len += (size_t)n;
        char *start = buf, *nl;
        pthread_mutex_lock(&log->lock);
        while ((nl = memchr(start, '\n', (size_t)(buf + len - start)))) {
            size_t line_len = (size_t)(nl - start);
            if (memmem(start, line_len, "\"tools/call\"", 12)) log->calls++;
            if (memmem(start, line_len, "notifications/cancelled", 23) ||
                memmem(start, line_len, "closed_by_client", 16)) {
                log->cancels++;
                log->last_cancel = at;
            }
            start = nl + 1;
        }
        pthread_cond_broadcast(&log->changed);
        pthread_mutex_unlock(&log->lock);
        len = (size_t)(buf + len - start);
        memmove(buf, start, len);
        if (len == sizeof buf) len = 0; /* a huge line: its tail is not worth reading */
    }
}

static void log_open(server_log *log) {
    static int counter;
    snprintf(log->path, sizeof log->path, "/tmp/mcpc-bench-%d-%d.fifo", getpid(), counter++);
    unlink(log->path);
    if (mkfifo(log->path, 0600) != 0) die("bench: mkfifo failed");
    /* Opened without blocking, then a write end of our own keeps reads from seeing EOF before
     * the server opens it. */
    log->fd = open(log->path, O_RDONLY | O_NONBLOCK);
    int keep = open(log->path, O_WRONLY);
    (void)keep;
    fcntl(log->fd, F_SETFL, 0);
    pthread_mutex_init(&log->lock, NULL);
    pthread_cond_init(&log->changed, NULL);
    log->calls = log->cancels = 0;
    pthread_create(&log->thread, NULL, log_reader, log);
}

/* The counters as they are now, read under the lock the reader thread writes them under. */
static void log_snapshot(server_log *log, long *calls, long *cancels, double *last_cancel) {
    pthread_mutex_lock(&log->lock);
    if (calls) *calls = log->calls;
    if (cancels) *cancels = log->cancels;
    if (last_cancel) *last_cancel = log->last_cancel;
    pthread_mutex_unlock(&log->lock);
}

/* Waits until the server has read `calls` tool calls and `cancels` cancels in all, or for at
 * most `timeout_ms` (0: no limit). Returns whether they arrived. */
static bool log_wait(server_log *log, long calls, long cancels, int timeout_ms) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    bool arrived = true;
    pthread_mutex_lock(&log->lock);
    while (log->calls < calls || log->cancels < cancels) {
        if (timeout_ms == 0) {
            pthread_cond_wait(&log->changed, &log->lock);
        } else if (pthread_cond_timedwait(&log->changed, &log->lock, &deadline) != 0) {
            arrived = log->calls >= calls && log->cancels >= cancels;
            break;
        }
    }
    pthread_mutex_unlock(&log->lock);
    return arrived;
}

/* ---- clients ---- */

typedef struct {
    pid_t pid; /* the HTTP server, or 0 */
    int to_server;
    char url[256];
} http_server;

static mcp_client *stdio_client(int mode, const char *log) {
    const char *argv[] = {server, "--modern", log ? "--log" : NULL, log, NULL};
    mcp_client_options *options = mcp_client_options_new();
    mcp_client_options_set_mode(options, mode);
    /* main() ignores SIGPIPE; MCPC_BENCH_SIGPIPE_OPTION=1 also tells the library so (no
     * signal-mask calls per write). Off by default, as for a host that does not say. */
    const char *promise = getenv("MCPC_BENCH_SIGPIPE_OPTION");
    if (promise && strcmp(promise, "1") == 0) mcp_client_options_set_sigpipe_ignored(options, true);
    mcp_client *client = mcp_client_new_stdio(argv, options);
    mcp_client_options_free(options);
    check(mcp_client_connect(client), "connect");
    return client;
}

static http_server start_http(int modern, const char *log) {
    http_server s;
    s.pid = spawn_http_server(server, modern, log, s.url, &s.to_server);
    return s;
}

static void stop_http(http_server *s) {
    close(s->to_server);
    waitpid(s->pid, NULL, 0);
}

static mcp_client *http_client(const http_server *s, int mode) {
    mcp_client_options *options = mcp_client_options_new();
    mcp_client_options_set_mode(options, mode);
    mcp_client *client = mcp_client_new_http(s->url, options);
    mcp_client_options_free(options);
    check(mcp_client_connect(client), "connect");
    return client;
}

/* ---- sequential round trips ---- */

static void sequential(mcp_client *client, const char *prefix, bool ping, int iterations) {
    double *samples = malloc(sizeof(double) * (size_t)iterations);
    for (int kind = ping ? 0 : 1; kind < 2; kind++) {
        double first = 0;
        usage_mark since = {0, 0};
        for (int i = -warmup(iterations); i < iterations; i++) {
            if (i == 0) since = usage_now();
            double t0 = now_us();
            mcp_result *r = kind == 0 ? mcp_client_ping(client, NULL)
                                      : mcp_client_call_tool(client, "echo", echo_args, NULL);
            double t1 = now_us();
            check(r, kind == 0 ? "ping" : "echo");
            if (i == -warmup(iterations)) first = t1 - t0;
            if (i >= 0) samples[i] = t1 - t0;
        }
        char name[64];
        snprintf(name, sizeof name, "%s.%s", prefix, kind == 0 ? "ping" : "echo");
        report("mcpc", name, samples, iterations, &since);
        /* The first call of its kind on the connection, against the median of the later ones:
         * a client that fails to reuse its HTTP connection shows here. */
        printf("impl=mcpc case=%s first=%.1f\n", name, first);
    }
    free(samples);
}

/* ---- throughput: N caller threads on one client ---- */

typedef struct {
    mcp_client *client;
    double end;
    long calls;
} caller;

static void *throughput_caller(void *arg) {
    caller *c = arg;
    while (now_us() < c->end) {
        check(mcp_client_call_tool(c->client, "echo", echo_args, NULL), "echo");
        c->calls++;
    }
    return NULL;
}

static void throughput(mcp_client *client, const char *prefix, double seconds) {
    for (int k = 0; k < IN_FLIGHT_CASES; k++) {
        int count = in_flight_counts[k];
        caller callers[MAX_IN_FLIGHT];
        pthread_t ids[MAX_IN_FLIGHT];
        usage_mark since = usage_now();
        double start = now_us();
        for (int i = 0; i < count; i++) {
            callers[i] = (caller){client, start + seconds * 1e6, 0};
            pthread_create(&ids[i], NULL, throughput_caller, &callers[i]);
        }
        long calls = 0;
        for (int i = 0; i < count; i++) {
            pthread_join(ids[i], NULL);
            calls += callers[i].calls;
        }
        char name[64];
        snprintf(name, sizeof name, "%s.tput%d", prefix, count);
        report_rate("mcpc", name, calls, (now_us() - start) / 1e6, since);
    }
}

/* ---- throughput: the completion API from one thread ---- */

/* One call in flight in a completion window: its arguments, {"text":"<1 KiB>"}, built once;
 * each call writes its serial into the text's first 16 characters, and its result is checked
 * against that text. (Formatting 1 KiB per call, as this once did with snprintf, charged the
 * harness's own work to the client: the floor sends ready-made lines.) */
typedef struct {
    char args[1100];
} window_slot;

#define SLOT_TEXT 9 /* where the text starts in the arguments: after {"text":" */
#define TEXT_LEN 1024

static void slot_init(window_slot *slot) {
    snprintf(slot->args, sizeof slot->args, "{\"text\":\"%s\"}", kib_text());
}

/* Starts an echo of 1 KiB in each of the `count` slots named by `tags`, with one
 * mcp_client_start_batch (the requests leave in one write). Each text's first 16 characters
 * are a new serial in hex (unique per call, so a result routed to the wrong call fails the
 * check); each call is tagged with its slot. */
static void start_echoes(mcp_client *client, mcp_completion_queue *queue, window_slot *slots,
                         const uint64_t *tags, size_t count, uint64_t *serial) {
    static const char digits[] = "0123456789abcdef";
    const mcp_request *requests[MAX_IN_FLIGHT];
    for (size_t k = 0; k < count; k++) {
        char *text = slots[tags[k]].args + SLOT_TEXT;
        uint64_t n = (*serial)++;
        for (int i = 15; i >= 0; i--, n >>= 4) text[i] = digits[n & 15];
        requests[k] = mcp_request_call_tool("echo", slots[tags[k]].args);
    }
    size_t started = 0;
    if (mcp_client_start_batch(client, requests, NULL, queue, tags, count, &started) !=
            MCP_STATUS_OK ||
        started != count)
        die("bench: mcp_client_start_batch failed");
    for (size_t k = 0; k < count; k++) mcp_request_free((mcp_request *)requests[k]);
}

/* Whether the result of a tools/call echo holds exactly the `len` characters of `want` as its
 * text content. */
static bool echoed(const mcp_result *result, const char *want, size_t len) {
    const char *json = mcp_result_json(result);
    const char *key = json ? strstr(json, "\"text\"") : NULL;
    /* The first "text" may be the value of "type": skip to the one followed by a colon. */
    while (key) {
        const char *p = key + 6;
        while (*p == ' ') p++;
        if (*p == ':') {
            p++;
            while (*p == ' ') p++;
            return *p == '"' && strncmp(p + 1, want, len) == 0 && p[1 + len] == '"';
        }
        key = strstr(key + 6, "\"text\"");
    }
    return false;
}

/* One host thread keeps N echo calls in flight on a completion queue, as an event loop would:
 * poll() on the queue's descriptor, pop every completion that is there, check it, and start
 * the next calls in the freed slots together (mcp_client_start_batch) until the time is up. */
static void completion_throughput(mcp_client *client, const char *prefix, double seconds) {
    static const int counts[] = {8, 16};
    for (int k = 0; k < 2; k++) {
        int count = counts[k];
        mcp_completion_queue *queue = mcp_completion_queue_new();
        if (!queue) die("bench: mcp_completion_queue_new failed");
        struct pollfd pfd = {.fd = mcp_completion_queue_fd(queue), .events = POLLIN};
        window_slot slots[MAX_IN_FLIGHT];
        for (int i = 0; i < count; i++) slot_init(&slots[i]);
        uint64_t serial = 0;
        long calls = 0;
        usage_mark since = usage_now();
        double start = now_us(), end = start + seconds * 1e6;
        uint64_t freed[MAX_IN_FLIGHT];
        size_t refill = 0;
        for (int i = 0; i < count; i++) freed[refill++] = (uint64_t)i;
        start_echoes(client, queue, slots, freed, refill, &serial);
        int outstanding = count;
        while (outstanding > 0) {
            if (poll(&pfd, 1, 30000) != 1) die("bench: no completion within 30 s");
            uint64_t slot;
            mcp_result *result;
            refill = 0;
            while (mcp_completion_queue_pop(queue, &slot, &result)) {
                if (slot >= (uint64_t)count) die("bench: a completion with an unknown tag");
                if (mcp_result_status(result) != MCP_STATUS_OK ||
                    !echoed(result, slots[slot].args + SLOT_TEXT, TEXT_LEN)) {
                    fprintf(stderr, "bench: completion echo: status %d, result %.80s\n",
                            mcp_result_status(result),
                            mcp_result_json(result) ? mcp_result_json(result) : "(none)");
                    exit(1);
                }
                mcp_result_free(result);
                calls++;
                if (now_us() < end)
                    freed[refill++] = slot;
                else
                    outstanding--;
            }
            if (refill > 0) start_echoes(client, queue, slots, freed, refill, &serial);
        }
        char name[64];
        snprintf(name, sizeof name, "%s.completion.tput%d", prefix, count);
        report_rate("mcpc", name, calls, (now_us() - start) / 1e6, since);
        mcp_completion_queue_free(queue);
    }
}

/* ---- cancellation ---- */

typedef struct {
    mcp_client *client;
    sem_t go, done;
    mcp_cancellation *token;
    double returned;
    int status;
    bool quit;
} blocked_caller;

static void *cancel_caller(void *arg) {
    blocked_caller *b = arg;
    mcp_request_options *options = mcp_request_options_new();
    for (;;) {
        sem_wait(&b->go);
        if (b->quit) break;
        mcp_request_options_set_cancellation(options, b->token);
        mcp_result *r = mcp_client_call_tool(b->client, "never", "{}", options);
        b->returned = now_us();
        b->status = mcp_result_status(r);
        mcp_result_free(r);
        sem_post(&b->done);
    }
    mcp_request_options_free(options);
    return NULL;
}

/* Each round: a call blocks in the server's `never` tool; once the server has read it, we
 * cancel, and time the cancel's return, the caller's return and the server hearing of it. */
static void cancellation(mcp_client *client, server_log *log, const char *prefix, int cancels) {
    blocked_caller b = {.client = client};
    sem_init(&b.go, 0, 0);
    sem_init(&b.done, 0, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, cancel_caller, &b);
    double *ret = malloc(sizeof(double) * (size_t)cancels);
    double *woke = malloc(sizeof(double) * (size_t)cancels);
    double *heard = malloc(sizeof(double) * (size_t)cancels);
    long calls, heard_count;
    log_snapshot(log, &calls, &heard_count, NULL);
    int heard_n = 0, missed = 0;
    for (int i = 0; i < cancels; i++) {
        b.token = mcp_cancellation_new();
        sem_post(&b.go);
        log_wait(log, ++calls, heard_count, 0);
        double t0 = now_us();
        mcp_cancellation_cancel(b.token, NULL);
        double t1 = now_us();
        sem_wait(&b.done);
        if (b.status != MCP_STATUS_CANCELLED) die("bench: a cancelled call did not say so");
        ret[i] = t1 - t0;
        woke[i] = b.returned - t0;
        /* The test server may miss a stream that closes while it is still writing the
         * response head: count those apart instead of waiting forever. */
        if (log_wait(log, calls, heard_count + 1, 2000)) {
            double last;
            log_snapshot(log, NULL, NULL, &last);
            heard[heard_n++] = last - t0;
        } else {
            missed++;
        }
        log_snapshot(log, NULL, &heard_count, NULL);
        mcp_cancellation_free(b.token);
    }
    b.quit = true;
    sem_post(&b.go);
    pthread_join(thread, NULL);
    char name[64];
    snprintf(name, sizeof name, "%s.cancel_return", prefix);
    report("mcpc", name, ret, cancels, NULL);
    snprintf(name, sizeof name, "%s.cancel_to_caller", prefix);
    report("mcpc", name, woke, cancels, NULL);
    snprintf(name, sizeof name, "%s.cancel_to_server", prefix);
    if (heard_n > 0) report("mcpc", name, heard, heard_n, NULL);
    printf("impl=mcpc case=%s.cancel_unseen count=%d of=%d\n", prefix, missed, cancels);
    free(ret);
    free(woke);
    free(heard);
}

/* ---- cost: memory and threads ---- */

static long status_field(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long value = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0) value = atol(line + len);
    fclose(f);
    return value;
}

typedef struct {
    mcp_client *client;
    pthread_barrier_t *start;
} parked_caller;

static void *slow_caller(void *arg) {
    parked_caller *p = arg;
    pthread_barrier_wait(p->start);
    /* Ends with CLOSED when the client closes; the status is not the point. */
    mcp_result_free(mcp_client_call_tool(p->client, "slow", "{\"ms\":60000}", NULL));
    return NULL;
}

/* RSS (KiB) and threads added by one idle client, then per call in flight: N caller threads
 * are created and parked first, so their own stacks are in the baseline. */
static void cost(mcp_client *(*make)(void *), void *arg, server_log *log, const char *prefix) {
    enum { N = 32 };
    long rss0 = status_field("VmRSS:"), threads0 = status_field("Threads:");
    mcp_client *client = make(arg);
    check(mcp_client_ping(client, NULL), "ping");
    long rss1 = status_field("VmRSS:"), threads1 = status_field("Threads:");
    printf("impl=mcpc case=%s.idle rss_kib=%ld threads=%ld\n", prefix, rss1 - rss0,
           threads1 - threads0);

    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, N + 1);
    pthread_t ids[N];
    parked_caller p = {client, &start};
    for (int i = 0; i < N; i++) pthread_create(&ids[i], NULL, slow_caller, &p);
    usleep(20000);
    long rss2 = status_field("VmRSS:"), threads2 = status_field("Threads:");
    long calls;
    log_snapshot(log, &calls, NULL, NULL);
    pthread_barrier_wait(&start);
    log_wait(log, calls + N, 0, 0);
    usleep(20000);
    long rss3 = status_field("VmRSS:"), threads3 = status_field("Threads:");
    printf("impl=mcpc case=%s.inflight rss_kib=%.1f threads=%.2f\n", prefix,
           (double)(rss3 - rss2) / N, (double)(threads3 - threads2) / N);
    mcp_client_close(client);
    for (int i = 0; i < N; i++) pthread_join(ids[i], NULL);
    mcp_client_free(client);
    pthread_barrier_destroy(&start);
}

static const char *cost_log_path;
static mcp_client *make_stdio(void *arg) { return stdio_client(*(int *)arg, cost_log_path); }
static mcp_client *make_http(void *arg) { return http_client(arg, MCP_CONNECT_MODE_LEGACY); }

/* ---- connect time ---- */

static void connect_time(const char *name, http_server *s, int mode, int rounds) {
    double *samples = malloc(sizeof(double) * (size_t)rounds);
    for (int i = 0; i < rounds; i++) {
        double t0 = now_us();
        mcp_client *client = s ? http_client(s, mode) : stdio_client(mode, NULL);
        samples[i] = now_us() - t0;
        mcp_client_free(client);
    }
    report("mcpc", name, samples, rounds, NULL);
    free(samples);
}

/* Whether MCPC_BENCH_SECTIONS (comma-separated; unset: all) names `name`. */
static bool section(const char *name) {
    const char *list = getenv("MCPC_BENCH_SECTIONS");
    if (!list || !*list) return true;
    size_t len = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += len)
        if ((p == list || p[-1] == ',') && (p[len] == ',' || p[len] == 0)) return true;
    return false;
}

int main(int argc, char **argv) {
    if (argc != 5) die("usage: bench SERVER ITERATIONS SECONDS CANCELS");
    signal(SIGPIPE, SIG_IGN);
    server = argv[1];
    int iterations = atoi(argv[2]), cancels = atoi(argv[4]);
    double seconds = atof(argv[3]);
    snprintf(echo_args, sizeof echo_args, "{\"text\":\"%s\"}", kib_text());
    int modes[] = {MCP_CONNECT_MODE_LEGACY, MCP_CONNECT_MODE_MODERN};
    const char *eras[] = {"legacy", "modern"};

    /* MCPC_BENCH_PROFILE=stdio (or 1), =modern (stdio, modern era), =http or =http-modern:
     * only sequential echo calls, a steady loop to run under perf or callgrind;
     * =completion: the completion API's throughput loop (8 then 16 in flight). */
    const char *profile = getenv("MCPC_BENCH_PROFILE");
    if (profile && strcmp(profile, "completion") == 0) {
        /* The completion API from one thread, 16 in flight, for `seconds`. */
        mcp_client *client = stdio_client(MCP_CONNECT_MODE_LEGACY, NULL);
        completion_throughput(client, "profile", seconds);
        mcp_client_free(client);
        return 0;
    }
    if (profile) {
        bool http = strncmp(profile, "http", 4) == 0;
        int mode = strstr(profile, "modern") ? MCP_CONNECT_MODE_MODERN : MCP_CONNECT_MODE_LEGACY;
        http_server s = {0};
        if (http) s = start_http(mode == MCP_CONNECT_MODE_MODERN, NULL);
        mcp_client *client = http ? http_client(&s, mode) : stdio_client(mode, NULL);
        sequential(client, profile, false, iterations);
        mcp_client_free(client);
        if (http) stop_http(&s);
        return 0;
    }

    /* Cost first, while the process is small and its heap unfragmented. */
    server_log cost_log;
    log_open(&cost_log);
    cost_log_path = cost_log.path;
    if (section("cost")) {
        cost(make_stdio, &modes[0], &cost_log, "stdio");
        http_server hs = start_http(0, cost_log.path);
        cost(make_http, &hs, &cost_log, "http");
        stop_http(&hs);
    }

    /* Sequential round trips and throughput, stdio then HTTP, each era. */
    for (int e = 0; e < 2; e++) {
        if (!section(e ? "modern" : "stdio")) continue;
        char prefix[32];
        snprintf(prefix, sizeof prefix, "stdio%s", e ? ".modern" : "");
        mcp_client *client = stdio_client(modes[e], NULL);
        sequential(client, prefix, e == 0, iterations);
        if (e == 0) throughput(client, "stdio", seconds);
        if (e == 0) completion_throughput(client, "stdio", seconds);
        mcp_client_free(client);
    }
    for (int e = 0; e < 2 && section("http"); e++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "http.%s", eras[e]);
        http_server s = start_http(e, NULL);
        mcp_client *client = http_client(&s, modes[e]);
        sequential(client, prefix, e == 0, iterations);
        throughput(client, prefix, seconds);
        mcp_client_free(client);
        stop_http(&s);
    }

    /* Cancellation: stdio (the notice) in each era, modern HTTP (the stream closes). */
    for (int e = 0; e < 2 && section("cancel"); e++) {
        server_log log;
        log_open(&log);
        mcp_client *client = stdio_client(modes[e], log.path);
        cancellation(client, &log, e ? "stdio.modern" : "stdio", cancels);
        mcp_client_free(client);
        unlink(log.path);
    }
    if (section("cancel")) {
        server_log log;
        log_open(&log);
        http_server s = start_http(1, log.path);
        mcp_client *client = http_client(&s, MCP_CONNECT_MODE_MODERN);
        cancellation(client, &log, "http.modern", cancels);
        mcp_client_free(client);
        stop_http(&s);
        unlink(log.path);
    }

    /* Connect time: stdio includes starting the server process. */
    int rounds = iterations < 50 ? iterations : 50;
    if (section("connect")) {
        connect_time("stdio.legacy.connect", NULL, MCP_CONNECT_MODE_LEGACY, rounds);
        connect_time("stdio.modern.connect", NULL, MCP_CONNECT_MODE_MODERN, rounds);
    }
    for (int e = 0; e < 2 && section("connect"); e++) {
        http_server s = start_http(e, NULL);
        char name[64];
        snprintf(name, sizeof name, "http.%s.connect", eras[e]);
        connect_time(name, &s, modes[e], rounds);
        stop_http(&s);
    }
    unlink(cost_log.path);
    return 0;
}
