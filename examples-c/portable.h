/*
 * portable.h: the little the C examples need from the operating system beyond C11, for POSIX
 * (Linux, macOS) and Windows (mingw-w64 and MSVC): threads, a monotonic clock, sleeping, a
 * one-shot signal with a timed wait, the current thread's name, a temporary file and an absolute
 * path. Everything is static inline, so an example includes it and needs no other file.
 *
 * Not part of the library's API: the library itself (mcpc.h) needs none of this.
 */
#ifndef MCPC_EXAMPLES_PORTABLE_H
#define MCPC_EXAMPLES_PORTABLE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _WIN32
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#endif

/* ---- Threads ------------------------------------------------------------------------------- */

typedef void *(*port_thread_fn)(void *);

#ifdef _WIN32
typedef HANDLE port_thread;
typedef DWORD port_thread_id;

struct port_thread_start_ {
    port_thread_fn fn;
    void *arg;
};

static DWORD WINAPI port_thread_trampoline_(LPVOID p) {
    struct port_thread_start_ start = *(struct port_thread_start_ *)p;
    free(p);
    start.fn(start.arg);
    return 0;
}

/* Starts fn(arg) on a new thread; false if it could not be started. */
static inline bool port_thread_start(port_thread *thread, port_thread_fn fn, void *arg) {
    struct port_thread_start_ *start = malloc(sizeof *start);
    if (start == NULL)
        return false;
    start->fn = fn;
    start->arg = arg;
    *thread = CreateThread(NULL, 0, port_thread_trampoline_, start, 0, NULL);
    if (*thread == NULL) {
        free(start);
        return false;
    }
    return true;
}

static inline void port_thread_join(port_thread thread) {
    WaitForSingleObject(thread, INFINITE);
    CloseHandle(thread);
}

static inline port_thread_id port_thread_self(void) { return GetCurrentThreadId(); }
static inline bool port_thread_same(port_thread_id a, port_thread_id b) { return a == b; }

/* The current thread's name (its description, which Rust's std sets), or "" if it has none
 * or the system cannot say (GetThreadDescription is Windows 10's; looked up, not linked). */
static inline void port_thread_name(char *name, size_t size) {
    typedef HRESULT(WINAPI * get_description)(HANDLE, PWSTR *);
    name[0] = '\0';
    HMODULE kernel32 = GetModuleHandleA("kernel32.dll");
    FARPROC found = kernel32 ? GetProcAddress(kernel32, "GetThreadDescription") : NULL;
    if (found == NULL)
        return;
    get_description get;
    memcpy(&get, &found, sizeof get); /* a function pointer cast without the warning */
    PWSTR wide = NULL;
    if (SUCCEEDED(get(GetCurrentThread(), &wide)) && wide != NULL) {
        if (WideCharToMultiByte(CP_UTF8, 0, wide, -1, name, (int)size, NULL, NULL) == 0)
            name[0] = '\0';
        LocalFree(wide);
    }
}
#else
typedef pthread_t port_thread;
typedef pthread_t port_thread_id;

static inline bool port_thread_start(port_thread *thread, port_thread_fn fn, void *arg) {
    return pthread_create(thread, NULL, fn, arg) == 0;
}

static inline void port_thread_join(port_thread thread) { pthread_join(thread, NULL); }
static inline port_thread_id port_thread_self(void) { return pthread_self(); }
static inline bool port_thread_same(port_thread_id a, port_thread_id b) {
    return pthread_equal(a, b) != 0;
}

/* pthread_getname_np is not POSIX, but glibc (2.12+) and macOS have it with this signature;
 * declared here so that the example need not define _GNU_SOURCE. */
int pthread_getname_np(pthread_t thread, char *name, size_t size);

static inline void port_thread_name(char *name, size_t size) {
    if (pthread_getname_np(pthread_self(), name, size) != 0)
        name[0] = '\0';
}
#endif

/* ---- Time ---------------------------------------------------------------------------------- */

/* Milliseconds on a monotonic clock (immune to wall-clock changes), from an arbitrary origin. */
static inline double port_now_ms(void) {
#ifdef _WIN32
    LARGE_INTEGER count, frequency;
    QueryPerformanceCounter(&count);
    QueryPerformanceFrequency(&frequency);
    return (double)count.QuadPart * 1000.0 / (double)frequency.QuadPart;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
#endif
}

static inline void port_sleep_ms(long ms) {
#ifdef _WIN32
    Sleep((DWORD)ms);
#else
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
#endif
}

/* ---- A one-shot signal ------------------------------------------------------------------------
 * Set once by one thread; another waits for it, with or without a time limit. */

struct port_signal {
#ifdef _WIN32
    CRITICAL_SECTION lock;
    CONDITION_VARIABLE wake;
#else
    pthread_mutex_t lock;
    pthread_cond_t wake;
#endif
    bool set;
};

static inline void port_signal_init(struct port_signal *s) {
    s->set = false;
#ifdef _WIN32
    InitializeCriticalSection(&s->lock);
    InitializeConditionVariable(&s->wake);
#else
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
#ifndef __APPLE__ /* macOS waits with a relative timeout instead (below) */
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* immune to wall-clock jumps */
#endif
    pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&s->lock, NULL);
#endif
}

static inline void port_signal_set(struct port_signal *s) {
#ifdef _WIN32
    EnterCriticalSection(&s->lock);
    s->set = true;
    WakeAllConditionVariable(&s->wake);
    LeaveCriticalSection(&s->lock);
#else
    pthread_mutex_lock(&s->lock);
    s->set = true;
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
#endif
}

/* Waits until the signal is set or timeout_ms (a negative one: no limit) has passed; returns
 * whether it was set. */
static inline bool port_signal_wait_ms(struct port_signal *s, long timeout_ms) {
    double deadline = port_now_ms() + (double)timeout_ms;
    bool set;
#ifdef _WIN32
    EnterCriticalSection(&s->lock);
    for (;;) {
        double left = deadline - port_now_ms();
        if (s->set || (timeout_ms >= 0 && left <= 0))
            break;
        SleepConditionVariableCS(&s->wake, &s->lock, timeout_ms < 0 ? INFINITE : (DWORD)left + 1);
    }
    set = s->set;
    LeaveCriticalSection(&s->lock);
#else
    pthread_mutex_lock(&s->lock);
    for (;;) {
        double left = deadline - port_now_ms();
        if (s->set || (timeout_ms >= 0 && left <= 0))
            break;
        if (timeout_ms < 0) {
            pthread_cond_wait(&s->wake, &s->lock);
            continue;
        }
        long long ns = (long long)(left * 1e6) + 1;
#ifdef __APPLE__
        struct timespec wait = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
        pthread_cond_timedwait_relative_np(&s->wake, &s->lock, &wait);
#else
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        ns += until.tv_nsec;
        until.tv_sec += (time_t)(ns / 1000000000LL);
        until.tv_nsec = (long)(ns % 1000000000LL);
        pthread_cond_timedwait(&s->wake, &s->lock, &until);
#endif
    }
    set = s->set;
    pthread_mutex_unlock(&s->lock);
#endif
    return set;
}

static inline void port_signal_destroy(struct port_signal *s) {
#ifdef _WIN32
    DeleteCriticalSection(&s->lock); /* a CONDITION_VARIABLE needs no cleanup */
#else
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
#endif
}

/* ---- Files --------------------------------------------------------------------------------- */

/* Creates a new, empty, uniquely named file in the temporary directory ($TMPDIR or /tmp; on
 * Windows %TMP%) and writes its path to `path`; false if it cannot. */
static inline bool port_temp_file(char *path, size_t size, const char *prefix) {
#ifdef _WIN32
    char dir[MAX_PATH + 1];
    DWORD n = GetTempPathA(sizeof dir, dir);
    if (n == 0 || n > sizeof dir || size < MAX_PATH)
        return false;
    return GetTempFileNameA(dir, prefix, 0, path) != 0; /* creates the file */
#else
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int n = snprintf(path, size, "%s/%s-XXXXXX", dir, prefix);
    if (n < 0 || (size_t)n >= size)
        return false;
    int fd = mkstemp(path);
    if (fd < 0)
        return false;
    close(fd);
    return true;
#endif
}

#if defined(_WIN32) || defined(_XOPEN_SOURCE) /* glibc declares realpath for XSI only */
/* The absolute path of an existing directory as it appears in a file:// URI ("/home/me",
 * on Windows "/C:/Users/me"), malloc'ed; NULL if it does not exist. */
static inline char *port_directory_uri_path(const char *dir) {
#ifdef _WIN32
    DWORD attributes = GetFileAttributesA(dir);
    char full[MAX_PATH];
    if (attributes == INVALID_FILE_ATTRIBUTES || !(attributes & FILE_ATTRIBUTE_DIRECTORY))
        return NULL;
    DWORD n = GetFullPathNameA(dir, sizeof full, full, NULL);
    if (n == 0 || n >= sizeof full)
        return NULL;
    char *path = malloc((size_t)n + 2);
    if (path == NULL)
        return NULL;
    path[0] = '/';
    for (DWORD i = 0; i <= n; i++)
        path[i + 1] = full[i] == '\\' ? '/' : full[i];
    if (n >= 2 && path[n] == '/' && path[n - 1] != ':') /* no trailing slash but for "C:/" */
        path[n] = '\0';
    return path;
#else
    return realpath(dir, NULL);
#endif
}
#endif

#endif /* MCPC_EXAMPLES_PORTABLE_H */
