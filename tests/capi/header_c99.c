/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Compiled as C99 -pedantic-errors: the public header must stand alone. */
#include <execaff/execaff.h>

int execaff_header_check_dummy(void);
int execaff_header_check_dummy(void) {
  return EXECAFF_MAX_CPU > 0;
}
