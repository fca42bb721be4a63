// SPDX-License-Identifier: LGPL-2.1-or-later
// `exec`: decide with libexecaff, then hand the runtime an invocation that
// pins the new process — natively (a process file carrying the decided
// field) or emulated (initial on the shim itself, which the runtime and its
// helpers inherit; final by the trampoline after the cgroup join).  An exec
// that opts in to nothing is handed over untouched.
#pragma once

#include <string>
#include <vector>

#include "command_line.hpp"
#include "runtime_log.hpp"
#include "shim_config.hpp"

namespace execaff::shim {

// The argv to exec the runtime with.  Sets the shim's own affinity to
// `initial` and leaves the memfds it creates open for the runtime.  Throws
// Error when an opted-in exec cannot be pinned as decided.
[[nodiscard]] std::vector<std::string> plan_exec(const CommandLine& line, const ShimConfig& config,
                                                 const RuntimeLog& log);

}  // namespace execaff::shim
