// SPDX-License-Identifier: LGPL-2.1-or-later
// Starting the COMMAND under the trace, and the busy loops.
//
// The COMMAND's process (started with Boost.Process) puts its own pid into
// set_event_pid and switches tracing on before it execs: with
// options/event-fork the filter then follows every task it starts, and no
// event of the COMMAND (its exec included) is missed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cpu_list.hpp"

namespace schedtrace {

struct CommandOutcome {
  int exit_code = 0;  // 128 + signal when killed by one
  bool timed_out = false;
  std::int64_t wall_ns = 0;  // from the exec to the reap
  pid_t pid = 0;             // the COMMAND's first task
};

// Runs argv (PATH lookup) with the given affinity ("all" = every possible
// CPU, nullopt = inherit the harness's).  `armed(pid)` runs in the child,
// between fork and exec.  Kills the child's process group after
// `timeout_s`.  Throws std::runtime_error when the child cannot start.
CommandOutcome run_command(const std::vector<std::string>& argv,
                           const std::optional<CpuList>& affinity,
                           const std::function<void(pid_t)>& armed, unsigned timeout_s);

// One spinning process per CPU (a pod's busy-poll thread stand-in), named
// "execaff-busy", pinned with sched_setaffinity, at the default priority.
// They die with the object, or with the harness (PR_SET_PDEATHSIG).
class BusyLoops {
 public:
  explicit BusyLoops(const CpuList& cpus);
  ~BusyLoops();
  BusyLoops(const BusyLoops&) = delete;
  BusyLoops& operator=(const BusyLoops&) = delete;
  std::size_t count() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

// Set by SIGINT/SIGTERM/SIGHUP once install_stop_handlers() ran.
bool stop_requested();
void install_stop_handlers();

// Every CPU the kernel could ever bring online (/sys/devices/system/cpu/possible).
CpuList possible_cpus();

}  // namespace schedtrace
