// SPDX-License-Identifier: LGPL-2.1-or-later
#include "bundle_check.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "decide.hpp"
#include "error.hpp"
#include "node_facts.hpp"
#include "policy.hpp"

namespace execaff::shim {
namespace {

// A config.json bigger than this is not read for a warning (CRI-O's are a
// few KiB; the runtime has its own limits).
constexpr off_t kMaxConfigBytes = 4 << 20;

bool read_small_file(const std::string& path, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= kMaxConfigBytes;
  if (ok) {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    out.resize(got);
  }
  ::close(fd);
  return ok;
}

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
    if (!read_small_file(path, json)) return;
    if (::memmem(json.data(), json.size(), kAnnotation, std::strlen(kAnnotation)) == nullptr) {
      return;
    }
    DecideRequest request;
    request.config_json = std::move(json);
    request.config_source = "config " + quoted(path);
    request.handler_default = config.node.handler_default;
    request.housekeeping = config.node.housekeeping_cpus;
    const NodeFacts node;
    try {
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
