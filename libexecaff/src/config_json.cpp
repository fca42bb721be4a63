// SPDX-License-Identifier: LGPL-2.1-or-later
// Reading a bundle's config.json in one pass: the process object
// (process_json.cpp), annotations, linux.resources.cpu.cpus,
// linux.cgroupsPath, and the pre-flight's view (linux.seccomp, mounts).
#include <deque>
#include <map>
#include <memory>

#include "json_reader.hpp"
#include "json_value.hpp"
#include "spec_handlers.hpp"
#include "spec_json.hpp"

namespace execaff {
namespace spec {
namespace {

// annotations: an object of strings.  A key met twice is refused, as every
// key the decision reads.
class AnnotationsValue : public Handler {
 public:
  explicit AnnotationsValue(std::map<std::string, std::string>* target) noexcept
      : target_(target), value_(this) {}

  void on_scalar(Reader& reader, const Scalar& value) override {
    if (value.kind != Kind::null) Handler::on_scalar(reader, value);
  }
  Handler* on_object(Reader& /*reader*/) override { return this; }
  Handler* on_member(Reader& reader, std::string_view key) override {
    const auto [at, inserted] = target_->try_emplace(std::string(key));
    if (!inserted) throw reader.error(json::kDuplicateKey);
    current_ = &at->second;
    return &value_;
  }

 private:
  class Value : public Handler {
   public:
    explicit Value(AnnotationsValue* owner) noexcept : Handler("a string"), owner_(owner) {}
    void on_scalar(Reader& reader, const Scalar& value) override {
      if (value.kind != Kind::string) return Handler::on_scalar(reader, value);
      owner_->current_->assign(value.text);
    }

   private:
    AnnotationsValue* owner_;
  };

  std::map<std::string, std::string>* target_;
  std::string* current_ = nullptr;
  Value value_;
};

// mounts: is there one of type "proc" at "/proc"?  Read as leniently as the
// pre-flight reads it: anything else, of any type, is not such a mount.
class MountsValue : public Handler {
 public:
  explicit MountsValue(bool* proc_at_proc) noexcept : proc_at_proc_(proc_at_proc), mount_(this) {}

  void on_scalar(Reader& /*reader*/, const Scalar& /*value*/) override {}
  Handler* on_object(Reader& /*reader*/) override { return nullptr; }
  Handler* on_array(Reader& /*reader*/) override { return this; }
  Handler* on_element(Reader& /*reader*/) override { return &mount_; }

 private:
  class Text : public Handler {
   public:
    explicit Text(std::string* target) noexcept : target_(target) {}
    void on_scalar(Reader& /*reader*/, const Scalar& value) override {
      if (value.kind == Kind::string) target_->assign(value.text);
    }
    Handler* on_object(Reader& /*reader*/) override { return nullptr; }
    Handler* on_array(Reader& /*reader*/) override { return nullptr; }

   private:
    std::string* target_;
  };
  class Mount : public Handler {
   public:
    explicit Mount(MountsValue* owner) noexcept : owner_(owner) {}
    void on_scalar(Reader& /*reader*/, const Scalar& /*value*/) override {}
    Handler* on_array(Reader& /*reader*/) override { return nullptr; }
    Handler* on_object(Reader& /*reader*/) override {
      destination_.clear();
      type_.clear();
      return this;
    }
    Handler* on_member(Reader& /*reader*/, std::string_view key) override {
      if (key == "destination") return &destination_text_;
      if (key == "type") return &type_text_;
      return nullptr;
    }
    void on_end(Reader& /*reader*/) override {
      if (destination_ == "/proc" && type_ == "proc") *owner_->proc_at_proc_ = true;
    }

   private:
    MountsValue* owner_;
    std::string destination_;
    std::string type_;
    Text destination_text_{&destination_};
    Text type_text_{&type_};
  };

  bool* proc_at_proc_;
  Mount mount_;
};

// linux: resources.cpu.cpus and cgroupsPath, strictly; seccomp for the
// pre-flight, whose duplicate is its own problem.
class LinuxValue : public json::ObjectOf<2> {
 public:
  explicit LinuxValue(ConfigDocument* target)
      : ObjectOf({{{"resources", &resources_}, {"cgroupsPath", &cgroups_path_}}}, Nulls::absent),
        seccomp_target_(&target->seccomp),
        cpus_(&target->cpuset),
        cgroups_path_(&target->cgroups_path, Nulls::absent),
        seccomp_(seccomp_value(&target->seccomp)) {}

  Handler* on_object(Reader& reader) override {
    seccomp_seen_ = false;
    return ObjectOf::on_object(reader);
  }
  Handler* on_member(Reader& reader, std::string_view key) override {
    if (key != "seccomp") return ObjectOf::on_member(reader, key);
    if (!seccomp_seen_) {
      seccomp_seen_ = true;
      return seccomp_.get();
    }
    if (!*seccomp_target_) seccomp_target_->emplace();
    if (!(*seccomp_target_)->problem) {
      (*seccomp_target_)->problem = reader.error(json::kDuplicateKey).wrap(reader.source());
    }
    return nullptr;
  }

 private:
  std::optional<SeccompProfile>* seccomp_target_;
  bool seccomp_seen_ = false;
  CpuListValue cpus_;
  json::ObjectOf<1> cpu_{{{{"cpus", &cpus_}}}, Nulls::absent};
  json::ObjectOf<1> resources_{{{{"cpu", &cpu_}}}, Nulls::absent};
  json::StringValue cgroups_path_;
  std::unique_ptr<Handler> seccomp_;
};

// The top level.  mounts is read leniently, a duplicate included.  The
// process object is read twice over in the one pass: into its typed struct,
// and as written.
class ConfigValue : public json::ObjectOf<3> {
 public:
  ConfigValue(ConfigDocument* target, json::ValueText* text)
      : ObjectOf({{{"process", text != nullptr ? static_cast<Handler*>(&process_both_) : &process_},
                   {"annotations", &annotations_},
                   {"linux", &linux_}}},
                 Nulls::refused),
        process_(&target->process, Nulls::absent, nullptr, true),
        process_as_written_(&target->process_as_written, text),
        process_both_(&process_, &process_as_written_, &tees_),
        annotations_(&target->annotations),
        linux_(target),
        mounts_(&target->mounts_proc) {}

  Handler* on_member(Reader& reader, std::string_view key) override {
    if (key == "mounts") return &mounts_;
    return ObjectOf::on_member(reader, key);
  }

 private:
  ProcessValue process_;
  json::ValueReader process_as_written_;
  std::deque<json::Tee> tees_;
  json::Tee process_both_;
  AnnotationsValue annotations_;
  LinuxValue linux_;
  MountsValue mounts_;
};

}  // namespace
}  // namespace spec

ConfigDocument parse_config_document(std::string_view text, std::string_view source,
                                     bool keep_process_as_written) {
  ConfigDocument document;
  document.source = source;
  if (!keep_process_as_written) {
    spec::ConfigValue root(&document, nullptr);
    json::read(text, root, document.source);
    return document;
  }
  // Read from a copy the document keeps: the process object as written
  // points into it.
  auto kept = std::make_shared<json::ValueText>();
  kept->document.assign(text);
  spec::ConfigValue root(&document, kept.get());
  json::read(kept->document, root, document.source);
  document.process_text = std::move(kept);
  return document;
}

ConfigDocument parse_config_decision_view(std::string_view text, std::string_view source,
                                          bool keep_process_as_written) {
  enum Path : std::size_t { process, affinity, annotations, linux, resources, cpu, cpus };
  const json::Skimmed found = json::skim(text,
                                         {{"process"},
                                          {"process", "execCPUAffinity"},
                                          {"annotations"},
                                          {"linux"},
                                          {"linux", "resources"},
                                          {"linux", "resources", "cpu"},
                                          {"linux", "resources", "cpu", "cpus"}},
                                         source);
  const auto plain = [&found](Path path, bool object) {
    const std::optional<std::string_view>& value = found.values[path];
    return !value || (object ? value->front() == '{' : *value != "null");
  };
  // A null or another type on the way is the whole reader's to judge (its
  // Nulls rules and type errors), as is what the skim does not judge.
  if (!found.complete || !plain(process, true) || !plain(annotations, true) ||
      !plain(linux, true) || !plain(resources, true) || !plain(cpu, true) ||
      !plain(affinity, false) || !plain(cpus, false)) {
    return parse_config_document(text, source, keep_process_as_written);
  }
  ConfigDocument document;
  document.source = source;
  document.whole = false;
  if (const auto& value = found.values[affinity]) {
    spec::AffinityValue handler(&document.process.affinity);
    json::read_value(*value, handler, document.source, "process.execCPUAffinity");
  }
  if (const auto& value = found.values[annotations]) {
    spec::AnnotationsValue handler(&document.annotations);
    json::read_value(*value, handler, document.source, "annotations");
  }
  if (const auto& value = found.values[cpus]) {
    spec::CpuListValue handler(&document.cpuset);
    json::read_value(*value, handler, document.source, "linux.resources.cpu.cpus");
  }
  return document;
}

}  // namespace execaff
