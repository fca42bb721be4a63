// SPDX-License-Identifier: LGPL-2.1-or-later
// libFuzzer target: json::skim, which passes over a runtime's state file
// by its structure alone.  For any input it must stay inside the text, and
// when the input is a valid JSON document (the whole reader accepts it),
// every value the skim found must be valid JSON on its own, lie inside the
// document, and be found whole: the skim of the value's own text gives the
// same bytes one level up.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "json_reader.hpp"

namespace {

// Accepts any value and keeps nothing.
class Anything : public execaff::json::Handler {
 public:
  void on_scalar(execaff::json::Reader& /*reader*/,
                 const execaff::json::Scalar& /*value*/) override {}
  Handler* on_object(execaff::json::Reader& /*reader*/) override { return nullptr; }
  Handler* on_array(execaff::json::Reader& /*reader*/) override { return nullptr; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::vector<std::vector<std::string_view>> paths = {
      {"init_process_pid"}, {"pid"}, {"bundle"}, {"config", "labels"}, {"config"}};
  const execaff::json::Skimmed found = execaff::json::skim(text, paths, "fuzz state");
  if (found.values.size() != paths.size()) __builtin_trap();
  bool valid = true;
  try {
    Anything anything;
    execaff::json::read(text, anything, "fuzz state");
  } catch (const execaff::Error&) {
    valid = false;
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!found.values[i]) continue;
    const std::string_view value = *found.values[i];
    if (!found.complete || value.empty() || value.data() < text.data() ||
        value.data() + value.size() > text.data() + text.size()) {
      __builtin_trap();
    }
    if (!valid) continue;
    try {
      Anything anything;
      execaff::json::read_value(value, anything, "fuzz value", "value");
    } catch (const execaff::Error&) {
      __builtin_trap();
    }
  }
  // config.labels inside config: the same bytes when config's own text is
  // skimmed for labels.
  if (valid && found.values[3] && found.values[4]) {
    const std::string wrapped = "{\"labels\":" + std::string(*found.values[3]) + "}";
    const execaff::json::Skimmed again = execaff::json::skim(wrapped, {{"labels"}}, "again");
    if (!again.complete || !again.values[0] || *again.values[0] != *found.values[3]) {
      __builtin_trap();
    }
  }
  return 0;
}
