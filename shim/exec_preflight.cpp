// SPDX-License-Identifier: LGPL-2.1-or-later
#include "exec_preflight.hpp"

#include <cerrno>

#include "error.hpp"
#include "preflight.hpp"

namespace execaff::shim {

void require_trampoline_preflight(const ConfigDocument& config, pid_t init_pid,
                                  const RuntimeLog& log) {
  preflight::PreflightInput in;
  in.config = &config;
  in.init_pid = init_pid;
  const preflight::PreflightReport report = preflight::run_preflight(in);
  log.debug_line("pre-flight: " + report.to_json());
  if (report.blocked()) throw Error(EPERM, report.reason());
}

}  // namespace execaff::shim
