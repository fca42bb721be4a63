// SPDX-License-Identifier: LGPL-2.1-or-later
// The one error type inside the library.  Every failure is an Error that
// carries a positive errno and a message naming the stage, the input and the
// reason; the C ABI (c_api.cpp) turns it into a negative return and an
// execaff_error.  Messages are built where the context is known, and outer
// layers add context with Error::wrap rather than printing.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace execaff {

class Error : public std::runtime_error {
 public:
  Error(int errno_code, const std::string& message)
      : std::runtime_error(message), code_(errno_code) {}

  // Positive errno (EINVAL, ERANGE, ENOENT, ...).
  [[nodiscard]] int code() const noexcept { return code_; }

  // The same error with `context: ` in front of its message.
  [[nodiscard]] Error wrap(std::string_view context) const {
    return Error(code_, std::string(context) + ": " + what());
  }

 private:
  int code_;
};

// `value` in double quotes with control characters and quotes escaped, so a
// message shows exactly what the input was ("" for empty input).
[[nodiscard]] std::string quoted(std::string_view value);

// strerror_r, as a std::string.
[[nodiscard]] std::string errno_text(int errno_code);

}  // namespace execaff
