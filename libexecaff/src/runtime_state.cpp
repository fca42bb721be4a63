// SPDX-License-Identifier: LGPL-2.1-or-later
#include "runtime_state.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string_view>

#include "error.hpp"
#include "spec_json.hpp"
#include "yajl_tree.hpp"

namespace execaff {
namespace {

bool exists(const std::string& path) {
  return ::access(path.c_str(), F_OK) == 0;
}

pid_t pid_member(yajl_val object, std::string_view key, const std::string& file) {
  const yajl_val v = member(object, key);
  if (v == nullptr || !YAJL_IS_INTEGER(v) || YAJL_GET_INTEGER(v) <= 0) {
    throw Error(EINVAL, "runtime state " + quoted(file) + ": \"" + std::string(key) +
                            "\" is not a process id");
  }
  return static_cast<pid_t>(YAJL_GET_INTEGER(v));
}

ContainerState read_runc_state(const std::string& file, const std::string& fs_root) {
  const YajlTree tree =
      parse_json_object(read_document_file(file), "runtime state " + quoted(file));
  ContainerState state;
  state.state_file = file;
  state.init_pid = pid_member(tree.get(), "init_process_pid", file);
  const yajl_val labels = member(member(tree.get(), "config"), "labels");
  if (labels != nullptr && YAJL_IS_ARRAY(labels)) {
    for (std::size_t i = 0; i < labels->u.array.len; ++i) {
      const yajl_val label = labels->u.array.values[i];
      if (!YAJL_IS_STRING(label)) continue;
      const std::string_view text = YAJL_GET_STRING(label);
      if (text.rfind("bundle=", 0) == 0) {
        state.config_path = fs_root + std::string(text.substr(7)) + "/config.json";
      }
    }
  }
  if (state.config_path.empty()) {
    throw Error(EINVAL, "runtime state " + quoted(file) + " names no bundle");
  }
  return state;
}

ContainerState read_crun_state(const std::string& dir, const std::string& file,
                               const std::string& fs_root) {
  const YajlTree tree =
      parse_json_object(read_document_file(file), "runtime state " + quoted(file));
  ContainerState state;
  state.state_file = file;
  state.crun = true;
  state.init_pid = pid_member(tree.get(), "pid", file);
  // crun keeps its own copy of config.json: the one the container really
  // runs with, even when the bundle's file was edited since.
  state.config_path = dir + "/config.json";
  if (!exists(state.config_path)) {
    const yajl_val bundle = member(tree.get(), "bundle");
    if (bundle == nullptr || !YAJL_IS_STRING(bundle)) {
      throw Error(EINVAL, "runtime state " + quoted(file) + " names no bundle");
    }
    state.config_path = fs_root + std::string(YAJL_GET_STRING(bundle)) + "/config.json";
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
  if (exists(dir + "/state.json")) return read_runc_state(dir + "/state.json", fs_root);
  if (exists(dir + "/status")) return read_crun_state(dir, dir + "/status", fs_root);
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
