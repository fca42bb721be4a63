// SPDX-License-Identifier: LGPL-2.1-or-later
#include "node_config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include "file_descriptor.hpp"
#include "spec_json.hpp"

namespace execaff {
namespace {

// --- Opening: one walk, every step checked on what was opened --------------

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%03o", static_cast<unsigned>(mode & 0777));
  return text;
}

[[noreturn]] void fail_open(const std::string& source, int code, const std::string& why) {
  throw NodeConfigError(Error(code, source + ": " + why), std::nullopt);
}

// Only root may have written what decides where an exec runs, nor replaced
// it: a directory that someone else may write lets them swap the file.  A
// root-owned sticky directory (/tmp) is safe for root's own entries.
void check_directory(const struct stat& st, const std::string& dir, const std::string& source) {
  if (st.st_uid != 0) {
    fail_open(source, EPERM,
              "directory " + quoted(dir) + " on its path is owned by uid " +
                  std::to_string(st.st_uid) + ", not root");
  }
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky) {
    fail_open(source, EPERM,
              "directory " + quoted(dir) + " on its path is writable by group or others (mode " +
                  mode_text(st.st_mode) + ")");
  }
}

void check_file(const struct stat& st, const std::string& source) {
  if (!S_ISREG(st.st_mode)) {
    fail_open(source, S_ISDIR(st.st_mode) ? EISDIR : EINVAL, "not a regular file");
  }
  if (st.st_uid != 0) {
    fail_open(source, EPERM, "owned by uid " + std::to_string(st.st_uid) + ", not root");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    fail_open(source, EPERM, "writable by group or others (mode " + mode_text(st.st_mode) + ")");
  }
}

// Why openat(O_NOFOLLOW) refused `name` in `dir`: a symlink gets a message
// of its own, since O_NOFOLLOW's ELOOP (or O_DIRECTORY's ENOTDIR) says little.
[[noreturn]] void fail_component(int dir, const std::string& name, const std::string& shown,
                                 int code, const std::string& source) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    fail_open(source, ELOOP,
              quoted(shown) + " is a symbolic link; name the real path (links are not followed)");
  }
  fail_open(source, code, errno_text(code));
}

// The file's descriptor, or an invalid one when the file (or a directory
// on its path) does not exist.
FileDescriptor open_checked(const std::string& path, const std::string& source) {
  std::string absolute = path;
  if (absolute.empty()) fail_open(source, EINVAL, "the path is empty");
  if (absolute.front() != '/') {
    // Relative to the working directory, whose ancestors are checked too.
    char cwd[4096];
    if (::getcwd(cwd, sizeof cwd) == nullptr) {
      const int code = errno;
      fail_open(source, code, "cannot resolve the relative path: " + errno_text(code));
    }
    absolute = std::string(cwd) + "/" + absolute;
  }
  std::vector<std::string> parts;
  for (std::size_t start = 0; start < absolute.size();) {
    const std::size_t slash = std::min(absolute.find('/', start), absolute.size());
    const std::string part = absolute.substr(start, slash - start);
    if (part == "..") fail_open(source, EINVAL, "the path must not contain \"..\"");
    if (!part.empty() && part != ".") parts.push_back(part);
    start = slash + 1;
  }
  if (parts.empty()) fail_open(source, EISDIR, "not a regular file");

  FileDescriptor dir(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  std::string shown = "/";
  for (std::size_t i = 0;; ++i) {
    struct stat st {};
    if (dir.get() < 0 || ::fstat(dir.get(), &st) != 0) {
      const int code = errno;
      fail_open(source, code, "cannot open " + quoted(shown) + ": " + errno_text(code));
    }
    check_directory(st, shown, source);
    const std::string& name = parts[i];
    shown = (i == 0 ? "/" : shown + "/") + name;
    const bool last = i + 1 == parts.size();
    // O_NONBLOCK: a FIFO would block open() until a writer came; the check
    // below then refuses it.  O_NOCTTY: a terminal must not become ours.
    const int flags = last ? O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
                           : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
    FileDescriptor next(::openat(dir.get(), name.c_str(), flags));
    if (next.get() < 0) {
      const int code = errno;
      if (code == ENOENT) return FileDescriptor();
      fail_component(dir.get(), name, shown, code, source);
    }
    if (last) {
      if (::fstat(next.get(), &st) != 0) {
        const int code = errno;
        fail_open(source, code, errno_text(code));
      }
      check_file(st, source);
      return next;
    }
    dir = std::move(next);
  }
}

// --- Parsing: yajl events, so that a duplicate key is seen ------------------

enum class JsonKind { null, boolean, number, string, container };

struct Value {
  JsonKind kind = JsonKind::null;
  bool boolean = false;
  std::string_view text;
};

class ConfigReader {
 public:
  explicit ConfigReader(std::string source) : source_(std::move(source)) {}

  void start_object() {
    if (depth_ == 0 && !seen_top_) {
      seen_top_ = true;
      ++depth_;
      return;
    }
    container();
  }
  void start_array() {
    if (depth_ == 0) fail(EINVAL, "is not a JSON object");
    container();
  }
  void end_container() { --depth_; }
  void key(std::string_view name) {
    if (depth_ != 1) return;
    key_ = std::string(name);
    if (std::find(keys_.begin(), keys_.end(), key_) != keys_.end()) {
      // yajl_tree keeps both members, in order, and the loop that read them
      // let the last win: {"runtime": A, "runtime": B} ran B silently.
      if (key_ == "runtime") runtime_in_doubt_ = true;
      fail(EINVAL, "duplicate key " + quoted(key_));
    }
    keys_.push_back(key_);
  }
  void scalar(const Value& value) {
    if (depth_ == 0) fail(EINVAL, "is not a JSON object");
    if (depth_ == 1) member(value);
  }

  NodeConfig config;
  std::exception_ptr failure;
  bool runtime_in_doubt_ = false;

  [[noreturn]] void fail(int code, const std::string& why) {
    throw Error(code, source_ + ": " + why);
  }

 private:
  void container() {
    if (depth_ == 1) {
      Value v;
      v.kind = JsonKind::container;
      member(v);
    }
    ++depth_;
  }

  std::string string_of(const Value& v) {
    if (v.kind != JsonKind::string) fail(EINVAL, quoted(key_) + " must be a string");
    return std::string(v.text);
  }

  ConfigSwitch switch_of(const Value& v, std::string_view word) {
    if (v.kind == JsonKind::boolean) return v.boolean ? ConfigSwitch::yes : ConfigSwitch::no;
    if (v.kind == JsonKind::string && v.text == word) return ConfigSwitch::automatic;
    fail(EINVAL, quoted(key_) + " must be true, false or " + quoted(word));
  }

  void member(const Value& v) {
    const std::string& k = key_;
    if (k == "runtime") {
      if (v.kind != JsonKind::string) runtime_in_doubt_ = true;
      config.runtime = string_of(v);
    } else if (k == "native") {
      config.native = switch_of(v, "detect");
    } else if (k == "handler_default") {
      config.handler_default = string_of(v);
    } else if (k == "housekeeping_cpus") {
      const std::string list = string_of(v);
      try {
        config.housekeeping_cpus = CpuSet::parse(list);
      } catch (const Error& e) {
        throw e.wrap(source_ + ": \"housekeeping_cpus\"");
      }
    } else if (k == "on_failure") {
      const std::string word = string_of(v);
      if (word == "fail") {
        config.on_failure = OnFailure::fail;
      } else if (word == "run-unpinned") {
        config.on_failure = OnFailure::run_unpinned;
      } else {
        fail(EINVAL, "\"on_failure\" must be \"fail\" or \"run-unpinned\", not " + quoted(word));
      }
    } else if (k == "early_cpuset_join") {
      config.early_cpuset_join = switch_of(v, "auto");
    } else if (k == "debug") {
      if (v.kind != JsonKind::boolean) fail(EINVAL, "\"debug\" must be true or false");
      config.debug = v.boolean;
    } else {
      // Strict: a misspelt key must not silently fall back to a default.
      fail(EINVAL, "unknown key " + quoted(k));
    }
  }

  std::string source_;
  int depth_ = 0;
  bool seen_top_ = false;
  std::string key_;
  std::vector<std::string> keys_;
};

template <typename Handler>
int guarded(void* context, Handler&& handler) noexcept {
  auto* reader = static_cast<ConfigReader*>(context);
  try {
    handler(*reader);
    return 1;
  } catch (...) {
    reader->failure = std::current_exception();
    return 0;
  }
}

std::string_view view(const unsigned char* text, std::size_t length) noexcept {
  return {reinterpret_cast<const char*>(text), length};
}

int on_scalar(void* c, JsonKind kind, bool b = false, std::string_view text = {}) noexcept {
  return guarded(c, [&](ConfigReader& r) { r.scalar(Value{kind, b, text}); });
}

constexpr yajl_callbacks kCallbacks = {
    [](void* c) { return on_scalar(c, JsonKind::null); },
    [](void* c, int b) { return on_scalar(c, JsonKind::boolean, b != 0); },
    nullptr,
    nullptr,
    [](void* c, const char* s, std::size_t n) {
      return on_scalar(c, JsonKind::number, false, std::string_view(s, n));
    },
    [](void* c, const unsigned char* s, std::size_t n) {
      return on_scalar(c, JsonKind::string, false, view(s, n));
    },
    [](void* c) { return guarded(c, [](ConfigReader& r) { r.start_object(); }); },
    [](void* c, const unsigned char* s, std::size_t n) {
      return guarded(c, [&](ConfigReader& r) { r.key(view(s, n)); });
    },
    [](void* c) { return guarded(c, [](ConfigReader& r) { r.end_container(); }); },
    [](void* c) { return guarded(c, [](ConfigReader& r) { r.start_array(); }); },
    [](void* c) { return guarded(c, [](ConfigReader& r) { r.end_container(); }); },
};

struct YajlFree {
  void operator()(yajl_handle handle) const noexcept { yajl_free(handle); }
};

}  // namespace

NodeConfigLocation node_config_location() {
  const char* variable = ::secure_getenv(kNodeConfigVariable);
  if (variable != nullptr) return {variable, true};
  return {kNodeConfigPath, false};
}

NodeConfig parse_node_config(std::string_view json, const std::string& source) {
  ConfigReader reader(source);
  // What was read before an error, for NodeConfigError: only a runtime that
  // the error does not put in doubt.
  const auto fail = [&](const Error& e) -> NodeConfigError {
    std::optional<std::string> runtime;
    if (!reader.runtime_in_doubt_) runtime = reader.config.runtime;
    return NodeConfigError(e, runtime);
  };
  if (std::all_of(json.begin(), json.end(),
                  [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; })) {
    // Seed 002: an empty (not yet written) file, named plainly.
    throw fail(Error(EINVAL, source + " is not valid JSON: the document is empty"));
  }
  const std::unique_ptr<std::remove_pointer_t<yajl_handle>, YajlFree> handle(
      yajl_alloc(&kCallbacks, nullptr, &reader));
  if (!handle) throw std::bad_alloc();
  // As yajl_tree_parse, which read this file before: comments allowed.
  yajl_config(handle.get(), yajl_allow_comments, 1);
  yajl_status status =
      yajl_parse(handle.get(), reinterpret_cast<const unsigned char*>(json.data()), json.size());
  if (status == yajl_status_ok) status = yajl_complete_parse(handle.get());
  if (status == yajl_status_client_canceled && reader.failure) {
    try {
      std::rethrow_exception(reader.failure);
    } catch (const Error& e) {
      throw fail(e);
    }
  }
  if (status != yajl_status_ok) {
    unsigned char* raw = yajl_get_error(handle.get(), 0, nullptr, 0);
    std::string text = raw != nullptr ? reinterpret_cast<const char*>(raw) : "unknown error";
    if (raw != nullptr) yajl_free_error(handle.get(), raw);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    throw fail(Error(EINVAL, source + " is not valid JSON: " + text));
  }
  return std::move(reader.config);
}

NodeConfig load_node_config(const NodeConfigLocation& location) {
  const std::string source = "shim config " + quoted(location.path);
  if (!location.required) {
    // The common case of the forked crun's execs on a node without the
    // file: one failed open, not a walk.  What the walk then opens is
    // checked whatever this saw.
    const FileDescriptor probe(::open(location.path.c_str(), O_PATH | O_CLOEXEC));
    if (probe.get() < 0 && errno == ENOENT) return NodeConfig{};
  }
  const FileDescriptor fd = open_checked(location.path, source);
  if (fd.get() < 0) {
    if (!location.required) return NodeConfig{};
    fail_open(source, ENOENT, errno_text(ENOENT));
  }
  std::string text;
  try {
    text = read_opened_document(fd.get(), location.path);
  } catch (const Error& e) {
    throw NodeConfigError(e.wrap(source), std::nullopt);
  }
  NodeConfig config = parse_node_config(text, source);
  config.path = location.path;
  return config;
}

}  // namespace execaff
