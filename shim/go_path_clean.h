/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Go's filepath.Clean, lexically, for the freestanding trampoline
 * (final_trampoline.c): runc looks a $PATH candidate up as
 * filepath.Join(dir, file) spells it, so "/a/../bin/sh" is "/bin/sh"
 * whatever /a is.  No libc: the trampoline links none.  libexecaff's
 * go_clean_path (exec_program.hpp) is the shim's and explain's copy;
 * tests/unit/test_exec_program.cpp holds both to one table.
 */
#ifndef EXECAFF_GO_PATH_CLEAN_H
#define EXECAFF_GO_PATH_CLEAN_H

/* Cleans the n bytes at `in` into `out` (at least n + 1 bytes: "" gives
 * "."), NUL-terminated; returns the cleaned length. */
static unsigned long go_path_clean(const char* in, unsigned long n, char* out) {
  unsigned long r = 0, w = 0, dotdot = 0;
  int rooted = n > 0 && in[0] == '/';
  if (rooted) {
    out[w++] = '/';
    r = dotdot = 1;
  }
  while (r < n) {
    if (in[r] == '/') {
      ++r;
    } else if (in[r] == '.' && (r + 1 == n || in[r + 1] == '/')) {
      ++r;
    } else if (in[r] == '.' && r + 1 < n && in[r + 1] == '.' && (r + 2 == n || in[r + 2] == '/')) {
      r += 2;
      if (w > dotdot) {
        --w;
        while (w > dotdot && out[w] != '/') --w;
      } else if (!rooted) {
        if (w > 0) out[w++] = '/';
        out[w++] = '.';
        out[w++] = '.';
        dotdot = w;
      }
    } else {
      if ((rooted && w != 1) || (!rooted && w != 0)) out[w++] = '/';
      for (; r < n && in[r] != '/'; ++r) out[w++] = in[r];
    }
  }
  if (w == 0) out[w++] = '.';
  out[w] = '\0';
  return w;
}

#endif
