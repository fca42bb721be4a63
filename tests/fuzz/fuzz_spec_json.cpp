// SPDX-License-Identifier: LGPL-2.1-or-later
// libFuzzer target: the JSON reader and the process-file rewrite.  For any
// input that parses as a process document, rewriting its execCPUAffinity
// must give a document that parses again and carries exactly the new value.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "cpu_set.hpp"
#include "error.hpp"
#include "spec_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    (void)execaff::parse_config_document(json, "fuzz config");
  } catch (const execaff::Error&) {
  }
  try {
    (void)execaff::parse_process_document(json, "fuzz process");
  } catch (const execaff::Error&) {
    return 0;
  }
  const execaff::ExecCpuAffinity wanted{execaff::CpuSet::parse("0-1,1030"),
                                        execaff::CpuSet::parse("1030")};
  std::string rewritten;
  try {
    rewritten = execaff::process_json_with_affinity(json, wanted, "fuzz process");
  } catch (const execaff::Error&) {
    return 0;  // e.g. a duplicated execCPUAffinity key: refused, fine
  }
  const auto again = execaff::parse_process_document(rewritten, "rewritten");
  if (!again.affinity || !(*again.affinity == wanted)) __builtin_trap();
  const std::string removed =
      execaff::process_json_with_affinity(rewritten, std::nullopt, "rewritten");
  if (execaff::parse_process_document(removed, "removed").affinity) __builtin_trap();
  return 0;
}
