// SPDX-License-Identifier: LGPL-2.1-or-later
#include "json_value.hpp"

namespace execaff::json {

// --- ValueReader ------------------------------------------------------------

// The ancestors' addresses hold while they are open: a container's
// children vector only grows while that container is the innermost one.
Value& ValueReader::place(Kind kind) {
  Value* value = target_;
  if (open_.empty()) {
    *target_ = Value{};
  } else {
    Value& parent = *open_.back();
    value = &parent.children.emplace_back();
    if (parent.kind == Kind::object) value->key = key_;
  }
  value->kind = kind;
  return *value;
}

std::string_view ValueReader::kept(std::string_view bytes) {
  const std::string& document = text_->document;
  if (bytes.data() >= document.data() &&
      bytes.data() + bytes.size() <= document.data() + document.size()) {
    return bytes;
  }
  return text_->decoded.emplace_back(bytes);
}

void ValueReader::on_scalar(Reader& /*reader*/, const Scalar& value) {
  const std::string_view text = value.kind == Kind::string || value.kind == Kind::number
                                    ? kept(value.text)
                                    : value.text;  // "true", "false", "null": literals
  place(value.kind).text = text;
}

Handler* ValueReader::on_object(Reader& /*reader*/) {
  open_.push_back(&place(Kind::object));
  return this;
}

Handler* ValueReader::on_array(Reader& /*reader*/) {
  open_.push_back(&place(Kind::array));
  return this;
}

Handler* ValueReader::on_member(Reader& /*reader*/, std::string_view key) {
  key_ = kept(key);
  return this;
}

Handler* ValueReader::on_element(Reader& /*reader*/) {
  return this;
}

void ValueReader::on_end(Reader& /*reader*/) {
  open_.pop_back();
}

// --- Tee --------------------------------------------------------------------

Handler* Tee::both(Handler* first, Handler* second) {
  if (first == nullptr) return second;
  if (second == nullptr) return first;
  return &pool_->emplace_back(first, second, pool_);
}

void Tee::on_scalar(Reader& reader, const Scalar& value) {
  if (first_ != nullptr) first_->on_scalar(reader, value);
  if (second_ != nullptr) second_->on_scalar(reader, value);
}

Handler* Tee::on_object(Reader& reader) {
  Handler* first = first_ != nullptr ? first_->on_object(reader) : nullptr;
  return both(first, second_ != nullptr ? second_->on_object(reader) : nullptr);
}

Handler* Tee::on_array(Reader& reader) {
  Handler* first = first_ != nullptr ? first_->on_array(reader) : nullptr;
  return both(first, second_ != nullptr ? second_->on_array(reader) : nullptr);
}

Handler* Tee::on_member(Reader& reader, std::string_view key) {
  Handler* first = first_ != nullptr ? first_->on_member(reader, key) : nullptr;
  return both(first, second_ != nullptr ? second_->on_member(reader, key) : nullptr);
}

Handler* Tee::on_element(Reader& reader) {
  Handler* first = first_ != nullptr ? first_->on_element(reader) : nullptr;
  return both(first, second_ != nullptr ? second_->on_element(reader) : nullptr);
}

void Tee::on_member_end(Reader& reader) {
  if (first_ != nullptr) first_->on_member_end(reader);
  if (second_ != nullptr) second_->on_member_end(reader);
}

void Tee::on_end(Reader& reader) {
  if (first_ != nullptr) first_->on_end(reader);
  if (second_ != nullptr) second_->on_end(reader);
}

// --- Writing ----------------------------------------------------------------

void write_value(Writer& out, const Value& value) {
  switch (value.kind) {
    case Kind::null: out.null(); return;
    case Kind::boolean: out.boolean(value.text == "true"); return;
    case Kind::number: out.number_as_written(value.text); return;
    case Kind::string: out.string(value.text); return;
    case Kind::object:
      out.open_object();
      for (const Value& member : value.children) {
        out.key(member.key);
        write_value(out, member);
      }
      out.close_object();
      return;
    case Kind::array:
      out.open_array();
      for (const Value& element : value.children) write_value(out, element);
      out.close_array();
      return;
  }
}

}  // namespace execaff::json
