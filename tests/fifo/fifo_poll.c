// SPDX-License-Identifier: LGPL-2.1-or-later
// execaff-fifo-poll: the busy-poll threads of a DPDK-style workload, for the
// tests of what they do to execs (tests/integration/test_audit.py, the
// fifo proof cells).  One thread per CPU named, pinned to it, SCHED_FIFO at
// the priority given, spinning without a system call — as an lcore of a
// poll-mode driver does — until --seconds have passed, so that no run can
// leave a CPU taken forever.  Statically linked: it runs inside a busybox
// container.  Needs CAP_SYS_NICE and, on a kernel with RT group
// scheduling, a cgroup with cpu.rt_runtime_us > 0; without them it says
// so and exits 1 before any thread polls.
//
// usage: execaff-fifo-poll [--priority N] [--seconds S] CPU...
// prints "polling CPU C at SCHED_FIFO N" per thread once all have started.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { kMaxThreads = 64 };

struct poller {
  pthread_t thread;
  int cpu;
};

static volatile double deadline;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *poll_cpu(void *arg) {
  (void)arg;
  // The clock is read through the vDSO: no system call while polling.
  volatile unsigned long spins = 0;
  while (now() < deadline) {
    for (int i = 0; i < 100000; ++i) ++spins;
  }
  return NULL;
}

static long number(const char *text, const char *what, long min, long max) {
  char *end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max) {
    fprintf(stderr, "execaff-fifo-poll: %s \"%s\" is not a number from %ld to %ld\n", what, text,
            min, max);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  int priority = 50;
  long seconds = 60;
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
    if (i + 1 >= argc) {
      fprintf(stderr, "execaff-fifo-poll: %s needs a value\n", argv[i]);
      return 2;
    }
    if (strcmp(argv[i], "--priority") == 0) {
      priority = (int)number(argv[i + 1], "--priority", 1, 99);
    } else if (strcmp(argv[i], "--seconds") == 0) {
      seconds = number(argv[i + 1], "--seconds", 1, 86400);
    } else {
      fprintf(stderr, "execaff-fifo-poll: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const int count = argc - i;
  if (count < 1 || count > kMaxThreads) {
    fprintf(stderr, "usage: execaff-fifo-poll [--priority N] [--seconds S] CPU... (1 to %d)\n",
            kMaxThreads);
    return 2;
  }
  struct poller pollers[kMaxThreads];
  for (int k = 0; k < count; ++k) {
    pollers[k].cpu = (int)number(argv[i + k], "CPU", 0, CPU_SETSIZE - 1);
  }

  // Checked before any thread spins: a poller that cannot be real-time
  // would only be a busy loop, and the test would measure something else.
  const struct sched_param param = {.sched_priority = priority};
  if (sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
    const int e = errno;
    fprintf(stderr,
            "execaff-fifo-poll: cannot use SCHED_FIFO %d: %s (needs CAP_SYS_NICE and, with RT "
            "group scheduling, cpu.rt_runtime_us > 0 in its cgroup)\n",
            priority, strerror(e));
    return 1;
  }
  const struct sched_param other = {.sched_priority = 0};
  sched_setscheduler(0, SCHED_OTHER, &other);  // the main thread only waits

  deadline = now() + (double)seconds;
  for (int k = 0; k < count; ++k) {
    pthread_attr_t attr;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(pollers[k].cpu, &set);
    pthread_attr_init(&attr);
    pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
    pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
    pthread_attr_setschedparam(&attr, &param);
    pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    const int e = pthread_create(&pollers[k].thread, &attr, poll_cpu, NULL);
    pthread_attr_destroy(&attr);
    if (e != 0) {
      fprintf(stderr, "execaff-fifo-poll: cannot start the poller on CPU %d: %s\n",
              pollers[k].cpu, strerror(e));
      deadline = 0;  // stops those already polling
      for (int j = 0; j < k; ++j) pthread_join(pollers[j].thread, NULL);
      return 1;
    }
  }
  for (int k = 0; k < count; ++k) {
    printf("polling CPU %d at SCHED_FIFO %d\n", pollers[k].cpu, priority);
  }
  fflush(stdout);
  for (int k = 0; k < count; ++k) pthread_join(pollers[k].thread, NULL);
  return 0;
}
