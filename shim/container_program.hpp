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

// How the runtime searches $PATH when the program has no slash.  They
// differ on elements that are empty or relative (measured with runc 1.1.5
// and crun 1.8.1, tests/integration/FACTS.md §8):
//   runc (Go 1.19+ exec.LookPath): an empty element is "."; a match in a
//     relative element is refused ("cannot run executable found relative
//     to current directory", exit 255);
//   crun: an empty element is skipped; a relative one is taken from cwd.
enum class PathRules { runc, crun };

// False only when every candidate is definitely absent (ENOENT/ENOTDIR),
// or when the runtime would refuse the match (runc, relative element);
// any other doubt answers true and lets the trampoline report it.
[[nodiscard]] bool program_may_exist(pid_t init_pid, const std::string& program,
                                     const std::vector<std::string>& env, const std::string& cwd,
                                     PathRules rules) noexcept;

}  // namespace execaff::shim
