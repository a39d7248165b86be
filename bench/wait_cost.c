/* What each way of waiting for a pipe's answer costs: a C ping-pong of 1 KiB lines with a
 * child that echoes them, the client waiting before each read in one of five ways. Shows what
 * the stdio reader's wait costs against the floor's blocking read (docs/benchmarks.md, "Where
 * the time goes"; CHANGELOG.md's eighth benchmark pass). Run it pinned to one core, as the
 * benchmark's pinned mode does:
 *
 *   cc -O2 -o wait_cost bench/wait_cost.c && taskset -c 0 ./wait_cost 100000
 *
 * Prints, per way, the round trip and the client's CPU per round.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum way { POLL3, POLL1, EPOLL, EPOLL_EDGE, BLOCKING_READ, WAYS };
static const char *const names[WAYS] = {
    "poll on 3 descriptors, then read",
    "poll on 1 descriptor, then read",
    "epoll_wait on a set of 3, then read",
    "the same, stdout edge-triggered",
    "a blocking read alone",
};

static double seconds(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static void run(enum way way, long rounds) {
    int to_child[2], from_child[2], idle[2];
    check(pipe(to_child) == 0 && pipe(from_child) == 0 && pipe(idle) == 0, "pipe");
    pid_t child = fork();
    check(child >= 0, "fork");
    if (child == 0) { /* the echo server */
        char buf[4096];
        close(to_child[1]);
        close(from_child[0]);
        for (;;) {
            ssize_t n = read(to_child[0], buf, sizeof buf);
            if (n <= 0 || write(from_child[1], buf, (size_t)n) != n)
                _exit(0);
        }
    }
    close(to_child[0]);
    close(from_child[1]);
    int out = from_child[0];
    if (way != BLOCKING_READ)
        check(fcntl(out, F_SETFL, O_NONBLOCK) == 0, "fcntl");
    /* The other two descriptors stand for the wake pipe and the server's pidfd: never ready. */
    int pidfd = (int)syscall(SYS_pidfd_open, child, 0);
    check(pidfd >= 0, "pidfd_open");
    int set = epoll_create1(EPOLL_CLOEXEC);
    check(set >= 0, "epoll_create1");
    int watched[3] = {out, idle[0], pidfd};
    for (int i = 0; i < 3; i++) {
        struct epoll_event event = {.events = EPOLLIN, .data.fd = watched[i]};
        if (i == 0 && way == EPOLL_EDGE)
            event.events |= EPOLLET;
        check(epoll_ctl(set, EPOLL_CTL_ADD, watched[i], &event) == 0, "epoll_ctl");
    }

    char line[1024], answer[4096];
    memset(line, 'a', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    double start = seconds(CLOCK_MONOTONIC), cpu = seconds(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < rounds; i++) {
        check(write(to_child[1], line, sizeof line) == (ssize_t)sizeof line, "write");
        size_t got = 0;
        while (got < sizeof line) {
            if (way == POLL3) {
                struct pollfd fds[3] = {{out, POLLIN, 0}, {idle[0], POLLIN, 0}, {pidfd, POLLIN, 0}};
                poll(fds, 3, -1);
            } else if (way == POLL1) {
                struct pollfd fds[1] = {{out, POLLIN, 0}};
                poll(fds, 1, -1);
            } else if (way == EPOLL || way == EPOLL_EDGE) {
                struct epoll_event events[3];
                epoll_wait(set, events, 3, -1);
            }
            ssize_t n = read(out, answer, sizeof answer);
            if (n > 0)
                got += (size_t)n;
        }
    }
    double took = seconds(CLOCK_MONOTONIC) - start;
    cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
    printf("%-40s round trip %.2f us, client CPU %.2f us\n", names[way], took / (double)rounds * 1e6,
           cpu / (double)rounds * 1e6);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(to_child[1]);
    close(out);
    close(idle[0]);
    close(idle[1]);
    close(pidfd);
    close(set);
}

int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 100000;
    for (int way = 0; way < WAYS; way++)
        run((enum way)way, rounds);
    return 0;
}
