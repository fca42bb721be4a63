/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The emulated path's in-container step.  A runtime that ignores
 * process.execCPUAffinity (runc < 1.3, crun < 1.19) starts this instead of
 * the user's program, from a memfd the shim passes with --preserve-fds:
 *
 *     /proc/self/fd/N  N[r]  FINAL  PROGRAM ARGS...
 *
 * ("Nr" when the runtime is runc: $PATH candidates are then cleaned
 * lexically, as Go's exec.LookPath spells them.)
 *
 * (No "--": runc and crun stop parsing options at the container id, and a
 * "--" could be eaten by crun's argp.)
 *
 * By then the process has joined the container's cgroup (and, before 6.2
 * kernels, had its affinity reset to the cpuset), so setting FINAL here is
 * the "after the move" of config.md.  It then closes N and execve()s the
 * user's program in place: same pid (so --pid-file holds), and argv, comm
 * and /proc/self/exe become the user's.  PROGRAM is looked up the way the
 * runtimes do it (runc: Go's exec.LookPath; no /bin/sh fallback on ENOEXEC):
 * a name with a slash is taken as is, any other is searched in the last
 * PATH of the environment, empty elements skipped; a candidate counts when
 * stat() finds a non-directory with an execute bit.
 *
 * Freestanding (no libc): it is copied into a memfd on every exec, so it
 * must be a few KiB, and it must run in any container, whatever its libc.
 *
 * Exit codes are the bare runtime's for the same failure (runc 1.1.5 and
 * crun 1.8.1, measured: tests/integration/FACTS.md §1), so that a caller
 * cannot tell the trampoline from the runtime by the code:
 *   255  the look-up failed: no such program, not in $PATH, a directory,
 *        no execute bit, a path it may not search — where the runtimes'
 *        own look-up fails (they exit 255 and start nothing);
 *   1    the program was found but execve() failed: ENOEXEC, a missing
 *        #! interpreter, EACCES from a noexec mount — where the runtimes'
 *        final execve fails (they exit 1);
 *   125  pinning failed, or the trampoline was started wrongly: the bare
 *        runtime has no such failure; 125 is what `env`, `nice` and
 *        `timeout` return when they fail themselves.
 */

#if defined(__x86_64__)
#define SYS_write 1
#define SYS_close 3
#define SYS_execve 59
#define SYS_exit_group 231
#define SYS_sched_setaffinity 203
#define SYS_sched_getaffinity 204
#define SYS_statx 332
#define SYS_faccessat 269
#define SYS_statfs 137
static long raw_syscall3(long n, long a, long b, long c) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
  return ret;
}
static long raw_syscall5(long n, long a, long b, long c, long d, long e) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
#define SYS_write 64
#define SYS_close 57
#define SYS_execve 221
#define SYS_exit_group 94
#define SYS_sched_setaffinity 122
#define SYS_sched_getaffinity 123
#define SYS_statx 291
#define SYS_faccessat 48
#define SYS_statfs 43
static long raw_syscall3(long n, long a, long b, long c) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2) : "memory");
  return x0;
}
static long raw_syscall5(long n, long a, long b, long c, long d, long e) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
}
#else
#error "final_trampoline supports x86_64 and aarch64"
#endif

#include "go_path_clean.h"

#define ENOENT 2
#define E2BIG 7
#define ENOEXEC 8
#define EACCES 13
#define ENOTDIR 20
#define ELOOP 40
#define ENAMETOOLONG 36

/* The two kinds of failure, with the bare runtime's exit codes (header). */
#define EXIT_LOOKUP 255
#define EXIT_EXECVE 1
#define EXIT_TRAMPOLINE 125

#define AT_FDCWD (-100)
#define STATX_MODE 0x2U
#define S_IFMT 0170000
#define S_IFDIR 0040000
#define X_OK 1
#define ST_NOEXEC 8UL
#define STATFS_FLAGS_WORD 10 /* f_flags: the 11th 64-bit word of struct statfs */

/* CPU ids up to 65535, as the library's parser allows. */
#define MASK_WORDS 1024
static unsigned long mask[MASK_WORDS];
static unsigned long given[MASK_WORDS];
static char path_buffer[4096];

static unsigned long length(const char* s) {
  unsigned long n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

static void say(const char* s) {
  (void)raw_syscall3(SYS_write, 2, (long)s, (long)length(s));
}

static void die(int status, const char* a, const char* b, const char* c) {
  if (a[0] != 'E') say("execaff: ");
  say(a);
  if (b != 0) say(b);
  if (c != 0) say(c);
  say("\n");
  (void)raw_syscall3(SYS_exit_group, status, 0, 0);
  for (;;) {
  }
}

static int parse_number(const char** p, unsigned long* out) {
  unsigned long v = 0;
  int digits = 0;
  while (**p >= '0' && **p <= '9') {
    v = v * 10 + (unsigned long)(**p - '0');
    if (v >= MASK_WORDS * 64UL) return 0;
    ++*p;
    ++digits;
  }
  *out = v;
  return digits > 0;
}

/* The shim hands over the canonical form ("0-3,7"), nothing looser. */
static int parse_list(const char* p) {
  int any = 0;
  while (*p != '\0') {
    unsigned long lo, hi, cpu;
    if (!parse_number(&p, &lo)) return 0;
    hi = lo;
    if (*p == '-') {
      ++p;
      if (!parse_number(&p, &hi) || hi < lo) return 0;
    }
    for (cpu = lo; cpu <= hi; ++cpu) mask[cpu / 64] |= 1UL << (cpu % 64);
    any = 1;
    if (*p == ',')
      ++p;
    else if (*p != '\0')
      return 0;
  }
  return any;
}

static const char* errno_name(long e) {
  switch (-e) {
    case 1: return "EPERM (not permitted)";
    case 3: return "ESRCH";
    case 14: return "EFAULT";
    case 22: return "EINVAL (none of the CPUs is in the container's cpuset or online)";
    default: return "an error";
  }
}

static void pin(const char* list) {
  long r;
  unsigned long i;
  if (!parse_list(list))
    die(EXIT_TRAMPOLINE, "final affinity \"", list, "\" is not a canonical CPU list");
  r = raw_syscall3(SYS_sched_setaffinity, 0, (long)sizeof mask, (long)mask);
  if (r < 0) {
    say("execaff: final affinity \"");
    say(list);
    say("\" refused: ");
    die(EXIT_TRAMPOLINE, errno_name(r), 0, 0);
  }
  r = raw_syscall3(SYS_sched_getaffinity, 0, (long)sizeof given, (long)given);
  if (r < 0) die(EXIT_TRAMPOLINE, "cannot read back final affinity \"", list, "\"");
  /* What the kernel gave must be a non-empty subset of what was asked. */
  for (i = 0; i < MASK_WORDS; ++i) {
    if ((given[i] & ~mask[i]) != 0)
      die(EXIT_TRAMPOLINE, "final affinity \"", list, "\" was not applied");
  }
}

static int has_slash(const char* s) {
  for (; *s != '\0'; ++s)
    if (*s == '/') return 1;
  return 0;
}

/* The last PATH wins: runc and crun both keep the last of duplicates. */
static const char* getenv_path(char** envp) {
  const char* found = 0;
  for (; *envp != 0; ++envp) {
    const char* e = *envp;
    if (e[0] == 'P' && e[1] == 'A' && e[2] == 'T' && e[3] == 'H' && e[4] == '=') found = e + 5;
  }
  return found;
}

/* strerror for what stat(2) and execve(2) can say, lower-cased as runc prints it. */
static const char* exec_error(long r) {
  switch (-r) {
    case ENOENT: return "\": no such file or directory";
    case ENOEXEC: return "\": exec format error";
    case EACCES: return "\": permission denied";
    case ENOTDIR: return "\": not a directory";
    case ELOOP: return "\": too many levels of symbolic links";
    case E2BIG: return "\": argument list too long";
    case ENAMETOOLONG: return "\": file name too long";
    default: return "\": exec failed";
  }
}

/* argv[1] is "N", or "Nr" when the runtime is runc: the look-up then
 * follows runc's rules, else crun's (look_up_candidate, check_runnable). */
static int go_rules;

/* The look-up's first step, which picks a $PATH candidate: 0 when stat()
 * finds a non-directory with an execute bit, else the negative errno the
 * runtime reports (EACCES for a directory or no execute bit; runc: Go's
 * findExecutable).  crun 1.8.1 looks as root, before it switches to the
 * exec's user: a path that user may not search is no look-up failure
 * there but an execve one (exit 1, measured), so it goes on to execve. */
static long look_up_candidate(const char* path) {
  static unsigned long statx_buffer[32]; /* struct statx is 256 bytes */
  unsigned int mode;
  long r = raw_syscall5(SYS_statx, AT_FDCWD, (long)path, 0, STATX_MODE, (long)statx_buffer);
  if (r == -EACCES && !go_rules) return 0;
  if (r < 0) return r;
  mode = ((const unsigned short*)statx_buffer)[14]; /* stx_mode, offset 28 */
  if ((mode & S_IFMT) == S_IFDIR || (mode & 0111) == 0) return -EACCES;
  return 0;
}

/* The look-up's last step, on the candidate picked: runc 1.1.5 checks
 * eaccess(X_OK) as the user (a noexec mount, no execute permission for the
 * user: 255, "eaccess ...: permission denied"); crun 1.8.1 refuses a file
 * on a noexec mount ("open executable: Permission denied", 255). */
static long check_runnable(const char* path) {
  static unsigned long statfs_buffer[16]; /* struct statfs is 120 bytes */
  long r;
  if (go_rules) return raw_syscall3(SYS_faccessat, AT_FDCWD, (long)path, X_OK);
  r = raw_syscall3(SYS_statfs, (long)path, (long)statfs_buffer, 0);
  if (r == 0 && (statfs_buffer[STATFS_FLAGS_WORD] & ST_NOEXEC) != 0) return -EACCES;
  return 0;
}

/* The runtime's look-up of the program found, then execve. */
static void exec_found(const char* path, char** argv, char** envp) {
  long r = check_runnable(path);
  if (r < 0) die(EXIT_LOOKUP, "exec \"", path, exec_error(r));
  r = raw_syscall3(SYS_execve, (long)path, (long)argv, (long)envp);
  die(EXIT_EXECVE, "exec \"", path, exec_error(r));
}

static char clean_buffer[4096];

/* path_buffer cleaned in place, as runc spells a $PATH candidate. */
static void clean_lexically(void) {
  unsigned long n = go_path_clean(path_buffer, length(path_buffer), clean_buffer), i;
  for (i = 0; i <= n; ++i) path_buffer[i] = clean_buffer[i];
}

static void run(char** argv, char** envp) {
  const char* name = argv[0];
  const char* path;
  long r;
  if (has_slash(name)) {
    r = look_up_candidate(name);
    if (r < 0) die(EXIT_LOOKUP, "exec \"", name, exec_error(r));
    exec_found(name, argv, envp);
  }
  path = getenv_path(envp);
  while (path != 0 && *path != '\0') {
    /* An empty PATH element is skipped, as crun does.  runc (Go) takes it
     * as "." but refuses what it finds there; the shim hands such an exec
     * to runc untouched, so here nothing can be found there anyway. */
    const char* end = path;
    unsigned long dir_len, name_len = length(name), at = 0, i;
    while (*end != '\0' && *end != ':') ++end;
    dir_len = (unsigned long)(end - path);
    if (dir_len > 0 && dir_len + name_len + 2 <= sizeof path_buffer) {
      for (i = 0; i < dir_len; ++i) path_buffer[at++] = path[i];
      path_buffer[at++] = '/';
      for (i = 0; i < name_len; ++i) path_buffer[at++] = name[i];
      path_buffer[at] = '\0';
      if (go_rules) clean_lexically();
      /* The first runnable candidate is the one: like runc, no fallback to
       * a later one when its execve fails. */
      if (look_up_candidate(path_buffer) == 0) exec_found(path_buffer, argv, envp);
    }
    path = *end == ':' ? end + 1 : 0;
  }
  die(EXIT_LOOKUP, "exec \"", name, "\": executable file not found in $PATH");
}

static unsigned long parse_fd(const char* s) {
  unsigned long v = 0;
  if (*s == '\0') return ~0UL;
  for (; *s != '\0'; ++s) {
    if (*s == 'r' && s[1] == '\0' && v != 0) {
      go_rules = 1;
      break;
    }
    if (*s < '0' || *s > '9') return ~0UL;
    v = v * 10 + (unsigned long)(*s - '0');
    if (v > 1U << 20) return ~0UL;
  }
  return v;
}

/* Called from _start with the initial stack: argc, argv..., 0, envp..., 0. */
__attribute__((used)) void trampoline_main(long* sp) {
  long argc = sp[0];
  char** argv = (char**)(sp + 1);
  char** envp = argv + argc + 1;
  unsigned long fd;
  if (argc < 4) die(EXIT_TRAMPOLINE, "usage: trampoline FD FINAL PROGRAM [ARGS...]", 0, 0);
  fd = parse_fd(argv[1]);
  if (fd == ~0UL) die(EXIT_TRAMPOLINE, "bad trampoline fd \"", argv[1], "\"");
  pin(argv[2]);
  /* Our own image is mapped; the memfd must not reach the user's program. */
  (void)raw_syscall3(SYS_close, (long)fd, 0, 0);
  run(argv + 3, envp);
}

#if defined(__x86_64__)
__asm__(
    ".text\n.global _start\n_start:\n"
    "  xor %rbp, %rbp\n  mov %rsp, %rdi\n  and $-16, %rsp\n  call trampoline_main\n  hlt\n");
#elif defined(__aarch64__)
__asm__(
    ".text\n.global _start\n_start:\n"
    "  mov x29, #0\n  mov x0, sp\n  and sp, x0, #-16\n  bl trampoline_main\n  brk #0\n");
#endif
