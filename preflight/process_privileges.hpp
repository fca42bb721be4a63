// SPDX-License-Identifier: LGPL-2.1-or-later
// The exec'd process's capability sets and no_new_privs, from its OCI
// process object, parsed and printed with libcap.  The trampoline needs no
// capability: sched_setaffinity on itself needs none (CAP_SYS_NICE is only
// for another user's task), and execve needs none; no_new_privs does not
// stop it either (a memfd carries no set-id bit or file capability).  So
// these are reported, never a reason to refuse — except a name the runtime
// itself will not accept.  `execaff explain` reports them; the shim does not
// link libcap at all (its constructor would cost every runtime call six
// prctl calls, for a check that never blocks).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "preflight.hpp"
#include "spec_json.hpp"

namespace execaff::preflight {

struct ProcessPrivileges {
  std::string text;  // libcap's cap_to_text of effective/permitted/inheritable
  std::vector<std::string> bounding;
  std::vector<std::string> ambient;
  bool no_new_privileges = false;
  std::vector<std::string> unknown;  // names libcap does not know
};

// `capabilities` are a process object's (an exec's process file, or
// config.json's "process").  Error(EINVAL), the problem, for a wrong type.
[[nodiscard]] ProcessPrivileges read_process_privileges(const ProcessCapabilities& capabilities);

// The pre-flight's "capabilities" check: the sets as libcap prints them,
// no_new_privs, and what the trampoline needs of them (nothing).
[[nodiscard]] PreflightCheck check_process_privileges(const ProcessCapabilities& capabilities);

}  // namespace execaff::preflight
