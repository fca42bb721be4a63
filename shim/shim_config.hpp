// SPDX-License-Identifier: LGPL-2.1-or-later
// The shim's configuration, read on every invocation and never cached
// (seed 002: a component that reads its config once, too early).  A missing
// config where one is needed, a half-written or invalid one, or one that
// anyone but root could have written is refused with the reason.
#pragma once

#include <optional>
#include <string>

#include "cpu_set.hpp"
#include "early_cpuset_join.hpp"

namespace execaff::shim {

inline constexpr const char* kDefaultConfigPath = "/etc/execaff/shim.json";

enum class NativeMode { detect, yes, no };
enum class OnFailure { fail, run_unpinned };

struct ShimConfig {
  std::string runtime;       // absolute path of the real runtime
  std::string runtime_from;  // "EXECAFF_RUNTIME", or the config path
  NativeMode native = NativeMode::detect;
  std::optional<std::string> handler_default;
  std::optional<CpuSet> housekeeping_cpus;
  OnFailure on_failure = OnFailure::fail;
  bool debug = false;
  // Pre-6.2 kernels: join the container's cpuset before the runtime does
  // (early_cpuset_join.hpp).  "auto" decides by the kernel's version.
  EarlyJoinMode early_cpuset_join = EarlyJoinMode::automatic;
  std::string path;  // "" when no file was read
};

// EXECAFF_RUNTIME names the runtime; the file named by EXECAFF_CONFIG, else
// kDefaultConfigPath, holds the rest (and the runtime when the variable is
// unset).  The default file may be absent when EXECAFF_RUNTIME is set.
[[nodiscard]] ShimConfig load_shim_config();

// Throws Error(ELOOP) when `runtime` is this very binary.
void refuse_self_as_runtime(const std::string& runtime);

}  // namespace execaff::shim
