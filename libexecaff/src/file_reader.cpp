// SPDX-License-Identifier: LGPL-2.1-or-later
#include "file_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "error.hpp"
#include "file_descriptor.hpp"
#include "read_tally.hpp"

namespace execaff {
namespace {

// procfs and sysfs files report a size of 0 (or a page): start with a page.
constexpr std::size_t kFirstRead = 4096;

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "of an unknown type";
}

// What went wrong, as an errno and the words after "cannot read PATH: ".
struct Failure {
  int code = 0;
  std::string why;
  std::size_t size = 0;  // EFBIG: the size seen
};

Failure read_all(int fd, std::string& out, std::size_t limit) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) return {errno, {}};
  if (!S_ISREG(status.st_mode)) {
    return {S_ISDIR(status.st_mode) ? EISDIR : EINVAL,
            "not a regular file but " + file_kind(status.st_mode)};
  }
  const auto size = static_cast<std::size_t>(status.st_size);
  if (size > limit) return {EFBIG, {}, size};

  // One byte past the expected size shows growth without a second pass.
  std::string content(std::max(size + 1, std::min(kFirstRead, limit + 1)), '\0');
  std::size_t filled = 0;
  for (;;) {
    if (filled == content.size()) {
      if (filled > limit) return {EFBIG, {}, filled};
      content.resize(std::min(content.size() * 2, limit + 1));
    }
    const ssize_t got = ::read(fd, content.data() + filled, content.size() - filled);
    if (got < 0) {
      if (errno == EINTR) continue;
      return {errno, {}};
    }
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  if (filled > limit) return {EFBIG, {}, filled};
  content.resize(filled);
  out = std::move(content);
  return {};
}

[[noreturn]] void fail(const std::string& path, const Failure& failure, std::size_t limit) {
  std::string why = failure.why.empty() ? errno_text(failure.code) : failure.why;
  if (failure.code == EFBIG) {
    why += " (" + std::to_string(failure.size) + " bytes or more, the limit is " +
           std::to_string(limit) + ")";
  }
  throw Error(failure.code, "cannot read " + quoted(path) + ": " + why);
}

// O_NONBLOCK: a FIFO at the path would otherwise block open() until some
// writer came; fstat then refuses it.  It changes nothing for regular
// files.  O_NOCTTY: a terminal must not become ours.
int open_for_reading(const std::string& path) {
  return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

}  // namespace

std::string read_file(const std::string& path, std::size_t limit) {
  tally::file_read(path);
  const FileDescriptor fd(open_for_reading(path));
  if (fd.get() < 0) fail(path, {errno, {}}, limit);
  std::string out;
  if (const Failure failure = read_all(fd.get(), out, limit); failure.code != 0) {
    fail(path, failure, limit);
  }
  return out;
}

std::optional<std::string> read_file_if_openable(const std::string& path, std::size_t limit) {
  const FileDescriptor fd(open_for_reading(path));
  if (fd.get() < 0) return std::nullopt;
  tally::file_read(path);  // only a file that is there counts as read
  std::string out;
  if (const Failure failure = read_all(fd.get(), out, limit); failure.code != 0) {
    fail(path, failure, limit);
  }
  return out;
}

std::string read_opened_file(int fd, const std::string& path, std::size_t limit) {
  tally::file_read(path);
  std::string out;
  if (const Failure failure = read_all(fd, out, limit); failure.code != 0) {
    fail(path, failure, limit);
  }
  return out;
}

int try_read_file(const std::string& path, std::string& out, std::size_t limit) {
  tally::file_read(path);
  const FileDescriptor fd(open_for_reading(path));
  if (fd.get() < 0) return errno;
  return read_all(fd.get(), out, limit).code;
}

}  // namespace execaff
