// SPDX-License-Identifier: LGPL-2.1-or-later
// Handlers for json::read that documents are assembled from: an object of
// named members, a string, a list of strings, an unsigned number.  Each
// refuses what it does not accept with the path and what was found, or
// keeps that in its problem slot (json_reader.hpp).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json_reader.hpp"

namespace execaff::json {

// Whether null stands for an absent value (Go's encoding/json, in runc,
// decodes null as no value) or is refused.
enum class Nulls { absent, refused };

// The message for a key met twice.  Refused rather than resolved: runc
// (Go's encoding/json) lets a later copy override an earlier one, while
// crun (libocispec over yajl_tree_get) reads the first, so the document
// means different things to different runtimes.
inline constexpr std::string_view kDuplicateKey =
    "the key appears more than once; runtimes disagree on which wins";

// A member an object reads: its key and the handler of its value (nullptr:
// the member is skipped, but still refused when duplicated).
struct Field {
  std::string_view key;
  Handler* handler;
};

// An object whose members `fields` are read by their handlers; any other
// member is skipped.  A duplicated field is refused, or kept as the
// problem of the field's handler when it has a problem slot.
template <std::size_t N>
class ObjectOf : public Handler {
 public:
  ObjectOf(std::array<Field, N> fields, Nulls nulls, std::optional<Error>* problem = nullptr)
      : Handler("an object", problem), fields_(fields), nulls_(nulls) {
    static_assert(N <= 32, "one bit per field in seen_");
  }

  void on_scalar(Reader& reader, const Scalar& value) override {
    if (value.kind == Kind::null && nulls_ == Nulls::absent) return;
    Handler::on_scalar(reader, value);
  }
  Handler* on_object(Reader& /*reader*/) override {
    seen_ = 0;
    return this;
  }
  Handler* on_member(Reader& reader, std::string_view key) override {
    for (std::size_t i = 0; i < N; ++i) {
      if (fields_[i].key != key) continue;
      const std::uint32_t bit = std::uint32_t{1} << i;
      if ((seen_ & bit) != 0) {
        refuse_duplicate(reader, fields_[i].handler);
        return nullptr;
      }
      seen_ |= bit;
      return fields_[i].handler;
    }
    return nullptr;
  }

 private:
  void refuse_duplicate(const Reader& reader, const Handler* field) const {
    const Error error = reader.error(kDuplicateKey);
    if (field != nullptr && field->problem_slot() != nullptr) {
      if (!*field->problem_slot()) *field->problem_slot() = error.wrap(reader.source());
      return;
    }
    report(reader, error);
  }

  std::array<Field, N> fields_;
  Nulls nulls_;
  std::uint32_t seen_ = 0;
};

// A string into `*target`.
class StringValue : public Handler {
 public:
  StringValue(std::string* target, Nulls nulls, std::optional<Error>* problem = nullptr) noexcept
      : Handler("a string", problem), target_(target), nulls_(nulls) {}

  void on_scalar(Reader& reader, const Scalar& value) override {
    if (value.kind == Kind::string) {
      target_->assign(value.text);
    } else if (value.kind != Kind::null || nulls_ == Nulls::refused) {
      Handler::on_scalar(reader, value);
    }
  }

 private:
  std::string* target_;
  Nulls nulls_;
};

// An array of strings appended to `*target`; null is an absent array.
class StringList : public Handler {
 public:
  explicit StringList(std::vector<std::string>* target,
                      std::optional<Error>* problem = nullptr) noexcept
      : Handler("an array", problem), target_(target), element_(this, problem) {}

  void on_scalar(Reader& reader, const Scalar& value) override {
    if (value.kind != Kind::null) Handler::on_scalar(reader, value);
  }
  Handler* on_array(Reader& /*reader*/) override { return this; }
  Handler* on_element(Reader& /*reader*/) override { return &element_; }

 private:
  class Element : public Handler {
   public:
    Element(StringList* list, std::optional<Error>* problem) noexcept
        : Handler("a string", problem), list_(list) {}
    void on_scalar(Reader& reader, const Scalar& value) override {
      if (value.kind != Kind::string) return Handler::on_scalar(reader, value);
      list_->target_->emplace_back(value.text);
    }

   private:
    StringList* list_;
  };
  std::vector<std::string>* target_;
  Element element_;
};

// An unsigned 64-bit integer into `*target`, written in decimal.
class UnsignedValue : public Handler {
 public:
  UnsignedValue(std::optional<std::uint64_t>* target, std::optional<Error>* problem) noexcept
      : Handler("an unsigned 64-bit integer", problem), target_(target) {}

  void on_scalar(Reader& reader, const Scalar& value) override {
    const auto number = value.kind == Kind::number ? unsigned_number(value.text) : std::nullopt;
    if (!number) return Handler::on_scalar(reader, value);
    *target_ = number;
  }

 private:
  std::optional<std::uint64_t>* target_;
};

}  // namespace execaff::json
