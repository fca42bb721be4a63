// SPDX-License-Identifier: LGPL-2.1-or-later
#include "bundle_check.hpp"

#include <cstring>

#include "decide.hpp"
#include "error.hpp"
#include "file_reader.hpp"
#include "node_facts.hpp"
#include "policy.hpp"

namespace execaff::shim {
namespace {

// A config.json bigger than this is not read for a warning (CRI-O's are a
// few KiB; the runtime has its own limits).
constexpr std::size_t kMaxConfigBytes = std::size_t{4} << 20;

}  // namespace

std::string config_file(const CommandLine& line) {
  // crun's create and run take the file itself too: --config/-f FILE.
  if (const GivenOption* config = line.read.last("config"); config != nullptr && config->value) {
    return *config->value;
  }
  return bundle_directory(line) + "/config.json";
}

std::string bundle_directory(const CommandLine& line) {
  const GivenOption* bundle = line.read.last("bundle");
  return bundle == nullptr || !bundle->value || bundle->value->empty() ? "." : *bundle->value;
}

void warn_if_exec_would_be_refused(const CommandLine& line, const ShimConfig& config,
                                   const RuntimeLog& log) noexcept {
  try {
    // A line the runtime refuses creates nothing to warn about.
    if (line.problem) return;
    const std::string path = config_file(line);
    std::string json;
    if (try_read_file(path, json, kMaxConfigBytes) != 0) return;
    if (::memmem(json.data(), json.size(), kAnnotation, std::strlen(kAnnotation)) == nullptr) {
      return;
    }
    DecideRequest request;
    request.handler_default = config.node.handler_default;
    request.housekeeping = config.node.housekeeping_cpus;
    const NodeFacts node;
    try {
      request.config = parse_config_document(json, "config " + quoted(path));
      (void)decide(node, request);
    } catch (const std::exception& e) {
      log.warning_everywhere(line.command +
                             ": every exec into this container will be refused: " + e.what());
    }
  } catch (...) {
    // A warning that cannot be worked out is not worth failing a create.
  }
}

}  // namespace execaff::shim
