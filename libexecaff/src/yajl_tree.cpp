// SPDX-License-Identifier: LGPL-2.1-or-later
#include "yajl_tree.hpp"

#include <cerrno>
#include <cstring>

#include "error.hpp"

namespace execaff {

YajlTree parse_json_object(const std::string& text, std::string_view source) {
  char message[512] = "";
  YajlTree tree(yajl_tree_parse(text.c_str(), message, sizeof message));
  if (!tree) {
    std::string reason = message;
    // yajl appends the offending context on following lines; keep line one.
    if (const auto nl = reason.find('\n'); nl != std::string::npos) reason.resize(nl);
    throw Error(EINVAL, std::string(source) + " is not valid JSON: " + reason);
  }
  if (!YAJL_IS_OBJECT(tree.get())) {
    throw Error(EINVAL, std::string(source) + " is not a JSON object");
  }
  return tree;
}

yajl_val member(yajl_val object, std::string_view key) {
  if (object == nullptr || !YAJL_IS_OBJECT(object)) return nullptr;
  const auto& o = object->u.object;
  for (std::size_t i = 0; i < o.len; ++i) {
    if (key == o.keys[i]) return o.values[i];
  }
  return nullptr;
}

}  // namespace execaff
