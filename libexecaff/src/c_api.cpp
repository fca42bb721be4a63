// SPDX-License-Identifier: LGPL-2.1-or-later
// The C ABI (include/execaff/execaff.h) over the C++ internals.  Every entry
// point catches everything: nothing throws across this wall.  Errors become
// a negative errno and an execaff_error holding the message.
#include <execaff/execaff.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <optional>
#include <string>
#include <string_view>

#include "apply.hpp"
#include "c_api.hpp"
#include "cpu_set.hpp"
#include "decide.hpp"
#include "error.hpp"
#include "file_reader.hpp"
#include "node_config.hpp"
#include "node_facts.hpp"
#include "policy.hpp"
#include "spec_json.hpp"

// The header's names for the policy's annotations are the policy's.
static_assert(std::string_view(EXECAFF_ANNOTATION) == execaff::kAnnotation);
static_assert(std::string_view(EXECAFF_OPENSHIFT_ANNOTATION) == execaff::kOpenShiftAnnotation);

using execaff::c_api::guarded;
using execaff::c_api::null_argument;
using execaff::c_api::store_error;

struct execaff_context {
  execaff::NodeFacts node;
};

namespace {

using execaff::c_api::guarded;
using execaff::c_api::null_argument;
using execaff::c_api::store_error;

// execCPUAffinity's two lists as a runtime read them, and where from.
struct TypedAffinity {
  std::string initial;
  std::string final;
  std::string source;
};

}  // namespace

// The documents are kept as text and parsed once, by execaff_decide: a
// setter never fails on what only the decision judges.  So are the typed
// values (EXECAFF_1.2), which replace the same member of a document.
struct execaff_request {
  execaff::DecideRequest request;
  std::optional<std::string> process_json;
  std::string process_source;
  std::optional<std::string> config_json;
  std::string config_source;
  std::optional<TypedAffinity> process_affinity;
  std::optional<TypedAffinity> config_affinity;
  std::optional<std::string> config_cpus;
  std::string config_cpus_source;
  std::map<std::string, std::string, std::less<>> annotations;  // those the policy reads
};


struct execaff_decision {
  execaff::Decision decision;
  std::optional<execaff_cpuset> initial;
  std::optional<execaff_cpuset> final;
};

namespace {

// The source a typed value names in messages: the caller's, else the name
// the document setter of the same input uses.
std::string source_or(const char* source, const char* fallback) {
  return std::string(source != nullptr && *source != '\0' ? source : fallback);
}

std::string text_or_empty(const char* text) {
  return text != nullptr ? std::string(text) : std::string();
}

// The request's documents parsed, the typed values over them.
execaff::DecideRequest parsed_request(const execaff_request& req) {
  execaff::DecideRequest request = req.request;
  if (req.process_json) {
    request.process = execaff::parse_process_document(*req.process_json, req.process_source);
  }
  if (req.config_json) {
    // The C ABI never reads the process object as written (the shim's CLI
    // form does): without it the parse builds no tree.
    request.config = execaff::parse_config_document(*req.config_json, req.config_source, false);
  }
  if (const auto& typed = req.process_affinity) {
    if (!request.process) request.process.emplace().source = typed->source;
    request.process->affinity = execaff::parse_affinity_members(
        typed->initial, typed->final, typed->source, "process.execCPUAffinity");
  }
  if (req.config_affinity || req.config_cpus || !req.annotations.empty()) {
    if (!request.config) {
      request.config.emplace().source = req.config_affinity ? req.config_affinity->source
                                        : req.config_cpus   ? req.config_cpus_source
                                                            : std::string("config.json");
    }
    execaff::ConfigDocument& config = *request.config;
    if (const auto& typed = req.config_affinity) {
      config.process.affinity = execaff::parse_affinity_members(
          typed->initial, typed->final, typed->source, "process.execCPUAffinity");
    }
    if (req.config_cpus) {
      config.cpuset = execaff::parse_cpu_list_member(*req.config_cpus, req.config_cpus_source,
                                                     "linux.resources.cpu.cpus");
      // The decision names the cpuset's origin by its document.
      config.source = req.config_cpus_source;
    }
    for (const auto& [key, value] : req.annotations) config.annotations[key] = value;
  }
  return request;
}

char* duplicate(const std::string& text) noexcept {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

}  // namespace


extern "C" {

const char* execaff_version(void) {
  return EXECAFF_VERSION;
}

const char* execaff_error_message(const execaff_error* err) {
  return err != nullptr ? err->message.c_str() : "";
}

int execaff_error_code(const execaff_error* err) {
  return err != nullptr ? err->code : 0;
}

void execaff_error_free(execaff_error* err) {
  delete err;
}

int execaff_cpuset_parse(const char* list, execaff_cpuset** out, execaff_error** err) {
  EXECAFF_REQUIRE(list);
  EXECAFF_REQUIRE(out);
  *out = nullptr;
  return guarded(err, [&] { *out = new execaff_cpuset{execaff::CpuSet::parse(list)}; });
}

void execaff_cpuset_free(execaff_cpuset* set) {
  delete set;
}

char* execaff_cpuset_format(const execaff_cpuset* set) {
  if (set == nullptr) return duplicate("");
  try {
    return duplicate(set->set.format());
  } catch (...) {
    return nullptr;
  }
}

size_t execaff_cpuset_count(const execaff_cpuset* set) {
  return set != nullptr ? set->set.count() : 0;
}

int execaff_cpuset_first(const execaff_cpuset* set) {
  if (set == nullptr) return -1;
  const auto first = set->set.first();
  return first ? static_cast<int>(*first) : -1;
}

int execaff_cpuset_contains(const execaff_cpuset* set, unsigned cpu) {
  return set != nullptr && set->set.contains(cpu) ? 1 : 0;
}

int execaff_context_new(const char* root, execaff_context** out, execaff_error** err) {
  EXECAFF_REQUIRE(out);
  *out = nullptr;
  return guarded(
      err, [&] { *out = new execaff_context{execaff::NodeFacts(root != nullptr ? root : "/")}; });
}

void execaff_context_free(execaff_context* ctx) {
  delete ctx;
}

int execaff_request_new(execaff_request** out, execaff_error** err) {
  EXECAFF_REQUIRE(out);
  *out = nullptr;
  return guarded(err, [&] { *out = new execaff_request{}; });
}

void execaff_request_free(execaff_request* req) {
  delete req;
}

int execaff_request_set_process_json(execaff_request* req, const char* json, size_t len,
                                     execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(json);
  return guarded(err, [&] {
    req->process_json = std::string(json, len);
    req->process_source = "exec process JSON";
  });
}

int execaff_request_set_process_file(execaff_request* req, const char* path, execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(path);
  return guarded(err, [&] {
    req->process_json = execaff::read_file(path);
    req->process_source = "process file " + execaff::quoted(path);
  });
}

int execaff_request_set_config_json(execaff_request* req, const char* json, size_t len,
                                    execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(json);
  return guarded(err, [&] {
    req->config_json = std::string(json, len);
    req->config_source = "config.json";
  });
}

int execaff_request_set_config_file(execaff_request* req, const char* path, execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(path);
  return guarded(err, [&] {
    req->config_json = execaff::read_file(path);
    req->config_source = "config " + execaff::quoted(path);
  });
}

int execaff_request_set_process_affinity(execaff_request* req, const char* initial,
                                         const char* final, const char* source,
                                         execaff_error** err) {
  EXECAFF_REQUIRE(req);
  return guarded(err, [&] {
    req->process_affinity = TypedAffinity{text_or_empty(initial), text_or_empty(final),
                                          source_or(source, "exec process JSON")};
  });
}

int execaff_request_set_config_affinity(execaff_request* req, const char* initial,
                                        const char* final, const char* source,
                                        execaff_error** err) {
  EXECAFF_REQUIRE(req);
  return guarded(err, [&] {
    req->config_affinity = TypedAffinity{text_or_empty(initial), text_or_empty(final),
                                         source_or(source, "config.json")};
  });
}

int execaff_request_set_config_cpus(execaff_request* req, const char* cpus, const char* source,
                                    execaff_error** err) {
  EXECAFF_REQUIRE(req);
  return guarded(err, [&] {
    req->config_cpus = text_or_empty(cpus);
    req->config_cpus_source = source_or(source, "config.json");
  });
}

int execaff_request_set_annotation(execaff_request* req, const char* key, const char* value,
                                   execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(key);
  EXECAFF_REQUIRE(value);
  // Only the policy's two keys are kept: a runtime may hand over every
  // annotation without each costing a copy.
  if (std::strcmp(key, execaff::kAnnotation) != 0 &&
      std::strcmp(key, execaff::kOpenShiftAnnotation) != 0) {
    return 0;
  }
  return guarded(err, [&] { req->annotations[key] = value; });
}

int execaff_request_set_container_cpuset(execaff_request* req, const char* list,
                                         execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(list);
  return guarded(err, [&] {
    try {
      req->request.container_cpuset = execaff::CpuSet::parse(list);
    } catch (const execaff::Error& e) {
      throw e.wrap("container cpuset");
    }
  });
}

int execaff_request_set_container_pid(execaff_request* req, pid_t pid, execaff_error** err) {
  EXECAFF_REQUIRE(req);
  if (pid <= 0) {
    return store_error(err, EINVAL, "execaff_request_set_container_pid: pid must be positive");
  }
  return guarded(err, [&] { req->request.container_pid = pid; });
}

int execaff_request_set_caller_cpus(execaff_request* req, const char* list, execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(list);
  return guarded(err, [&] {
    try {
      req->request.caller_cpus = execaff::CpuSet::parse(list);
    } catch (const execaff::Error& e) {
      throw e.wrap("caller CPUs");
    }
  });
}

int execaff_request_set_housekeeping_cpus(execaff_request* req, const char* list,
                                          execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(list);
  return guarded(err, [&] {
    try {
      req->request.housekeeping = execaff::CpuSet::parse(list);
    } catch (const execaff::Error& e) {
      throw e.wrap("housekeeping CPUs");
    }
  });
}

int execaff_request_set_handler_default(execaff_request* req, const char* value,
                                        execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(value);
  return guarded(err, [&] { req->request.handler_default = std::string(value); });
}

int execaff_node_config_load(const char* path, execaff_node_config** out, execaff_error** err) {
  EXECAFF_REQUIRE(out);
  *out = nullptr;
  return guarded(err, [&] {
    const execaff::NodeConfigLocation location =
        path != nullptr ? execaff::NodeConfigLocation{path, true} : execaff::node_config_location();
    execaff::NodeConfig config = execaff::load_node_config(location);
    if (config.path.empty()) return;  // no file: *out stays NULL
    auto* node = new execaff_node_config{std::move(config), std::nullopt};
    if (node->config.housekeeping_cpus)
      node->housekeeping = execaff_cpuset{*node->config.housekeeping_cpus};
    *out = node;
  });
}

void execaff_node_config_free(execaff_node_config* config) {
  delete config;
}

const char* execaff_node_config_path(const execaff_node_config* config) {
  return config != nullptr ? config->config.path.c_str() : nullptr;
}

const char* execaff_node_config_handler_default(const execaff_node_config* config) {
  if (config == nullptr || !config->config.handler_default) return nullptr;
  return config->config.handler_default->c_str();
}

const execaff_cpuset* execaff_node_config_housekeeping_cpus(const execaff_node_config* config) {
  if (config == nullptr || !config->housekeeping) return nullptr;
  return &*config->housekeeping;
}

int execaff_node_config_crun_first_image_pin(const execaff_node_config* config) {
  return config != nullptr && config->config.crun_first_image_pin ? 1 : 0;
}

int execaff_request_set_node_config(execaff_request* req, const execaff_node_config* config,
                                    execaff_error** err) {
  EXECAFF_REQUIRE(req);
  if (config == nullptr) return 0;
  return guarded(err, [&] {
    if (config->config.handler_default) {
      req->request.handler_default = *config->config.handler_default;
    }
    if (config->config.housekeeping_cpus) {
      req->request.housekeeping = *config->config.housekeeping_cpus;
    }
  });
}

int execaff_decide(const execaff_context* ctx, const execaff_request* req, execaff_decision** out,
                   execaff_error** err) {
  EXECAFF_REQUIRE(req);
  EXECAFF_REQUIRE(out);
  *out = nullptr;
  return guarded(err, [&] {
    const execaff::NodeFacts default_node;
    const execaff::NodeFacts& node = ctx != nullptr ? ctx->node : default_node;
    const execaff::DecideRequest request = parsed_request(*req);
    auto* d = new execaff_decision{execaff::decide(node, request), {}, {}};
    if (d->decision.initial) d->initial = execaff_cpuset{*d->decision.initial};
    if (d->decision.final) d->final = execaff_cpuset{*d->decision.final};
    *out = d;
  });
}

void execaff_decision_free(execaff_decision* d) {
  delete d;
}

int execaff_decision_is_pinned(const execaff_decision* d) {
  return d != nullptr && d->decision.pinned ? 1 : 0;
}

const execaff_cpuset* execaff_decision_initial(const execaff_decision* d) {
  return d != nullptr && d->initial ? &*d->initial : nullptr;
}

const execaff_cpuset* execaff_decision_final(const execaff_decision* d) {
  return d != nullptr && d->final ? &*d->final : nullptr;
}

const char* execaff_decision_source(const execaff_decision* d) {
  return d != nullptr ? execaff::to_string(d->decision.source) : "none";
}

const char* execaff_decision_reason(const execaff_decision* d) {
  return d != nullptr ? d->decision.reason.c_str() : "";
}

char* execaff_decision_to_json(const execaff_decision* d) {
  if (d == nullptr) return nullptr;
  try {
    return duplicate(execaff::decision_to_json(d->decision));
  } catch (...) {
    return nullptr;
  }
}

int execaff_apply_cpuset(const execaff_cpuset* set, pid_t pid, const char* stage,
                         execaff_error** err) {
  EXECAFF_REQUIRE(set);
  return guarded(err, [&] {
    (void)execaff::apply_affinity(pid, set->set, stage != nullptr ? stage : "requested");
  });
}

int execaff_apply_initial(const execaff_decision* d, pid_t pid, execaff_error** err) {
  EXECAFF_REQUIRE(d);
  if (!d->initial) return 0;
  return execaff_apply_cpuset(&*d->initial, pid, "initial", err);
}

int execaff_apply_final(const execaff_decision* d, pid_t pid, execaff_error** err) {
  EXECAFF_REQUIRE(d);
  if (!d->final) return 0;
  return execaff_apply_cpuset(&*d->final, pid, "final", err);
}

int execaff_process_json_with_decision(const char* json, size_t len, const execaff_decision* d,
                                       char** out, size_t* out_len, execaff_error** err) {
  EXECAFF_REQUIRE(json);
  EXECAFF_REQUIRE(d);
  EXECAFF_REQUIRE(out);
  *out = nullptr;
  return guarded(err, [&] {
    std::optional<execaff::ExecCpuAffinity> affinity;
    if (d->decision.pinned)
      affinity = execaff::ExecCpuAffinity{d->decision.initial, d->decision.final};
    const std::string text = execaff::process_json_with_affinity(std::string_view(json, len),
                                                                 affinity, "exec process JSON");
    char* copy = duplicate(text);
    if (copy == nullptr) throw std::bad_alloc();
    *out = copy;
    if (out_len != nullptr) *out_len = text.size();
  });
}

}  // extern "C"
