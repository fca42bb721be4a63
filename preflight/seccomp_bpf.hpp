// SPDX-License-Identifier: LGPL-2.1-or-later
// A classic-BPF interpreter for seccomp programs: what the kernel's
// seccomp_run_filters() would return for one system call, computed in user
// space from the program libseccomp exports (spec/preflight.md says why this
// and not a filter loaded in a child).  Only the instructions the kernel's
// seccomp checker admits (seccomp_check_filter) are accepted.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <vector>

namespace execaff::preflight {

// The return value (action | data) of `program` for `data`.  Throws
// Error(EINVAL) for a program the kernel would refuse: empty, longer than
// BPF_MAXINSNS, an instruction outside seccomp's set, a load past
// seccomp_data, a jump out of the program or one that does not end in RET.
[[nodiscard]] std::uint32_t run_seccomp_bpf(const std::vector<sock_filter>& program,
                                            const seccomp_data& data);

}  // namespace execaff::preflight
