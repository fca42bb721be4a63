// SPDX-License-Identifier: LGPL-2.1-or-later
#include "decide.hpp"

#include <unistd.h>

#include "apply.hpp"
#include "error.hpp"

namespace execaff {
namespace {

void resolve_container_cpuset(const NodeFacts& node, const DecideRequest& request,
                              PolicyInput& input, std::string& cgroup_file) {
  if (request.container_cpuset) {
    input.container_cpuset = *request.container_cpuset;
    input.container_cpuset_from = "given by the caller";
    return;
  }
  if (request.container_pid) {
    try {
      if (auto cgroup = node.cgroup_cpuset_of_pid(*request.container_pid)) {
        input.container_cpuset = std::move(cgroup->cpus);
        input.container_cpuset_from = cgroup->file;
        cgroup_file = std::move(cgroup->file);
        return;
      }
    } catch (const Error& e) {
      throw e.wrap("container cpuset");
    }
  }
  if (request.config && request.config->cpuset) {
    input.container_cpuset = *request.config->cpuset;
    input.container_cpuset_from = request.config->source + " linux.resources.cpu.cpus";
    return;
  }
  input.container_cpuset = node.online_cpus();
  input.container_cpuset_from = "no cpuset: every online CPU";
}

}  // namespace

Decision decide(const NodeFacts& node, const DecideRequest& request) {
  PolicyInput input;
  if (request.process) input.process_field = request.process->affinity;
  if (request.config) {
    input.config_field = request.config->process.affinity;
    // The policy reads these two; a copy of every annotation would cost
    // each exec a few dozen allocations.
    for (const char* key : {kAnnotation, kOpenShiftAnnotation}) {
      if (const auto at = request.config->annotations.find(key);
          at != request.config->annotations.end()) {
        input.annotations.insert(*at);
      }
    }
  }
  input.handler_default = request.handler_default;

  if (!wants_pinning(input)) return decide_policy(input);

  std::string cgroup_file;
  resolve_container_cpuset(node, request, input, cgroup_file);
  if (request.caller_cpus) {
    input.caller_cpus = *request.caller_cpus;
  } else {
    input.caller_cpus = thread_affinity(0);
    // The caller's own cpuset, read only when a field's initial misses its
    // affinity; no cpuset controller: every online CPU.
    input.caller_cpuset_source = [&node]() {
      if (auto own = node.cgroup_cpuset_of_pid(::getpid())) return own->cpus;
      return node.online_cpus();
    };
  }
  input.housekeeping_configured = request.housekeeping;
  input.isolated_cpus_source = [&node]() { return node.isolated_cpus().cpus; };
  input.thread_siblings = [&node](unsigned cpu) { return node.thread_siblings(cpu); };
  Decision decision = decide_policy(input);
  decision.container_cpuset_file = std::move(cgroup_file);
  return decision;
}

void write_decision_members(json::Writer& out, const Decision& decision) {
  out.key("pinned").boolean(decision.pinned);
  out.member_or_null("initial", decision.initial);
  out.member_or_null("final", decision.final);
  out.member("source", to_string(decision.source));
  out.member("reason", decision.reason);
  if (decision.overridden_field) {
    // The field the policy overrode: present only then, so that a reader
    // sees at once that the exec does not get what its spec asks for.
    out.key("overridden_field").open_object();
    out.member("source", to_string(decision.overridden_source));
    out.member_or_null("initial", decision.overridden_field->initial);
    out.member_or_null("final", decision.overridden_field->final);
    out.close_object();
  }
  out.member_or_null("container_cpuset", decision.container_cpuset);
  out.member_or_null("housekeeping", decision.housekeeping);
}

std::string decision_to_json(const Decision& decision) {
  json::Writer out;
  out.open_object();
  write_decision_members(out, decision);
  out.close_object();
  return out.take();
}

}  // namespace execaff
