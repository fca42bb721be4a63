// SPDX-License-Identifier: LGPL-2.1-or-later
#include "decide.hpp"

#include <unistd.h>
#include <yajl/yajl_gen.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "apply.hpp"
#include "error.hpp"
#include "spec_json.hpp"

namespace execaff {
namespace {

void resolve_container_cpuset(const NodeFacts& node, const DecideRequest& request,
                              const std::optional<CpuSet>& config_cpuset, PolicyInput& input) {
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
        return;
      }
    } catch (const Error& e) {
      throw e.wrap("container cpuset");
    }
  }
  if (config_cpuset) {
    input.container_cpuset = *config_cpuset;
    input.container_cpuset_from = request.config_source + " linux.resources.cpu.cpus";
    return;
  }
  input.container_cpuset = node.online_cpus();
  input.container_cpuset_from = "no cpuset: every online CPU";
}

void add_list(yajl_gen gen, const char* key, const std::optional<CpuSet>& set) {
  yajl_gen_string(gen, reinterpret_cast<const unsigned char*>(key), std::strlen(key));
  if (!set) {
    yajl_gen_null(gen);
    return;
  }
  const std::string text = set->format();
  yajl_gen_string(gen, reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

void add_string(yajl_gen gen, const char* key, const std::string& value) {
  yajl_gen_string(gen, reinterpret_cast<const unsigned char*>(key), std::strlen(key));
  yajl_gen_string(gen, reinterpret_cast<const unsigned char*>(value.data()), value.size());
}

struct GenFree {
  void operator()(yajl_gen_t* gen) const noexcept { yajl_gen_free(gen); }
};

}  // namespace

Decision decide(const NodeFacts& node, const DecideRequest& request) {
  PolicyInput input;
  std::optional<CpuSet> config_cpuset;
  if (request.process_json) {
    input.process_field =
        parse_process_document(*request.process_json, request.process_source).affinity;
  }
  if (request.config_json) {
    ConfigDocument config = parse_config_document(*request.config_json, request.config_source);
    input.config_field = std::move(config.affinity);
    input.annotations = std::move(config.annotations);
    config_cpuset = std::move(config.cpuset);
  }
  input.handler_default = request.handler_default;

  if (!wants_pinning(input)) return decide_policy(input);

  resolve_container_cpuset(node, request, config_cpuset, input);
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
  return decide_policy(input);
}

std::string decision_to_json(const Decision& decision) {
  const std::unique_ptr<yajl_gen_t, GenFree> gen(yajl_gen_alloc(nullptr));
  if (!gen) throw std::bad_alloc();
  yajl_gen g = gen.get();
  yajl_gen_map_open(g);
  yajl_gen_string(g, reinterpret_cast<const unsigned char*>("pinned"), 6);
  yajl_gen_bool(g, decision.pinned ? 1 : 0);
  add_list(g, "initial", decision.initial);
  add_list(g, "final", decision.final);
  add_string(g, "source", to_string(decision.source));
  add_string(g, "reason", decision.reason);
  if (decision.overridden_field) {
    // The field the policy overrode: present only then, so that a reader
    // sees at once that the exec does not get what its spec asks for.
    yajl_gen_string(g, reinterpret_cast<const unsigned char*>("overridden_field"), 16);
    yajl_gen_map_open(g);
    add_string(g, "source", to_string(decision.overridden_source));
    add_list(g, "initial", decision.overridden_field->initial);
    add_list(g, "final", decision.overridden_field->final);
    yajl_gen_map_close(g);
  }
  add_list(g, "container_cpuset", decision.container_cpuset);
  add_list(g, "housekeeping", decision.housekeeping);
  yajl_gen_map_close(g);
  const unsigned char* buffer = nullptr;
  std::size_t length = 0;
  if (yajl_gen_get_buf(g, &buffer, &length) != yajl_gen_status_ok) {
    throw Error(EIO, "cannot render the decision as JSON");
  }
  return std::string(reinterpret_cast<const char*>(buffer), length);
}

}  // namespace execaff
