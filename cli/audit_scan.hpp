// SPDX-License-Identifier: LGPL-2.1-or-later
// `execaff audit`'s findings, gathered from the node as it is: the
// containers under runc's and crun's state roots, every task in their
// cgroups, the processes that start execs, the IRQs and irqbalance's
// banned CPUs, the real-time threads.  Read-only — only files
// are read, under a root directory so that tests run on fixture trees.
// spec/audit.md defines each finding kind.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit_realtime.hpp"
#include "cpu_set.hpp"
#include "node_config.hpp"

namespace execaff::cli {

enum class FindingKind {
  escaped_exec,                  // exec'd task of an opted-in container off `final`
  isolated_cpu_intruder,         // a task allowed on an isolated CPU its container does not own
  min_weight_pinned_exec,        // minimum CPU weight, execs pinned to CPUs others share
  undecidable,                   // the container's decision is an error
  irq_on_isolated,               // an IRQ may fire on an isolated CPU
  irqbalance_unbanned_isolated,  // IRQBALANCE_BANNED_CPUS leaves isolated CPUs to irqbalance
  caller_on_exclusive_cpu,       // crio, conmon, containerd(-shim), kubelet on a pinned pod's CPU
  exec_may_hang,                 // busy real-time threads on CPUs its execs may land on
};
inline constexpr FindingKind kAllFindingKinds[] = {
    FindingKind::escaped_exec,
    FindingKind::isolated_cpu_intruder,
    FindingKind::min_weight_pinned_exec,
    FindingKind::undecidable,
    FindingKind::irq_on_isolated,
    FindingKind::irqbalance_unbanned_isolated,
    FindingKind::caller_on_exclusive_cpu,
    FindingKind::exec_may_hang,
};
[[nodiscard]] const char* to_string(FindingKind kind) noexcept;
// Node findings are about no container.
[[nodiscard]] bool is_node_kind(FindingKind kind) noexcept;

struct Finding {
  FindingKind kind;
  std::string container;   // "" for node findings
  std::string state_root;  // the container's runtime state root
  pid_t pid = 0;           // the process (thread group), 0 when none
  pid_t tid = 0;
  std::string comm;
  std::string irq;  // irq_on_isolated
  std::optional<CpuSet> affinity;
  std::optional<CpuSet> expected;
  std::string detail;
  std::string fix;  // what to change, "" when the kind names none
};

struct AuditedContainer {
  std::string id;
  std::string state_root;
  std::string runtime;  // "runc" or "crun" (the state file's layout)
  pid_t init_pid = 0;
  CpuSet cpuset;
  bool opted_in = false;
  std::optional<CpuSet> final;
  std::string source;  // the decision's source
  std::size_t processes = 0;
  std::size_t exec_processes = 0;  // processes not descended from init
  std::optional<unsigned long> cpu_weight;
  std::string cpu_weight_file;
  std::string cgroup_dir;  // its cpuset cgroup's directory
  CpuSet exclusive;        // the CPUs it holds exclusively (audit_callers.hpp)
  // SCHED_FIFO / SCHED_RR threads allowed on its cpuset (audit_realtime.hpp).
  std::vector<RealtimeThread> realtime_threads;
};

struct AuditOptions {
  std::string root_fs = "/";
  std::vector<std::string> state_roots;  // host paths, read under root_fs
  NodeConfig node_config;
};

struct AuditResult {
  std::vector<AuditedContainer> containers;
  std::vector<Finding> findings;  // sorted by kind, container, pid, tid
  std::vector<std::string> errors;
  std::vector<std::string> skipped;  // containers not running, with why
  CpuSet isolated;
  std::string isolated_sources;
  RtThrottling rt_throttling;
};

// Never throws for one container's or one task's trouble: a container whose
// state cannot be read is an error in the result, a task that exits during
// the walk is skipped.  Throws Error when the node itself cannot be read.
[[nodiscard]] AuditResult run_audit(const AuditOptions& options);

// IRQBALANCE_BANNED_CPUS is a hex mask in comma-separated 32-bit groups,
// most significant first ("00000000,0000000c"): CPUs 2-3.  Error(EINVAL)
// naming the value when it is not one.
[[nodiscard]] CpuSet parse_irqbalance_mask(std::string_view mask);

// The banned CPUs an irqbalance environment file sets (IRQBALANCE_BANNED_CPUS,
// or irqbalance 1.8's IRQBALANCE_BANNED_CPULIST), nullopt when it sets none.
[[nodiscard]] std::optional<CpuSet> irqbalance_banned_cpus(std::string_view file_text,
                                                           std::string_view source);

}  // namespace execaff::cli
