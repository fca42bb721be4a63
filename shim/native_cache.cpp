// SPDX-License-Identifier: LGPL-2.1-or-later
#include "native_cache.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "file_descriptor.hpp"

namespace execaff::shim {
namespace {

constexpr std::size_t kMaxCacheBytes = 64 * 1024;

struct Entry {
  BinaryIdentity binary;
  NativeSupport answer;
  time_t retry_after = 0;  // a failed probe's
};

std::string format_time(const timespec& t) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%lld.%09ld", static_cast<long long>(t.tv_sec), t.tv_nsec);
  return buffer;
}

// A line's first five fields and their spaces, as format_entry writes
// them: what lookup compares a line's start with before parsing it.
std::string identity_key(const BinaryIdentity& b) {
  char head[96];
  std::snprintf(head, sizeof head, "%" PRIuMAX " %" PRIuMAX " %" PRIdMAX " ",
                static_cast<uintmax_t>(b.dev), static_cast<uintmax_t>(b.ino),
                static_cast<intmax_t>(b.size));
  return head + format_time(b.mtime) + " " + format_time(b.ctime) + " ";
}

std::string format_entry(const Entry& e, time_t now) {
  return identity_key(e.binary) +
         (e.answer.probe_failed
              ? "failed " + std::to_string(e.retry_after != 0 ? e.retry_after
                                                              : now + kFailedProbeRetrySeconds)
              : std::string(to_string(e.answer.flavour)) + " " +
                    (e.answer.version.empty() ? std::string("-") : e.answer.version)) +
         "\n";
}

// Whitespace-separated fields of one line, exactly `n` of them.
std::optional<std::vector<std::string_view>> fields(std::string_view line, std::size_t n) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < line.size()) {
    if (line[at] == ' ') {
      ++at;
      continue;
    }
    const std::size_t end = line.find(' ', at);
    out.push_back(line.substr(at, end == std::string_view::npos ? line.size() - at : end - at));
    if (end == std::string_view::npos) break;
    at = end;
  }
  if (out.size() != n) return std::nullopt;
  return out;
}

bool parse_unsigned(std::string_view text, uintmax_t& out) {
  if (text.empty() || text.size() > 20) return false;
  uintmax_t v = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const uintmax_t next = v * 10 + static_cast<uintmax_t>(c - '0');
    if (next / 10 != v) return false;
    v = next;
  }
  out = v;
  return true;
}

bool parse_time(std::string_view text, timespec& out) {
  const std::size_t dot = text.find('.');
  uintmax_t sec = 0;
  uintmax_t nsec = 0;
  if (dot == std::string_view::npos || text.size() - dot - 1 != 9 ||
      !parse_unsigned(text.substr(0, dot), sec) || !parse_unsigned(text.substr(dot + 1), nsec)) {
    return false;
  }
  out.tv_sec = static_cast<time_t>(sec);
  out.tv_nsec = static_cast<long>(nsec);
  return true;
}

// A version token: digits, dots, and the suffix characters a version line
// may carry; never a space (it is one field).
bool plausible_version(std::string_view v) {
  if (v.empty() || v.size() > 64) return false;
  for (const char c : v) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '.' || c == '-' || c == '+' || c == '~' || c == '_';
    if (!ok) return false;
  }
  return true;
}

std::optional<Entry> parse_entry(std::string_view line) {
  const auto f = fields(line, 7);
  if (!f) return std::nullopt;
  Entry e;
  uintmax_t dev = 0;
  uintmax_t ino = 0;
  uintmax_t size = 0;
  if (!parse_unsigned((*f)[0], dev) || !parse_unsigned((*f)[1], ino) ||
      !parse_unsigned((*f)[2], size) || !parse_time((*f)[3], e.binary.mtime) ||
      !parse_time((*f)[4], e.binary.ctime)) {
    return std::nullopt;
  }
  e.binary.dev = static_cast<dev_t>(dev);
  e.binary.ino = static_cast<ino_t>(ino);
  e.binary.size = static_cast<off_t>(size);
  if ((*f)[5] == "failed") {
    uintmax_t retry = 0;
    if (!parse_unsigned((*f)[6], retry)) return std::nullopt;
    e.answer.probe_failed = true;
    e.retry_after = static_cast<time_t>(retry);
    return e;
  }
  const auto flavour = native_flavour_from_string((*f)[5]);
  if (!flavour || !plausible_version((*f)[6])) return std::nullopt;
  e.answer.flavour = *flavour;
  if ((*f)[6] != "-") e.answer.version = std::string((*f)[6]);
  return e;
}

std::string owner_text(uid_t owner) {
  return owner == 0 ? "root" : "uid " + std::to_string(owner);
}

// Empty when `st` (of a directory or the file) is one only `owner` wrote.
std::string trust_problem(const struct stat& st, uid_t owner, bool directory) {
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    return directory ? "it is not a directory" : "it is not a regular file";
  }
  if (st.st_uid != owner) {
    return "it is owned by uid " + std::to_string(st.st_uid) + ", not " + owner_text(owner);
  }
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("it is group- or other-writable (mode ") + mode + ")";
  }
  return {};
}

}  // namespace

BinaryIdentity BinaryIdentity::of(const struct stat& st) noexcept {
  BinaryIdentity id;
  id.dev = st.st_dev;
  id.ino = st.st_ino;
  id.size = st.st_size;
  id.mtime = st.st_mtim;
  id.ctime = st.st_ctim;
  return id;
}

bool operator==(const BinaryIdentity& a, const BinaryIdentity& b) noexcept {
  return a.dev == b.dev && a.ino == b.ino && a.size == b.size && a.mtime.tv_sec == b.mtime.tv_sec &&
         a.mtime.tv_nsec == b.mtime.tv_nsec && a.ctime.tv_sec == b.ctime.tv_sec &&
         a.ctime.tv_nsec == b.ctime.tv_nsec;
}

NativeCache::NativeCache(std::string path, uid_t owner) : path_(std::move(path)), owner_(owner) {
  const std::size_t slash = path_.rfind('/');
  dir_ = slash == std::string::npos || slash == 0 ? "/" : path_.substr(0, slash);
}

namespace {

// The entries of a cache file that passed every check; empty when there is
// none (ENOENT) and, with `why` set, when it was refused.  With `only`, the
// lines that start with it alone are parsed (lookup's one binary: a full
// parse of every line was 4 000 instructions a line, 100 000 for a test
// node's 25 runtimes, on every pinned exec).
std::vector<Entry> read_entries(const std::string& dir, const std::string& path, uid_t owner,
                                std::string* why, std::string_view only = {}) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) return {};
  if (const std::string problem = trust_problem(st, owner, true); !problem.empty()) {
    if (why != nullptr) *why = "native cache directory " + quoted(dir) + " refused: " + problem;
    return {};
  }
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) {
    const int code = errno;
    if (code != ENOENT && why != nullptr) {
      *why = "native cache " + quoted(path) + " refused: " +
             (code == ELOOP ? std::string("it is a symbolic link") : errno_text(code));
    }
    return {};
  }
  if (::fstat(fd.get(), &st) != 0) return {};
  std::string problem = trust_problem(st, owner, false);
  if (problem.empty() && st.st_size > static_cast<off_t>(kMaxCacheBytes)) {
    problem = "it is larger than " + std::to_string(kMaxCacheBytes) + " bytes";
  }
  if (!problem.empty()) {
    if (why != nullptr) *why = "native cache " + quoted(path) + " refused: " + problem;
    return {};
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  std::vector<Entry> entries;
  std::size_t at = 0;
  while (at < text.size() && entries.size() < kMaxNativeCacheEntries) {
    const std::size_t nl = text.find('\n', at);
    if (nl == std::string::npos) break;  // a line without its end is not one
    const std::string_view line = std::string_view(text).substr(at, nl - at);
    if (only.empty() || line.substr(0, only.size()) == only) {
      if (auto e = parse_entry(line)) entries.push_back(std::move(*e));
    }
    at = nl + 1;
  }
  return entries;
}

}  // namespace

std::optional<NativeSupport> NativeCache::lookup(const BinaryIdentity& binary,
                                                 std::string* why) const {
  const time_t now = now_ != 0 ? now_ : ::time(nullptr);
  for (Entry& e : read_entries(dir_, path_, owner_, why, identity_key(binary))) {
    if (e.binary == binary) {
      if (e.answer.probe_failed && now >= e.retry_after) return std::nullopt;
      e.answer.evidence = e.answer.probe_failed ? "a failed probe, cached in " + quoted(path_) +
                                                      " until " + std::to_string(e.retry_after)
                                                : "cached in " + quoted(path_);
      return std::move(e.answer);
    }
  }
  return std::nullopt;
}

bool NativeCache::store(const BinaryIdentity& binary, const NativeSupport& answer,
                        std::string* why) const {
  if (::geteuid() != owner_) {
    if (why != nullptr)
      *why = "native cache not written: the shim does not run as " + owner_text(owner_);
    return false;
  }
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    const int code = errno;
    if (why != nullptr) {
      *why = "native cache directory " + quoted(dir_) + " cannot be made: " + errno_text(code);
    }
    return false;
  }
  std::string refused;
  std::vector<Entry> entries = read_entries(dir_, path_, owner_, &refused);
  struct stat st {};
  if (::lstat(dir_.c_str(), &st) != 0 || !trust_problem(st, owner_, true).empty()) {
    if (why != nullptr)
      *why = refused.empty() ? "native cache directory " + quoted(dir_) + " refused" : refused;
    return false;
  }
  const time_t now = now_ != 0 ? now_ : ::time(nullptr);
  std::string text = format_entry(Entry{binary, answer}, now);
  std::size_t kept = 1;
  for (const Entry& e : entries) {
    if (e.binary == binary || kept >= kMaxNativeCacheEntries) continue;
    text += format_entry(e, now);
    ++kept;
  }

  std::string temp = dir_ + "/.native.XXXXXX";
  const int raw = ::mkostemp(temp.data(), O_CLOEXEC);
  if (raw < 0) {
    const int code = errno;
    if (why != nullptr)
      *why = "native cache not written in " + quoted(dir_) + ": " + errno_text(code);
    return false;
  }
  bool ok = true;
  int code = 0;
  {
    const FileDescriptor fd(raw);
    std::size_t done = 0;
    while (ok && done < text.size()) {
      const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        code = n < 0 ? errno : EIO;
        ok = false;
      } else {
        done += static_cast<std::size_t>(n);
      }
    }
  }
  if (ok && ::rename(temp.c_str(), path_.c_str()) != 0) {
    code = errno;
    ok = false;
  }
  if (!ok) {
    (void)::unlink(temp.c_str());
    if (why != nullptr)
      *why = "native cache " + quoted(path_) + " not written: " + errno_text(code);
  }
  return ok;
}

}  // namespace execaff::shim
