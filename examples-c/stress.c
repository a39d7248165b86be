/*
 * stress: many threads, one client, random cancels and timeouts, then a close in the middle.
 *
 *   stress CALLS SERVER [ARGS...]     (SERVER: mcpc-test-server; stress adds --log FILE)
 *
 * Phase 1: 8 threads make CALLS calls in all, each an `echo` of its own payload after a random
 * 0-3 ms delay. A third of the calls are cancelled by a canceller thread at a random moment,
 * a sixth have a 1-3 ms timeout, and half free their token handle before the call even starts
 * (the call keeps its own reference). Every call must end with exactly one of OK (with its own
 * payload, never another call's), CANCELLED or TIMEOUT; the server must have read exactly one
 * notifications/cancelled per cancel or timeout that won after its request was sent.
 * Phase 2: 8 threads block in calls that never end, and the main thread closes the client:
 * every call returns CLOSED.
 *
 * Modes (environment variables), each also run by ctest:
 * - MCPC_STRESS_CALLBACKS=1: a quarter of the calls are to the `progress` tool with a progress
 *   callback that makes a request on the same client (mcp_client_ping) from the callback thread;
 *   every such ping must succeed.
 * - MCPC_STRESS_PAD=BYTES: every echo carries BYTES of padding, so that a server that stops
 *   reading (ctest passes --pause-reading-every N:MS to the server) soon has its stdin pipe full
 *   and writers block until it reads again.
 * - MCPC_STRESS_COMPLETION=1: beside the 8 blocking threads, an event-loop thread keeps 16 calls
 *   in flight on a completion queue, refilling the freed slots with mcp_client_start_batch (as
 *   many calls again as the blocking threads make), with the same mix of cancels, timeouts and
 *   tokens freed in use, checked the same way; in phase 2 it also has 8 calls pending on its queue at the close, each of which
 *   must be in the queue, CLOSED, when the close returns.
 *
 * - MCPC_STRESS_NEIGHBOURS=N: N more clients, each with a server of its own, share the library's
 *   reactor and pools with the stressed one (half of them closed in the background,
 *   mcp_client_options_set_close_in_background). While phase 1 runs, a thread pings them at
 *   random (every ping must succeed) and closes and frees every fourth one; the rest are closed
 *   and freed after phase 2. The neighbours' traffic must change nothing above.
 *
 * Built plain, with ASan/UBSan and with TSan, and run under valgrind, by ctest. With
 * MCPC_STRESS_RACE_CANARY set, the workers also bump a counter without a lock: a data race on
 * purpose, which the TSan build must report (ctest checks that it does, so a TSan build that
 * silently stopped checking would fail).
 */
#include "mcpc.h"

#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 8

static mcp_client *client;
static int calls_per_thread;

/* Totals, under `totals_lock`. */
static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static long ok_calls, cancelled_calls, timed_out_calls, notices_expected, failures;
static long callback_pings;

static int callbacks_mode; /* MCPC_STRESS_CALLBACKS */
static int completion_mode; /* MCPC_STRESS_COMPLETION */
static char *padding = "";  /* MCPC_STRESS_PAD */

static long race_canary; /* written without a lock, only with MCPC_STRESS_RACE_CANARY */

static void failure(const char *what, long call, const mcp_result *r) {
    pthread_mutex_lock(&totals_lock);
    failures++;
    pthread_mutex_unlock(&totals_lock);
    fprintf(stderr, "stress: FAIL call %ld: %s (%s: %s)\n", call, what,
            mcp_status_name((int)mcp_result_status(r)), mcp_result_message(r));
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* ---- MCPC_STRESS_NEIGHBOURS: idle clients beside the stressed one ------------------------ */

static int neighbour_count;
static mcp_client **neighbours; /* NULL once closed and freed */
static int phase1_over;         /* set (atomically) once phase 1's workers have ended */

static void neighbours_connect(const char *server) {
    mcp_client_options *background = mcp_client_options_new();
    mcp_client_options_set_close_in_background(background, true);
    const char *argv[] = {server, NULL};
    neighbours = calloc((size_t)neighbour_count, sizeof *neighbours);
    for (int i = 0; i < neighbour_count; i++) {
        neighbours[i] = mcp_client_new_stdio(argv, i % 2 ? background : NULL);
        mcp_result *r = mcp_client_connect(neighbours[i]);
        if (mcp_result_status(r) != MCP_STATUS_OK)
            failure("a neighbour's connect", i, r);
        mcp_result_free(r);
    }
    mcp_client_options_free(background);
}

static void neighbour_close(int i) {
    mcp_client_close(neighbours[i]);
    mcp_client_free(neighbours[i]);
    neighbours[i] = NULL;
}

/* Pings neighbours at random while phase 1 runs; closes every fourth one on the way. */
static void *neighbours_main(void *arg) {
    (void)arg;
    unsigned seed = 7;
    int next_to_close = 0;
    while (!__atomic_load_n(&phase1_over, __ATOMIC_ACQUIRE)) {
        int i = rand_r(&seed) % neighbour_count;
        if (neighbours[i] != NULL) {
            mcp_result *r = mcp_client_ping(neighbours[i], NULL);
            if (mcp_result_status(r) != MCP_STATUS_OK)
                failure("a neighbour's ping", i, r);
            mcp_result_free(r);
        }
        if (rand_r(&seed) % 8 == 0 && next_to_close < neighbour_count) {
            neighbour_close(next_to_close);
            next_to_close += 4;
        }
        sleep_us(200);
    }
    return NULL;
}

/* ---- The canceller: each worker hands it tokens to cancel (and free) later ------------- */

struct pending_cancel {
    mcp_cancellation *token; /* owned by the canceller once queued */
    long delay_us;
};

struct canceller {
    pthread_mutex_t lock;
    pthread_cond_t ready;
    struct pending_cancel queue[4];
    int count;
    int done;
};

static void *canceller_main(void *arg) {
    struct canceller *c = arg;
    for (;;) {
        pthread_mutex_lock(&c->lock);
        while (c->count == 0 && !c->done)
            pthread_cond_wait(&c->ready, &c->lock);
        if (c->count == 0) {
            pthread_mutex_unlock(&c->lock);
            return NULL;
        }
        struct pending_cancel p = c->queue[--c->count];
        pthread_mutex_unlock(&c->lock);
        sleep_us(p.delay_us);
        mcp_cancellation_cancel(p.token, "stress");
        mcp_cancellation_free(p.token); /* the call, if still running, holds its own reference */
    }
}

static pthread_t canceller_start(struct canceller *c) {
    c->count = 0;
    c->done = 0;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->ready, NULL);
    pthread_t thread;
    pthread_create(&thread, NULL, canceller_main, c);
    return thread;
}

/* Lets the canceller finish what it was handed, then ends it. */
static void canceller_stop(struct canceller *c, pthread_t thread) {
    pthread_mutex_lock(&c->lock);
    c->done = 1;
    pthread_cond_signal(&c->ready);
    pthread_mutex_unlock(&c->lock);
    pthread_join(thread, NULL);
    pthread_cond_destroy(&c->ready);
    pthread_mutex_destroy(&c->lock);
}

static void canceller_queue(struct canceller *c, mcp_cancellation *token, long delay_us) {
    pthread_mutex_lock(&c->lock);
    while (c->count == 4) { /* rare: let the canceller catch up */
        pthread_mutex_unlock(&c->lock);
        sleep_us(100);
        pthread_mutex_lock(&c->lock);
    }
    c->queue[c->count++] = (struct pending_cancel){token, delay_us};
    pthread_cond_signal(&c->ready);
    pthread_mutex_unlock(&c->lock);
}

/* ---- Progress callbacks that call back in ----------------------------------------------- */

/* Runs on the client's callback thread: a request on the same client from there must work. */
static void ping_on_progress(void *userdata, const char *token_json, double progress,
                             double total, const char *message) {
    (void)userdata, (void)token_json, (void)progress, (void)total, (void)message;
    mcp_result *r = mcp_client_ping(client, NULL);
    if (mcp_result_status(r) != MCP_STATUS_OK)
        failure("a ping from a progress callback failed", -1, r);
    pthread_mutex_lock(&totals_lock);
    callback_pings++;
    pthread_mutex_unlock(&totals_lock);
    mcp_result_free(r);
}

/* ---- Phase 1 ---------------------------------------------------------------------------- */

/* Counts one call's outcome; an OK result must hold `want_text`, its own call's text. */
static void account(long call, mcp_result *r, const char *want_text) {
    mcp_status status = mcp_result_status(r);
    pthread_mutex_lock(&totals_lock);
    if (status == MCP_STATUS_OK)
        ok_calls++;
    else if (status == MCP_STATUS_CANCELLED)
        cancelled_calls++;
    else if (status == MCP_STATUS_TIMEOUT)
        timed_out_calls++;
    /* A notice is owed only when the request was on the wire (it has an id). */
    if ((status == MCP_STATUS_CANCELLED || status == MCP_STATUS_TIMEOUT) &&
        mcp_result_request_id(r) != 0)
        notices_expected++;
    pthread_mutex_unlock(&totals_lock);

    if (status == MCP_STATUS_OK) {
        char want[96];
        snprintf(want, sizeof want, "\"text\":\"%s\"", want_text);
        if (strstr(mcp_result_json(r), want) == NULL)
            failure("a response was delivered to the wrong call", call, r);
    } else if (status != MCP_STATUS_CANCELLED && status != MCP_STATUS_TIMEOUT) {
        failure("unexpected status", call, r);
    }
}

static void *worker_main(void *arg) {
    long thread = (long)(intptr_t)arg;
    unsigned int seed = (unsigned int)(thread * 7919 + 1);
    struct canceller canceller;
    pthread_t canceller_thread = canceller_start(&canceller);
    if (getenv("MCPC_STRESS_RACE_CANARY") != NULL)
        race_canary++;

    for (int i = 0; i < calls_per_thread; i++) {
        long call = thread * calls_per_thread + i;
        char payload[64];
        snprintf(payload, sizeof payload, "t%ld-c%d", thread, i);
        int with_progress = callbacks_mode && rand_r(&seed) % 4 == 0;
        size_t args_size = strlen(padding) + 128;
        char *args = malloc(args_size);
        if (with_progress)
            snprintf(args, args_size, "{\"steps\":2}");
        else
            snprintf(args, args_size, "{\"text\":\"%s\",\"delay_ms\":%d,\"pad\":\"%s\"}",
                     payload, rand_r(&seed) % 4, padding);

        mcp_cancellation *token = mcp_cancellation_new();
        mcp_request_options *opts = mcp_request_options_new();
        mcp_request_options_set_cancellation(opts, token);
        if (with_progress)
            mcp_request_options_set_progress_callback(opts, ping_on_progress, NULL);
        int plan = rand_r(&seed) % 6;
        if (plan == 0) /* a timeout of 1-3 ms */
            mcp_request_options_set_timeout_ms(opts, (uint64_t)(1 + rand_r(&seed) % 3));
        if (plan == 1 || plan == 2) /* a cancel within 0-3 ms; the canceller frees the token */
            canceller_queue(&canceller, token, rand_r(&seed) % 3000);
        else
            mcp_cancellation_free(token); /* freed while in use: the options keep a reference */

        mcp_result *r =
            mcp_client_call_tool(client, with_progress ? "progress" : "echo", args, opts);
        free(args);
        account(call, r, with_progress ? "done" : payload);
        mcp_result_free(r);
        mcp_request_options_free(opts);
    }

    canceller_stop(&canceller, canceller_thread);
    return NULL;
}

/* ---- Phase 1, MCPC_STRESS_COMPLETION: an event loop with many calls in flight ------------ */

#define IN_FLIGHT 16

static long completion_calls; /* how many calls the event loop makes */

struct slot {
    long call;
    char payload[64];
};

/* One call about to start: its request, options and token, and what becomes of the token. */
struct start {
    mcp_request *request;
    mcp_request_options *opts;
    mcp_cancellation *token;
    int plan;
};

/* Makes call `call` for `slot`: an echo with a random plan, as the blocking workers make. */
static struct start make_call(struct slot *slots, uint64_t slot, long call, unsigned int *seed) {
    slots[slot].call = call;
    snprintf(slots[slot].payload, sizeof slots[slot].payload, "e-c%ld", call);
    size_t args_size = strlen(padding) + 128;
    char *args = malloc(args_size);
    snprintf(args, args_size, "{\"text\":\"%s\",\"delay_ms\":%d,\"pad\":\"%s\"}",
             slots[slot].payload, rand_r(seed) % 4, padding);
    struct start s = {.request = mcp_request_call_tool("echo", args),
                      .opts = mcp_request_options_new(),
                      .token = mcp_cancellation_new(),
                      .plan = rand_r(seed) % 6};
    free(args);
    mcp_request_options_set_cancellation(s.opts, s.token);
    if (s.plan == 0)
        mcp_request_options_set_timeout_ms(s.opts, (uint64_t)(1 + rand_r(seed) % 3));
    return s;
}

/* Starts the calls made for the `count` slots in `tags`, together (one batch: their requests
 * leave in one write), then hands their tokens to the canceller or frees them in use. */
static void start_calls(mcp_completion_queue *queue, struct start *starts, const uint64_t *tags,
                        size_t count, unsigned int *seed, struct canceller *canceller) {
    const mcp_request *requests[IN_FLIGHT] = {NULL};
    const mcp_request_options *opts[IN_FLIGHT] = {NULL};
    for (size_t i = 0; i < count; i++) {
        requests[i] = starts[i].request;
        opts[i] = starts[i].opts;
    }
    size_t started = 0;
    mcp_status status =
        mcp_client_start_batch(client, requests, opts, queue, tags, count, &started);
    for (size_t i = 0; i < count; i++) {
        if (starts[i].plan == 1 || starts[i].plan == 2)
            canceller_queue(canceller, starts[i].token, rand_r(seed) % 3000);
        else
            mcp_cancellation_free(starts[i].token); /* freed while in use: the call keeps a reference */
        /* The request and options may go as soon as the start has returned. */
        mcp_request_free(starts[i].request);
        mcp_request_options_free(starts[i].opts);
    }
    if (status != MCP_STATUS_OK || started != count) {
        fprintf(stderr, "stress: FAIL: mcp_client_start_batch returned %s, %zu of %zu started\n",
                mcp_status_name((int)status), started, count);
        pthread_mutex_lock(&totals_lock);
        failures++;
        pthread_mutex_unlock(&totals_lock);
    }
}

static void *event_loop_main(void *arg) {
    (void)arg;
    unsigned int seed = 4242;
    struct canceller canceller;
    pthread_t canceller_thread = canceller_start(&canceller);

    mcp_completion_queue *queue = mcp_completion_queue_new();
    struct pollfd pfd = {.fd = mcp_completion_queue_fd(queue), .events = POLLIN};
    struct slot slots[IN_FLIGHT];
    struct start starts[IN_FLIGHT];
    uint64_t freed[IN_FLIGHT];
    size_t refill = 0;
    long started = 0, finished = 0;
    for (uint64_t slot = 0; slot < IN_FLIGHT && started < completion_calls; slot++) {
        starts[refill] = make_call(slots, slot, started++, &seed);
        freed[refill++] = slot;
    }
    start_calls(queue, starts, freed, refill, &seed, &canceller);
    while (finished < started) {
        if (poll(&pfd, 1, 30000) != 1) {
            fputs("stress: FAIL: no completion within 30 s\n", stderr);
            pthread_mutex_lock(&totals_lock);
            failures++;
            pthread_mutex_unlock(&totals_lock);
            break;
        }
        uint64_t slot;
        mcp_result *r;
        refill = 0;
        while (mcp_completion_queue_pop(queue, &slot, &r)) {
            if (slot >= IN_FLIGHT) {
                failure("a completion with a tag never given", -1, r);
            } else {
                account(slots[slot].call, r, slots[slot].payload);
                finished++;
                if (started < completion_calls) {
                    starts[refill] = make_call(slots, slot, started++, &seed);
                    freed[refill++] = slot;
                }
            }
            mcp_result_free(r);
        }
        /* The freed slots are refilled together, as an event loop would after a wake-up. */
        if (refill > 0)
            start_calls(queue, starts, freed, refill, &seed, &canceller);
    }
    mcp_completion_queue_free(queue);

    canceller_stop(&canceller, canceller_thread);
    return NULL;
}

/* ---- Phase 2 ---------------------------------------------------------------------------- */

static void *blocked_main(void *arg) {
    (void)arg;
    mcp_result *r = mcp_client_call_tool(client, "never", NULL, NULL);
    if (mcp_result_status(r) != MCP_STATUS_CLOSED)
        failure("a call pending at close did not return CLOSED", -1, r);
    mcp_result_free(r);
    return NULL;
}

static long count_lines(const char *path, const char *needle) {
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    long count = 0;
    char line[8192];
    while (fgets(line, sizeof line, f) != NULL)
        count += strstr(line, needle) != NULL;
    fclose(f);
    return count;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fputs("usage: stress CALLS SERVER [ARGS...]\n", stderr);
        return 2;
    }
    calls_per_thread = atoi(argv[1]) / THREADS;
    char log_path[] = "/tmp/mcpc-stress-XXXXXX";
    int fd = mkstemp(log_path);
    if (fd < 0 || calls_per_thread <= 0)
        return 2;
    close(fd);
    callbacks_mode = getenv("MCPC_STRESS_CALLBACKS") != NULL;
    completion_mode = getenv("MCPC_STRESS_COMPLETION") != NULL;
    if (completion_mode)
        completion_calls = (long)calls_per_thread * THREADS;
    if (getenv("MCPC_STRESS_PAD") != NULL) {
        size_t pad = (size_t)atol(getenv("MCPC_STRESS_PAD"));
        padding = malloc(pad + 1);
        memset(padding, 'x', pad);
        padding[pad] = '\0';
    }

    /* The server's argv: ours, then --log FILE. */
    const char *server_argv[64];
    int n = 0;
    for (int i = 2; i < argc && n < 60; i++)
        server_argv[n++] = argv[i];
    server_argv[n++] = "--log";
    server_argv[n++] = log_path;
    server_argv[n] = NULL;

    if (getenv("MCPC_STRESS_NEIGHBOURS") != NULL) {
        neighbour_count = atoi(getenv("MCPC_STRESS_NEIGHBOURS"));
        if (neighbour_count > 0)
            neighbours_connect(argv[2]);
    }
    client = mcp_client_new_stdio(server_argv, NULL);
    mcp_result *r = mcp_client_connect(client);
    if (mcp_result_status(r) != MCP_STATUS_OK) {
        failure("connect", -1, r);
        return 1;
    }
    mcp_result_free(r);

    pthread_t threads[THREADS], event_loop, neighbours_thread;
    for (long t = 0; t < THREADS; t++)
        pthread_create(&threads[t], NULL, worker_main, (void *)(intptr_t)t);
    if (completion_mode)
        pthread_create(&event_loop, NULL, event_loop_main, NULL);
    if (neighbour_count > 0)
        pthread_create(&neighbours_thread, NULL, neighbours_main, NULL);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    if (completion_mode)
        pthread_join(event_loop, NULL);
    __atomic_store_n(&phase1_over, 1, __ATOMIC_RELEASE);
    if (neighbour_count > 0)
        pthread_join(neighbours_thread, NULL);

    /* Phase 2: calls blocked forever (and, in completion mode, as many started on a queue),
     * then a close from this thread. */
    mcp_completion_queue *pending = completion_mode ? mcp_completion_queue_new() : NULL;
    for (long t = 0; t < THREADS; t++) {
        pthread_create(&threads[t], NULL, blocked_main, NULL);
        if (pending) {
            mcp_request *never = mcp_request_call_tool("never", NULL);
            if (mcp_client_start(client, never, NULL, pending, (uint64_t)t) != MCP_STATUS_OK) {
                fputs("stress: FAIL: a start before the close was refused\n", stderr);
                failures++;
            }
            mcp_request_free(never);
        }
    }
    sleep_us(200 * 1000);
    mcp_client_close(client); /* queued notices are written before the server's stdin closes */
    if (pending) {
        /* Every pending start completed, CLOSED, before the close returned. */
        int closed = 0;
        uint64_t tag;
        mcp_result *r;
        while (mcp_completion_queue_pop(pending, &tag, &r)) {
            if (mcp_result_status(r) == MCP_STATUS_CLOSED)
                closed++;
            else
                failure("a start pending at close did not complete CLOSED", -1, r);
            mcp_result_free(r);
        }
        if (closed != THREADS) {
            fprintf(stderr, "stress: FAIL: %d of %d pending starts were in the queue at close\n",
                    closed, THREADS);
            failures++;
        }
        mcp_completion_queue_free(pending);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    mcp_client_free(client);
    int neighbours_closed_early = 0;
    for (int i = 0; i < neighbour_count; i++) {
        if (neighbours[i] == NULL)
            neighbours_closed_early++;
        else
            neighbour_close(i);
    }
    free(neighbours);
    if (neighbour_count > 0) {
        printf("stress: %d neighbours, %d of them closed during phase 1\n", neighbour_count,
               neighbours_closed_early);
        if (neighbours_closed_early == 0) {
            fputs("stress: FAIL: no neighbour was closed while the calls ran\n", stderr);
            failures++;
        }
    }

    long notices = count_lines(log_path, "\"method\":\"notifications/cancelled\"");
    remove(log_path);
    long total = ok_calls + cancelled_calls + timed_out_calls;
    printf("stress: %ld calls (%ld through a completion queue): %ld ok, %ld cancelled, %ld timed "
           "out; %ld notices owed, %ld read by the server; %ld pings from progress callbacks\n",
           total, completion_calls, ok_calls, cancelled_calls, timed_out_calls, notices_expected,
           notices, callback_pings);
    if (padding[0] != '\0')
        free(padding);
    if (total != (long)calls_per_thread * THREADS + completion_calls) {
        fputs("stress: FAIL: some calls had no outcome\n", stderr);
        failures++;
    }
    if (notices != notices_expected) {
        fputs("stress: FAIL: the server did not read one notice per winning cancel\n", stderr);
        failures++;
    }
    if (callbacks_mode && callback_pings == 0) {
        fputs("stress: FAIL: no progress callback made its ping\n", stderr);
        failures++;
    }
    if (ok_calls == 0 || cancelled_calls + timed_out_calls == 0) {
        fputs("stress: FAIL: the mix should produce both outcomes\n", stderr);
        failures++;
    }
    return failures == 0 ? 0 : 1;
}
