// SPDX-License-Identifier: LGPL-2.1-or-later
#include "command_runner.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <boost/process/args.hpp>
#include <boost/process/child.hpp>
#include <boost/process/exe.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/search_path.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "trace_session.hpp"

namespace schedtrace {
namespace {

namespace bp = boost::process;

volatile std::sig_atomic_t g_stop = 0;

void on_stop_signal(int) {
  g_stop = 1;
}

std::int64_t now_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A cpu_set_t sized for kMaxCpu, allocated the glibc way.
class Mask {
 public:
  explicit Mask(const CpuList& list)
      : size_(CPU_ALLOC_SIZE(CpuList::kMaxCpu + 1)), set_(CPU_ALLOC(CpuList::kMaxCpu + 1)) {
    if (set_ == nullptr) throw std::bad_alloc();
    CPU_ZERO_S(size_, set_);
    for (unsigned cpu : list.cpus()) CPU_SET_S(cpu, size_, set_);
  }
  ~Mask() { CPU_FREE(set_); }
  Mask(const Mask&) = delete;
  Mask& operator=(const Mask&) = delete;
  int apply() const { return ::sched_setaffinity(0, size_, set_); }

 private:
  std::size_t size_;
  cpu_set_t* set_;
};

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

[[noreturn]] void child_fail(const char* what) {
  const int code = errno;
  std::fprintf(stderr, "execaff-schedtrace: %s: %s\n", what, std::strerror(code));
  ::_exit(127);
}

// Boost.Process's launcher calls no parent-side hook between fork and
// exec, so the child arms the trace itself, in on_exec_setup.
struct ArmInChild : bp::extend::handler {
  const std::optional<Mask>& mask;
  const std::function<void(pid_t)>& armed;
  template <class Executor>
  void on_exec_setup(Executor& exec) const {
    // Own process group, so that a timeout can kill the runtime's helpers too.
    (void)::setpgid(0, 0);
    try {
      if (mask && mask->apply() != 0) throw sys_error("sched_setaffinity for the caller");
      armed(::getpid());
    } catch (const std::exception& e) {
      exec.set_error(std::error_code(errno, std::system_category()), e.what());
      ::_exit(127);
    }
    // Sleep once: the COMMAND's first stretch then begins with a traced
    // switch-in, as it did when the child was woken from a gate pipe.
    const timespec nap{0, 1};
    (void)::nanosleep(&nap, nullptr);
  }
};

}  // namespace

bool stop_requested() {
  return g_stop != 0;
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns EINTR
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
}

CpuList possible_cpus() {
  try {
    return CpuList::parse(read_file("/sys/devices/system/cpu/possible"));
  } catch (const std::exception&) {
    return CpuList::of({0});
  }
}

CommandOutcome run_command(const std::vector<std::string>& argv,
                           const std::optional<CpuList>& affinity,
                           const std::function<void(pid_t)>& armed, unsigned timeout_s) {
  if (argv.empty()) throw std::runtime_error("no command");
  std::optional<Mask> mask;
  if (affinity) mask.emplace(affinity->is_any() ? possible_cpus() : *affinity);
  // execvp's rule: a name with a slash is a path, else it is looked up in
  // $PATH (search_path alone would look up "/usr/bin/runc" there too).
  const std::string exe =
      argv[0].find('/') != std::string::npos ? argv[0] : bp::search_path(argv[0]).string();
  if (exe.empty()) throw std::runtime_error(argv[0] + ": not found in $PATH");
  bp::child child = [&] {
    try {
      return bp::child(bp::exe = exe,
                       bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()),
                       ArmInChild{{}, mask, armed});
    } catch (const bp::process_error& e) {
      throw std::runtime_error("cannot start " + argv[0] + ": " + e.what());
    }
  }();
  const std::int64_t start = now_ns();
  const std::int64_t deadline = start + static_cast<std::int64_t>(timeout_s) * 1000000000;
  CommandOutcome outcome;
  outcome.pid = child.id();
  while (!child.wait_for(std::chrono::milliseconds(200))) {
    if (now_ns() < deadline && !stop_requested()) continue;
    outcome.timed_out = now_ns() >= deadline;
    ::kill(-child.id(), SIGKILL);
    ::kill(child.id(), SIGKILL);
    child.wait();
    break;
  }
  outcome.wall_ns = now_ns() - start;
  const int status = child.native_exit_code();
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return outcome;
}

BusyLoops::BusyLoops(const CpuList& cpus) {
  for (unsigned cpu : cpus.cpus()) {
    const Mask mask(CpuList::of({cpu}));
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
      (void)::prctl(PR_SET_NAME, "execaff-busy");
      if (mask.apply() != 0) child_fail("sched_setaffinity for a busy loop");
      volatile unsigned long spin = 0;
      for (;;) spin = spin + 1;
    }
    pids_.push_back(pid);
  }
}

BusyLoops::~BusyLoops() {
  for (pid_t pid : pids_) ::kill(pid, SIGKILL);
  for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
}

}  // namespace schedtrace
