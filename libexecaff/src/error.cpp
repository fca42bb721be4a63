// SPDX-License-Identifier: LGPL-2.1-or-later
#include "error.hpp"

#include <cstdio>
#include <cstring>

namespace execaff {

std::string quoted(std::string_view value) {
  std::string out;
  out.reserve(value.size() + 2);
  out.push_back('"');
  for (const char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string errno_text(int errno_code) {
  char buffer[256];
  // GNU strerror_r returns the message, which may or may not be buffer.
  return ::strerror_r(errno_code, buffer, sizeof buffer);
}

}  // namespace execaff
