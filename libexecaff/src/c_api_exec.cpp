// SPDX-License-Identifier: LGPL-2.1-or-later
// The C ABI's questions about one exec that need no request: whether the
// decision will pin it (execaff_exec_wants_pinning, EXECAFF_1.3), for a
// runtime's start-up path before it has read anything else.  The answer is
// the policy's own (policy.hpp, wants_pinning), from the members the
// decision reads, read by the decision's handlers: no second copy of the
// decision table, and the same errors for the same bytes.
#include <execaff/execaff.h>

#include <optional>
#include <string_view>

#include "c_api.hpp"
#include "json_reader.hpp"
#include "policy.hpp"
#include "spec_handlers.hpp"
#include "spec_json.hpp"

namespace {

// The execCPUAffinity of a process document.  A skim for the one member
// when it can judge the text (a process file holds args and env, which
// the question never reads); else, or for a null, the whole document, so
// that what it refuses is refused as the decision refuses it.
std::optional<execaff::ExecCpuAffinity> process_affinity(std::string_view text) {
  constexpr std::string_view source = "exec process JSON";
  const execaff::json::Skimmed found = execaff::json::skim(text, {{"execCPUAffinity"}}, source);
  const std::optional<std::string_view>& value = found.values.front();
  if (!found.complete || (value && value->front() != '{')) {
    return execaff::parse_process_document(text, source).affinity;
  }
  std::optional<execaff::ExecCpuAffinity> affinity;
  if (value) {
    execaff::spec::AffinityValue handler(&affinity);
    execaff::json::read_value(*value, handler, source, "process.execCPUAffinity");
  }
  return affinity;
}

}  // namespace

extern "C" {

int execaff_exec_wants_pinning(const char* config_json, size_t config_len, const char* process_json,
                               size_t process_len, const execaff_node_config* node,
                               execaff_error** err) {
  EXECAFF_REQUIRE(config_json);
  bool wants = false;
  const int ret = execaff::c_api::guarded(err, [&] {
    execaff::PolicyInput input;
    if (process_json != nullptr) {
      input.process_field = process_affinity(std::string_view(process_json, process_len));
    }
    const execaff::ConfigDocument config = execaff::parse_config_decision_view(
        std::string_view(config_json, config_len), "config.json", false);
    input.config_field = config.process.affinity;
    for (const char* key : {execaff::kAnnotation, execaff::kOpenShiftAnnotation}) {
      if (const auto at = config.annotations.find(key); at != config.annotations.end()) {
        input.annotations.insert(*at);
      }
    }
    if (node != nullptr) input.handler_default = node->config.handler_default;
    wants = execaff::wants_pinning(input);
  });
  return ret < 0 ? ret : (wants ? 1 : 0);
}

}  // extern "C"
