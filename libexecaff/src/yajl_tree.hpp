// SPDX-License-Identifier: LGPL-2.1-or-later
// An owning yajl tree and typed look-ups with errors that name the source
// and the key, for small documents (the shim's config, runtime state files).
#pragma once

#include <yajl/yajl_tree.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace execaff {

struct YajlTreeFree {
  void operator()(yajl_val v) const noexcept { yajl_tree_free(v); }
};
using YajlTree = std::unique_ptr<std::remove_pointer_t<yajl_val>, YajlTreeFree>;

// Parses `text` (a whole document) or throws Error(EINVAL) naming `source`.
[[nodiscard]] YajlTree parse_json_object(const std::string& text, std::string_view source);

// Member `key` of object `object`, or nullptr.
[[nodiscard]] yajl_val member(yajl_val object, std::string_view key);

}  // namespace execaff
