// SPDX-License-Identifier: LGPL-2.1-or-later
#include "exec_program.hpp"

#include <algorithm>
#include <utility>

namespace execaff {

const char* to_string(RuntimeRules rules) noexcept {
  return rules == RuntimeRules::crun ? "crun" : "runc";
}

std::optional<RuntimeRules> parse_runtime_rules(std::string_view name) noexcept {
  if (name == "runc") return RuntimeRules::runc;
  if (name == "crun") return RuntimeRules::crun;
  return std::nullopt;
}

RuntimeRules runtime_rules_of(std::string_view path) noexcept {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  return name.starts_with("crun") ? RuntimeRules::crun : RuntimeRules::runc;
}

ExecProgram resolve_exec_program(const DecideRequest& documents, const ExecArgv& argv,
                                 RuntimeRules rules) {
  ExecProgram exec;
  exec.rules = rules;
  ProcessLaunch launch;
  if (documents.process) {
    launch = documents.process->launch.checked();
  } else {
    // The CLI form: the runtime starts from config.json's process and puts
    // the command line's program, --env and --cwd on top.
    if (documents.config) launch = documents.config->process.launch.checked();
    if (argv.program) launch.args = {*argv.program};
    // crun's exec (1.8 at least) sets the env to the --env values when
    // there are any (src/exec.c; it adds HOME, which no look-up reads).
    if (rules == RuntimeRules::crun && !argv.env.empty()) launch.env.clear();
    launch.env.insert(launch.env.end(), argv.env.begin(), argv.env.end());
    if (argv.cwd) launch.cwd = *argv.cwd;
  }
  exec.program = launch.args.empty() ? "" : std::move(launch.args.front());
  exec.env = std::move(launch.env);
  exec.cwd = std::move(launch.cwd);
  return exec;
}

std::string go_clean_path(std::string_view path) {
  const bool absolute = !path.empty() && path.front() == '/';
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, slash - start);
    start = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (!out.empty() && out.back() != "..") {
        out.pop_back();
        continue;
      }
      if (absolute) continue;  // "/.." is "/"
    }
    out.push_back(part);
  }
  std::string joined = absolute ? "/" : "";
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i > 0) joined += '/';
    joined += out[i];
  }
  return joined.empty() ? "." : joined;
}

}  // namespace execaff
