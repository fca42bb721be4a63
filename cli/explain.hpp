// SPDX-License-Identifier: LGPL-2.1-or-later
// `execaff explain`: the decision for one exec as JSON, and — when the exec
// is pinned — the pre-flight of the emulated path (preflight/preflight.hpp)
// under "preflight".
#pragma once

namespace execaff::cli {

// argv[1] is "explain"; `usage` is the tool's usage text, for errors.
[[nodiscard]] int run_explain_command(int argc, char** argv, const char* usage);

}  // namespace execaff::cli
