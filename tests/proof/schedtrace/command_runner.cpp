// SPDX-License-Identifier: LGPL-2.1-or-later
#include "command_runner.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "trace_session.hpp"

namespace schedtrace {
namespace {

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

int pidfd_open(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

[[noreturn]] void child_fail(const char* what) {
  const int code = errno;
  std::fprintf(stderr, "execaff-schedtrace: %s: %s\n", what, std::strerror(code));
  ::_exit(127);
}

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
  std::vector<char*> raw;
  for (const std::string& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
  raw.push_back(nullptr);

  int gate[2];
  if (::pipe2(gate, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(gate[0]);
    ::close(gate[1]);
    throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::close(gate[1]);
    // Own process group, so that a timeout can kill the runtime's helpers too.
    (void)::setpgid(0, 0);
    if (mask && mask->apply() != 0) child_fail("sched_setaffinity for the caller");
    char byte = 0;
    ssize_t n;
    do {
      n = ::read(gate[0], &byte, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) ::_exit(126);  // the harness gave up
    ::execvp(raw[0], raw.data());
    child_fail(raw[0]);
  }
  ::close(gate[0]);
  (void)::setpgid(pid, pid);
  CommandOutcome outcome;
  const int pidfd = pidfd_open(pid);
  try {
    armed(pid);
  } catch (...) {
    ::close(gate[1]);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    if (pidfd >= 0) ::close(pidfd);
    throw;
  }
  const std::int64_t start = now_ns();
  const char go = 'x';
  (void)!::write(gate[1], &go, 1);
  ::close(gate[1]);

  const std::int64_t deadline = start + static_cast<std::int64_t>(timeout_s) * 1000000000;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      if (pidfd >= 0) ::close(pidfd);
      throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
    }
    const std::int64_t left = deadline - now_ns();
    if (left <= 0 || stop_requested()) {
      outcome.timed_out = left <= 0;
      ::kill(-pid, SIGKILL);
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    if (pidfd >= 0) {
      pollfd p{pidfd, POLLIN, 0};
      (void)::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left / 1000000 + 1, 200)));
    } else {
      ::usleep(1000);
    }
  }
  outcome.wall_ns = now_ns() - start;
  if (pidfd >= 0) ::close(pidfd);
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
