// SPDX-License-Identifier: LGPL-2.1-or-later
// The decision: from what the exec, the container and the node say, which
// CPUs the runtime's helpers run on before the cgroup join (initial) and
// which the exec'd process runs on after it (final) — or leave the exec
// alone.  A pure function: no syscalls, no files.  Every row of
// spec/decision-table.md is a case of decide_policy and a unit test.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cpu_set.hpp"
#include "spec_json.hpp"

namespace execaff {

// OpenShift's node-tuning opt-out, honoured as ours is.
inline constexpr const char* kOpenShiftAnnotation = "performance.openshift.io/exec-cpu-affinity";
inline constexpr const char* kAnnotation = "exec-cpu-affinity.execaff.io";

enum class DecisionSource { none, process, config, annotation, handler_default };
[[nodiscard]] const char* to_string(DecisionSource source) noexcept;

struct PolicyInput {
  std::optional<ExecCpuAffinity> process_field;  // the exec's process file
  std::optional<ExecCpuAffinity> config_field;   // config.json's process
  std::map<std::string, std::string> annotations;
  std::optional<std::string> handler_default;  // "first", "first-core", list, "disable"

  CpuSet container_cpuset;            // the live cpuset (never empty)
  std::string container_cpuset_from;  // where it was read, for the reason
  CpuSet caller_cpus;                 // the caller's affinity (never empty)
  // The CPUs the caller's cpuset lets it ask for (sched_setaffinity fails
  // only when a mask misses all of them), asked only when a field's initial
  // misses caller_cpus.  Unset: caller_cpus.
  std::function<CpuSet()> caller_cpuset_source;
  std::optional<CpuSet> housekeeping_configured;
  CpuSet isolated_cpus;
  // When set, the isolated CPUs come from here instead, asked only when the
  // housekeeping CPUs are needed: an explicit field inside the caller's
  // CPUs never needs them, and reading them is three files on every exec.
  std::function<CpuSet()> isolated_cpus_source;
  // SMT siblings of a CPU (for "first-core"); {cpu} when unknown.
  std::function<CpuSet(unsigned)> thread_siblings;
};

struct Decision {
  bool pinned = false;
  std::optional<CpuSet> initial;
  std::optional<CpuSet> final;
  DecisionSource source = DecisionSource::none;
  std::string reason;
  // The explicit execCPUAffinity field the policy (annotation or handler
  // default) overrode, and where it came from (process or config): it is
  // not applied (spec/decision-table.md, precedence 2).
  std::optional<ExecCpuAffinity> overridden_field;
  DecisionSource overridden_source = DecisionSource::none;
  // The field was repaired (R21, R30, R31: an initial the kernel would
  // refuse): a runtime that reads the field must be handed the decision,
  // never the field as written.
  bool repaired = false;
  // Context shown by `execaff explain`.
  std::optional<CpuSet> container_cpuset;
  // The cgroup file container_cpuset was read from ("" when it came from
  // elsewhere): the shim's early join uses it rather than look it up again.
  std::string container_cpuset_file;
  std::optional<CpuSet> housekeeping;
};

// Whether anything asks for pinning (a field, the annotation or the handler
// default, and no opt-out of the latter two).  When false, decide_policy
// needs none of the CPU sets and the caller need not read them.
[[nodiscard]] bool wants_pinning(const PolicyInput& input);

// Throws Error(EINVAL) for an unknown annotation or handler value, a bad
// list, or final CPUs outside the container's cpuset; the message names the
// input, e.g. `annotation exec-cpu-affinity.execaff.io "7": final affinity
// "7" is not within the container's cpuset "1-3" (...)`.
[[nodiscard]] Decision decide_policy(const PolicyInput& input);

}  // namespace execaff
