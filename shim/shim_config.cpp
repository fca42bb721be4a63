// SPDX-License-Identifier: LGPL-2.1-or-later
#include "shim_config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "error.hpp"
#include "spec_json.hpp"
#include "yajl_tree.hpp"

namespace execaff::shim {
namespace {

std::string config_string(yajl_val value, const std::string& source, const char* key) {
  if (!YAJL_IS_STRING(value)) {
    throw Error(EINVAL, source + ": \"" + key + "\" must be a string");
  }
  return YAJL_GET_STRING(value);
}

// Only root may have written what decides where an exec runs.
void check_ownership(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int code = errno;
    throw Error(code, "shim config " + quoted(path) + ": " + errno_text(code));
  }
  if (st.st_uid != 0) {
    throw Error(EPERM, "shim config " + quoted(path) + " is owned by uid " +
                           std::to_string(st.st_uid) + ", not root");
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    throw Error(EPERM, "shim config " + quoted(path) + " is writable by group or others (mode " +
                           mode + ")");
  }
}

void apply_file(ShimConfig& config, const std::string& path) {
  check_ownership(path);
  const std::string text = read_document_file(path);
  const std::string source = "shim config " + quoted(path);
  const YajlTree tree = parse_json_object(text, source);
  const auto& object = tree->u.object;
  for (std::size_t i = 0; i < object.len; ++i) {
    const std::string key = object.keys[i];
    const yajl_val value = object.values[i];
    if (key == "runtime") {
      config.runtime = config_string(value, source, "runtime");
      config.runtime_from = source;
    } else if (key == "native") {
      if (YAJL_IS_TRUE(value)) {
        config.native = NativeMode::yes;
      } else if (YAJL_IS_FALSE(value)) {
        config.native = NativeMode::no;
      } else if (YAJL_IS_STRING(value) && std::string(YAJL_GET_STRING(value)) == "detect") {
        config.native = NativeMode::detect;
      } else {
        throw Error(EINVAL, source + ": \"native\" must be true, false or \"detect\"");
      }
    } else if (key == "handler_default") {
      config.handler_default = config_string(value, source, "handler_default");
    } else if (key == "housekeeping_cpus") {
      try {
        config.housekeeping_cpus = CpuSet::parse(config_string(value, source, key.c_str()));
      } catch (const Error& e) {
        throw e.wrap(source + ": \"housekeeping_cpus\"");
      }
    } else if (key == "on_failure") {
      const std::string v = config_string(value, source, "on_failure");
      if (v == "fail") {
        config.on_failure = OnFailure::fail;
      } else if (v == "run-unpinned") {
        config.on_failure = OnFailure::run_unpinned;
      } else {
        throw Error(EINVAL, source + ": \"on_failure\" must be \"fail\" or \"run-unpinned\", not " +
                                quoted(v));
      }
    } else if (key == "early_cpuset_join") {
      if (YAJL_IS_TRUE(value)) {
        config.early_cpuset_join = EarlyJoinMode::yes;
      } else if (YAJL_IS_FALSE(value)) {
        config.early_cpuset_join = EarlyJoinMode::no;
      } else if (YAJL_IS_STRING(value) && std::string(YAJL_GET_STRING(value)) == "auto") {
        config.early_cpuset_join = EarlyJoinMode::automatic;
      } else {
        throw Error(EINVAL, source + ": \"early_cpuset_join\" must be true, false or \"auto\"");
      }
    } else if (key == "debug") {
      if (!YAJL_IS_TRUE(value) && !YAJL_IS_FALSE(value)) {
        throw Error(EINVAL, source + ": \"debug\" must be true or false");
      }
      config.debug = YAJL_IS_TRUE(value);
    } else {
      // Strict: a misspelt key must not silently fall back to a default.
      throw Error(EINVAL, source + ": unknown key " + quoted(key));
    }
  }
  config.path = path;
}

}  // namespace

ShimConfig load_shim_config() {
  ShimConfig config;
  const char* env_runtime = std::getenv("EXECAFF_RUNTIME");
  const char* env_config = std::getenv("EXECAFF_CONFIG");
  const std::string path = env_config != nullptr ? env_config : kDefaultConfigPath;

  const bool file_present = ::access(path.c_str(), F_OK) == 0;
  if (file_present || env_config != nullptr) apply_file(config, path);

  if (env_runtime != nullptr && *env_runtime != '\0') {
    config.runtime = env_runtime;
    config.runtime_from = "EXECAFF_RUNTIME";
  }
  if (config.runtime.empty()) {
    throw Error(ENOENT,
                "no runtime configured: set EXECAFF_RUNTIME or \"runtime\" in " + quoted(path));
  }
  if (config.runtime.front() != '/') {
    throw Error(EINVAL, "runtime " + quoted(config.runtime) + " (from " + config.runtime_from +
                            ") must be an absolute path");
  }
  if (::access(config.runtime.c_str(), X_OK) != 0) {
    const int code = errno;
    throw Error(code, "runtime " + quoted(config.runtime) + " (from " + config.runtime_from +
                          ") is not executable: " + errno_text(code));
  }
  return config;
}

void refuse_self_as_runtime(const std::string& runtime) {
  struct stat self {};
  struct stat target {};
  if (::stat("/proc/self/exe", &self) == 0 && ::stat(runtime.c_str(), &target) == 0 &&
      self.st_dev == target.st_dev && self.st_ino == target.st_ino) {
    throw Error(ELOOP, "runtime " + quoted(runtime) +
                           " is execaff-shim itself; point EXECAFF_RUNTIME or \"runtime\" at "
                           "the real runc or crun");
  }
}

}  // namespace execaff::shim
