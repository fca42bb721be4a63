// SPDX-License-Identifier: LGPL-2.1-or-later
// Reading linux.seccomp as written, for the pre-flight (the profile is
// judged by preflight/seccomp_profile.cpp, with libseccomp).  A wrong type
// anywhere in it is the profile's problem, not the document's: the
// pre-flight reports a profile it cannot judge, and only an exec that takes
// the emulated path runs the pre-flight at all.
#include <cerrno>
#include <memory>

#include "json_handlers.hpp"
#include "json_reader.hpp"
#include "spec_handlers.hpp"
#include "spec_json.hpp"

namespace execaff::spec {
namespace {

// An array of objects, each read by `element`; null is an absent array.
class ArrayOf : public Handler {
 public:
  ArrayOf(Handler* element, std::optional<Error>* problem) noexcept
      : Handler("an array", problem), element_(element) {}
  void on_scalar(Reader& reader, const Scalar& value) override {
    if (value.kind != Kind::null) Handler::on_scalar(reader, value);
  }
  Handler* on_array(Reader& /*reader*/) override { return this; }
  Handler* on_element(Reader& /*reader*/) override { return element_; }

 private:
  Handler* element_;
};

// syscalls[].args[]: one condition.
class ArgumentValue : public json::ObjectOf<4> {
 public:
  ArgumentValue(std::vector<SeccompArgument>* target, std::optional<Error>* problem)
      : ObjectOf(
            {{{"index", &index_}, {"op", &op_}, {"value", &value_}, {"valueTwo", &value_two_}}},
            Nulls::refused, problem),
        target_(target),
        index_(&read_.index, problem),
        op_(&read_.op, Nulls::refused, problem),
        value_(&read_.value, problem),
        value_two_(&read_.value_two, problem) {}

  Handler* on_object(Reader& reader) override {
    read_ = {};
    return ObjectOf::on_object(reader);
  }
  void on_end(Reader& /*reader*/) override { target_->push_back(std::move(read_)); }

 private:
  std::vector<SeccompArgument>* target_;
  SeccompArgument read_;
  json::UnsignedValue index_;
  json::StringValue op_;
  json::UnsignedValue value_;
  json::UnsignedValue value_two_;
};

// syscalls[]: one rule.
class RuleValue : public json::ObjectOf<5> {
 public:
  RuleValue(std::vector<SeccompRule>* target, std::optional<Error>* problem)
      : ObjectOf({{{"names", &names_},
                   {"name", &name_},
                   {"action", &action_},
                   {"errnoRet", &errno_ret_},
                   {"args", &args_}}},
                 Nulls::refused, problem),
        target_(target),
        names_(&read_, problem),
        name_(&read_.name, Nulls::refused, problem),
        action_(&read_.action, Nulls::refused, problem),
        errno_ret_(&read_.errno_ret, problem),
        argument_(&read_.args, problem),
        args_(&argument_, problem) {}

  Handler* on_object(Reader& reader) override {
    read_ = {};
    return ObjectOf::on_object(reader);
  }
  void on_end(Reader& /*reader*/) override { target_->push_back(std::move(read_)); }

 private:
  // names counts when it is an array; else the old single "name".
  class Names : public json::StringList {
   public:
    Names(SeccompRule* rule, std::optional<Error>* problem) noexcept
        : StringList(&rule->names, problem), rule_(rule) {}
    Handler* on_array(Reader& reader) override {
      rule_->names_given = true;
      return StringList::on_array(reader);
    }

   private:
    SeccompRule* rule_;
  };

  std::vector<SeccompRule>* target_;
  SeccompRule read_;
  Names names_;
  json::StringValue name_;
  json::StringValue action_;
  json::UnsignedValue errno_ret_;
  ArgumentValue argument_;
  ArrayOf args_;
};

class ProfileValue : public json::ObjectOf<5> {
 public:
  explicit ProfileValue(std::optional<SeccompProfile>* target)
      : ObjectOf({{{"defaultAction", &default_action_},
                   {"defaultErrnoRet", &default_errno_ret_},
                   {"architectures", &architectures_},
                   {"flags", &flags_},
                   {"syscalls", &syscalls_}}},
                 Nulls::absent),
        target_(target),
        default_action_(&read_.default_action, Nulls::refused, &read_.problem),
        default_errno_ret_(&read_.default_errno_ret, &read_.problem),
        architectures_(&read_.architectures, &read_.problem),
        flags_(&read_.flags, &read_.problem),
        rule_(&read_.syscalls, &read_.problem),
        syscalls_(&rule_, &read_.problem) {
    keep_problems_in(&read_.problem);
  }

  // null is an absent profile; any other value that is not an object is a
  // profile that cannot be judged.
  void on_scalar(Reader& reader, const Scalar& value) override {
    if (value.kind == Kind::null) return;
    read_ = {};
    Handler::on_scalar(reader, value);
    *target_ = std::move(read_);
  }
  Handler* on_array(Reader& reader) override {
    read_ = {};
    Handler::on_array(reader);
    *target_ = std::move(read_);
    return nullptr;
  }
  Handler* on_object(Reader& reader) override {
    read_ = {};
    return ObjectOf::on_object(reader);
  }
  void on_end(Reader& /*reader*/) override { *target_ = std::move(read_); }

 private:
  std::optional<SeccompProfile>* target_;
  SeccompProfile read_;  // before the handlers that point into it
  json::StringValue default_action_;
  json::UnsignedValue default_errno_ret_;
  json::StringList architectures_;
  json::StringList flags_;
  RuleValue rule_;
  ArrayOf syscalls_;
};

}  // namespace

std::unique_ptr<Handler> seccomp_value(std::optional<SeccompProfile>* target) {
  return std::make_unique<ProfileValue>(target);
}

}  // namespace execaff::spec

namespace execaff {

SeccompProfile parse_seccomp_profile(std::string_view text, std::string_view source) {
  std::optional<SeccompProfile> profile;
  spec::ProfileValue root(&profile);
  json::read(text, root, source, "linux.seccomp");
  if (!profile) {
    profile.emplace();
    profile->problem =
        Error(EINVAL, std::string(source) + ": linux.seccomp: expected an object, got null");
  }
  return std::move(*profile);
}

}  // namespace execaff
