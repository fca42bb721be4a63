// SPDX-License-Identifier: LGPL-2.1-or-later
// The process tree of one traced exec, and the phase of every residency:
// a stretch a tracked task spent on one CPU.  A residency begins at a
// sched_switch to the task, or — without any switch — when the running
// task changes phase: it exec's the user's program (that program then
// runs on the CPU the exec happened on, often to its end: `true` is never
// switched in at all), or it is moved into the cgroup while running.  It
// ends at the next sched_switch on that CPU or at the next such change.
//
// Tracked tasks: the COMMAND's first task (root_pid) and every task forked
// from a tracked task, threads included (sched_process_fork fires in
// kernel_clone for every clone).  Pids are per task, so the tree is keyed by
// pid, with a generation per pid in case one is reused inside a run.
//
// Phases of a residency of task T beginning at time t (T's "runtime", "join" and
// "exec" below are its own or inherited):
//   caller: T's lineage has not exec'd the runtime yet — the harness's own
//       child before it execs COMMAND, and a wrapper's (execaff-shim's) own
//       code before it execs the real runtime.  That code runs wherever the
//       caller put it, by construction, so it is counted (and its
//       residencies on isolated CPUs reported) but never a violation.
//   (a) before_join: T is not yet in the container's cgroup — the caller,
//       the runtime and its helpers.  Allowed CPUs: `initial`, never an
//       isolated CPU.
//   (b) window: T is in the container's cgroup but the user's program has
//       not been exec'd yet in T's thread group or T's ancestry — runc init,
//       crun's child, the execaff trampoline.  Allowed: the container's
//       cpuset minus the isolated CPUs.
//   (c) after_exec: the user's program and everything it starts.  Allowed:
//       `final`.
//
// How a task joins (the cpuset hierarchy is the one that moves affinity):
//   * cgroup_attach_task into the container cgroup (path equal to it or
//     below it) on the chosen hierarchy (dst_root; 0 is cgroup v2).  The
//     kernel fires it once per write to cgroup.procs, for the thread-group
//     leader (cgroup_procs_write_start() turns the pid into its
//     group_leader), so every live thread of that group joins.  The
//     tracepoint fires after the move, i.e. after cpuset_attach() already
//     changed the mask; a sched_migrate_task of a thread of that group that
//     the same writer emitted just before (inside the same write) marks the
//     real moment, and the join is taken from it.
//   * CLONE_INTO_CGROUP (clone3, cgroup v2 only): crun 1.8.1 forks the
//     exec'd process straight into the container's cgroup, and the kernel
//     fires no attach event for it.  task_newtask shows the clone flags;
//     a child created with CLONE_INTO_CGROUP counts as joined at its fork.
//     (Only the runtime's own clones are traced, and the only cgroup a
//     runtime clones into during `exec` is the container's.)
//   * fork or thread creation by a task that had joined: the child starts
//     in its parent's css_set.
// A followed daemon (ClassifyOptions::daemon_tids; the CRI cells, where the
// exec starts at a CRI call and CRI-O, started long before, forks conmon):
// its threads, present when the run began, are tracked from the start, and
// so are the threads they create (CLONE_THREAD).  They are the caller: the
// daemon's own code, placed by whoever started it (systemd's CPUAffinity=),
// counted and never a violation.  A *process* one of them forks during the
// run is the exec's: in phase (a) from its fork (the daemon's fork-exec
// child, the taskset CRI-O's infra_ctr_cpuset puts in front, conmon, the
// runtime and everything below).  The COMMAND (the CRI client) then stays
// the caller, unless --runtime names a program it execs.
// How the user's program is recognised: the first sched_process_exec of a
// tracked task whose filename's basename is `program` (the trampoline is
// exec'd as /proc/self/fd/N, runc init as /proc/self/exe or /dev/fd/N, so
// none of them match).  An exec replaces every other thread of its group
// (de_thread), so the whole thread group is in phase (c) from then on.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cpu_list.hpp"
#include "trace_event.hpp"

namespace schedtrace {

// Indexes the per-phase arrays of the report; caller last so that a/b/c
// are 0/1/2.
enum class Phase { before_join = 0, window = 1, after_exec = 2, caller = 3 };
inline constexpr int kPhases = 4;
char phase_letter(Phase phase);       // 'a', 'b', 'c', 'p' (pre-runtime)
const char* phase_name(Phase phase);  // "before-join", "window", "after-exec", "caller"

struct PhasePolicy {
  std::optional<CpuList> initial;  // nullopt: only the isolation rule applies in (a)
  CpuList cpuset;
  CpuList isolated;
  CpuList final_cpus;
  bool violates(Phase phase, unsigned cpu) const;
};

struct ClassifyOptions {
  int root_pid = 0;
  std::string container_cgroup;  // e.g. "/execaff-proof-runc"
  std::optional<int> hierarchy;  // dst_root to honour; nullopt: any hierarchy
  bool clone_into_cgroup_joins = false;
  std::string program;  // basename of the user's program
  // Basename of the runtime binary (e.g. "runc"): the caller phase ends
  // when a task execs it.  Empty: when the root task execs (COMMAND itself).
  std::string runtime;
  // The threads of a followed daemon at the run's start (see above); empty:
  // no daemon, the COMMAND's own tree is the exec.
  std::vector<int> daemon_tids;
  int daemon_pid = 0;  // their thread group
  PhasePolicy policy;
};

enum class JoinHow { none, attach, clone_into_cgroup, inherited };
const char* join_how_name(JoinHow how);

struct TaskInfo {
  int pid = 0;
  int tgid = 0;
  int parent_pid = 0;                          // 0 for the root
  std::string comm;                            // the last one seen
  std::int64_t fork_ts = 0;                    // INT64_MIN for the root (forked before tracing)
  std::optional<std::int64_t> runtime_ts;      // when its lineage became the runtime
  std::optional<std::int64_t> join_ts;         // when this task entered the cgroup
  std::optional<std::int64_t> join_origin_ts;  // when its lineage did (for the window)
  JoinHow join_how = JoinHow::none;
  std::optional<std::int64_t> exec_ts;  // when it became (part of) the user's program
  std::optional<std::int64_t> exit_ts;
  bool daemon = false;  // a thread of the followed daemon: always the caller
};

// How a residency began.
enum class Entry { switch_in, exec, join };
const char* entry_name(Entry entry);  // "switch", "exec", "join"

struct Residency {
  std::int64_t ts = 0;
  std::int64_t duration = 0;  // until the next sched_switch on that CPU or phase change
  Entry entry = Entry::switch_in;
  unsigned cpu = 0;
  int pid = 0;
  std::string comm;
  Phase phase = Phase::before_join;
  bool violation = false;
  bool on_isolated = false;
};

struct RunAnalysis {
  std::int64_t start_ts = 0;  // the harness's start marker, else the first event
  std::int64_t end_ts = 0;    // the end marker, else the last event
  std::vector<TaskInfo> tasks;
  std::vector<Residency> residencies;
  std::optional<int> program_pid;
  std::optional<std::int64_t> program_exec_ts;
  unsigned program_exec_cpu = 0;
  std::optional<std::int64_t> window_start_ts;  // the lineage's join
  JoinHow program_join_how = JoinHow::none;
  bool join_seen = false;         // the program's lineage joined before its exec
  std::size_t attaches_seen = 0;  // matching cgroup_attach_task events
  std::vector<std::string> warnings;

  std::optional<std::int64_t> window_ns() const;
};

RunAnalysis classify_run(const std::vector<TraceEvent>& events, const ClassifyOptions& options);

}  // namespace schedtrace
