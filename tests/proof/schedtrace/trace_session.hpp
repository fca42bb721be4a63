// SPDX-License-Identifier: LGPL-2.1-or-later
// A private tracefs instance for the harness.
//
// Why an instance (instances/execaff-schedtrace.<pid>): it has its own ring
// buffer, event switches, set_event_pid and options, so the harness neither
// disturbs nor is disturbed by anyone else tracing (trace-cmd, perf, a
// second harness).  Instances exist since Linux 3.10; both kernels used here
// (6.1, 6.18) have set_event_pid and options/event-fork in them.
//
// Why set_event_pid + options/event-fork: on a machine with busy CPUs the
// scheduler events of every task would fill the buffer.  With a pid filter
// the kernel records an event only when the current task is in the list
// (trace_event_ignore_this_pid), and sched_switch when either side is
// (event_filter_pid_sched_switch_probe_pre); with event-fork every child of
// a listed task is added at fork (event_filter_pid_sched_process_fork) and
// removed when freed.  So writing the COMMAND's pid before it runs follows
// the shim, the runtime, its helpers and the user's program, threads
// included, and nothing else.
//
// A second instance (…-migrations) records sched_migrate_task with no pid
// filter.  Why: when a cgroup join changes the mask of a *running* task,
// set_cpus_allowed_ptr() moves it through the CPU's stopper thread
// (migration/N, migration_cpu_stop), and the pid filter judges an event by
// the task that is current — the stopper — so the main instance drops it.
// That migration is the moment the join took effect; the classifier uses
// it (process_tree.hpp).  Unfiltered migrations are few: busy loops are
// pinned and never migrate.
//
// Clock: "global" — one clock for all CPUs and both instances, so that
// events from different CPUs order correctly (the default "local" clock may
// drift per CPU, and under TCG the vCPUs' clocks do).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace schedtrace {

struct BufferLoss {
  std::uint64_t overrun = 0;  // overwritten (options/overwrite)
  std::uint64_t dropped = 0;  // refused because the buffer was full
  std::uint64_t total() const { return overrun + dropped; }
};

class TraceSession {
 public:
  // The events classified; the session fails without them.
  static const std::vector<std::string>& required_events();
  // Recorded, unfiltered, in the second instance when present (join
  // refinement only).
  static const std::vector<std::string>& optional_events();

  // Mounts tracefs on `root` when it is not mounted there yet.  Returns the
  // directory to use.  Throws std::runtime_error.
  static std::string ensure_tracefs(const std::string& root);
  // Removes instances left behind by a harness that was killed.
  static void remove_stale_instances(const std::string& root);

  TraceSession(const std::string& tracefs_root, unsigned buffer_kb_per_cpu);
  ~TraceSession();
  TraceSession(const TraceSession&) = delete;
  TraceSession& operator=(const TraceSession&) = delete;

  // Tracing off, buffers empty, `pid` added to the pid filter.
  //
  // Added, not replacing the list: clearing set_event_pid (O_TRUNC) empties
  // it and unregisters the filter's probes, and the next write registers
  // them again.  Each (un)registration can live-patch kernel text
  // (static calls, text_poke_bp), which under QEMU TCG was seen to hang the
  // guest (an RCU stall with one vCPU looping on the int3 of the patch while
  // another waited for it in smp_call_function_many_cond).  The previous
  // run's tasks have left the list by then: with event-fork the kernel
  // drops a pid when its task is freed.
  void prepare(int pid);
  // Adds already running tasks to the pid filter (after prepare()): every
  // thread of a followed daemon, so that event-fork follows whatever it
  // forks during the run.  One write: appending to a non-empty list
  // registers no probe (the same text patching concern as above).
  void follow(const std::vector<int>& tids);
  void start();
  void stop();
  void mark(const std::string& text);
  // The main instance's `trace`, then the migration instance's.
  std::string read_trace() const;
  BufferLoss loss() const;
  const std::vector<std::string>& missing_optional() const { return missing_optional_; }
  const std::string& dir() const { return dir_; }

 private:
  static void write_in(const std::string& dir, const std::string& file, const std::string& value,
                       bool append = false);
  void write(const std::string& file, const std::string& value) const {
    write_in(dir_, file, value);
  }
  static void configure(const std::string& dir, unsigned buffer_kb);
  std::string dir_;
  std::string migrations_dir_;  // empty when sched_migrate_task is missing
  std::vector<std::string> missing_optional_;
  int marker_fd_ = -1;
};

// Reads a whole (pseudo-)file; throws std::runtime_error.
std::string read_file(const std::string& path);

}  // namespace schedtrace
