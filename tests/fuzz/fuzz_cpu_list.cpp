// SPDX-License-Identifier: LGPL-2.1-or-later
// libFuzzer target: the CPU list parser.  Invariants: it either throws
// execaff::Error or returns a set whose canonical form parses back to the
// same set; it never crashes, hangs or allocates past the 65536-CPU cap.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cpu_set.hpp"
#include "error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const execaff::CpuSet set = execaff::CpuSet::parse(text);
    const std::string canonical = set.format();
    if (!(execaff::CpuSet::parse(canonical) == set)) __builtin_trap();
    if (set.last() && *set.last() > execaff::CpuSet::kMaxCpu) __builtin_trap();
  } catch (const execaff::Error&) {
  }
  return 0;
}
