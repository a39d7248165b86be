/*
 * Many idle clients in one process (issue 33): what each costs while it waits, and how long
 * connecting, pinging and closing all of them takes, one after another.
 *
 *   many_clients stdio SERVER N         N stdio clients, each with its own SERVER process
 *                                       (bench/echo_server.c), handshake era (initialize)
 *   many_clients stdio-bg SERVER N      the same, closed in the background
 *                                       (mcp_client_options_set_close_in_background)
 *   many_clients http-legacy SERVER N   N clients of one test server (--http), handshake era,
 *                                       each with its standalone GET stream open
 *   many_clients http-modern SERVER N   the same, modern era (server/discover for ping)
 *   many_clients http-sse SERVER N      the same over the 2024-11-05 HTTP+SSE transport (the
 *                                       server with --sse, the transport pinned), each client
 *                                       with its event stream open
 *   many_clients http-modern-waiting SERVER N
 *                                       the same, each client with a started request waiting
 *                                       on its SSE stream (`subscriptions/listen` through
 *                                       mcp_client_start; measured once the workers that
 *                                       started them have gone idle and left, after 6 s)
 *
 * Threads (Threads:), RSS (VmRSS:), descriptors (/proc/self/fd; sockets counted apart) and, with
 * glibc, the heap in use (mallinfo2) are read before the first client and after all N are
 * connected and have answered one ping, idle (HTTP: for longer than the library's pool idle
 * age, so that the connections the requests left in the pool are closed, as they are in a
 * host whose clients sit idle); the difference is the library's. Unlike RSS, the
 * heap does not move with the machine's load. `close` is the time to close and free every
 * client; `reaped` the time from the same start until no server process of ours is left
 * unreaped (stdio: the same as close unless the servers end in the background). Output: one
 * `key=value` line, read by bench/table.py (heap_bytes only with glibc):
 *
 *   impl=mcpc case=many.stdio.N threads=ALL rss_kib=PER_CLIENT fds=PER_CLIENT
 *       sockets=PER_CLIENT heap_bytes=PER_CLIENT connect=S ping=S close=S reaped=S
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include "../include/mcpc.h"
#include "common.h"
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
#include <malloc.h>
#define HAVE_MALLINFO2 1
#endif

/* How long the library lets a connection sit idle in its pool (src/transport/http/pool_watch.rs). */
#define POOL_IDLE_AGE_US 4000000

static void check(mcp_result *result, const char *what, int i) {
    if (mcp_result_status(result) != MCP_STATUS_OK) {
        fprintf(stderr, "many_clients: %s of client %d failed: status %d: %s\n", what, i,
                mcp_result_status(result),
                mcp_result_message(result) ? mcp_result_message(result) : "");
        exit(1);
    }
    mcp_result_free(result);
}

static long status_field(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long value = -1;
    if (!f) return -1; /* no /proc (not Linux): the counts print as 0 */
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0) value = atol(line + len);
    fclose(f);
    return value;
}

/* What the process holds now: threads, RSS (KiB), descriptors and, of those, sockets, and the
 * heap bytes in use (-1: unknown). */
typedef struct {
    long threads, rss_kib, fds, sockets;
    double heap_bytes;
} holdings;

static double heap_in_use(void) {
#ifdef HAVE_MALLINFO2
    struct mallinfo2 info = mallinfo2();
    return (double)(info.uordblks + info.hblkhd); /* small blocks, and those mmapped apart */
#else
    return -1;
#endif
}

static holdings holdings_now(void) {
    holdings h = {status_field("Threads:"), status_field("VmRSS:"), 0, 0, heap_in_use()};
    DIR *dir = opendir("/proc/self/fd");
    struct dirent *entry;
    if (!dir) return h;
    while ((entry = readdir(dir))) {
        if (entry->d_name[0] == '.') continue;
        char target[64];
        ssize_t len = readlinkat(dirfd(dir), entry->d_name, target, sizeof target - 1);
        h.fds++;
        if (len > 0 && strncmp(target, "socket:", 7) == 0) h.sockets++;
    }
    closedir(dir);
    return h;
}

/* Each stdio client holds several descriptors, and the HTTP test server (started by us, so
 * with our limit) a socket per connection: raise the soft limit to the hard one. */
/* This process's children, exited or not, that nobody has reaped (each thread lists those it
 * started). */
static long children_now(void) {
    long count = 0;
    DIR *dir = opendir("/proc/self/task");
    if (!dir) return -1;
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        if (entry->d_name[0] == '.') continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/children", entry->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        long pid;
        while (fscanf(f, "%ld", &pid) == 1) count++;
        fclose(f);
    }
    closedir(dir);
    return count;
}

static void raise_descriptor_limit(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_NOFILE, &limit);
    }
}

int main(int argc, char **argv) {
    if (argc != 4)
        die("usage: many_clients stdio|stdio-bg|http-legacy|http-modern|http-modern-waiting|"
            "http-sse SERVER N");
    const char *transport = argv[1], *server = argv[2];
    int n = atoi(argv[3]);
    if (n <= 0) die("many_clients: N must be at least 1");
    bool http = strncmp(transport, "http", 4) == 0;
    bool modern = strncmp(transport, "http-modern", 11) == 0;
    bool waiting = strcmp(transport, "http-modern-waiting") == 0;
    bool sse = strcmp(transport, "http-sse") == 0;
    bool background = strcmp(transport, "stdio-bg") == 0;
    if (!http && !background && strcmp(transport, "stdio") != 0)
        die("many_clients: unknown transport");
    signal(SIGPIPE, SIG_IGN);
    raise_descriptor_limit();

    char url[256];
    int to_server = -1;
    const char *sse_flags[] = {"--sse", NULL};
    pid_t server_pid = sse    ? spawn_http_server_with(server, sse_flags, url, &to_server)
                       : http ? spawn_http_server(server, modern, NULL, url, &to_server)
                              : 0;
    mcp_client_options *options = mcp_client_options_new();
    mcp_client_options_set_mode(options,
                                modern ? MCP_CONNECT_MODE_MODERN : MCP_CONNECT_MODE_LEGACY);
    mcp_client_options_set_close_in_background(options, background);
    if (sse) mcp_client_options_set_http_transport(options, MCP_HTTP_TRANSPORT_LEGACY_SSE);
    const char *server_argv[] = {server, NULL};
    mcp_client **clients = calloc((size_t)n, sizeof *clients);

    holdings before = holdings_now();
    double t0 = now_us();
    for (int i = 0; i < n; i++) {
        clients[i] = http ? mcp_client_new_http(url, options)
                          : mcp_client_new_stdio(server_argv, options);
        check(mcp_client_connect(clients[i]), "connect", i);
    }
    double t1 = now_us();
    /* The modern era has no ping: server/discover is its smallest round trip. */
    for (int i = 0; i < n; i++)
        check(modern ? mcp_client_discover(clients[i], NULL) : mcp_client_ping(clients[i], NULL),
              "ping", i);
    double t2 = now_us();
    mcp_completion_queue *queue = waiting ? mcp_completion_queue_new() : NULL;
    if (waiting) {
        mcp_request *listen = mcp_request_other("subscriptions/listen",
                                                "{\"notifications\":{\"toolsListChanged\":true}}");
        for (int i = 0; i < n; i++)
            if (mcp_client_start(clients[i], listen, NULL, queue, (uint64_t)i) != MCP_STATUS_OK)
                die("many_clients: a listen could not be started");
        mcp_request_free(listen);
    }
    /* The standalone GET streams opened after connect settle; over HTTP, the pooled
     * connections are closed once idle for the library's idle age (4 s). The workers that
     * started the waiting requests stay idle for 5 s before they end: after 6 s, the threads
     * are counted once their count has not moved for a second (at most 30 s in all). */
    usleep(http ? POOL_IDLE_AGE_US + 1000000 : 200000);
    if (waiting) {
        usleep(1000000);
        long threads = holdings_now().threads, still = 0;
        for (int waited = 0; still < 10 && waited < 240; waited++) {
            usleep(100000);
            long now = holdings_now().threads;
            still = now == threads ? still + 1 : 0;
            threads = now;
        }
    }
    holdings after = holdings_now();

    double t3 = now_us();
    for (int i = 0; i < n; i++) {
        mcp_client_close(clients[i]);
        mcp_client_free(clients[i]);
    }
    double t4 = now_us();
    /* The HTTP test server is ours too, and stays until the end. */
    long others = http ? 1 : 0;
    while (children_now() > others && now_us() - t3 < 30e6) usleep(1000);
    double t5 = now_us();

    char heap[64] = "";
    if (before.heap_bytes >= 0)
        snprintf(heap, sizeof heap, " heap_bytes=%.0f",
                 (after.heap_bytes - before.heap_bytes) / n);
    printf("impl=mcpc case=many.%s.%d threads=%ld rss_kib=%.1f fds=%.2f sockets=%.2f%s "
           "connect=%.6f ping=%.6f close=%.6f reaped=%.6f\n",
           transport, n, after.threads - before.threads,
           (double)(after.rss_kib - before.rss_kib) / n, (double)(after.fds - before.fds) / n,
           (double)(after.sockets - before.sockets) / n, heap, (t1 - t0) / 1e6, (t2 - t1) / 1e6,
           (t4 - t3) / 1e6, (t5 - t3) / 1e6);
    fflush(stdout);
    mcp_completion_queue_free(queue);
    mcp_client_options_free(options);
    free(clients);
    if (http) {
        close(to_server);
        waitpid(server_pid, NULL, 0);
    }
    return 0;
}
