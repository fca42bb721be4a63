// SPDX-License-Identifier: LGPL-2.1-or-later
// The C ABI of the runtime option tables (execaff.h, "runtime command
// lines"): what the forked crun's early pin reads of its own argv, by the
// same table and reader as the shim (runtime_options.hpp,
// runtime_command_line.hpp).
#include <execaff/execaff.h>

#include <cerrno>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "c_api.hpp"
#include "error.hpp"
#include "runtime_command_line.hpp"
#include "runtime_options.hpp"

struct execaff_exec_argv {
  std::vector<std::string> argv;
  execaff::RuntimeCommandLine line;
};

namespace {

using execaff::c_api::guarded;
using execaff::c_api::null_argument;

const execaff::RuntimeOptionTable& table_for(const char* runtime, const char* version) {
  const std::string_view kind = runtime != nullptr ? runtime : "";
  const execaff::RuntimeOptionTable* table =
      version != nullptr ? execaff::runtime_option_table(kind, version) : nullptr;
  if (table == nullptr) table = execaff::newest_runtime_option_table(kind);
  if (table == nullptr) {
    throw execaff::Error(ENOTSUP, "runtime " + execaff::quoted(kind) +
                                      " is neither runc nor crun: no option table");
  }
  return *table;
}

}  // namespace

extern "C" {

int execaff_exec_argv_read(const char* runtime, const char* version, int argc,
                           const char* const* argv, execaff_exec_argv** out,
                           execaff_error** err) {
  if (out == nullptr) return null_argument(err, "execaff_exec_argv_read", "out");
  *out = nullptr;
  if (argv == nullptr || argc < 1) return null_argument(err, "execaff_exec_argv_read", "argv");
  return guarded(err, [&] {
    const execaff::RuntimeOptionTable& table = table_for(runtime, version);
    auto a = std::make_unique<execaff_exec_argv>();
    a->argv.assign(argv, argv + argc);
    a->line = execaff::read_runtime_command_line(table, a->argv);
    const std::string as = std::string(table.kind) + " " + std::string(table.release);
    if (a->line.problem) {
      throw execaff::Error(EINVAL, as + " refuses this command line: " + a->line.problem->reason);
    }
    if (a->line.command != "exec") {
      throw execaff::Error(ENOENT, "not an exec command line (command " +
                                       execaff::quoted(a->line.command) + ")");
    }
    if (a->line.operand_index == 0) {
      throw execaff::Error(ENOENT, "exec names no container after its options");
    }
    *out = a.release();
  });
}

void execaff_exec_argv_free(execaff_exec_argv* a) {
  delete a;
}

int execaff_exec_argv_id_index(const execaff_exec_argv* a) {
  return a != nullptr ? static_cast<int>(a->line.operand_index) : -1;
}

const char* execaff_exec_argv_option(const execaff_exec_argv* a, int global, const char* name) {
  if (a == nullptr || name == nullptr) return nullptr;
  const execaff::GivenOption* given = a->line.last(name, global != 0);
  return given != nullptr && given->value ? given->value->c_str() : nullptr;
}

int execaff_runtime_option_argument(const char* runtime, const char* version,
                                    const char* command, const char* name) {
  try {
    if (name == nullptr) return -EINVAL;
    const execaff::RuntimeOptionTable& table = table_for(runtime, version);
    const std::optional<std::span<const execaff::RuntimeOption>> options =
        command == nullptr ? std::optional(table.global) : table.options_of(command);
    if (!options) return -ENOENT;
    const std::string_view wanted = name;
    for (const execaff::RuntimeOption& o : *options) {
      const bool short_form = wanted.size() == 1 && o.shorts.find(wanted[0]) != std::string_view::npos;
      if (o.name != wanted && !short_form) continue;
      switch (o.argument) {
        case execaff::OptionArgument::none: return EXECAFF_OPTION_FLAG;
        case execaff::OptionArgument::required: return EXECAFF_OPTION_VALUE;
        case execaff::OptionArgument::optional: return EXECAFF_OPTION_OPTIONAL_VALUE;
      }
    }
    return -ENOENT;
  } catch (const execaff::Error& e) {
    return -e.code();
  } catch (...) {
    return -ENOMEM;
  }
}

}  // extern "C"
