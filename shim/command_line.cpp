// SPDX-License-Identifier: LGPL-2.1-or-later
#include "command_line.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace execaff::shim {
namespace {

// Global options of runc 1.1+ and crun 1.8+ that take a value.
constexpr std::array kGlobalWithValue = {
    std::string_view("--log"),
    std::string_view("--log-format"),
    std::string_view("--log-level"),
    std::string_view("--root"),
    std::string_view("--criu"),
    std::string_view("--rootless"),
    std::string_view("--cgroup-manager"),
};

// exec options of runc and crun that take a value (long and short forms).
constexpr std::array kExecWithValue = {
    std::string_view("--console-socket"),
    std::string_view("--cwd"),
    std::string_view("--env"),
    std::string_view("-e"),
    std::string_view("--user"),
    std::string_view("-u"),
    std::string_view("--additional-gids"),
    std::string_view("-g"),
    std::string_view("--process"),
    std::string_view("-p"),
    std::string_view("--pid-file"),
    std::string_view("--process-label"),
    std::string_view("--apparmor"),
    std::string_view("--cap"),
    std::string_view("-c"),
    std::string_view("--preserve-fds"),
    std::string_view("--cgroup"),
};

template <std::size_t N>
bool takes_value(const std::array<std::string_view, N>& table, std::string_view name) {
  return std::find(table.begin(), table.end(), name) != table.end();
}

struct Token {
  std::string_view name;  // "--root", "-p"
  std::optional<std::string_view> inline_value;
  std::string prefix;  // "--root=", "-p"
};

// "--name=value", "--name", "-x", "-xVALUE" (short options with a value).
Token split_option(std::string_view arg, bool short_takes_value_inline) {
  Token t;
  if (arg.rfind("--", 0) == 0) {
    const auto eq = arg.find('=');
    if (eq != std::string_view::npos) {
      t.name = arg.substr(0, eq);
      t.inline_value = arg.substr(eq + 1);
      t.prefix = std::string(arg.substr(0, eq + 1));
    } else {
      t.name = arg;
    }
  } else {
    t.name = arg.substr(0, 2);
    if (arg.size() > 2 && short_takes_value_inline) {
      t.inline_value = arg.substr(2);
      t.prefix = std::string(t.name);
    }
  }
  return t;
}

bool is_option(std::string_view arg) {
  return arg.size() > 1 && arg[0] == '-';
}

}  // namespace

CommandLine parse_command_line(int argc, char** argv) {
  CommandLine line;
  line.argv.assign(argv, argv + argc);
  std::size_t i = 1;
  for (; i < line.argv.size(); ++i) {
    const std::string_view arg = line.argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (!is_option(arg)) break;
    const Token t = split_option(arg, false);
    std::optional<std::string> value;
    if (t.inline_value) {
      value = std::string(*t.inline_value);
    } else if (takes_value(kGlobalWithValue, t.name) && i + 1 < line.argv.size()) {
      value = line.argv[++i];
    }
    if (t.name == "--root" && value) line.root = value;
    if (t.name == "--log" && value) line.log = value;
    if (t.name == "--log-format" && value) line.log_format = value;
    if (t.name == "--debug") line.debug = true;
  }
  if (i >= line.argv.size()) return line;
  line.command_index = i;
  line.command = line.argv[i];
  if (line.command != "exec") return line;

  for (++i; i < line.argv.size(); ++i) {
    const std::string_view arg = line.argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (!is_option(arg)) break;
    const bool short_form = arg.rfind("--", 0) != 0;
    const bool short_with_value = short_form && takes_value(kExecWithValue, arg.substr(0, 2));
    const Token t = split_option(arg, short_with_value);
    if (!takes_value(kExecWithValue, t.name)) continue;  // a flag, known or not
    OptionValue v;
    if (t.inline_value) {
      v = OptionValue{std::string(*t.inline_value), i, true, t.prefix};
    } else if (i + 1 < line.argv.size()) {
      ++i;
      v = OptionValue{line.argv[i], i, false, ""};
    } else {
      break;  // the runtime will complain about the missing value
    }
    if (t.name == "--process" || t.name == "-p") line.process = v;
    if (t.name == "--preserve-fds") line.preserve_fds = v;
    if (t.name == "--env" || t.name == "-e") line.env.push_back(v.value);
    if (t.name == "--cwd") line.cwd = v.value;
  }
  if (i >= line.argv.size()) return line;  // no id: the runtime's usage error
  line.container_id_index = i;
  line.container_id = line.argv[i];
  if (i + 1 < line.argv.size()) line.program_index = i + 1;
  return line;
}

std::string replaced_token(const CommandLine& line, const OptionValue& option,
                           const std::string& value) {
  (void)line;
  return option.inline_form ? option.prefix + value : value;
}

}  // namespace execaff::shim
