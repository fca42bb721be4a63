// SPDX-License-Identifier: LGPL-2.1-or-later
// Does the exec's program exist in the container?  On the emulated path the
// runtime starts the trampoline, not the program, so it can no longer say
// "not found" itself (runc and crun exit 255 with their own message;
// FACTS.md).  The shim looks first, through /proc/<init>/root with
// RESOLVE_IN_ROOT so the container's symlinks resolve inside it, and hands
// an exec whose program is missing to the runtime untouched: the caller
// gets the runtime's own error and exit code, and nothing runs unpinned.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace execaff::shim {

// False only when every candidate is definitely absent (ENOENT/ENOTDIR);
// any other doubt answers true and lets the trampoline report it.
[[nodiscard]] bool program_may_exist(pid_t init_pid, const std::string& program,
                                     const std::vector<std::string>& env,
                                     const std::string& cwd) noexcept;

}  // namespace execaff::shim
