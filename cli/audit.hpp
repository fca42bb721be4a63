// SPDX-License-Identifier: LGPL-2.1-or-later
// `execaff audit`: its options and its three outputs (a table, --json,
// --prometheus FILE).  Exit 0 clean, 1 findings, 2 error.
#pragma once

namespace execaff::cli {

// argv[1] is "audit".
[[nodiscard]] int run_audit_command(int argc, char** argv);

}  // namespace execaff::cli
