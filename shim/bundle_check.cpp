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
  for (std::size_t i = line.command_index + 1; i < line.argv.size(); ++i) {
    const std::string& a = line.argv[i];
    if ((a == "--config" || a == "-f") && i + 1 < line.argv.size()) return line.argv[i + 1];
    if (a.rfind("--config=", 0) == 0) return a.substr(9);
  }
  return bundle_directory(line) + "/config.json";
}

std::string bundle_directory(const CommandLine& line) {
  std::string bundle = ".";
  for (std::size_t i = line.command_index + 1; i < line.argv.size(); ++i) {
    const std::string& a = line.argv[i];
    if ((a == "--bundle" || a == "-b") && i + 1 < line.argv.size()) {
      bundle = line.argv[++i];
    } else if (a.rfind("--bundle=", 0) == 0) {
      bundle = a.substr(9);
    } else if (a.size() > 2 && a.rfind("-b", 0) == 0) {
      bundle = a.substr(2);
    }
  }
  return bundle.empty() ? "." : bundle;
}

void warn_if_exec_would_be_refused(const CommandLine& line, const ShimConfig& config,
                                   const RuntimeLog& log) noexcept {
  try {
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
