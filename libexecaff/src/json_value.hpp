// SPDX-License-Identifier: LGPL-2.1-or-later
// A JSON value kept as written, for the one place that must hand a whole
// subtree on: runc's CLI form of exec copies config.json's process object
// whole, and the shim converting that form (shim/cli_process.cpp) must
// write the same object back.  Built by the one reader during the one parse
// (json_reader.hpp), beside the typed reading of the same value (Tee).
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "json_reader.hpp"
#include "json_writer.hpp"

namespace execaff::json {

// The bytes a Value's views point into: the document's text (strings
// without escapes and numbers are views into it, nothing copied) and the
// strings yajl had to decode.  Shared, so that a document holding a Value
// can be moved and copied while the views stay valid.
struct ValueText {
  std::string document;
  std::deque<std::string> decoded;  // a deque: its strings never move
};

struct Value {
  Kind kind = Kind::null;
  std::string_view key;   // as a member of an object: its key, decoded
  std::string_view text;  // a string's bytes, a number as written, "true"/"false"
  std::vector<Value>
      children;  // an object's members (in order, duplicates kept) or an array's elements
};

// Reads one value, whatever it is, into `*target`, its strings as views
// into `*text` (whose `document` is the text being read).  Never refuses.
class ValueReader : public Handler {
 public:
  ValueReader(Value* target, ValueText* text) noexcept : target_(target), text_(text) {}
  void on_scalar(Reader& reader, const Scalar& value) override;
  Handler* on_object(Reader& reader) override;
  Handler* on_array(Reader& reader) override;
  Handler* on_member(Reader& reader, std::string_view key) override;
  Handler* on_element(Reader& reader) override;
  void on_end(Reader& reader) override;

 private:
  Value& place(Kind kind);
  // `bytes` as a view that outlives the event: into the document when it
  // is there, else into a decoded copy.
  std::string_view kept(std::string_view bytes);

  Value* target_;
  ValueText* text_;
  std::vector<Value*> open_;  // the containers being read, innermost last
  std::string_view key_;
};

// Both handlers get every event of one value; either may be nullptr (it
// skips the value).  The Tees that reading the value's insides needs come
// from `pool`, which must outlive the parse.
class Tee : public Handler {
 public:
  Tee(Handler* first, Handler* second, std::deque<Tee>* pool) noexcept
      : first_(first), second_(second), pool_(pool) {}
  void on_scalar(Reader& reader, const Scalar& value) override;
  Handler* on_object(Reader& reader) override;
  Handler* on_array(Reader& reader) override;
  Handler* on_member(Reader& reader, std::string_view key) override;
  Handler* on_element(Reader& reader) override;
  void on_member_end(Reader& reader) override;
  void on_end(Reader& reader) override;

 private:
  Handler* both(Handler* first, Handler* second);

  Handler* first_;
  Handler* second_;
  std::deque<Tee>* pool_;
};

// `value` written as read: numbers keep their text, members their order.
void write_value(Writer& out, const Value& value);

}  // namespace execaff::json
