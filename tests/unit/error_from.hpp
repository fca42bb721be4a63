// SPDX-License-Identifier: LGPL-2.1-or-later
// The execaff::Error an action throws, for tests that check messages.
#pragma once

#include <gtest/gtest.h>

#include "error.hpp"

namespace execaff {

// The Error that `action` throws; a test failure (and a dummy) if none.
template <typename Action>
Error error_from(Action&& action) {
  try {
    action();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no execaff::Error was thrown";
  return Error(0, "(none)");
}

}  // namespace execaff
