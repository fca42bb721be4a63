/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Compiled as C99 -pedantic-errors: the public header must stand alone. */
#include <execaff/execaff.h>

int execaff_header_check_dummy(void);
int execaff_header_check_dummy(void) {
  /* The newest call (EXECAFF_1.3), by its prototype. */
  int (*wants)(const char*, size_t, const char*, size_t, const execaff_node_config*,
               execaff_error**) = execaff_exec_wants_pinning;
  return EXECAFF_MAX_CPU > 0 && wants != NULL;
}
