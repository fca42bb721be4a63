// SPDX-License-Identifier: LGPL-2.1-or-later
// The cache of native_support.hpp's answers: /run/execaff/native, one line
// per runtime binary, keyed by what changes when the binary is replaced or
// rewritten — device, inode, size, mtime and ctime (any rename onto the
// path, chmod or write moves one of them) — so a replaced runtime is
// probed again.
//
// Its answer decides whether a pinned exec is handed to the runtime as is,
// so only root may have written it: the directory must be root's and
// writable by no one else (it is made 0700), the file root's, regular, not
// group- or other-writable, opened without following a link.  Anything
// else is refused (read as empty; a fresh answer replaces the file by
// rename).  A directory that cannot be made or written (a read-only /run,
// a rootless shim) only means that every exec probes again.
//
// Line format: `DEV INO SIZE MTIME CTIME FLAVOUR VERSION`, times as
// seconds.nanoseconds, VERSION "-" when there is none; a failed probe is
// FLAVOUR "failed" and VERSION the time (epoch seconds) after which it is
// probed again.  At most kMaxNativeCacheEntries lines, the newest first.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>

#include "native_support.hpp"

namespace execaff::shim {

inline constexpr const char* kNativeCachePath = "/run/execaff/native";
inline constexpr std::size_t kMaxNativeCacheEntries = 32;

struct BinaryIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  timespec mtime{};
  timespec ctime{};

  [[nodiscard]] static BinaryIdentity of(const struct stat& st) noexcept;
  friend bool operator==(const BinaryIdentity& a, const BinaryIdentity& b) noexcept;
};

class NativeCache {
 public:
  // `owner`: the uid the directory and the file must belong to (root; the
  // unit tests pass their own when not run as root).
  explicit NativeCache(std::string path, uid_t owner = 0);

  // The clock a failed probe's retry time is read against (unit tests).
  void set_now_for_test(time_t now) { now_ = now; }

  // The cached answer for `binary`, or nullopt (no entry, no usable file).
  // When the file is refused, `why` says why.
  [[nodiscard]] std::optional<NativeSupport> lookup(const BinaryIdentity& binary,
                                                    std::string* why = nullptr) const;

  // Adds or replaces the entry for `binary`: a new file written beside the
  // old one and renamed over it, so a reader sees the old file or the new
  // one, never half of one.  False (and `why`) when it cannot be written;
  // a temp file is never left behind.
  bool store(const BinaryIdentity& binary, const NativeSupport& answer,
             std::string* why = nullptr) const;

 private:
  std::string path_;
  std::string dir_;
  uid_t owner_;
  time_t now_ = 0;  // 0: time(nullptr)
};

}  // namespace execaff::shim
