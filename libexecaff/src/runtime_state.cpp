// SPDX-License-Identifier: LGPL-2.1-or-later
#include "runtime_state.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>
#include <memory>
#include <optional>
#include <string_view>

#include "error.hpp"
#include "file_reader.hpp"
#include "json_reader.hpp"

namespace execaff {
namespace {

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

// What the shim reads of a state file, read leniently where runc's and
// crun's own files are concerned (they write them, not the caller): a
// member of another type than expected is as good as absent, and the first
// of a duplicated one counts, as the tree reader that read these files did.
struct StateMembers {
  std::optional<long long> pid;       // runc: init_process_pid, crun: pid
  std::vector<std::string> labels;    // runc: config.labels
  std::optional<std::string> bundle;  // crun: bundle
};

// A scalar member into a slot; containers are skipped.
class Member : public json::Handler {
 public:
  using Store = void (*)(StateMembers&, const json::Scalar&);
  Member(StateMembers* target, Store store) noexcept : target_(target), store_(store) {}
  void on_scalar(json::Reader& /*reader*/, const json::Scalar& value) override {
    store_(*target_, value);
  }
  json::Handler* on_object(json::Reader& /*reader*/) override { return nullptr; }
  json::Handler* on_array(json::Reader& /*reader*/) override { return nullptr; }

 private:
  StateMembers* target_;
  Store store_;
};

void store_pid(StateMembers& state, const json::Scalar& value) {
  if (state.pid || value.kind != json::Kind::number) return;
  long long pid = 0;
  const char* end = value.text.data() + value.text.size();
  if (const auto [at, error] = std::from_chars(value.text.data(), end, pid);
      error == std::errc() && at == end) {
    state.pid = pid;
  }
}

void store_bundle(StateMembers& state, const json::Scalar& value) {
  if (!state.bundle && value.kind == json::Kind::string) state.bundle = std::string(value.text);
}

void store_label(StateMembers& state, const json::Scalar& value) {
  if (value.kind == json::Kind::string) state.labels.emplace_back(value.text);
}

// An array whose elements go to one handler; anything else is skipped.
class Each : public json::Handler {
 public:
  explicit Each(json::Handler* element) noexcept : element_(element) {}
  void on_scalar(json::Reader& /*reader*/, const json::Scalar& /*value*/) override {}
  json::Handler* on_object(json::Reader& /*reader*/) override { return nullptr; }
  json::Handler* on_array(json::Reader& /*reader*/) override { return this; }
  json::Handler* on_element(json::Reader& /*reader*/) override { return element_; }

 private:
  json::Handler* element_;
};

// The top level of state.json or status: `pid_key`, "bundle" and
// config.labels.
class StateFile : public json::Handler {
 public:
  StateFile(StateMembers* target, std::string_view pid_key) noexcept
      : pid_key_(pid_key),
        pid_(target, store_pid),
        bundle_(target, store_bundle),
        label_(target, store_label),
        labels_(&label_),
        config_(&labels_) {}

  json::Handler* on_object(json::Reader& /*reader*/) override { return this; }
  json::Handler* on_member(json::Reader& /*reader*/, std::string_view key) override {
    if (key == pid_key_) return &pid_;
    if (key == "bundle") return &bundle_;
    if (key == "config") return &config_;
    return nullptr;
  }

  // The same handlers for the values a skim found (skim_state_file).
  [[nodiscard]] json::Handler& pid() noexcept { return pid_; }
  [[nodiscard]] json::Handler& bundle() noexcept { return bundle_; }
  [[nodiscard]] json::Handler& labels() noexcept { return labels_; }

 private:
  // config: only its labels.
  class Config : public json::Handler {
   public:
    explicit Config(json::Handler* labels) noexcept : labels_(labels) {}
    void on_scalar(json::Reader& /*reader*/, const json::Scalar& /*value*/) override {}
    json::Handler* on_object(json::Reader& /*reader*/) override { return this; }
    json::Handler* on_array(json::Reader& /*reader*/) override { return nullptr; }
    json::Handler* on_member(json::Reader& /*reader*/, std::string_view key) override {
      return key == "labels" ? labels_ : nullptr;
    }

   private:
    json::Handler* labels_;
  };

  std::string_view pid_key_;
  Member pid_;
  Member bundle_;
  Member label_;
  Each labels_;
  Config config_;
};

// The three members by a skim (json_reader.hpp): runc's state.json holds
// the whole libcontainer config, 6 KiB and more, of which the shim needs a
// number and a few labels.  The values found are read by the reader's own
// handlers; a file the skim does not judge is read whole, as before.
bool skim_state_file(const std::string& text, std::string_view pid_key, const std::string& source,
                     StateMembers& members) {
  const json::Skimmed found =
      json::skim(text, {{pid_key}, {"bundle"}, {"config", "labels"}}, source);
  if (!found.complete) return false;
  StateFile handlers(&members, pid_key);
  if (found.values[0]) json::read_value(*found.values[0], handlers.pid(), source, pid_key);
  if (found.values[1]) json::read_value(*found.values[1], handlers.bundle(), source, "bundle");
  if (found.values[2]) {
    json::read_value(*found.values[2], handlers.labels(), source, "config.labels");
  }
  return true;
}

StateMembers read_state_file(const std::string& file, std::string_view pid_key, std::string text) {
  StateMembers members;
  const std::string source = "runtime state " + quoted(file);
  if (!skim_state_file(text, pid_key, source, members)) {
    StateFile handler(&members, pid_key);
    json::read(text, handler, source);
  }
  if (!members.pid || *members.pid <= 0 || *members.pid > std::numeric_limits<pid_t>::max()) {
    throw Error(EINVAL, "runtime state " + quoted(file) + ": \"" + std::string(pid_key) +
                            "\" is not a process id");
  }
  return members;
}

ContainerState read_runc_state(const std::string& file, std::string text,
                               const std::string& fs_root) {
  const StateMembers members = read_state_file(file, "init_process_pid", std::move(text));
  ContainerState state;
  state.state_file = file;
  state.init_pid = static_cast<pid_t>(*members.pid);
  for (const std::string& label : members.labels) {
    if (label.rfind("bundle=", 0) == 0) {
      state.config_path = fs_root + label.substr(7) + "/config.json";
    }
  }
  if (state.config_path.empty()) {
    throw Error(EINVAL, "runtime state " + quoted(file) + " names no bundle");
  }
  return state;
}

ContainerState read_crun_state(const std::string& dir, const std::string& file, std::string text,
                               const std::string& fs_root) {
  const StateMembers members = read_state_file(file, "pid", std::move(text));
  ContainerState state;
  state.state_file = file;
  state.crun = true;
  state.init_pid = static_cast<pid_t>(*members.pid);
  // crun keeps its own copy of config.json: the one the container really
  // runs with, even when the bundle's file was edited since.
  state.config_path = dir + "/config.json";
  if (!exists(state.config_path)) {
    if (!members.bundle) {
      throw Error(EINVAL, "runtime state " + quoted(file) + " names no bundle");
    }
    state.config_path = fs_root + *members.bundle + "/config.json";
  }
  return state;
}

std::string base_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool plain_id(const std::string& id) {
  return !id.empty() && id != "." && id != ".." && id.find('/') == std::string::npos;
}

}  // namespace

std::optional<std::string> state_root(const std::optional<std::string>& root_option,
                                      const std::string& runtime) {
  if (root_option) return root_option;
  const std::string name = base_name(runtime);
  for (const char* known : {"runc", "crun", "youki"}) {
    if (name.rfind(known, 0) == 0) return std::string("/run/") + known;
  }
  return std::nullopt;
}

std::optional<ContainerState> read_container_state(const std::string& root, const std::string& id,
                                                   const std::string& fs_root) {
  // Both runtimes refuse such ids; never build a path from one.
  if (!plain_id(id)) return std::nullopt;
  const std::string dir = root + "/" + id;
  // Opened without an access(2) first: a file that cannot be opened is
  // not there for us, as before (the runtime then says why).
  for (const bool runc : {true, false}) {
    const std::string file = dir + (runc ? "/state.json" : "/status");
    std::optional<std::string> text = read_file_if_openable(file);
    if (!text) continue;
    return runc ? read_runc_state(file, std::move(*text), fs_root)
                : read_crun_state(dir, file, std::move(*text), fs_root);
  }
  return std::nullopt;
}

std::vector<std::string> list_container_ids(const std::string& root) {
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(root.c_str()), ::closedir);
  if (!dir) {
    const int code = errno;
    if (code == ENOENT) return {};
    throw Error(code, "runtime state root " + quoted(root) + ": " + errno_text(code));
  }
  std::vector<std::string> ids;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string id = entry->d_name;
    if (!plain_id(id)) continue;
    const std::string path = root + "/" + id;
    if (exists(path + "/state.json") || exists(path + "/status")) ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace execaff
