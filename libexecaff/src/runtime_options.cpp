// SPDX-License-Identifier: LGPL-2.1-or-later
// The tables, read from each release's `--help` and source (runc:
// main.go, exec.go, create.go, run.go; crun: src/crun.c, src/exec.c,
// src/create.c, src/run.c); tests/runtimes/test_runtime_help.py holds
// them against the installed binaries.  Repeatable: runc's StringSlice
// flags, crun's options that append to a list.
#include "runtime_options.hpp"

#include <array>

namespace execaff {
namespace {

using A = OptionArgument;
constexpr A kFlag = A::none;
constexpr A kValue = A::required;

// ---------------------------------------------------------------- runc

constexpr std::array kRunc115Global = {
    RuntimeOption{"debug", "", kFlag},         RuntimeOption{"log", "", kValue},
    RuntimeOption{"log-format", "", kValue},   RuntimeOption{"root", "", kValue},
    RuntimeOption{"criu", "", kValue},         RuntimeOption{"systemd-cgroup", "", kFlag},
    RuntimeOption{"rootless", "", kValue},     RuntimeOption{"help", "h", kFlag},
    RuntimeOption{"version", "v", kFlag},
};
// 1.2 hid --criu: still read (its value ignored, with a warning), not listed.
constexpr std::array kRunc136Global = {
    RuntimeOption{"criu", "", kValue, false, true},
    RuntimeOption{"debug", "", kFlag},       RuntimeOption{"log", "", kValue},
    RuntimeOption{"log-format", "", kValue}, RuntimeOption{"root", "", kValue},
    RuntimeOption{"systemd-cgroup", "", kFlag}, RuntimeOption{"rootless", "", kValue},
    RuntimeOption{"help", "h", kFlag},       RuntimeOption{"version", "v", kFlag},
};

#define RUNC_EXEC_COMMON                                                                         \
  RuntimeOption{"console-socket", "", kValue}, RuntimeOption{"cwd", "", kValue},                 \
      RuntimeOption{"env", "e", kValue, true}, RuntimeOption{"tty", "t", kFlag},                 \
      RuntimeOption{"user", "u", kValue}, RuntimeOption{"additional-gids", "g", kValue, true},   \
      RuntimeOption{"process", "p", kValue}, RuntimeOption{"detach", "d", kFlag},                \
      RuntimeOption{"pid-file", "", kValue}, RuntimeOption{"process-label", "", kValue},         \
      RuntimeOption{"apparmor", "", kValue}, RuntimeOption{"no-new-privs", "", kFlag},           \
      RuntimeOption{"cap", "c", kValue, true}, RuntimeOption{"preserve-fds", "", kValue},        \
      RuntimeOption{"cgroup", "", kValue, true}, RuntimeOption {                                 \
    "ignore-paused", "", kFlag                                                                   \
  }

constexpr std::array kRunc115Exec = {RUNC_EXEC_COMMON};
// 1.2 added --pidfd-socket.
constexpr std::array kRunc136Exec = {RuntimeOption{"pidfd-socket", "", kValue}, RUNC_EXEC_COMMON};
#undef RUNC_EXEC_COMMON

constexpr std::array kRunc115Create = {
    RuntimeOption{"bundle", "b", kValue},      RuntimeOption{"console-socket", "", kValue},
    RuntimeOption{"pid-file", "", kValue},     RuntimeOption{"no-pivot", "", kFlag},
    RuntimeOption{"no-new-keyring", "", kFlag}, RuntimeOption{"preserve-fds", "", kValue},
};
constexpr std::array kRunc115Run = {
    RuntimeOption{"bundle", "b", kValue},       RuntimeOption{"console-socket", "", kValue},
    RuntimeOption{"detach", "d", kFlag},        RuntimeOption{"keep", "", kFlag},
    RuntimeOption{"pid-file", "", kValue},      RuntimeOption{"no-subreaper", "", kFlag},
    RuntimeOption{"no-pivot", "", kFlag},       RuntimeOption{"no-new-keyring", "", kFlag},
    RuntimeOption{"preserve-fds", "", kValue},
};
constexpr std::array kRunc136Create = {
    RuntimeOption{"bundle", "b", kValue},       RuntimeOption{"console-socket", "", kValue},
    RuntimeOption{"pidfd-socket", "", kValue},  RuntimeOption{"pid-file", "", kValue},
    RuntimeOption{"no-pivot", "", kFlag},       RuntimeOption{"no-new-keyring", "", kFlag},
    RuntimeOption{"preserve-fds", "", kValue},
};
constexpr std::array kRunc136Run = {
    RuntimeOption{"bundle", "b", kValue},      RuntimeOption{"console-socket", "", kValue},
    RuntimeOption{"pidfd-socket", "", kValue}, RuntimeOption{"detach", "d", kFlag},
    RuntimeOption{"keep", "", kFlag},          RuntimeOption{"pid-file", "", kValue},
    RuntimeOption{"no-subreaper", "", kFlag},  RuntimeOption{"no-pivot", "", kFlag},
    RuntimeOption{"no-new-keyring", "", kFlag}, RuntimeOption{"preserve-fds", "", kValue},
};

constexpr std::array kRunc115Commands = {
    CommandOptions{"exec", kRunc115Exec},
    CommandOptions{"create", kRunc115Create},
    CommandOptions{"run", kRunc115Run},
};
constexpr std::array kRunc136Commands = {
    CommandOptions{"exec", kRunc136Exec},
    CommandOptions{"create", kRunc136Create},
    CommandOptions{"run", kRunc136Run},
};

// ---------------------------------------------------------------- crun

#define CRUN_GLOBAL_COMMON                                                                     \
  RuntimeOption{"cgroup-manager", "", kValue}, RuntimeOption{"debug", "", kFlag},              \
      RuntimeOption{"log", "", kValue}, RuntimeOption{"log-format", "", kValue},               \
      RuntimeOption{"root", "", kValue}, RuntimeOption{"rootless", "", kValue},                \
      RuntimeOption{"systemd-cgroup", "", kFlag}, RuntimeOption{"help", "?", kFlag},           \
      RuntimeOption{"usage", "", kFlag}, RuntimeOption {                                       \
    "version", "vV", kFlag                                                                     \
  }

constexpr std::array kCrun181Global = {CRUN_GLOBAL_COMMON};
// 1.9 added --log-level.
constexpr std::array kCrun121Global = {RuntimeOption{"log-level", "", kValue},
                                       CRUN_GLOBAL_COMMON};
#undef CRUN_GLOBAL_COMMON

// The same in 1.8.1, 1.21 and 1.28.  --tty's value is optional
// (`-t, --tty[=TTY]`): `-tX` is --tty=X, never -t -X.
constexpr std::array kCrunExec = {
    RuntimeOption{"apparmor", "", kValue},      RuntimeOption{"cgroup", "", kValue},
    RuntimeOption{"console-socket", "", kValue}, RuntimeOption{"cwd", "", kValue},
    RuntimeOption{"cap", "c", kValue, true},    RuntimeOption{"detach", "d", kFlag},
    RuntimeOption{"env", "e", kValue, true},    RuntimeOption{"no-new-privs", "", kFlag},
    RuntimeOption{"pid-file", "", kValue},      RuntimeOption{"preserve-fds", "", kValue},
    RuntimeOption{"process-label", "", kValue}, RuntimeOption{"process", "p", kValue},
    RuntimeOption{"tty", "t", A::optional},     RuntimeOption{"user", "u", kValue},
    RuntimeOption{"help", "?", kFlag},          RuntimeOption{"usage", "", kFlag},
};

#define CRUN_CREATE_COMMON                                                                 \
  RuntimeOption{"bundle", "b", kValue}, RuntimeOption{"console-socket", "", kValue},       \
      RuntimeOption{"config", "f", kValue}, RuntimeOption{"no-new-keyring", "", kFlag},    \
      RuntimeOption{"no-pivot", "", kFlag}, RuntimeOption{"no-subreaper", "", kFlag},      \
      RuntimeOption{"pid-file", "", kValue}, RuntimeOption{"preserve-fds", "", kValue},    \
      RuntimeOption{"help", "?", kFlag}, RuntimeOption {                                   \
    "usage", "", kFlag                                                                     \
  }

constexpr std::array kCrunCreate = {CRUN_CREATE_COMMON};
constexpr std::array kCrun181Run = {RuntimeOption{"detach", "d", kFlag}, CRUN_CREATE_COMMON};
// 1.9.1 added run --keep.
constexpr std::array kCrun121Run = {RuntimeOption{"detach", "d", kFlag},
                                    RuntimeOption{"keep", "", kFlag}, CRUN_CREATE_COMMON};
#undef CRUN_CREATE_COMMON

constexpr std::array kCrun181Commands = {
    CommandOptions{"exec", kCrunExec},
    CommandOptions{"create", kCrunCreate},
    CommandOptions{"run", kCrun181Run},
};
constexpr std::array kCrun121Commands = {
    CommandOptions{"exec", kCrunExec},
    CommandOptions{"create", kCrunCreate},
    CommandOptions{"run", kCrun121Run},
};

// The forked crun (contrib/crun) adds no option: it reads as its base 1.8.1.
constexpr std::array kTables = {
    RuntimeOptionTable{"runc", "1.1.5", OptionSyntax::go_flag, kRunc115Global, kRunc115Commands},
    RuntimeOptionTable{"runc", "1.3.6", OptionSyntax::go_flag, kRunc136Global, kRunc136Commands},
    RuntimeOptionTable{"crun", "1.8.1", OptionSyntax::argp, kCrun181Global, kCrun181Commands},
    RuntimeOptionTable{"crun", "1.21", OptionSyntax::argp, kCrun121Global, kCrun121Commands},
    RuntimeOptionTable{"crun", "1.28", OptionSyntax::argp, kCrun121Global, kCrun121Commands},
};

// "1.3.6+ds1" -> "1.3.6", "1.19.3-e5f3" -> "1.19.3".
std::string_view release_part(std::string_view version) {
  return version.substr(0, version.find_first_of("+- \t"));
}

}  // namespace

std::optional<std::span<const RuntimeOption>> RuntimeOptionTable::options_of(
    std::string_view command) const noexcept {
  for (const CommandOptions& c : commands) {
    if (c.command == command) return c.options;
  }
  return std::nullopt;
}

std::span<const RuntimeOptionTable> runtime_option_tables() noexcept {
  return kTables;
}

const RuntimeOptionTable* runtime_option_table(std::string_view kind,
                                               std::string_view version) noexcept {
  const std::string_view release = release_part(version);
  for (const RuntimeOptionTable& t : kTables) {
    if (t.kind == kind && t.release == release) return &t;
  }
  return nullptr;
}

const RuntimeOptionTable* newest_runtime_option_table(std::string_view kind) noexcept {
  const RuntimeOptionTable* newest = nullptr;
  for (const RuntimeOptionTable& t : kTables) {
    if (t.kind == kind) newest = &t;
  }
  return newest;
}

std::string_view runtime_kind_of(std::string_view path) noexcept {
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  for (const std::string_view kind : {std::string_view("runc"), std::string_view("crun")}) {
    if (name.substr(0, kind.size()) == kind) return kind;
  }
  return {};
}

const RuntimeOptionTable* runtime_option_table_of_version_line(
    std::string_view first_line) noexcept {
  for (const std::string_view kind : {std::string_view("runc"), std::string_view("crun")}) {
    const std::string_view prefix = kind == "runc" ? "runc version " : "crun version ";
    if (first_line.substr(0, prefix.size()) == prefix) {
      return runtime_option_table(kind, first_line.substr(prefix.size()));
    }
  }
  return nullptr;
}

}  // namespace execaff
