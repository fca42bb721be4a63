// SPDX-License-Identifier: LGPL-2.1-or-later
// `create` and `run` pass through untouched, and a bad annotation is only
// refused at the first exec — a probe, minutes later (issue 11, section 4).
// So the shim reads the bundle's config.json on the way through and, when
// an exec into that container would be refused because of what the
// annotation says, warns at once (stderr and --log) so the pod's author
// learns it at start.  It changes nothing the runtime gets: same argv,
// environment, fds and affinity, and the runtime's exit status is its own.
// Only a config.json that holds the annotation's key is parsed (memmem
// first): every other bundle pays for one read.
#pragma once

#include "command_line.hpp"
#include "runtime_log.hpp"
#include "shim_config.hpp"

namespace execaff::shim {

// The bundle directory of a create/run command line: --bundle/-b, else ".".
[[nodiscard]] std::string bundle_directory(const CommandLine& line);

// Its config.json (crun: --config/-f FILE when given).
[[nodiscard]] std::string config_file(const CommandLine& line);

// Warns when the annotation in `line`'s bundle would make every exec fail.
// Never throws, never refuses: an unreadable bundle is the runtime's to report.
void warn_if_exec_would_be_refused(const CommandLine& line, const ShimConfig& config,
                                   const RuntimeLog& log) noexcept;

}  // namespace execaff::shim
