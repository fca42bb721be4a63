// SPDX-License-Identifier: LGPL-2.1-or-later
// The C ABI's error contract, shared by its source files (c_api.cpp,
// c_api_command_line.cpp): a negative errno returned, the message stored in
// an execaff_error, and nothing thrown across the wall.
#pragma once

#include <execaff/execaff.h>

#include <cerrno>
#include <new>
#include <string>

#include "error.hpp"

struct execaff_error {
  int code;  // negative errno
  std::string message;
};

namespace execaff::c_api {

inline int store_error(execaff_error** err, int code, const char* message) noexcept {
  const int negative = code > 0 ? -code : (code == 0 ? -EIO : code);
  if (err != nullptr) {
    // A caller that passes a filled slot keeps the first error.
    if (*err == nullptr) *err = new (std::nothrow) execaff_error{negative, std::string()};
    if (*err != nullptr && (*err)->message.empty()) {
      try {
        (*err)->message = message;
        (*err)->code = negative;
      } catch (...) {
        (*err)->code = -ENOMEM;
      }
    }
  }
  return negative;
}

// Runs body, turning any exception into the C error contract.
template <typename Body>
int guarded(execaff_error** err, Body&& body) noexcept {
  try {
    body();
    return 0;
  } catch (const execaff::Error& e) {
    return store_error(err, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return store_error(err, ENOMEM, "out of memory");
  } catch (const std::exception& e) {
    return store_error(err, EIO, e.what());
  } catch (...) {
    return store_error(err, EIO, "unexpected internal error");
  }
}

inline int null_argument(execaff_error** err, const char* function, const char* argument) noexcept {
  std::string message;
  try {
    message = std::string(function) + ": " + argument + " is NULL";
  } catch (...) {
    return store_error(err, ENOMEM, "out of memory");
  }
  return store_error(err, EINVAL, message.c_str());
}

}  // namespace execaff::c_api
