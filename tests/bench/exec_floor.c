/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The floor of any exec wrapper: exec $EXECAFF_RUNTIME with our argv (bench_shim.py). */
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char** argv) {
  (void)argc;
  execv(getenv("EXECAFF_RUNTIME"), argv);
  return 127;
}
