// SPDX-License-Identifier: LGPL-2.1-or-later
#include "command_line.hpp"

#include "error.hpp"

namespace execaff::shim {
namespace {

std::optional<OptionValue> value_of(const GivenOption* given) {
  if (given == nullptr || !given->value) return std::nullopt;
  return OptionValue{*given->value, given->value_index, given->inline_value, given->prefix};
}

CommandLine from_reading(std::vector<std::string> argv, const RuntimeOptionTable* table,
                         RuntimeCommandLine read) {
  CommandLine line;
  line.argv = std::move(argv);
  line.table = table;
  line.read = std::move(read);
  const RuntimeCommandLine& r = line.read;
  line.command_index = r.command_index;
  line.command = r.command;
  for (const GivenOption& g : r.global) {
    if (g.option->name == "root" && g.value) line.root = g.value;
    if (g.option->name == "log" && g.value) line.log = g.value;
    if (g.option->name == "log-format" && g.value) line.log_format = g.value;
    // Go's "--debug=false" turns it off again.
    if (g.option->name == "debug") line.debug = !g.value || (*g.value != "false" && *g.value != "0");
  }
  if (r.problem) {
    line.problem = (r.problem->index < line.argv.size() && r.problem->index >= r.command_index &&
                            r.command_index != 0
                        ? r.command + ": "
                        : std::string()) +
                   r.problem->reason;
  }
  if (line.command != "exec") return line;
  line.process = value_of(r.last("process"));
  line.preserve_fds = value_of(r.last("preserve-fds"));
  line.env = r.values("env");
  if (const GivenOption* cwd = r.last("cwd"); cwd != nullptr) line.cwd = cwd->value;
  if (r.operand_index != 0) {
    line.container_id_index = r.operand_index;
    line.container_id = line.argv[r.operand_index];
    if (r.operand_index + 1 < line.argv.size()) line.program_index = r.operand_index + 1;
  }
  return line;
}

bool read_alike(const RuntimeCommandLine& a, const RuntimeCommandLine& b) {
  if (a.problem || b.problem || a.command_index != b.command_index ||
      a.operand_index != b.operand_index || a.options.size() != b.options.size() ||
      a.global.size() != b.global.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.options.size(); ++i) {
    if (a.options[i].option->name != b.options[i].option->name ||
        a.options[i].value != b.options[i].value) {
      return false;
    }
  }
  return true;
}

}  // namespace

CommandLine parse_command_line(int argc, char** argv, const std::string& runtime) {
  std::vector<std::string> args(argv, argv + argc);
  if (const RuntimeOptionTable* table = newest_runtime_option_table(runtime_kind_of(runtime))) {
    RuntimeCommandLine read = read_runtime_command_line(*table, args);
    return from_reading(std::move(args), table, std::move(read));
  }
  // Neither runc nor crun: the line is read by both; where they differ the
  // shim cannot tell which token is which.
  const RuntimeOptionTable& runc = *newest_runtime_option_table("runc");
  const RuntimeOptionTable& crun = *newest_runtime_option_table("crun");
  RuntimeCommandLine as_runc = read_runtime_command_line(runc, args);
  const RuntimeCommandLine as_crun = read_runtime_command_line(crun, args);
  const bool alike = read_alike(as_runc, as_crun);
  CommandLine line = from_reading(std::move(args), nullptr, std::move(as_runc));
  if (!alike && !line.problem) {
    line.problem = "runtime " + quoted(runtime) +
                   " is neither runc nor crun, and runc and crun read this command line apart";
  }
  return line;
}

CommandLine reread_command_line(const CommandLine& line, const RuntimeOptionTable& table) {
  RuntimeCommandLine read = read_runtime_command_line(table, line.argv);
  return from_reading(line.argv, &table, std::move(read));
}

std::string replaced_token(const OptionValue& option, const std::string& value) {
  return option.inline_form ? option.prefix + value : value;
}

}  // namespace execaff::shim
