// SPDX-License-Identifier: LGPL-2.1-or-later
#include "process_launch.hpp"

#include <cerrno>

#include "error.hpp"
#include "yajl_tree.hpp"

namespace execaff {
namespace {

std::vector<std::string> strings(yajl_val array, std::string_view source, const char* key) {
  std::vector<std::string> out;
  if (array == nullptr || YAJL_IS_NULL(array)) return out;
  if (!YAJL_IS_ARRAY(array)) {
    throw Error(EINVAL, std::string(source) + ": " + key + ": expected an array of strings");
  }
  for (std::size_t i = 0; i < array->u.array.len; ++i) {
    const yajl_val v = array->u.array.values[i];
    if (!YAJL_IS_STRING(v)) {
      throw Error(EINVAL, std::string(source) + ": " + key + "[" + std::to_string(i) +
                              "]: expected a string");
    }
    out.emplace_back(YAJL_GET_STRING(v));
  }
  return out;
}

}  // namespace

ProcessLaunch read_process_launch(const std::string& json, std::string_view under_key,
                                  std::string_view source) {
  const YajlTree tree = parse_json_object(json, source);
  yajl_val process = tree.get();
  if (!under_key.empty()) process = member(process, under_key);
  ProcessLaunch launch;
  if (process == nullptr || !YAJL_IS_OBJECT(process)) return launch;
  launch.args = strings(member(process, "args"), source, "args");
  launch.env = strings(member(process, "env"), source, "env");
  const yajl_val cwd = member(process, "cwd");
  if (cwd != nullptr && YAJL_IS_STRING(cwd)) launch.cwd = YAJL_GET_STRING(cwd);
  return launch;
}

}  // namespace execaff
