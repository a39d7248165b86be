/* What bench.c, floor.c, many_clients.c and large_results.c share: clocks, percentiles, the
 * output format, spawning servers. Each program uses some of them: `static inline` keeps the
 * rest quiet. */
#ifndef MCPC_BENCH_COMMON_H
#define MCPC_BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static inline void die(const char *message) {
    fprintf(stderr, "%s\n", message);
    exit(1);
}

static inline double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* CPU time of the whole process, every thread, user and system. */
static inline double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec +
           usage.ru_stime.tv_usec / 1e6;
}

/* Context switches of the whole process, every thread, voluntary and not: each is a thread that
 * blocked or was descheduled, the cost of handing work between threads. */
static inline long context_switches(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_nvcsw + usage.ru_nivcsw;
}

static inline int warmup(int iterations) { return iterations < 200 ? iterations / 4 + 1 : 200; }

/* The 1 KiB of text every echo call carries. */
static inline const char *kib_text(void) {
    static char text[1025];
    if (!text[0]) {
        memset(text, 'x', 1024);
        text[1024] = 0;
    }
    return text;
}

static inline int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static inline double percentile(double *sorted, int n, double p) {
    return sorted[(int)((n - 1) * p + 0.5)];
}

/* What the client process spent over a stretch of calls: CPU and context switches. */
typedef struct {
    double cpu;
    long switches;
} usage_mark;

static inline usage_mark usage_now(void) {
    return (usage_mark){cpu_seconds(), context_switches()};
}

/* Appends " cpu=US csw=N" per call since `since` (both for the whole process). */
static inline void print_usage_per_call(usage_mark since, long calls) {
    usage_mark now = usage_now();
    printf(" cpu=%.2f csw=%.2f", (now.cpu - since.cpu) * 1e6 / calls,
           (double)(now.switches - since.switches) / calls);
}

/* One latency case: microseconds per sample, then CPU and context switches per sample since
 * `since` (a NULL since: not measured). */
static inline void report(const char *impl, const char *name, double *samples, int n,
                          const usage_mark *since) {
    usage_mark mark = since ? *since : (usage_mark){0, 0};
    if (since) {
        /* Taken before sorting, so the sort is not charged to the calls. */
        usage_mark now = usage_now();
        mark.cpu = now.cpu - mark.cpu;
        mark.switches = now.switches - mark.switches;
    }
    qsort(samples, (size_t)n, sizeof *samples, compare_doubles);
    printf("impl=%s case=%s p50=%.1f p99=%.1f max=%.1f", impl, name,
           percentile(samples, n, 0.5), percentile(samples, n, 0.99), samples[n - 1]);
    if (since) printf(" cpu=%.2f csw=%.2f", mark.cpu * 1e6 / n, (double)mark.switches / n);
    printf("\n");
    fflush(stdout);
}

/* One throughput case: calls per second, and CPU and context switches per call since `since`. */
static inline void report_rate(const char *impl, const char *name, long calls,
                               double seconds, usage_mark since) {
    printf("impl=%s case=%s rate=%.0f", impl, name, calls / seconds);
    print_usage_per_call(since, calls);
    printf("\n");
    fflush(stdout);
}

/* The numbers of calls in flight every throughput case is run with. */
static const int in_flight_counts[] = {1, 8, 16};
enum { IN_FLIGHT_CASES = 3, MAX_IN_FLIGHT = 16 };

/* Runs argv with pipes to its stdin and from its stdout; stderr is inherited. */
static inline pid_t spawn(char *const argv[], int *to_child, int *from_child) {
    int in[2], out[2];
    if (pipe(in) || pipe(out)) die("pipe failed");
    pid_t pid = fork();
    if (pid < 0) die("fork failed");
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    *to_child = in[1];
    *from_child = out[0];
    return pid;
}

/* Starts the test server on HTTP (any free port) with `flags` (NULL-terminated, at most 6)
 * after `--http 0`, and copies its URL into `url`. It exits when `*to_server` is closed. */
static inline pid_t spawn_http_server_with(const char *server, const char *const *flags,
                                           char *url, int *to_server) {
    char *argv[10];
    int argc = 0;
    argv[argc++] = (char *)server;
    argv[argc++] = "--http";
    argv[argc++] = "0";
    while (*flags && argc < 9) argv[argc++] = (char *)*flags++;
    argv[argc] = NULL;
    int from_server;
    pid_t pid = spawn(argv, to_server, &from_server);
    /* "listening on URL\n", read byte by byte so nothing after it is consumed. */
    char line[256];
    size_t len = 0;
    while (len + 1 < sizeof line && read(from_server, &line[len], 1) == 1 && line[len] != '\n')
        len++;
    line[len] = 0;
    /* from_server stays open: a closed pipe would kill the server with SIGPIPE if it wrote. */
    const char *prefix = "listening on ";
    if (strncmp(line, prefix, strlen(prefix)) != 0) die("the HTTP server did not start");
    strcpy(url, line + strlen(prefix));
    return pid;
}

/* The same, with --modern when `modern` and `--log LOG` when `log` is not NULL. */
static inline pid_t spawn_http_server(const char *server, int modern, const char *log,
                                      char *url, int *to_server) {
    const char *flags[4];
    int n = 0;
    if (modern) flags[n++] = "--modern";
    if (log) {
        flags[n++] = "--log";
        flags[n++] = log;
    }
    flags[n] = NULL;
    return spawn_http_server_with(server, flags, url, to_server);
}

#endif
