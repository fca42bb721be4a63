// SPDX-License-Identifier: LGPL-2.1-or-later
// libFuzzer target: the JSON reader, config.json's decision view and the
// process-file rewrite.  For any
// input that parses as a process document, rewriting its execCPUAffinity
// must give a document that parses again and carries exactly the new value,
// and prefixing its args must give exactly the prefix and the old args.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cpu_set.hpp"
#include "error.hpp"
#include "spec_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  std::optional<execaff::ConfigDocument> whole;
  try {
    whole = execaff::parse_config_document(json, "fuzz config");
  } catch (const execaff::Error&) {
  }
  // The decision's view of a config.json the whole reader accepts reads
  // the decision's members alike (it may accept more: it skims the rest).
  try {
    const execaff::ConfigDocument view =
        execaff::parse_config_decision_view(json, "fuzz config", false);
    if (whole && (view.process.affinity != whole->process.affinity ||
                  view.annotations != whole->annotations || view.cpuset != whole->cpuset)) {
      __builtin_trap();
    }
  } catch (const execaff::Error&) {
    if (whole) __builtin_trap();
  }
  execaff::ProcessDocument document;
  try {
    document = execaff::parse_process_document(json, "fuzz process");
  } catch (const execaff::Error&) {
    return 0;
  }
  // The rewrite works from the layout the one parse recorded: what it
  // writes must parse again and carry exactly the new value, and the
  // trampoline's prefix must land at the front of args.
  const execaff::ExecCpuAffinity wanted{execaff::CpuSet::parse("0-1,1030"),
                                        execaff::CpuSet::parse("1030")};
  const std::string rewritten = execaff::rewritten_process(document, wanted);
  const auto again = execaff::parse_process_document(rewritten, "rewritten");
  if (!again.affinity || !(*again.affinity == wanted)) __builtin_trap();
  if (!document.launch.problem) {
    const std::vector<std::string> prefix = {"/proc/self/fd/4", "4\"r\u00e9", "1030"};
    std::string with_prefix;
    try {
      with_prefix = execaff::rewritten_process(document, std::nullopt, prefix);
    } catch (const execaff::Error&) {
      return 0;  // no args array: refused, fine
    }
    const auto launched = execaff::parse_process_document(with_prefix, "prefixed");
    if (launched.affinity || launched.launch.problem) __builtin_trap();
    std::vector<std::string> expected = prefix;
    expected.insert(expected.end(), document.launch.args.begin(), document.launch.args.end());
    if (launched.launch.args != expected || launched.launch.env != document.launch.env) {
      __builtin_trap();
    }
  }
  const std::string removed = execaff::rewritten_process(again, std::nullopt);
  if (execaff::parse_process_document(removed, "removed").affinity) __builtin_trap();
  return 0;
}
