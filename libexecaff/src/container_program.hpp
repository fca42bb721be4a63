// SPDX-License-Identifier: LGPL-2.1-or-later
// Does the exec's program exist in the container?  On the emulated path the
// runtime starts the trampoline, not the program, so it can no longer say
// "not found" itself (runc and crun exit 255 with their own message;
// FACTS.md).  The shim looks first and hands an exec whose program is
// definitely missing to the runtime untouched: the caller gets the
// runtime's own error and exit code.  "Definitely" is the point (issue 11):
// a look-up the shim cannot do the runtime's way — through /proc (whose
// /proc/self is absent for a reader outside the container's pid namespace,
// whose magic links name the reader's root), a FUSE mount, a root that is
// not the one setns gives — is not "missing"; such an exec takes the pinned
// path and the trampoline reports what it finds.  Nothing runs unpinned
// because of a look-up the shim could not do.  `execaff explain`'s
// pre-flight asks the same question the same way.
//
// Two phases: one openat2 through /proc/<init>/root (RESOLVE_IN_ROOT,
// no magic links), whose "found" is final — the common case costs one
// syscall per candidate.  Only a "not found" is confirmed, in a child that
// joins the container's mount namespace and walks every candidate a
// component at a time on filesystems that answer every reader alike, in
// the namespace's root and in the init's root, in the spelling runc looks
// up (Go's lexical Join) and the raw one.
#pragma once

#include <sys/types.h>

#include "exec_program.hpp"

namespace execaff {

// False only when the runtime's own look-up of `exec` (exec_program.hpp:
// its program, env, cwd and rules) must fail in the container of
// `init_pid`: every candidate is definitely absent (ENOENT/ENOTDIR), a
// directory or a file without an execute bit, or the runtime would refuse
// the match (runc, relative element).  Any other doubt answers true and
// lets the trampoline report it.
[[nodiscard]] bool program_may_exist(pid_t init_pid, const ExecProgram& exec) noexcept;

}  // namespace execaff
