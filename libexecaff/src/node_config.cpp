// SPDX-License-Identifier: LGPL-2.1-or-later
#include "node_config.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "file_descriptor.hpp"
#include "file_reader.hpp"
#include "json_reader.hpp"

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
// root-owned sticky directory (/tmp) is safe for root's own entries.  The
// rules, once: what is wrong, or nothing.
struct Untrusted {
  int code;
  std::string why;
};

std::optional<Untrusted> directory_untrusted(const struct stat& st, const std::string& dir) {
  if (st.st_uid != 0) {
    return Untrusted{EPERM, "directory " + quoted(dir) + " on its path is owned by uid " +
                                std::to_string(st.st_uid) + ", not root"};
  }
  const bool sticky = (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !sticky) {
    return Untrusted{EPERM, "directory " + quoted(dir) +
                                " on its path is writable by group or others (mode " +
                                mode_text(st.st_mode) + ")"};
  }
  return std::nullopt;
}

std::optional<Untrusted> file_untrusted(const struct stat& st) {
  if (!S_ISREG(st.st_mode)) {
    return Untrusted{S_ISDIR(st.st_mode) ? EISDIR : EINVAL, "not a regular file"};
  }
  if (st.st_uid != 0) {
    return Untrusted{EPERM, "owned by uid " + std::to_string(st.st_uid) + ", not root"};
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    return Untrusted{EPERM, "writable by group or others (mode " + mode_text(st.st_mode) + ")"};
  }
  return std::nullopt;
}

void check_directory(const struct stat& st, const std::string& dir, const std::string& source) {
  if (auto wrong = directory_untrusted(st, dir)) fail_open(source, wrong->code, wrong->why);
}

void check_file(const struct stat& st, const std::string& source) {
  if (auto wrong = file_untrusted(st)) fail_open(source, wrong->code, wrong->why);
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

// The common case in one openat2(2): an absolute path, no symbolic link
// anywhere on it (RESOLVE_NO_SYMLINKS), then the file's and its
// directories' owners and modes checked.  The directories are checked by
// name after the open, and that is as safe as the walk: making an unsafe
// directory safe again takes root (chown to root, or chmod by its root
// owner), so one that is safe now was safe when the file was opened, top
// down from "/".  Anything else, or any failure but ENOENT, leaves the
// answer to open_checked's walk, whose errors name the component at fault.
// Returns the file, an invalid descriptor for ENOENT, or nullopt.
std::optional<FileDescriptor> open_fast(const std::string& path) {
  if (path.empty() || path.front() != '/' || path.find("/.") != std::string::npos ||
      path.find("//") != std::string::npos || path.back() == '/') {
    return std::nullopt;
  }
  struct open_how how {};
  how.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how);
  if (fd < 0) {
    if (errno == ENOENT) return FileDescriptor();
    return std::nullopt;  // ENOSYS before 5.6, ELOOP, ENOTDIR, EACCES, ...
  }
  FileDescriptor file(static_cast<int>(fd));
  struct stat st {};
  if (::fstat(file.get(), &st) != 0 || file_untrusted(st)) return std::nullopt;
  for (std::size_t slash = path.rfind('/'); slash != std::string::npos;
       slash = slash == 0 ? std::string::npos : path.rfind('/', slash - 1)) {
    const std::string dir = slash == 0 ? "/" : path.substr(0, slash);
    if (::fstatat(AT_FDCWD, dir.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        directory_untrusted(st, dir)) {
      return std::nullopt;
    }
  }
  return file;
}

// --- Parsing: strict, so that a misspelt key is no silent default --------

class NodeConfigFile : public json::Handler {
 public:
  NodeConfigFile() noexcept : value_(this) {}

  json::Handler* on_object(json::Reader& /*reader*/) override { return this; }
  json::Handler* on_member(json::Reader& /*reader*/, std::string_view name) override {
    key_ = std::string(name);
    if (std::find(keys_.begin(), keys_.end(), key_) != keys_.end()) {
      // A tree reader keeps both members, in order, and the loop that read
      // them let the last win: {"runtime": A, "runtime": B} ran B silently.
      if (key_ == "runtime") runtime_in_doubt = true;
      fail("duplicate key " + quoted(key_));
    }
    keys_.push_back(key_);
    return &value_;
  }

  NodeConfig config;
  bool runtime_in_doubt = false;

 private:
  // Every member's value: a scalar is read, a container is the wrong type.
  class Value : public json::Handler {
   public:
    explicit Value(NodeConfigFile* owner) noexcept : owner_(owner) {}
    void on_scalar(json::Reader& /*reader*/, const json::Scalar& value) override {
      owner_->member(value);
    }
    json::Handler* on_object(json::Reader& /*reader*/) override {
      owner_->member(json::Scalar{json::Kind::object, {}});
      return nullptr;
    }
    json::Handler* on_array(json::Reader& reader) override { return on_object(reader); }

   private:
    NodeConfigFile* owner_;
  };

  [[noreturn]] static void fail(const std::string& why) { throw Error(EINVAL, why); }

  std::string string_of(const json::Scalar& v) const {
    if (v.kind != json::Kind::string) fail(quoted(key_) + " must be a string");
    return std::string(v.text);
  }

  ConfigSwitch switch_of(const json::Scalar& v, std::string_view word) const {
    if (v.kind == json::Kind::boolean) {
      return v.text == "true" ? ConfigSwitch::yes : ConfigSwitch::no;
    }
    if (v.kind == json::Kind::string && v.text == word) return ConfigSwitch::automatic;
    fail(quoted(key_) + " must be true, false or " + quoted(word));
  }

  void member(const json::Scalar& v) {
    const std::string& k = key_;
    if (k == "runtime") {
      if (v.kind != json::Kind::string) runtime_in_doubt = true;
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
        throw e.wrap("\"housekeeping_cpus\"");
      }
    } else if (k == "on_failure") {
      const std::string word = string_of(v);
      if (word == "fail") {
        config.on_failure = OnFailure::fail;
      } else if (word == "run-unpinned") {
        config.on_failure = OnFailure::run_unpinned;
      } else {
        fail("\"on_failure\" must be \"fail\" or \"run-unpinned\", not " + quoted(word));
      }
    } else if (k == "early_cpuset_join") {
      config.early_cpuset_join = switch_of(v, "auto");
    } else if (k == "crun_first_image_pin") {
      if (v.kind != json::Kind::boolean) fail("\"crun_first_image_pin\" must be true or false");
      config.crun_first_image_pin = v.text == "true";
    } else if (k == "debug") {
      if (v.kind != json::Kind::boolean) fail("\"debug\" must be true or false");
      config.debug = v.text == "true";
    } else {
      // Strict: a misspelt key must not silently fall back to a default.
      fail("unknown key " + quoted(k));
    }
  }

  std::string key_;
  std::vector<std::string> keys_;
  Value value_;
};

}  // namespace

NodeConfigLocation node_config_location() {
  const char* variable = ::secure_getenv(kNodeConfigVariable);
  if (variable != nullptr) return {variable, true};
  return {kNodeConfigPath, false};
}

NodeConfig parse_node_config(std::string_view json, const std::string& source) {
  NodeConfigFile reader;
  try {
    json::read(json, reader, source);
  } catch (const Error& e) {
    // What was read before the error, for NodeConfigError: only a runtime
    // that the error does not put in doubt.
    std::optional<std::string> runtime;
    if (!reader.runtime_in_doubt) runtime = reader.config.runtime;
    throw NodeConfigError(e, runtime);
  }
  return std::move(reader.config);
}

NodeConfig load_node_config(const NodeConfigLocation& location) {
  const std::string source = "shim config " + quoted(location.path);
  // The fast path, else the walk; a node without the file (the forked
  // crun's common case) costs one failed openat2.
  std::optional<FileDescriptor> fast = open_fast(location.path);
  // A required file that is missing: the walk says where the path breaks.
  if (fast && fast->get() < 0 && location.required) fast.reset();
  const FileDescriptor fd = fast ? std::move(*fast) : open_checked(location.path, source);
  if (fd.get() < 0) {
    if (!location.required) return NodeConfig{};
    fail_open(source, ENOENT, errno_text(ENOENT));
  }
  std::string text;
  try {
    text = read_opened_file(fd.get(), location.path);
  } catch (const Error& e) {
    throw NodeConfigError(e.wrap(source), std::nullopt);
  }
  NodeConfig config = parse_node_config(text, source);
  config.path = location.path;
  return config;
}

}  // namespace execaff
