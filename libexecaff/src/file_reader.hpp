// SPDX-License-Identifier: LGPL-2.1-or-later
// The one way libexecaff, the shim and the CLI read a file whole: OCI
// documents, the node config, runtime state files, and procfs, sysfs and
// cgroupfs files.  Only regular files, read to their end (never trusting
// st_size: a file being written may grow, seed 002; procfs reports 0), and
// never past a limit.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace execaff {

// An OCI document or a config: CRI-O's config.json is a few KiB, runc's
// state.json some tens.
inline constexpr std::size_t kMaxDocumentBytes = std::size_t{16} << 20;
// /proc/self/mountinfo on a busy Kubernetes node runs to a few MiB; a file
// far past that is none we know, and reading it whole would only eat memory.
inline constexpr std::size_t kMaxKernelFileBytes = std::size_t{64} << 20;

// The whole file, or Error naming the path and the reason: the open's errno
// (ENOENT, EACCES, ...), "not a regular file but a directory" (EISDIR) or
// "... a FIFO" (EINVAL; a FIFO does not block the open), or EFBIG past
// `limit` bytes.  Symbolic links are followed.
[[nodiscard]] std::string read_file(const std::string& path, std::size_t limit = kMaxDocumentBytes);

// The same for a file whose absence is an answer, without an access(2)
// before the open: nullopt when the open fails, for whatever reason (the
// caller leaves that to the runtime, which reports it in its own words).
[[nodiscard]] std::optional<std::string> read_file_if_openable(
    const std::string& path, std::size_t limit = kMaxDocumentBytes);

// The same for a file the caller has opened (`path` names it in messages).
[[nodiscard]] std::string read_opened_file(int fd, const std::string& path,
                                           std::size_t limit = kMaxDocumentBytes);

// The same without the message, for files whose absence is an answer
// (sysfs, procfs): 0 with the content in `out`, or the errno.
[[nodiscard]] int try_read_file(const std::string& path, std::string& out, std::size_t limit);

}  // namespace execaff
