// SPDX-License-Identifier: LGPL-2.1-or-later
#include "apply.hpp"

#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "error.hpp"
#include "node_facts.hpp"

namespace execaff {
namespace {

using Words = std::vector<std::uint64_t>;

// sched_getaffinity fails with EINVAL when the buffer is smaller than the
// kernel's cpumask (nr_cpu_ids bits), so grow until it fits.
CpuSet get_affinity(pid_t tid) {
  for (std::size_t words = 16; words <= (CpuSet::kMaxCpu + 1) / 64 * 2; words *= 2) {
    Words mask(words, 0);
    const long got =
        ::syscall(SYS_sched_getaffinity, tid, words * sizeof(std::uint64_t), mask.data());
    if (got >= 0) return CpuSet::from_words(std::move(mask));
    if (errno != EINVAL) {
      const int code = errno;
      throw Error(code, "cannot read the CPU affinity of thread " + std::to_string(tid) + ": " +
                            errno_text(code));
    }
  }
  throw Error(ERANGE, "the kernel's CPU mask is wider than " + std::to_string(CpuSet::kMaxCpu + 1) +
                          " CPUs");
}

struct DirCloser {
  void operator()(DIR* dir) const noexcept { ::closedir(dir); }
};

// The thread ids of pid, from /proc/<pid>/task.
std::vector<pid_t> thread_ids(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task";
  const std::unique_ptr<DIR, DirCloser> dir(::opendir(path.c_str()));
  if (!dir) {
    const int code = errno;
    throw Error(code == ENOENT ? ESRCH : code, "cannot list the threads of pid " +
                                                   std::to_string(pid) + " (" + path +
                                                   "): " + errno_text(code));
  }
  std::vector<pid_t> tids;
  while (const dirent* entry = ::readdir(dir.get())) {
    char* end = nullptr;
    const long tid = std::strtol(entry->d_name, &end, 10);
    if (end != entry->d_name && *end == '\0' && tid > 0) tids.push_back(static_cast<pid_t>(tid));
  }
  return tids;
}

// Whether pid has no thread but its main one.  procfs counts a task's
// threads into the link count of /proc/<pid>/task (2 + threads,
// proc_task_getattr() in fs/proc/base.c): one stat instead of listing the
// directory, for the common case of a runtime's blocked single-threaded
// child.  false when it cannot tell; the caller lists the threads then.
bool is_single_threaded(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task";
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_nlink == 3;
}

// Why the kernel would refuse `cpus` for pid: the facts it checks, read
// back so the message says which one failed.
std::string refusal_reason(pid_t pid, const CpuSet& cpus, int code) {
  if (code == ESRCH) return "the process is gone";
  if (code == EPERM) return "not permitted (setting another user's task needs CAP_SYS_NICE)";
  if (code != EINVAL) return errno_text(code);
  try {
    const NodeFacts node;
    const CpuSet online = node.online_cpus();
    if (!cpus.intersects(online)) {
      return "none of them is online (online CPUs are " + quoted(online.format()) + ")";
    }
    if (const auto cpuset = node.cgroup_cpuset_of_pid(pid)) {
      if (!cpus.intersects(cpuset->cpus)) {
        return "none of them is in the task's cpuset " + quoted(cpuset->cpus.format()) + " (" +
               cpuset->file + ")";
      }
    }
  } catch (const Error&) {
    // Fall through to the kernel's word: the explanation is best effort.
  }
  return errno_text(code);
}

CpuSet set_thread(pid_t pid, pid_t tid, const CpuSet& cpus, std::string_view stage) {
  const Words& words = cpus.words();
  if (::syscall(SYS_sched_setaffinity, tid, words.size() * sizeof(std::uint64_t), words.data()) !=
      0) {
    const int code = errno;
    throw Error(code, std::string(stage) + " affinity " + quoted(cpus.format()) + " for pid " +
                          std::to_string(pid) +
                          (tid != pid ? " (thread " + std::to_string(tid) + ")" : std::string()) +
                          " was refused: " + refusal_reason(pid, cpus, code));
  }
  CpuSet given = get_affinity(tid);
  if (given.empty() || !given.is_subset_of(cpus)) {
    throw Error(EIO, std::string(stage) + " affinity " + quoted(cpus.format()) + " for pid " +
                         std::to_string(pid) + ": the kernel gave " + quoted(given.format()));
  }
  return given;
}

}  // namespace

CpuSet thread_affinity(pid_t tid) {
  return get_affinity(tid);
}

CpuSet apply_affinity(pid_t pid, const CpuSet& cpus, std::string_view stage) {
  if (cpus.empty()) {
    throw Error(EINVAL,
                std::string(stage) + " affinity for pid " + std::to_string(pid) + " is empty");
  }
  const pid_t target = pid == 0 ? ::getpid() : pid;
  // The main thread first: threads it creates from now on inherit the mask.
  CpuSet given = set_thread(target, target, cpus, stage);
  if (is_single_threaded(target)) return given;
  // Then every other thread, again until a pass finds none it has not set:
  // a thread created by a not-yet-updated thread inherits the old mask
  // (sched_setaffinity(2) changes one thread; runc init is multi-threaded).
  std::set<pid_t> done{target};
  for (int pass = 0; pass < 64; ++pass) {
    bool found_new = false;
    std::vector<pid_t> tids;
    try {
      tids = thread_ids(target);
    } catch (const Error& e) {
      throw e.wrap(std::string(stage) + " affinity " + quoted(cpus.format()));
    }
    for (const pid_t tid : tids) {
      if (!done.insert(tid).second) continue;
      found_new = true;
      try {
        set_thread(target, tid, cpus, stage);
      } catch (const Error& e) {
        if (e.code() != ESRCH) throw;  // a thread that exited meanwhile is fine
      }
    }
    if (!found_new) return given;
  }
  throw Error(EAGAIN, std::string(stage) + " affinity " + quoted(cpus.format()) + " for pid " +
                          std::to_string(target) + ": it keeps creating threads");
}

}  // namespace execaff
