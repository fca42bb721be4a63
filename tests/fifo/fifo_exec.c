// SPDX-License-Identifier: LGPL-2.1-or-later
// fifo_exec.c — execaff-fifo-exec: one exec of the fifo proof cells as the
// user feels it (tests/fifo/README.md).
//
// Usage: execaff-fifo-exec --timeout SECONDS [--cpus LIST] -- COMMAND [ARG...]
//
// Runs COMMAND (a runtime's `exec`, or execaff-shim's) on the CPUs of LIST
// (the caller's placement: "0" pinned, "0-3" unpinned; default: this
// process's own), waits for it at most SECONDS and prints one line:
//   ok MS          it returned with status 0 after MS milliseconds
//   fail RC MS     it returned with another status (RC; 128+N for signal N)
//   hung           it had not returned after SECONDS: it is sent SIGKILL and
//                  left behind (a task stuck in the kernel dies only when
//                  the kernel lets it go; the caller checks for leftovers)
// Exit status: 0 for ok, 1 for fail or hung, 2 for usage or set-up errors
// (named on stderr).
#ifndef _GNU_SOURCE
#define _GNU_SOURCE // the build defines it too (meson.build)
#endif
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "execaff-fifo-exec: %s: %s\n", what, detail);
    exit(2);
}

// "0-3,5" -> set; 0 on success.
static int parse_cpus(const char *text, cpu_set_t *set)
{
    CPU_ZERO(set);
    const char *p = text;
    while (*p != '\0') {
        char *end = NULL;
        long lo = strtol(p, &end, 10);
        if (end == p || lo < 0 || lo >= CPU_SETSIZE) {
            return -1;
        }
        long hi = lo;
        p = end;
        if (*p == '-') {
            hi = strtol(p + 1, &end, 10);
            if (end == p + 1 || hi < lo || hi >= CPU_SETSIZE) {
                return -1;
            }
            p = end;
        }
        for (long c = lo; c <= hi; ++c) {
            CPU_SET((int)c, set);
        }
        if (*p == ',') {
            ++p;
        } else if (*p != '\0') {
            return -1;
        }
    }
    return CPU_COUNT(set) > 0 ? 0 : -1;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

int main(int argc, char **argv)
{
    long timeout = -1;
    const char *cpus = NULL;
    int i = 1;
    for (; i < argc; ++i) {
        if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            char *end = NULL;
            timeout = strtol(argv[++i], &end, 10);
            if (*end != '\0' || timeout < 1) {
                die("--timeout", "want whole seconds >= 1");
            }
        } else if (strcmp(argv[i], "--cpus") == 0 && i + 1 < argc) {
            cpus = argv[++i];
        } else if (strcmp(argv[i], "--") == 0) {
            ++i;
            break;
        } else {
            die("usage", "execaff-fifo-exec --timeout SECONDS [--cpus LIST] -- COMMAND [ARG...]");
        }
    }
    if (timeout < 1 || i >= argc) {
        die("usage", "execaff-fifo-exec --timeout SECONDS [--cpus LIST] -- COMMAND [ARG...]");
    }
    cpu_set_t set;
    if (cpus != NULL && parse_cpus(cpus, &set) != 0) {
        die(cpus, "not a CPU list");
    }

    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);

    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid < 0) {
        die("fork", strerror(errno));
    }
    if (pid == 0) {
        sigprocmask(SIG_UNBLOCK, &chld, NULL);
        if (cpus != NULL && sched_setaffinity(0, sizeof set, &set) != 0) {
            fprintf(stderr, "execaff-fifo-exec: sched_setaffinity %s: %s\n", cpus, strerror(errno));
            _exit(127);
        }
        execvp(argv[i], argv + i);
        fprintf(stderr, "execaff-fifo-exec: %s: %s\n", argv[i], strerror(errno));
        _exit(127);
    }

    for (;;) {
        double left_ms = (double)timeout * 1e3 - ms_since(&t0);
        if (left_ms <= 0) {
            break;
        }
        long long left_ns = (long long)(left_ms * 1e6);
        struct timespec wait = {.tv_sec = (time_t)(left_ns / 1000000000LL),
                                .tv_nsec = (long)(left_ns % 1000000000LL)};
        int status = 0;
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid) {
            double ms = ms_since(&t0);
            int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            if (rc == 0) {
                printf("ok %.1f\n", ms);
                return 0;
            }
            printf("fail %d %.1f\n", rc, ms);
            return 1;
        }
        if (sigtimedwait(&chld, NULL, &wait) < 0 && errno != EAGAIN && errno != EINTR) {
            die("sigtimedwait", strerror(errno));
        }
    }
    kill(pid, SIGKILL);
    printf("hung\n");
    return 1;
}
