// SPDX-License-Identifier: LGPL-2.1-or-later
// The emulated path's pre-flight, as the shim runs it: only for an exec
// that is pinned and goes through the trampoline, after the program was
// found and before anything is changed (preflight/preflight.hpp).  A blocked
// pre-flight is an Error, which main() turns into a refusal ("fail") or an
// unpinned exec with a warning ("run-unpinned").
#pragma once

#include <sys/types.h>

#include "runtime_log.hpp"
#include "spec_json.hpp"

namespace execaff::shim {

// Throws Error(EPERM) with the pre-flight's reason when the trampoline
// cannot work; logs the whole report with --debug / "debug".
void require_trampoline_preflight(const ConfigDocument& config, pid_t init_pid,
                                  const RuntimeLog& log);

}  // namespace execaff::shim
