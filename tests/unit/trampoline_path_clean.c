/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The trampoline's own Go path cleaning (shim/go_path_clean.h), compiled
 * as C as the trampoline compiles it, for test_exec_program.cpp. */
#include "go_path_clean.h"

unsigned long execaff_test_trampoline_clean(const char* in, unsigned long n, char* out);

unsigned long execaff_test_trampoline_clean(const char* in, unsigned long n, char* out) {
  return go_path_clean(in, n, out);
}
