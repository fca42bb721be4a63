// SPDX-License-Identifier: LGPL-2.1-or-later
#include "json_writer.hpp"

#include <yajl/yajl_gen.h>

#include <cerrno>
#include <new>

#include "error.hpp"

namespace execaff::json {
namespace {

// A status other than ok is a writer used out of order (a value where a
// key belongs, an unclosed object): a bug here, never bad input.
void check(yajl_gen_status status) {
  if (status == yajl_gen_status_ok) return;
  throw Error(EIO, "JSON writer used out of order (yajl_gen status " +
                       std::to_string(static_cast<int>(status)) + ")");
}

const unsigned char* bytes(std::string_view text) noexcept {
  return reinterpret_cast<const unsigned char*>(text.data());
}

}  // namespace

Writer::Writer() : gen_(yajl_gen_alloc(nullptr)) {
  if (gen_ == nullptr) throw std::bad_alloc();
}

Writer::~Writer() {
  yajl_gen_free(gen_);
}

Writer& Writer::open_object() {
  check(yajl_gen_map_open(gen_));
  return *this;
}

Writer& Writer::close_object() {
  check(yajl_gen_map_close(gen_));
  return *this;
}

Writer& Writer::open_array() {
  check(yajl_gen_array_open(gen_));
  return *this;
}

Writer& Writer::close_array() {
  check(yajl_gen_array_close(gen_));
  return *this;
}

Writer& Writer::key(std::string_view name) {
  return string(name);
}

Writer& Writer::string(std::string_view value) {
  check(yajl_gen_string(gen_, bytes(value), value.size()));
  return *this;
}

Writer& Writer::boolean(bool value) {
  check(yajl_gen_bool(gen_, value ? 1 : 0));
  return *this;
}

Writer& Writer::number(std::int64_t value) {
  check(yajl_gen_integer(gen_, value));
  return *this;
}

Writer& Writer::number_as_written(std::string_view text) {
  check(yajl_gen_number(gen_, text.data(), text.size()));
  return *this;
}

Writer& Writer::null() {
  check(yajl_gen_null(gen_));
  return *this;
}

Writer& Writer::member(std::string_view name, std::string_view value) {
  return key(name).string(value);
}

Writer& Writer::member_or_null(std::string_view name, const std::optional<std::string>& value) {
  key(name);
  return value ? string(*value) : null();
}

Writer& Writer::member_or_null(std::string_view name, const std::optional<CpuSet>& value) {
  key(name);
  return value ? string(value->format()) : null();
}

Writer& Writer::then(const char* separator) {
  yajl_gen_reset(gen_, separator);
  return *this;
}

std::string_view Writer::text() const {
  const unsigned char* buffer = nullptr;
  std::size_t length = 0;
  check(yajl_gen_get_buf(gen_, &buffer, &length));
  return {reinterpret_cast<const char*>(buffer), length};
}

}  // namespace execaff::json
