// SPDX-License-Identifier: LGPL-2.1-or-later
#include "container_program.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>

#include "file_descriptor.hpp"

namespace execaff {
namespace {

enum class Lookup { found, absent, unknown };

// What the runtime's own look-up would conclude about one program.
enum class Answer { present, missing, refused, unknown };

// `joined`: a $PATH candidate, which runc spells filepath.Join(dir, file).
using LookFn = std::function<Lookup(const std::string&, bool joined)>;

// A directory or a file with no execute bit is refused by the runtimes'
// own look-up (runc's LookPath skips it; crun says permission denied); a
// device or a socket with an execute bit is something neither was measured
// on: not definite.
Lookup classify(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return (st.st_mode & 0111) != 0 ? Lookup::found : Lookup::absent;
  return S_ISDIR(st.st_mode) ? Lookup::absent : Lookup::unknown;
}

// Phase 1, the common case: one openat2 through /proc/<init>/root.  Only
// its "found" is trusted; anything else is confirmed by phase 2.
Lookup look_through_proc_root(int root_fd, const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof how);
  if (fd < 0) {
    return errno == ENOENT || errno == ENOTDIR ? Lookup::absent : Lookup::unknown;
  }
  struct stat st {};
  const bool ok = ::fstat(static_cast<int>(fd), &st) == 0;
  ::close(static_cast<int>(fd));
  return ok ? classify(st) : Lookup::unknown;
}

// Filesystems whose answer to a look-up is the same for every process.
// procfs is not (/proc/self and /proc/thread-self name the reader, and are
// absent for a reader outside the container's pid namespace; its magic
// links name the reader's root, cwd and fds); a FUSE server can answer
// each caller differently.  Anything not listed here is not trusted.
bool same_answer_for_everyone(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case OVERLAYFS_SUPER_MAGIC:
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
    case SQUASHFS_MAGIC:
    case 0xE0F5E1E2UL:  // erofs
    case 0x2FC12FC1UL:  // zfs
    case F2FS_SUPER_MAGIC: return true;
    default: return false;
  }
}

// Phase 2: resolve `path` from this process's root one component at a
// time, the way the kernel does (symlinks followed, ".." physical and
// stopped at the root, a trailing "/" only on a directory), and refuse to
// conclude as soon as the walk enters a filesystem that does not give
// every process the same answer.
Lookup walk(const std::string& path) {
  std::vector<std::string> todo;  // components still to resolve, last first
  auto push_path = [&todo](const std::string& p) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= p.size()) {
      const std::size_t slash = std::min(p.find('/', start), p.size());
      parts.push_back(p.substr(start, slash - start));
      start = slash + 1;
    }
    todo.insert(todo.end(), parts.rbegin(), parts.rend());
  };
  auto open_root = [] { return ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC); };
  FileDescriptor cur(open_root());
  if (cur.get() < 0 || !same_answer_for_everyone(cur.get())) return Lookup::unknown;
  push_path(path);
  struct stat st {};
  if (::fstat(cur.get(), &st) != 0) return Lookup::unknown;
  int links = 0;
  while (!todo.empty()) {
    std::string name = std::move(todo.back());
    todo.pop_back();
    if (!S_ISDIR(st.st_mode)) return Lookup::absent;  // ENOTDIR, as the kernel says
    if (name.empty() || name == ".") continue;
    FileDescriptor next(::openat(cur.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) {
      return errno == ENOENT || errno == ENOTDIR ? Lookup::absent : Lookup::unknown;
    }
    // Every object, not only directories: a file can be bind-mounted from
    // a filesystem that answers each caller differently (a FUSE server
    // could show the shim no execute bit and the runtime one).
    struct stat next_st {};
    if (::fstat(next.get(), &next_st) != 0 || !same_answer_for_everyone(next.get())) {
      return Lookup::unknown;
    }
    if (S_ISLNK(next_st.st_mode)) {
      if (++links > 40) return Lookup::unknown;  // ELOOP: not measured, not definite
      char target[4096];
      const ssize_t n = ::readlinkat(next.get(), "", target, sizeof target);
      if (n <= 0 || static_cast<std::size_t>(n) >= sizeof target) return Lookup::unknown;
      const std::string link(target, static_cast<std::size_t>(n));
      push_path(link);
      if (link.front() == '/') {
        cur = FileDescriptor(open_root());
        if (cur.get() < 0 || ::fstat(cur.get(), &st) != 0) return Lookup::unknown;
      }
      continue;
    }
    cur = std::move(next);
    st = next_st;
  }
  return classify(st);
}

// A $PATH candidate: runc looks up Go's lexically cleaned spelling, crun
// the raw one, and both must agree: found only if both are, absent only if
// both are.  A program named with a slash is looked up as it is by both.
Lookup walk_as_runtimes_spell_it(const std::string& path, bool joined) {
  const Lookup raw = walk(path);
  if (!joined) return raw;
  const std::string clean = go_clean_path(path);
  if (clean == path) return raw;
  return walk(clean) == raw ? raw : Lookup::unknown;
}

std::string path_variable(const std::vector<std::string>& env, bool* seen) {
  std::string path;
  *seen = false;
  for (const auto& entry : env) {  // the last one wins (measured, both runtimes)
    if (entry.rfind("PATH=", 0) == 0) {
      path = entry.substr(5);
      *seen = true;
    }
  }
  return path;
}

// The runtime's search, candidate by candidate (FACTS.md §8).
Answer search(const ExecProgram& exec, const LookFn& look) {
  const std::string& program = exec.program;
  const std::string here = exec.cwd.empty() ? "/" : exec.cwd;
  if (program.find('/') != std::string::npos) {
    switch (look(program.front() == '/' ? program : here + "/" + program, false)) {
      case Lookup::found: return Answer::present;
      case Lookup::unknown: return Answer::unknown;
      case Lookup::absent: return Answer::missing;
    }
  }
  bool seen = false;
  const std::string path = path_variable(exec.env, &seen);
  if (!seen || path.empty()) return Answer::missing;  // both: "not found in $PATH"
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t colon = std::min(path.find(':', start), path.size());
    std::string dir = path.substr(start, colon - start);
    start = colon + 1;
    if (dir.empty()) {
      if (exec.rules == RuntimeRules::crun) continue;
      dir = ".";
    }
    const bool relative = dir.front() != '/';
    const Lookup got =
        look(relative ? here + "/" + dir + "/" + program : dir + "/" + program, true);
    if (got == Lookup::unknown) return Answer::unknown;
    if (got == Lookup::found) {
      // runc refuses a match in a relative element (Go's ErrDot).
      return relative && exec.rules == RuntimeRules::runc ? Answer::refused : Answer::present;
    }
  }
  return Answer::missing;
}

bool definite(Answer a) {
  return a == Answer::missing || a == Answer::refused;
}

// Phase 2 in a child: it joins the container's mount namespace (its root
// is then the namespace's root, the one `runc exec` and `crun exec` get
// from setns), walks there, then chroots into /proc/<init>/root (the
// init's own root, should it differ) and walks again.  Exit 0: definitely
// not runnable in either; anything else, a crash or the alarm included:
// not definite.  The alarm bounds a look-up that blocks (a hung NFS
// server): the shim must not hang the node's runtime.
bool definitely_not_runnable(pid_t init_pid, const ExecProgram& exec) {
  const std::string proc = "/proc/" + std::to_string(init_pid);
  FileDescriptor mnt(::open((proc + "/ns/mnt").c_str(), O_RDONLY | O_CLOEXEC));
  FileDescriptor root(::open((proc + "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (mnt.get() < 0 || root.get() < 0) return false;
  const pid_t child = ::fork();
  if (child < 0) return false;
  if (child == 0) {
    // The caller may have left SIGALRM ignored or blocked; execve keeps both.
    ::signal(SIGALRM, SIG_DFL);
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    (void)::sigprocmask(SIG_UNBLOCK, &alarm_only, nullptr);
    ::alarm(2);
    if (::setns(mnt.get(), CLONE_NEWNS) != 0) ::_exit(2);
    const Answer in_namespace_root = search(exec, walk_as_runtimes_spell_it);
    if (!definite(in_namespace_root)) ::_exit(3);
    if (::fchdir(root.get()) != 0 || ::chroot(".") != 0) ::_exit(2);
    const Answer in_init_root = search(exec, walk_as_runtimes_spell_it);
    ::_exit(definite(in_init_root) ? 0 : 3);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

bool program_may_exist(pid_t init_pid, const ExecProgram& exec) noexcept {
  try {
    if (exec.program.empty()) return true;  // let the runtime say what it says
    const std::string root = "/proc/" + std::to_string(init_pid) + "/root";
    FileDescriptor root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (root_fd.get() < 0) return true;
    const Answer quick = search(exec, [&](const std::string& p, bool) {
      return look_through_proc_root(root_fd.get(), p);
    });
    if (quick == Answer::present || quick == Answer::unknown) return true;
    // "Not found" from outside the container may be a look-up the shim
    // could not do (issue 11: /proc/self/root/bin/busybox is absent for a
    // reader outside the container's pid namespace): hand the exec over
    // unpinned only when the runtime's own look-up must fail too.
    return !definitely_not_runnable(init_pid, exec);
  } catch (...) {
    return true;
  }
}

}  // namespace execaff
