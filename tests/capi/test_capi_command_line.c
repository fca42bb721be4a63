/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The runtime command-line calls of the C ABI (EXECAFF_1.3), as the forked
 * crun's early pin uses them: its own argv read as crun 1.8.1's argp reads
 * it, the container id and the --root and --process values found, every
 * line crun refuses refused, and a reading cheap enough for crun's
 * pre-parse path (its cost printed). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <execaff/execaff.h>

#define COUNT(a) ((int) (sizeof (a) / sizeof (a)[0]))

static execaff_exec_argv* read_ok(const char* runtime, const char* version, int argc,
                                  const char* const* argv) {
  execaff_exec_argv* a = NULL;
  execaff_error* err = NULL;
  const int rc = execaff_exec_argv_read(runtime, version, argc, argv, &a, &err);
  if (rc != 0) fail_msg("%s", execaff_error_message(err));
  assert_non_null(a);
  return a;
}

static void expect_refused(const char* runtime, const char* version, int argc,
                           const char* const* argv, int code, const char* needle) {
  execaff_exec_argv* a = NULL;
  execaff_error* err = NULL;
  assert_int_equal(execaff_exec_argv_read(runtime, version, argc, argv, &a, &err), code);
  assert_null(a);
  assert_non_null(err);
  assert_int_equal(execaff_error_code(err), code);
  if (strstr(execaff_error_message(err), needle) == NULL) {
    fail_msg("%s: no \"%s\"", execaff_error_message(err), needle);
  }
  execaff_error_free(err);
}

static void test_crun_exec_argv(void** state) {
  (void) state;
  /* What CRI-O sends, and the spellings the fork's own scanner gave up on. */
  const char* const cri[] = {"crun", "--root=/run/crun", "--log", "/l", "exec", "--process",
                             "/p.json", "--detach", "--pid-file", "/pid", "ID"};
  const char* const cluster[] = {"crun", "exec", "-dp/p.json", "ID"};
  const char* const prefix[] = {"crun", "exec", "--pid", "/pid", "--cw", "/", "ID", "sh"};
  const char* const tty[] = {"crun", "exec", "-tX", "ID", "sh"};
  execaff_exec_argv* a = read_ok("crun", "1.8.1", COUNT(cri), cri);
  assert_int_equal(execaff_exec_argv_id_index(a), 10);
  assert_string_equal(execaff_exec_argv_option(a, 1, "root"), "/run/crun");
  assert_string_equal(execaff_exec_argv_option(a, 0, "process"), "/p.json");
  assert_string_equal(execaff_exec_argv_option(a, 0, "pid-file"), "/pid");
  assert_null(execaff_exec_argv_option(a, 0, "cwd"));
  assert_null(execaff_exec_argv_option(a, 0, "root"));
  execaff_exec_argv_free(a);

  a = read_ok("crun", "1.8.1", COUNT(cluster), cluster);
  assert_int_equal(execaff_exec_argv_id_index(a), 3);
  assert_string_equal(execaff_exec_argv_option(a, 0, "process"), "/p.json");
  execaff_exec_argv_free(a);

  a = read_ok("crun", "1.8.1", COUNT(prefix), prefix);
  assert_int_equal(execaff_exec_argv_id_index(a), 6);
  assert_string_equal(execaff_exec_argv_option(a, 0, "pid-file"), "/pid");
  assert_string_equal(execaff_exec_argv_option(a, 0, "cwd"), "/");
  execaff_exec_argv_free(a);

  a = read_ok("crun", NULL, COUNT(tty), tty);
  assert_int_equal(execaff_exec_argv_id_index(a), 3);
  execaff_exec_argv_free(a);
}

static void test_runc_exec_argv(void** state) {
  (void) state;
  const char* const pidfd[] = {"runc", "exec", "--pidfd-socket", "/s", "ID", "grep"};
  const char* const go[] = {"runc", "-root", "/r", "exec", "-process", "/p.json", "ID"};
  execaff_exec_argv* a = read_ok("runc", "1.3.6", COUNT(pidfd), pidfd);
  assert_int_equal(execaff_exec_argv_id_index(a), 4);
  execaff_exec_argv_free(a);
  a = read_ok("runc", "1.1.5", COUNT(go), go);
  assert_int_equal(execaff_exec_argv_id_index(a), 6);
  assert_string_equal(execaff_exec_argv_option(a, 1, "root"), "/r");
  assert_string_equal(execaff_exec_argv_option(a, 0, "process"), "/p.json");
  execaff_exec_argv_free(a);
  /* runc 1.1.5 has no --pidfd-socket: it refuses the line. */
  expect_refused("runc", "1.1.5", COUNT(pidfd), pidfd, -EINVAL, "unknown option \"--pidfd-socket\"");
}

static void test_refusals(void** state) {
  (void) state;
  const char* const ambiguous[] = {"crun", "exec", "--proc", "/p", "ID"};
  const char* const unknown[] = {"crun", "exec", "--pidfd-socket", "/s", "ID"};
  const char* const missing[] = {"crun", "exec", "-p"};
  const char* const no_id[] = {"crun", "exec", "-d"};
  const char* const state_cmd[] = {"crun", "state", "ID"};
  expect_refused("crun", "1.8.1", COUNT(ambiguous), ambiguous, -EINVAL, "ambiguous");
  expect_refused("crun", "1.8.1", COUNT(unknown), unknown, -EINVAL, "unknown option");
  expect_refused("crun", "1.8.1", COUNT(missing), missing, -EINVAL, "needs a value");
  expect_refused("crun", "1.8.1", COUNT(no_id), no_id, -ENOENT, "names no container");
  expect_refused("crun", "1.8.1", COUNT(state_cmd), state_cmd, -ENOENT, "not an exec");
  expect_refused("youki", NULL, COUNT(state_cmd), state_cmd, -ENOTSUP, "neither runc nor crun");
  {
    execaff_exec_argv* a = (execaff_exec_argv*) 1;
    assert_int_equal(execaff_exec_argv_read("crun", NULL, 0, NULL, &a, NULL), -EINVAL);
    assert_null(a);
  }
  execaff_exec_argv_free(NULL);
  assert_int_equal(execaff_exec_argv_id_index(NULL), -1);
  assert_null(execaff_exec_argv_option(NULL, 0, "process"));
}

static void test_option_argument(void** state) {
  (void) state;
  assert_int_equal(execaff_runtime_option_argument("runc", "1.3.6", "exec", "pidfd-socket"),
                   EXECAFF_OPTION_VALUE);
  assert_int_equal(execaff_runtime_option_argument("runc", "1.1.5", "exec", "pidfd-socket"),
                   -ENOENT);
  assert_int_equal(execaff_runtime_option_argument("crun", "1.8.1", "exec", "t"),
                   EXECAFF_OPTION_OPTIONAL_VALUE);
  assert_int_equal(execaff_runtime_option_argument("crun", "1.8.1", "exec", "detach"),
                   EXECAFF_OPTION_FLAG);
  assert_int_equal(execaff_runtime_option_argument("crun", "1.21", NULL, "log-level"),
                   EXECAFF_OPTION_VALUE);
  assert_int_equal(execaff_runtime_option_argument("crun", "1.8.1", NULL, "log-level"), -ENOENT);
  assert_int_equal(execaff_runtime_option_argument("crun", "1.8.1", "kill", "all"), -ENOENT);
  assert_int_equal(execaff_runtime_option_argument("youki", NULL, "exec", "cwd"), -ENOTSUP);
}

/* What a read costs the fork's pre-parse path, printed for the record:
 * it must stay far below crun's own exec (about 15 ms here). */
static void test_read_cost(void** state) {
  (void) state;
  const char* const cri[] = {"crun", "--root=/run/crun", "--log", "/l", "exec", "--process",
                             "/p.json", "--detach", "--pid-file", "/pid", "ID"};
  const int rounds = 20000;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int i = 0; i < rounds; i++) {
    execaff_exec_argv* a = read_ok("crun", "1.8.1", COUNT(cri), cri);
    execaff_exec_argv_free(a);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  const double ns = ((double) (t1.tv_sec - t0.tv_sec) * 1e9 + (double) (t1.tv_nsec - t0.tv_nsec)) /
                    rounds;
  printf("execaff_exec_argv_read + free of an 11-token exec argv: %.0f ns\n", ns);
  assert_true(ns < 100000.0); /* 0.1 ms: a bound, not the figure */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_crun_exec_argv),  cmocka_unit_test(test_runc_exec_argv),
      cmocka_unit_test(test_refusals),        cmocka_unit_test(test_option_argument),
      cmocka_unit_test(test_read_cost),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
