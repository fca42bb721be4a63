// SPDX-License-Identifier: LGPL-2.1-or-later
// Closing the pre-6.2 window on the emulated path.  Before Linux 6.2
// (commits 8f9ea86fdf99, da019032819a) attaching a task to a cpuset cgroup
// overwrites its affinity with the cpuset, so `runc init` would run on every
// CPU of the container — isolated ones included — from the join until the
// trampoline sets final.  If the shim itself is already in the container's
// cpuset cgroup when it sets initial, the kernel clips initial to the
// cpuset (= final, for exclusive CPUs) and the runtime's later join of the
// new process is a migration to the css_set it is already in, which the
// cgroup core skips without calling cpuset_attach: the mask survives.
#pragma once

#include <sys/types.h>

#include <string>

namespace execaff::shim {

// True when the running kernel resets affinity on a cpuset join (< 6.2).
[[nodiscard]] bool kernel_resets_affinity_on_join();

// Moves the calling process into the cgroup whose cpuset file is
// `cpuset_file` (the cgroup.procs beside it).  Throws Error naming the file.
void join_cgroup_of(const std::string& cpuset_file);

}  // namespace execaff::shim
