/*
 * custom_transport: a transport written in C (mcp_transport_vtable), and how cancellation
 * behaves over it.
 *
 *   custom_transport
 *
 * The "transport" here is an in-process fake server: send_request answers each request
 * itself. A real one would write the request to a socket, a pipe or a message bus and wait
 * for the answer. What matters is the contract of the three functions:
 * - send_request runs on a library worker thread, one per request; it calls on_sent once the
 *   request is on the wire, then blocks until the response and hands it over;
 * - send_notification carries notifications such as notifications/cancelled;
 * - close makes every send_request still running return.
 *
 * The cases check, from the transport's side, that a cancel wakes the caller at once but
 * tells the server only once the request is on the wire (on_sent), or, for a transport that
 * never calls on_sent, once send_request has returned; and that close ends pending requests.
 */
#include "mcpc.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_EVENTS 16

static void fail(const char *what) {
    fprintf(stderr, "custom_transport: FAIL: %s\n", what);
    exit(1);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- Tiny JSON helpers: enough for the frames the library sends --------------------- */

/* Copies the string value of the first "key":"..." into out. */
static bool json_string(const char *json, const char *key, char *out, size_t cap) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *start = strstr(json, pattern);
    if (start == NULL)
        return false;
    start += strlen(pattern);
    const char *end = strchr(start, '"');
    if (end == NULL || (size_t)(end - start) >= cap)
        return false;
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return true;
}

/* Reads the integer value of the first "key":N. The library's request frames start with
 * {"jsonrpc":"2.0","id":N,..., so "id" finds the request id before anything in params. */
static bool json_int(const char *json, const char *key, int64_t *out) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":", key);
    const char *start = strstr(json, pattern);
    if (start == NULL)
        return false;
    char *end;
    *out = strtoll(start + strlen(pattern), &end, 10);
    return end != start + strlen(pattern);
}

/* ---- The fake server behind the vtable ---------------------------------------------- */

struct fake {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* broadcast on every change below */
    /* Behaviour of the "wait" tool: */
    bool calls_on_sent;  /* call on_sent (after sent_delay_ms), or never */
    long sent_delay_ms;  /* how long the request takes to reach the wire */
    long return_after_ms; /* without on_sent: send_request returns after this long */
    /* State: */
    bool closed;
    int running;         /* send_request calls in progress */
    int64_t cancelled_id; /* the last request a notifications/cancelled named */
    char events[MAX_EVENTS][32];
    int n_events;
    double sent_ms, cancel_ms, returned_ms; /* when on_sent, the cancel, the return happened */
};

static void fake_init(struct fake *f, bool calls_on_sent, long sent_delay_ms,
                      long return_after_ms) {
    memset(f, 0, sizeof *f);
    pthread_mutex_init(&f->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&f->changed, &attr);
    pthread_condattr_destroy(&attr);
    f->calls_on_sent = calls_on_sent;
    f->sent_delay_ms = sent_delay_ms;
    f->return_after_ms = return_after_ms;
}

static void fake_destroy(struct fake *f) {
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->lock);
}

/* Records an event; the lock is held. */
static void record(struct fake *f, const char *what, int64_t id) {
    if (f->n_events < MAX_EVENTS)
        snprintf(f->events[f->n_events++], sizeof f->events[0], "%s %" PRId64, what, id);
    pthread_cond_broadcast(&f->changed);
}

/* Waits on the condition variable until `deadline_ms` or a close; the lock is held.
 * Returns false if the transport was closed. */
static bool wait_until(struct fake *f, double deadline_ms) {
    long long ns = (long long)(deadline_ms * 1e6);
    struct timespec at = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    while (!f->closed && now_ms() < deadline_ms)
        pthread_cond_timedwait(&f->changed, &f->lock, &at); /* CLOCK_MONOTONIC, see fake_init */
    return !f->closed;
}

static bool reply_with(mcp_transport_reply *reply, int64_t id, const char *result) {
    char frame[512];
    snprintf(frame, sizeof frame, "{\"jsonrpc\":\"2.0\",\"id\":%" PRId64 ",\"result\":%s}", id,
             result);
    return mcp_transport_reply_set_response(reply, frame);
}

/* The "wait" tool: the one that gets cancelled. The lock is held. */
static bool wait_tool(struct fake *f, int64_t id, mcp_on_sent on_sent, void *sent_ctx,
                      mcp_transport_reply *reply) {
    record(f, "request", id);
    if (f->calls_on_sent) {
        /* The request takes a while to reach the wire (a slow link, a full buffer...). The
         * lock is released while waiting, so a cancel notice can come in meanwhile. */
        if (!wait_until(f, now_ms() + (double)f->sent_delay_ms))
            goto closed;
        f->sent_ms = now_ms();
        on_sent(sent_ctx); /* the send boundary: only now may the library send a cancel */
        /* Then the "server" works until it is told to stop. */
        while (!f->closed && f->cancelled_id != id)
            pthread_cond_wait(&f->changed, &f->lock);
        if (f->closed)
            goto closed;
    } else {
        /* A transport that cannot tell when its bytes left: it never calls on_sent. */
        if (!wait_until(f, now_ms() + (double)f->return_after_ms))
            goto closed;
        f->returned_ms = now_ms();
        record(f, "return", id);
    }
    /* A late response: the caller has gone, so the library must drop it. */
    return reply_with(reply, id, "{\"content\":[{\"type\":\"text\",\"text\":\"late answer\"}]}");
closed:
    mcp_transport_reply_set_error(reply, "the transport was closed");
    return false;
}

static bool fake_send_request(void *userdata, const char *request_json, mcp_on_sent on_sent,
                              void *sent_ctx, mcp_transport_reply *reply) {
    struct fake *f = userdata;
    char method[64], tool[64] = "";
    int64_t id;
    if (!json_string(request_json, "method", method, sizeof method) ||
        !json_int(request_json, "id", &id)) {
        mcp_transport_reply_set_error(reply, "cannot parse the request");
        return false;
    }

    pthread_mutex_lock(&f->lock);
    f->running++;
    bool ok;
    if (strcmp(method, "tools/call") == 0 && json_string(request_json, "name", tool, sizeof tool) &&
        strcmp(tool, "wait") == 0) {
        ok = wait_tool(f, id, on_sent, sent_ctx, reply);
    } else {
        if (strcmp(method, "tools/call") == 0)
            record(f, "request", id);
        on_sent(sent_ctx); /* an in-process "wire": the request is there at once */
        if (strcmp(method, "initialize") == 0) {
            ok = reply_with(reply, id,
                            "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{\"tools\":{}},"
                            "\"serverInfo\":{\"name\":\"fake-in-c\",\"version\":\"1.0\"}}");
        } else if (strcmp(method, "tools/call") == 0) {
            char result[128];
            snprintf(result, sizeof result,
                     "{\"content\":[{\"type\":\"text\",\"text\":\"answer to %" PRId64 "\"}]}", id);
            ok = reply_with(reply, id, result);
        } else {
            ok = reply_with(reply, id, "{}");
        }
    }
    f->running--;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
    return ok;
}

static bool fake_send_notification(void *userdata, const char *notification_json) {
    struct fake *f = userdata;
    char method[64];
    int64_t id;
    if (json_string(notification_json, "method", method, sizeof method) &&
        strcmp(method, "notifications/cancelled") == 0 &&
        json_int(notification_json, "requestId", &id)) {
        pthread_mutex_lock(&f->lock);
        f->cancel_ms = now_ms();
        f->cancelled_id = id;
        record(f, "cancel", id);
        pthread_mutex_unlock(&f->lock);
    }
    return true; /* notifications/initialized and the like need nothing */
}

static void fake_close(void *userdata) {
    struct fake *f = userdata;
    pthread_mutex_lock(&f->lock);
    f->closed = true;
    pthread_cond_broadcast(&f->changed); /* every waiting send_request returns */
    pthread_mutex_unlock(&f->lock);
}

static const mcp_transport_vtable FAKE_VTABLE = {
    .send_request = fake_send_request,
    .send_notification = fake_send_notification,
    .close = fake_close,
};

/* Waits (up to 2 s) until the fake has at least `n` events and, with `idle`, no
 * send_request running. */
static void wait_for_events(struct fake *f, int n, bool idle) {
    double deadline = now_ms() + 2000;
    pthread_mutex_lock(&f->lock);
    while ((f->n_events < n || (idle && f->running > 0)) && now_ms() < deadline)
        wait_until(f, now_ms() + 10 < deadline ? now_ms() + 10 : deadline);
    pthread_mutex_unlock(&f->lock);
}

/* Checks the recorded events are exactly `expected` (NULL-terminated). */
static void expect_events(struct fake *f, const char *const *expected) {
    pthread_mutex_lock(&f->lock);
    int i = 0;
    bool same = true;
    for (; expected[i] != NULL; i++)
        same = same && i < f->n_events && strcmp(f->events[i], expected[i]) == 0;
    same = same && i == f->n_events;
    printf("  events:");
    for (int k = 0; k < f->n_events; k++)
        printf(" [%s]", f->events[k]);
    printf("%s\n", same ? "" : "  <- unexpected");
    pthread_mutex_unlock(&f->lock);
    if (!same)
        fail("the transport saw the wrong events");
}

/* ---- The calls ---------------------------------------------------------------------- */

struct worker {
    mcp_client *client;
    const mcp_request_options *options;
    mcp_result *result;
    double returned_ms;
};

static void *worker_main(void *arg) {
    struct worker *w = arg;
    w->result = mcp_client_call_tool(w->client, "wait", NULL, w->options);
    w->returned_ms = now_ms();
    return NULL;
}

static mcp_client *connect_fake(struct fake *f) {
    mcp_client *client = mcp_client_new_custom(&FAKE_VTABLE, f, NULL);
    mcp_result *result = mcp_client_connect(client);
    if (mcp_result_status(result) != MCP_STATUS_OK) {
        fprintf(stderr, "connect: %s\n", mcp_result_message(result));
        fail("connect failed");
    }
    mcp_result_free(result);
    const char *version = mcp_client_protocol_version(client);
    if (version == NULL || strcmp(version, "2025-11-25") != 0)
        fail("the negotiated protocol version is not 2025-11-25");
    return client;
}

/* Calls "wait" on a worker thread, cancels it 50 ms later from this thread, and checks the
 * caller woke at once, before the transport heard of the cancel. Returns the request id. */
static int64_t call_and_cancel(mcp_client *client, struct fake *f, const char *reason) {
    mcp_cancellation *token = mcp_cancellation_new();
    mcp_request_options *options = mcp_request_options_new();
    mcp_request_options_set_cancellation(options, token);
    struct worker w = {client, options, NULL, 0};
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker_main, &w) != 0)
        fail("cannot start a thread");
    sleep_ms(50);
    double cancelled_ms = now_ms();
    if (!mcp_cancellation_cancel(token, reason))
        fail("the cancel returned false");
    pthread_join(thread, NULL);

    int64_t id = mcp_result_request_id(w.result);
    double latency = w.returned_ms - cancelled_ms;
    printf("  the call returned %s %.1f ms after the cancel (request %" PRId64 ")\n",
           mcp_status_name((int)mcp_result_status(w.result)), latency, id);
    if (mcp_result_status(w.result) != MCP_STATUS_CANCELLED)
        fail("the call did not return CANCELLED");
    if (id == 0)
        fail("the request id is 0");
    /* The transport's delay ends 150 ms after the cancel; waking must not wait for it. */
    if (latency > 100)
        fail("the caller was not woken at once");
    const char *got = mcp_result_cancel_reason(w.result);
    if (got == NULL || strcmp(got, reason) != 0)
        fail("the cancel reason was lost");

    /* The caller is awake, but the request is not on the wire yet: no notice so far. */
    char request[32];
    snprintf(request, sizeof request, "request %" PRId64, id);
    expect_events(f, (const char *const[]){request, NULL});

    mcp_result_free(w.result);
    mcp_request_options_free(options);
    mcp_cancellation_free(token);
    return id;
}

/* Case 1: on_sent comes 200 ms into send_request; the cancel comes at 50 ms. The caller wakes
 * at once; the notice waits for on_sent; the late response is dropped. */
static void case_on_sent_late(void) {
    puts("case 1: the transport calls on_sent 200 ms into send_request; cancel at 50 ms");
    struct fake f;
    fake_init(&f, true, 200, 0);
    mcp_client *client = connect_fake(&f);
    int64_t id = call_and_cancel(client, &f, "case 1");

    /* send_request returns its late response once the notice arrives; when nothing is
     * running any more, the library has been handed that response (and must drop it). */
    wait_for_events(&f, 2, true);
    char request[32], cancel[32];
    snprintf(request, sizeof request, "request %" PRId64, id);
    snprintf(cancel, sizeof cancel, "cancel %" PRId64, id);
    expect_events(&f, (const char *const[]){request, cancel, NULL});
    if (f.cancel_ms < f.sent_ms)
        fail("the cancel notice came before on_sent");
    printf("  the notice came %.1f ms after on_sent\n", f.cancel_ms - f.sent_ms);

    /* The client still works, and the next call gets its own answer, not the late one. */
    mcp_result *result = mcp_client_call_tool(client, "quick", NULL, NULL);
    if (mcp_result_status(result) != MCP_STATUS_OK)
        fail("a call after the cancel failed");
    char expected[64];
    snprintf(expected, sizeof expected, "answer to %" PRId64, id + 1); /* ids count up */
    printf("  next call: %s\n", mcp_result_json(result));
    if (strstr(mcp_result_json(result), expected) == NULL)
        fail("the call after the cancel did not get its own answer");
    mcp_result_free(result);

    mcp_client_free(client); /* closes the transport (fake_close) */
    fake_destroy(&f);
}

/* Case 2: a transport that never calls on_sent. The notice still goes out, once send_request
 * has returned: the library's fallback send boundary. */
static void case_never_on_sent(void) {
    puts("case 2: the transport never calls on_sent; send_request returns after 300 ms");
    struct fake f;
    fake_init(&f, false, 0, 300);
    mcp_client *client = connect_fake(&f);
    int64_t id = call_and_cancel(client, &f, "case 2");

    wait_for_events(&f, 3, true);
    char request[32], returned[32], cancel[32];
    snprintf(request, sizeof request, "request %" PRId64, id);
    snprintf(returned, sizeof returned, "return %" PRId64, id);
    snprintf(cancel, sizeof cancel, "cancel %" PRId64, id);
    expect_events(&f, (const char *const[]){request, returned, cancel, NULL});
    if (f.cancel_ms < f.returned_ms)
        fail("the cancel notice came before send_request returned");

    mcp_client_free(client);
    fake_destroy(&f);
}

/* Case 3: close while a call is pending. The caller gets CLOSED at once; close calls
 * fake_close, which makes the pending send_request return, and waits for it. */
static void case_close_pending(void) {
    puts("case 3: close while a call is pending");
    struct fake f;
    fake_init(&f, true, 0, 0);
    mcp_client *client = connect_fake(&f);
    struct worker w = {client, NULL, NULL, 0};
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker_main, &w) != 0)
        fail("cannot start a thread");
    wait_for_events(&f, 1, false); /* the "wait" request is in send_request */
    if (f.n_events < 1)
        fail("the call never reached the transport");

    double closing_ms = now_ms();
    mcp_client_close(client);
    double closed_ms = now_ms();
    pthread_join(thread, NULL);
    printf("  close took %.1f ms; the call returned %s\n", closed_ms - closing_ms,
           mcp_status_name((int)mcp_result_status(w.result)));
    if (mcp_result_status(w.result) != MCP_STATUS_CLOSED)
        fail("the pending call did not return CLOSED");
    if (closed_ms - closing_ms > 1000)
        fail("close took over 1 s");
    pthread_mutex_lock(&f.lock);
    int running = f.running;
    pthread_mutex_unlock(&f.lock);
    if (running != 0)
        fail("close returned while send_request was still running");
    mcp_result_free(w.result);

    /* Calls after close fail at once, without reaching the transport. */
    mcp_result *result = mcp_client_ping(client, NULL);
    if (mcp_result_status(result) != MCP_STATUS_CLOSED)
        fail("a call after close did not return CLOSED");
    mcp_result_free(result);

    mcp_client_free(client);
    fake_destroy(&f);
}

int main(void) {
    case_on_sent_late();
    case_never_on_sent();
    case_close_pending();
    puts("ok");
    return 0;
}
