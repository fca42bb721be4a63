// SPDX-License-Identifier: LGPL-2.1-or-later
// The native path (spec/native.md): over a runtime that applies
// process.execCPUAffinity itself, the runtime gets exactly one decision —
// the shim's — and no trampoline.
//
// * Decided by the field the runtime will read anyway (the process file's,
//   or runc's config.json default) and equal to it: the argv as it came.
// * Decided otherwise (the annotation or the handler default, or a field
//   the decision had to change): the process file handed on carries the
//   decision as its execCPUAffinity, every other byte as it was — a sealed
//   memfd passed as `--process /proc/self/fd/N`, nothing written to disk.
// * The CLI form: converted into the process file the runtime would have
//   built (cli_process.hpp), carrying the decision — for runc and crun
//   found by their version; over the fork or a runtime only declared
//   "native": true it stays emulated.
//
// In every case the caller then applies the decision's `initial` to the
// shim itself, so the runtime's own threads start there too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "decide.hpp"
#include "native_support.hpp"
#include "runtime_log.hpp"
#include "runtime_state.hpp"

namespace execaff::shim {

struct NativeExec {
  const CommandLine& line;
  const ContainerState& state;
  const DecideRequest& request;  // its documents, parsed once
  const Decision& decision;      // pinned
  const NativeSupport& runtime;  // native()
};

// The argv to exec the runtime with, or nullopt — with the reason in the
// debug log — when this exec cannot go native and must be emulated: a CPU
// above what the runtime parses, a CLI form the conversion does not read,
// the forked crun's CLI form.  May leave an inherited memfd open.
[[nodiscard]] std::optional<std::vector<std::string>> plan_native_exec(const NativeExec& exec,
                                                                       const RuntimeLog& log);

}  // namespace execaff::shim
