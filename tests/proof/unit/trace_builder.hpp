// SPDX-License-Identifier: LGPL-2.1-or-later
// Writes tracefs `trace` lines in the kernel's layout (6.1 print fmts, the
// harness's options: no irq-info, no tgid) for made-up scenarios, so that
// a classifier test reads like the trace it stands for.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace schedtrace::testing {

class TraceBuilder {
 public:
  // t in milliseconds; cpu; the current task (comm, pid).
  TraceBuilder& sw(double t, unsigned cpu, const std::string& prev_comm, int prev_pid,
                   const std::string& next_comm, int next_pid, const char* state = "S") {
    return line(t, cpu, prev_comm, prev_pid, "sched_switch",
                "prev_comm=" + prev_comm + " prev_pid=" + std::to_string(prev_pid) +
                    " prev_prio=120 prev_state=" + state + " ==> next_comm=" + next_comm +
                    " next_pid=" + std::to_string(next_pid) + " next_prio=120");
  }
  // task_newtask then sched_process_fork, as copy_process() and
  // kernel_clone() emit them.
  TraceBuilder& fork(double t, unsigned cpu, const std::string& comm, int pid, int child,
                     std::uint64_t flags) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(flags));
    line(t, cpu, comm, pid, "task_newtask",
         "pid=" + std::to_string(child) + " comm=" + comm + " clone_flags=" + hex +
             " oom_score_adj=0");
    return line(t + 0.001, cpu, comm, pid, "sched_process_fork",
                "comm=" + comm + " pid=" + std::to_string(pid) + " child_comm=" + comm +
                    " child_pid=" + std::to_string(child));
  }
  TraceBuilder& exec(double t, unsigned cpu, const std::string& comm, int pid,
                     const std::string& filename, int old_pid = 0) {
    return line(t, cpu, comm, old_pid ? old_pid : pid, "sched_process_exec",
                "filename=" + filename + " pid=" + std::to_string(pid) +
                    " old_pid=" + std::to_string(old_pid ? old_pid : pid));
  }
  TraceBuilder& exit(double t, unsigned cpu, const std::string& comm, int pid) {
    return line(t, cpu, comm, pid, "sched_process_exit",
                "comm=" + comm + " pid=" + std::to_string(pid) + " prio=120");
  }
  TraceBuilder& attach(double t, unsigned cpu, const std::string& writer, int writer_pid, int root,
                       const std::string& path, int pid, const std::string& comm) {
    return line(t, cpu, writer, writer_pid, "cgroup_attach_task",
                "dst_root=" + std::to_string(root) + " dst_id=9 dst_level=1 dst_path=" + path +
                    " pid=" + std::to_string(pid) + " comm=" + comm);
  }
  TraceBuilder& migrate(double t, unsigned cpu, const std::string& by, int by_pid,
                        const std::string& comm, int pid, int orig, int dest) {
    return line(t, cpu, by, by_pid, "sched_migrate_task",
                "comm=" + comm + " pid=" + std::to_string(pid) + " prio=120 orig_cpu=" +
                    std::to_string(orig) + " dest_cpu=" + std::to_string(dest));
  }
  TraceBuilder& mark(double t, const std::string& text) {
    return line(t, 0, "execaff-schedtr", 1, "tracing_mark_write", text);
  }
  const std::string& text() const { return text_; }

 private:
  TraceBuilder& line(double t_ms, unsigned cpu, const std::string& comm, int pid,
                     const std::string& event, const std::string& fields) {
    char head[128];
    std::snprintf(head, sizeof head, "%16s-%-7d [%03u] %12.6f: ", comm.c_str(), pid, cpu,
                  t_ms / 1000.0);
    text_ += head + event + ": " + fields + "\n";
    return *this;
  }
  std::string text_;
};

}  // namespace schedtrace::testing
