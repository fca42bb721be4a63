// SPDX-License-Identifier: LGPL-2.1-or-later
// Reading and setting CPU affinity with masks sized to the machine, not to
// cpu_set_t's 1024 bits.  The only module that changes kernel state.
#pragma once

#include <sys/types.h>

#include <string_view>

#include "cpu_set.hpp"

namespace execaff {

// The affinity of one thread (0: the calling thread).  Error(ESRCH) when it
// is gone.
[[nodiscard]] CpuSet thread_affinity(pid_t tid);

// Sets `cpus` on every thread of process `pid` (0: the calling process),
// including threads created while it runs, reads each back and returns the
// set the kernel gave the main thread.  The kernel may clip a mask to the
// task's cpuset (sched_setaffinity(2)); that is success as long as what it
// gave is a non-empty subset of what was asked.  A refusal or anything else
// throws Error naming `stage`, the pid, the CPUs asked and given, and why —
// e.g. that none of them is in the task's cpuset, or none is online.
CpuSet apply_affinity(pid_t pid, const CpuSet& cpus, std::string_view stage);

}  // namespace execaff
