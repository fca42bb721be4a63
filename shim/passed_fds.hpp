// SPDX-License-Identifier: LGPL-2.1-or-later
// File descriptors the shim hands the runtime across its execve — the
// trampoline and process files, as sealed memfds — and the ones the caller
// already passes on (--preserve-fds, crun's $LISTEN_FDS), which they must
// not take the place of.
#pragma once

#include <cstddef>
#include <string>

#include "command_line.hpp"
#include "runtime_state.hpp"

namespace execaff::shim {

enum class Placement { exactly, at_least };

// A sealed memfd holding `bytes`, at fd `at` (exactly, or the lowest free fd
// from `at` on), without FD_CLOEXEC so that the runtime inherits it.
// Sealed: nothing can change what the runtime will read.  Nothing to remove
// afterwards: it goes with the last process that holds it.
[[nodiscard]] int memfd_with(const char* name, const void* bytes, std::size_t size, int at,
                             Placement place);

// The caller's --preserve-fds count (0 without the option); Error(EINVAL)
// when it is not a count.
[[nodiscard]] unsigned preserved_fd_count(const CommandLine& line);

// crun's exec adds $LISTEN_FDS to --preserve-fds (socket activation: the
// caller's fds from 3 on are listening sockets); runc 1.1's exec ignores
// it.  0 for runc's layout.
[[nodiscard]] unsigned listen_fd_count(const ContainerState& state);

// "/proc/self/fd/N": how the runtime opens an inherited fd by path.
[[nodiscard]] std::string fd_path(int fd);

}  // namespace execaff::shim
