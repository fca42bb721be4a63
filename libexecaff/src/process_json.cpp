// SPDX-License-Identifier: LGPL-2.1-or-later
// Reading an OCI process object: an exec's process file (the top level),
// and config.json's "process" (config_json.cpp).  One pass of yajl's event
// parser: a 4 KiB process file is read on every exec, and everything but a
// few members is only lexed.
#include <cerrno>
#include <string>

#include "json_reader.hpp"
#include "spec_handlers.hpp"
#include "spec_json.hpp"

namespace execaff {
namespace spec {
namespace {

constexpr std::string_view kAffinityKey = "execCPUAffinity";

// The first byte at or after `at` that is not space.  The text between
// tokens holds only space and one ',' or ':' (yajl has accepted it, and
// refuses comments), so this finds the next token.
std::size_t skip_space(std::string_view text, std::size_t at) noexcept {
  while (at < text.size() && json::is_space(text[at])) ++at;
  return at;
}

// Past the separator (',' or ':') that follows `at` and the space around it.
std::size_t past_separator(std::string_view text, std::size_t at) noexcept {
  return skip_space(text, skip_space(text, at) + 1);
}

}  // namespace

void CpuListValue::on_scalar(json::Reader& reader, const json::Scalar& value) {
  // null reads as omitted, as it does for runc (Go's encoding/json decodes
  // null as no value).
  if (value.kind == json::Kind::null || (value.kind == json::Kind::string && value.text.empty())) {
    return;
  }
  if (value.kind != json::Kind::string) return Handler::on_scalar(reader, value);
  try {
    *target_ = CpuSet::parse(value.text);
  } catch (const Error& e) {
    // EINVAL even for an id above CpuSet::kMaxCpu (ERANGE from the parser):
    // for the caller it is one more way for the document to be invalid.
    // parse_cpu_list_member gives the same message for a typed value.
    throw reader.error(e.what());
  }
}

AffinityValue::AffinityValue(std::optional<ExecCpuAffinity>* target)
    : ObjectOf({{{"initial", &initial_}, {"final", &final_}}}, json::Nulls::absent),
      target_(target) {}

json::Handler* AffinityValue::on_object(json::Reader& reader) {
  read_ = {};
  return ObjectOf::on_object(reader);
}

void AffinityValue::on_end(json::Reader& /*reader*/) {
  if (read_.empty()) {
    target_->reset();
  } else {
    *target_ = std::move(read_);
  }
}

CapabilitiesValue::CapabilitiesValue(ProcessCapabilities* target)
    : ObjectOf({{{"effective", &effective_},
                 {"permitted", &permitted_},
                 {"inheritable", &inheritable_},
                 {"bounding", &bounding_},
                 {"ambient", &ambient_}}},
               json::Nulls::absent, &target->problem),
      effective_(&target->effective, &target->problem),
      permitted_(&target->permitted, &target->problem),
      inheritable_(&target->inheritable, &target->problem),
      bounding_(&target->bounding, &target->problem),
      ambient_(&target->ambient, &target->problem) {}

ProcessValue::ProcessValue(ProcessObject* target, json::Nulls nulls, ProcessLayout* layout,
                           bool judge_affinity)
    : ObjectOf({{{kAffinityKey, judge_affinity ? &affinity_ : nullptr},
                 {"args", &args_},
                 {"env", &env_},
                 {"cwd", &cwd_},
                 {"capabilities", &capabilities_},
                 {"noNewPrivileges", &no_new_privileges_}}},
               nulls),
      layout_(layout),
      affinity_(&target->affinity),
      args_(&target->launch.args, &target->launch.problem),
      env_(&target->launch.env, &target->launch.problem),
      cwd_(&target->launch.cwd, json::Nulls::absent, &target->launch.problem),
      capabilities_(&target->capabilities),
      no_new_privileges_(&target->capabilities.no_new_privileges, &target->capabilities.problem) {}

json::Handler* ProcessValue::on_object(json::Reader& reader) {
  if (layout_ != nullptr) {
    *layout_ = {};
    layout_->open = reader.offset() - 1;
    layout_->first = skip_space(reader.text(), reader.offset());
  }
  return ObjectOf::on_object(reader);
}

json::Handler* ProcessValue::on_member(json::Reader& reader, std::string_view key) {
  if (layout_ != nullptr) {
    MemberSpan span;
    span.key_begin = layout_->members.empty()
                         ? layout_->first
                         : past_separator(reader.text(), layout_->members.back().value_end);
    span.value_begin = past_separator(reader.text(), reader.offset());
    const std::size_t index = layout_->members.size();
    layout_->members.push_back(span);
    if (key == kAffinityKey && !layout_->affinity) layout_->affinity = index;
    if (key == "args" && !layout_->args) layout_->args = index;
  }
  return ObjectOf::on_member(reader, key);
}

void ProcessValue::on_member_end(json::Reader& reader) {
  if (layout_ != nullptr) layout_->members.back().value_end = reader.offset();
}

void ProcessValue::on_end(json::Reader& reader) {
  if (layout_ != nullptr) layout_->close = reader.offset() - 1;
}

}  // namespace spec

const ProcessLaunch& ProcessLaunch::checked() const {
  if (problem) throw *problem;
  return *this;
}

namespace spec {

ProcessDocument read_process_document(std::string_view text, std::string_view source,
                                      bool judge_affinity) {
  ProcessDocument document;
  document.source = source;
  document.text = text;
  ProcessValue root(&document, json::Nulls::refused, &document.layout, judge_affinity);
  json::read(document.text, root, document.source, "process");
  return document;
}

}  // namespace spec

ProcessDocument parse_process_document(std::string_view text, std::string_view source) {
  return spec::read_process_document(text, source, true);
}

std::optional<CpuSet> parse_cpu_list_member(std::string_view text, std::string_view source,
                                            std::string_view path) {
  if (text.empty()) return std::nullopt;
  try {
    return CpuSet::parse(text);
  } catch (const Error& e) {
    // As CpuListValue reports it, wrapped by json::read in the source.
    throw Error(EINVAL, std::string(source) + ": " + std::string(path) + ": " + e.what());
  }
}

std::optional<ExecCpuAffinity> parse_affinity_members(std::string_view initial,
                                                      std::string_view final,
                                                      std::string_view source,
                                                      std::string_view path) {
  const std::string prefix(path);
  ExecCpuAffinity affinity{parse_cpu_list_member(initial, source, prefix + ".initial"),
                           parse_cpu_list_member(final, source, prefix + ".final")};
  if (affinity.empty()) return std::nullopt;
  return affinity;
}

}  // namespace execaff
