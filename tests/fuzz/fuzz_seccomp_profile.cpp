// SPDX-License-Identifier: LGPL-2.1-or-later
// libFuzzer target: the pre-flight's seccomp evaluation of a profile a
// container's author wrote (config.json linux.seccomp, hostile input run
// as root by the shim and `execaff explain`).  A profile is refused with
// an Error or built; once built, the program reduced to the probed calls
// must answer exactly as the program of every rule (the pre-flight relies
// on that, preflight/seccomp_profile.hpp), and the interpreter must accept
// what libseccomp exported.
#include <seccomp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "error.hpp"
#include "seccomp_bpf.hpp"
#include "seccomp_profile.hpp"
#include "spec_json.hpp"

namespace {

using namespace execaff::preflight;

std::uint32_t verdict_of(const SeccompProgram& program, const SyscallProbe& probe) {
  seccomp_data data{};
  data.nr = seccomp_syscall_resolve_name_arch(program.architecture, probe.name.c_str());
  data.arch = program.architecture;
  for (unsigned i = 0; i < 6; ++i) data.args[i] = probe.args[i];
  return run_seccomp_bpf(program.instructions, data);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  static const std::vector<SyscallProbe> kProbes = {
      {"sched_setaffinity", {0, 8192, 0, 0, 0, 0}, {2}},
      {"execve", {0, 0, 0, 0, 0, 0}, {0, 1, 2}},
  };
  std::vector<std::string> names;
  for (const auto& probe : kProbes) names.push_back(probe.name);
  try {
    const execaff::SeccompProfile profile = execaff::parse_seccomp_profile(text, "fuzz profile");
    const SeccompProgram full = build_seccomp_program(profile, "fuzz profile");
    const SeccompProgram reduced = build_seccomp_program(profile, "fuzz profile", {}, &names);
    for (const auto& probe : kProbes) {
      if (verdict_of(full, probe) != verdict_of(reduced, probe)) __builtin_trap();
    }
    (void)evaluate_seccomp_profile(profile, "fuzz profile", kProbes);
  } catch (const execaff::Error&) {
  }
  return 0;
}
