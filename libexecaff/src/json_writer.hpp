// SPDX-License-Identifier: LGPL-2.1-or-later
// The one JSON writer: yajl's generator, which does all the escaping, behind
// calls that throw instead of returning a status.  Compact output, bytes
// passed through as they are (no UTF-8 validation: a message quoting a
// hostile value must still be written).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cpu_set.hpp"

struct yajl_gen_t;

namespace execaff::json {

class Writer {
 public:
  Writer();
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  Writer& open_object();
  Writer& close_object();
  Writer& open_array();
  Writer& close_array();
  Writer& key(std::string_view name);
  Writer& string(std::string_view value);
  Writer& boolean(bool value);
  Writer& number(std::int64_t value);
  // A number as a document wrote it (its digits kept, whatever its size).
  Writer& number_as_written(std::string_view text);
  Writer& null();

  // Shorthands for a member: the value, a string or null, a CPU list in
  // canonical form or null.
  Writer& member(std::string_view name, std::string_view value);
  Writer& member(std::string_view name, const char* value) {
    return member(name, std::string_view(value));
  }
  Writer& member_or_null(std::string_view name, const std::optional<std::string>& value);
  Writer& member_or_null(std::string_view name, const std::optional<CpuSet>& value);

  // A further top-level value, `separator` between it and the last one:
  // pieces of a document that is being edited rather than written whole
  // (a key, ":" and its value; array elements joined by ",").
  Writer& then(const char* separator);

  // What was written so far.
  [[nodiscard]] std::string_view text() const;
  [[nodiscard]] std::string take() const { return std::string(text()); }

 private:
  yajl_gen_t* gen_;
};

}  // namespace execaff::json
