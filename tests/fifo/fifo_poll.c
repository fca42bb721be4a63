// SPDX-License-Identifier: LGPL-2.1-or-later
// fifo_poll.c — execaff-fifo-poll: the busy-poll threads of a DPDK-style
// application, for the fifo proof cells (tests/fifo/README.md).
//
// Usage: execaff-fifo-poll [--priority N] [--policy fifo|other] [--seconds S] CPU...
//
// Starts one thread per CPU named, pinned to it, with SCHED_FIFO priority N
// (default 50; --policy other: SCHED_OTHER, the control without real-time
// threads), each spinning on a counter forever, as a poll-mode driver's
// lcore does.  The main thread first moves itself off those CPUs (onto the
// rest of its affinity: the pod's housekeeping CPU, as a DPDK main lcore),
// so that it can start every thread before one of them takes its CPU.
// When all threads run, it prints "ready: TID@CPU ..." on stdout and then
// sleeps until it is killed, or with --seconds S until S seconds have
// passed, then exits (the host's tests and the demo bound it that way, so
// that no run can keep a CPU).  Errors name the CPU and the reason; exit 1.
// Needs CAP_SYS_NICE for SCHED_FIFO.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE // the build defines it too (meson.build)
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { max_threads = 64 };

struct poller {
    int cpu;
    atomic_int tid;
};

static struct poller pollers[max_threads];

static void *poll_loop(void *arg)
{
    struct poller *p = arg;
    atomic_store(&p->tid, (int)syscall(SYS_gettid));
    volatile unsigned long spins = 0;
    for (;;) {
        ++spins;
    }
    return NULL;
}

static int usage(void)
{
    fprintf(stderr, "usage: execaff-fifo-poll [--priority N] [--policy fifo|other] [--seconds S] CPU...\n");
    return 2;
}

static int parse_int(const char *what, const char *text, int lo, int hi)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "execaff-fifo-poll: %s '%s': want a number from %d to %d\n",
                what, text, lo, hi);
        exit(2);
    }
    return (int)v;
}

int main(int argc, char **argv)
{
    int priority = 50;
    int policy = SCHED_FIFO;
    int seconds = 0;
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; ++i) {
        if (strcmp(argv[i], "--priority") == 0 && i + 1 < argc) {
            priority = parse_int("--priority", argv[++i], 1, 99);
        } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = parse_int("--seconds", argv[++i], 1, 86400);
        } else if (strcmp(argv[i], "--policy") == 0 && i + 1 < argc) {
            ++i;
            if (strcmp(argv[i], "fifo") == 0) {
                policy = SCHED_FIFO;
            } else if (strcmp(argv[i], "other") == 0) {
                policy = SCHED_OTHER;
            } else {
                fprintf(stderr, "execaff-fifo-poll: --policy '%s': want fifo or other\n", argv[i]);
                return 2;
            }
        } else {
            return usage();
        }
    }
    int n = argc - i;
    if (n < 1 || n > max_threads) {
        return usage();
    }

    cpu_set_t own;
    if (sched_getaffinity(0, sizeof own, &own) != 0) {
        perror("execaff-fifo-poll: sched_getaffinity");
        return 1;
    }
    cpu_set_t rest = own;
    for (int k = 0; k < n; ++k) {
        pollers[k].cpu = parse_int("CPU", argv[i + k], 0, CPU_SETSIZE - 1);
        if (!CPU_ISSET(pollers[k].cpu, &own)) {
            fprintf(stderr, "execaff-fifo-poll: CPU %d: not in this process's affinity\n",
                    pollers[k].cpu);
            return 1;
        }
        CPU_CLR(pollers[k].cpu, &rest);
    }
    if (CPU_COUNT(&rest) > 0 && sched_setaffinity(0, sizeof rest, &rest) != 0) {
        perror("execaff-fifo-poll: sched_setaffinity (main thread off the poll CPUs)");
        return 1;
    }

    for (int k = 0; k < n; ++k) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(pollers[k].cpu, &one);
        struct sched_param param = {.sched_priority = policy == SCHED_FIFO ? priority : 0};
        int rc = pthread_attr_setaffinity_np(&attr, sizeof one, &one);
        if (rc == 0) {
            rc = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
        }
        if (rc == 0) {
            rc = pthread_attr_setschedpolicy(&attr, policy);
        }
        if (rc == 0) {
            rc = pthread_attr_setschedparam(&attr, &param);
        }
        pthread_t thread;
        if (rc == 0) {
            rc = pthread_create(&thread, &attr, poll_loop, &pollers[k]);
        }
        pthread_attr_destroy(&attr);
        if (rc != 0) {
            fprintf(stderr, "execaff-fifo-poll: CPU %d: cannot start a %s thread (priority %d): %s%s\n",
                    pollers[k].cpu, policy == SCHED_FIFO ? "SCHED_FIFO" : "SCHED_OTHER",
                    priority, strerror(rc), rc == EPERM ? " (CAP_SYS_NICE needed)" : "");
            return 1;
        }
    }
    for (int k = 0; k < n; ++k) {
        while (atomic_load(&pollers[k].tid) == 0) {
            usleep(1000);
        }
    }
    printf("ready:");
    for (int k = 0; k < n; ++k) {
        printf(" %d@%d", atomic_load(&pollers[k].tid), pollers[k].cpu);
    }
    printf("\n");
    fflush(stdout);
    if (seconds > 0) {
        // The main thread runs off the poll CPUs: it wakes, and its exit
        // ends the poll threads.
        sleep((unsigned)seconds);
        return 0;
    }
    for (;;) {
        pause();
    }
}
