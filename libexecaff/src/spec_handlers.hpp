// SPDX-License-Identifier: LGPL-2.1-or-later
// The json::read handlers of the OCI documents (spec_json.hpp), shared by
// the process file's reader (process_json.cpp) and config.json's
// (config_json.cpp), which reads a process object and a seccomp profile too.
#pragma once

#include <memory>

#include "json_handlers.hpp"
#include "spec_json.hpp"

namespace execaff::spec {

using json::Handler;
using json::Kind;
using json::Nulls;
using json::Reader;
using json::Scalar;

// A CPU list into `*target`: null and "" leave it unset (config.md
// execCPUAffinity: an omitted or empty list means "leave affinity alone").
class CpuListValue : public json::Handler {
 public:
  explicit CpuListValue(std::optional<CpuSet>* target) noexcept
      : Handler("a string"), target_(target) {}
  void on_scalar(json::Reader& reader, const json::Scalar& value) override;

 private:
  std::optional<CpuSet>* target_;
};

// process.execCPUAffinity into `*target`: nullopt when absent, null, or
// with neither member set.  Unknown members are ignored, not refused:
// runtime-spec config.md "Extensibility" says runtimes MUST ignore unknown
// properties, and a later spec version may add members here.
class AffinityValue : public json::ObjectOf<2> {
 public:
  explicit AffinityValue(std::optional<ExecCpuAffinity>* target);
  json::Handler* on_object(json::Reader& reader) override;
  void on_end(json::Reader& reader) override;

 private:
  std::optional<ExecCpuAffinity>* target_;
  ExecCpuAffinity read_;
  CpuListValue initial_{&read_.initial};
  CpuListValue final_{&read_.final};
};

// process.capabilities: five lists of names.
class CapabilitiesValue : public json::ObjectOf<5> {
 public:
  explicit CapabilitiesValue(ProcessCapabilities* target);

 private:
  json::StringList effective_, permitted_, inheritable_, bounding_, ambient_;
};

// An OCI process object into `*target`.  With `layout`, the top level of a
// process file: where each member is, for the rewrite.  Without
// `judge_affinity` execCPUAffinity is skipped (it is being replaced).
class ProcessValue : public json::ObjectOf<6> {
 public:
  ProcessValue(ProcessObject* target, json::Nulls nulls, ProcessLayout* layout,
               bool judge_affinity);
  json::Handler* on_object(json::Reader& reader) override;
  json::Handler* on_member(json::Reader& reader, std::string_view key) override;
  void on_member_end(json::Reader& reader) override;
  void on_end(json::Reader& reader) override;

 private:
  // A flag that is true only for a JSON true; anything else is false.
  class TrueFlag : public json::Handler {
   public:
    TrueFlag(bool* target, std::optional<Error>* problem) noexcept
        : Handler("a boolean", problem), target_(target) {}
    void on_scalar(json::Reader& /*reader*/, const json::Scalar& value) override {
      *target_ = value.kind == json::Kind::boolean && value.text == "true";
    }
    json::Handler* on_object(json::Reader& /*reader*/) override { return nullptr; }
    json::Handler* on_array(json::Reader& /*reader*/) override { return nullptr; }

   private:
    bool* target_;
  };

  ProcessLayout* layout_;
  AffinityValue affinity_;
  json::StringList args_;
  json::StringList env_;
  json::StringValue cwd_;
  CapabilitiesValue capabilities_;
  TrueFlag no_new_privileges_;
};

// A process file's reader: the layout is recorded; without
// `judge_affinity` its execCPUAffinity is only located (it is being
// replaced, not read).
[[nodiscard]] ProcessDocument read_process_document(std::string_view text, std::string_view source,
                                                    bool judge_affinity);

// linux.seccomp into `*target`: engaged unless absent or null, its
// problems kept in the profile's own slot (seccomp_json.cpp).
[[nodiscard]] std::unique_ptr<json::Handler> seccomp_value(std::optional<SeccompProfile>* target);

}  // namespace execaff::spec
