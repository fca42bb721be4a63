// SPDX-License-Identifier: LGPL-2.1-or-later
#include "policy.hpp"

#include <cerrno>

#include "error.hpp"

namespace execaff {
namespace {

// What a pod annotation or a handler default asks for.
struct PolicyRequest {
  std::string value;   // as written
  std::string origin;  // "annotation exec-cpu-affinity.execaff.io", "handler default"
  DecisionSource source;
};

bool is_disable(const std::string& value) {
  return value == "disable";
}

std::string describe(const CpuSet& set) {
  return quoted(set.format());
}

std::string describe_optional(const std::optional<CpuSet>& set) {
  return set ? describe(*set) : "not set";
}

// The pod's opt-in: our annotation first, then the handler's default.  An
// opt-out in either annotation wins over everything policy would add: a pod
// that says "disable" must get the bare runtime's behaviour (the epic's
// first acceptance criterion), whatever the handler default is.
std::optional<PolicyRequest> policy_request(const PolicyInput& input, std::string& opted_out) {
  const auto ours = input.annotations.find(kAnnotation);
  const auto openshift = input.annotations.find(kOpenShiftAnnotation);
  if (ours != input.annotations.end() && is_disable(ours->second)) {
    opted_out = std::string("annotation ") + kAnnotation + "=disable";
    return std::nullopt;
  }
  if (openshift != input.annotations.end() && is_disable(openshift->second)) {
    opted_out = std::string("annotation ") + kOpenShiftAnnotation + "=disable";
    return std::nullopt;
  }
  if (ours != input.annotations.end()) {
    return PolicyRequest{ours->second, std::string("annotation ") + kAnnotation,
                         DecisionSource::annotation};
  }
  if (input.handler_default && !input.handler_default->empty() &&
      !is_disable(*input.handler_default)) {
    return PolicyRequest{*input.handler_default, "handler default",
                         DecisionSource::handler_default};
  }
  return std::nullopt;
}

CpuSet isolated_cpus_of(const PolicyInput& input) {
  return input.isolated_cpus_source ? input.isolated_cpus_source() : input.isolated_cpus;
}

// The housekeeping CPUs the caller may use: where the runtime's own work
// (everything before the cgroup join) is allowed to run.
CpuSet housekeeping_cpus(const PolicyInput& input) {
  if (input.housekeeping_configured) {
    return input.caller_cpus.intersected_with(*input.housekeeping_configured);
  }
  return input.caller_cpus.without(isolated_cpus_of(input));
}

CpuSet final_cpus_for(const PolicyRequest& request, const PolicyInput& input) {
  const CpuSet& cpuset = input.container_cpuset;
  const unsigned first = *cpuset.first();
  if (request.value == "first") return CpuSet::of({first});
  if (request.value == "first-core") {
    CpuSet core = input.thread_siblings ? input.thread_siblings(first) : CpuSet::of({first});
    core.add(first);
    return core.intersected_with(cpuset);
  }
  CpuSet listed;
  try {
    listed = CpuSet::parse(request.value);
  } catch (const Error& e) {
    throw Error(EINVAL, request.origin + " " + quoted(request.value) +
                            ": expected \"first\", \"first-core\", \"disable\" or a CPU list (" +
                            e.what() + ")");
  }
  if (listed.empty()) {
    throw Error(EINVAL, request.origin +
                            " \"\": expected \"first\", \"first-core\", "
                            "\"disable\" or a CPU list");
  }
  if (!listed.is_subset_of(cpuset)) {
    throw Error(EINVAL, request.origin + " " + quoted(request.value) + ": final affinity " +
                            describe(listed) + " is not within the container's cpuset " +
                            describe(cpuset) + " (" + input.container_cpuset_from + ")");
  }
  return listed;
}

// initial = H ∪ F (background.md, "A policy that avoids both failure
// modes"): before the join the runtime's helpers can only run on H, since F
// is clipped away when it lies outside the caller's cpuset and is the pod's
// own CPU when it does not; on 6.2+ kernels the join keeps cpuset ∩ (H ∪ F),
// which is F when the pod's CPUs are exclusive, so there is no window; on
// older kernels the join resets to the cpuset and final = F restores it
// before the user's program runs.
Decision decide_from_policy(const PolicyRequest& request, const PolicyInput& input) {
  const CpuSet final = final_cpus_for(request, input);
  const CpuSet housekeeping = housekeeping_cpus(input);
  if (housekeeping.empty()) {
    throw Error(EINVAL, request.origin + "=" + request.value +
                            ": no housekeeping CPU is available to the caller (caller runs on " +
                            describe(input.caller_cpus) +
                            (input.housekeeping_configured
                                 ? ", housekeeping is " + describe(*input.housekeeping_configured)
                                 : ", isolated are " + describe(isolated_cpus_of(input))) +
                            "), so the runtime's helpers would run on a pod's CPUs");
  }
  Decision d;
  d.pinned = true;
  d.initial = housekeeping.united_with(final);
  d.final = final;
  d.source = request.source;
  d.housekeeping = housekeeping;
  d.reason = request.origin + "=" + request.value + ": the exec'd process runs on " +
             describe(final) + " of the container's cpuset " + describe(input.container_cpuset) +
             " (" + input.container_cpuset_from + "); the runtime's helpers run on housekeeping " +
             describe(housekeeping) + " until the cgroup join";
  return d;
}

Decision decide_from_field(const ExecCpuAffinity& field, DecisionSource source,
                           const PolicyInput& input) {
  const std::string origin = source == DecisionSource::process
                                 ? "the exec's process.execCPUAffinity"
                                 : "config.json's process.execCPUAffinity";
  Decision d;
  d.pinned = true;
  d.source = source;
  d.initial = field.initial;
  d.final = field.final;
  d.reason = origin + " as given";

  if (field.final && !field.final->is_subset_of(input.container_cpuset)) {
    throw Error(EINVAL, origin + ": final affinity " + describe(*field.final) +
                            " is not within the container's cpuset " +
                            describe(input.container_cpuset) + " (" + input.container_cpuset_from +
                            ")");
  }
  // An omitted final is left to the kernel's cgroup join, as runc >= 1.3
  // does (setFinalCPUAffinity resets the mask only when neither member is
  // set; measured with runc 1.3.6 and crun 1.21, spec/upstream.md): since
  // 6.2 the join keeps initial ∩ cpuset, before 6.2 it resets to the
  // cpuset.  Fidelity: the same field places the process where they do.
  if (field.initial && !field.final) {
    d.reason += "; final omitted: left to the kernel's cgroup join, as runc >= 1.3 does";
  }
  if (!field.initial) return d;

  // sched_setaffinity fails with EINVAL only when the mask misses every CPU
  // the caller's cpuset allows (runc#5036, crun#1915: exclusive cpusets,
  // cgroup v2 partitions); a mask outside the caller's current affinity but
  // inside its cpuset is accepted, and the peers run there, so do we.
  if (field.initial->intersects(input.caller_cpus)) return d;
  const CpuSet allowed = input.caller_cpuset_source ? input.caller_cpuset_source() : input.caller_cpus;
  if (field.initial->intersects(allowed)) return d;

  // Where the peers fail, execaff goes further: the housekeeping CPUs keep
  // the runtime's helpers off the pod's CPUs and the join still lands the
  // process on initial ∩ cpuset.  Only the part of initial inside the
  // container's cpuset is kept: CPUs that are not there are never handed to
  // a runtime (crun 1.21 corrupts its heap on an initial of "999", R30).
  const CpuSet housekeeping = housekeeping_cpus(input);
  if (housekeeping.empty()) {
    throw Error(EINVAL, origin + ": initial affinity " + describe(*field.initial) +
                            " is outside the CPUs the caller may use " + describe(allowed) +
                            " and no housekeeping CPU is available to widen it");
  }
  const CpuSet inside = field.initial->intersected_with(input.container_cpuset);
  d.initial = inside.united_with(housekeeping);
  d.housekeeping = housekeeping;
  d.repaired = true;
  d.reason += "; initial " + describe(*field.initial) + " is outside the CPUs the caller may use " +
              describe(allowed) + " (the kernel would refuse it), so the runtime runs on " +
              describe(*d.initial) + " (housekeeping " + describe(housekeeping) + ")";
  if (!field.final && !inside.empty()) {
    d.final = inside;
    d.reason += " and the process ends on initial's " + describe(inside) +
                " of the container's cpuset, where the join alone would not put it";
  }
  return d;
}

}  // namespace

const char* to_string(DecisionSource source) noexcept {
  switch (source) {
    case DecisionSource::none: return "none";
    case DecisionSource::process: return "process";
    case DecisionSource::config: return "config";
    case DecisionSource::annotation: return "annotation";
    case DecisionSource::handler_default: return "handler-default";
  }
  return "none";
}

bool wants_pinning(const PolicyInput& input) {
  std::string opted_out;
  return policy_request(input, opted_out) || input.process_field || input.config_field;
}

Decision decide_policy(const PolicyInput& input) {
  std::string opted_out;
  const auto request = policy_request(input, opted_out);
  if (request || input.process_field || input.config_field) {
    if (input.container_cpuset.empty()) {
      throw Error(EINVAL, "the container's cpuset is empty (" + input.container_cpuset_from + ")");
    }
    if (input.caller_cpus.empty()) throw Error(EINVAL, "the caller's CPU set is empty");
  }

  Decision d;
  if (request) {
    d = decide_from_policy(*request, input);
    const auto& overridden = input.process_field ? input.process_field : input.config_field;
    if (overridden) {
      d.overridden_field = overridden;
      d.overridden_source = input.process_field ? DecisionSource::process : DecisionSource::config;
      const bool same = overridden->initial == d.initial && overridden->final == d.final;
      d.reason += std::string("; it overrides ") +
                  (input.process_field ? "the process file's" : "config.json's") +
                  " execCPUAffinity (initial " + describe_optional(overridden->initial) +
                  ", final " + describe_optional(overridden->final) + ")" +
                  (same ? ", which asks for the same CPUs"
                        : ", which is not applied: the policy wins over the field");
    }
  } else if (input.process_field) {
    d = decide_from_field(*input.process_field, DecisionSource::process, input);
  } else if (input.config_field) {
    d = decide_from_field(*input.config_field, DecisionSource::config, input);
  } else {
    d.reason = "no execCPUAffinity field, no " + std::string(kAnnotation) +
               " annotation and no handler default: the exec is left to the runtime";
  }
  if (!opted_out.empty()) {
    d.reason = opted_out + " turns execaff's policy off; " + d.reason;
  }
  if (d.pinned) d.container_cpuset = input.container_cpuset;
  return d;
}

}  // namespace execaff
