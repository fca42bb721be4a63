// SPDX-License-Identifier: LGPL-2.1-or-later
// Parsing of the tracefs `trace` text: one event per line, in the form
//
//   <comm>-<pid>   [<cpu>] <flags> <seconds>.<micros>: <event>: <fields>
//
// (<flags> only with options/irq-info; the harness turns it off, the parser
// accepts both).  The field layouts are the tracepoints' "print fmt" in
// events/*/*/format, identical on Linux 6.1 and 6.18 for everything read
// here except sched_process_exit, which gained " group_dead=%s" in 6.16.
//
// comm values may contain spaces, '-', '[' and ']' (runc's stages call
// themselves "runc:[2:INIT]"; prctl(PR_SET_NAME) allows any byte), so a
// line is never split on spaces: each field is located by its " key="
// marker, from the right, in the order the print fmt gives them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace schedtrace {

// Clone flags read from task_newtask (include/uapi/linux/sched.h).
inline constexpr std::uint64_t kCloneThread = 0x00010000;
inline constexpr std::uint64_t kCloneIntoCgroup = 0x200000000ULL;

struct SwitchEvent {  // sched/sched_switch
  std::string prev_comm;
  int prev_pid = 0;
  std::string prev_state;
  std::string next_comm;
  int next_pid = 0;
};
struct ForkEvent {  // sched/sched_process_fork (also for threads)
  std::string parent_comm;
  int parent_pid = 0;
  std::string child_comm;
  int child_pid = 0;
};
struct ExecEvent {  // sched/sched_process_exec
  std::string filename;
  int pid = 0;      // after exec (a non-leader thread takes the leader's pid)
  int old_pid = 0;  // before exec
};
struct ExitEvent {  // sched/sched_process_exit
  std::string comm;
  int pid = 0;
};
struct MigrateEvent {  // sched/sched_migrate_task
  std::string comm;
  int pid = 0;
  int orig_cpu = 0;
  int dest_cpu = 0;
};
struct AttachEvent {  // cgroup/cgroup_attach_task
  int dst_root = 0;   // hierarchy id, as in /proc/cgroups; 0 is cgroup v2
  std::string dst_path;
  int pid = 0;  // the thread-group leader when written to cgroup.procs
  std::string comm;
};
struct NewTaskEvent {  // task/task_newtask, emitted by the parent in copy_process
  int pid = 0;
  std::string comm;
  std::uint64_t clone_flags = 0;
};
struct MarkerEvent {  // ftrace/print from trace_marker
  std::string text;
};

using Payload = std::variant<std::monostate, SwitchEvent, ForkEvent, ExecEvent, ExitEvent,
                             MigrateEvent, AttachEvent, NewTaskEvent, MarkerEvent>;

struct TraceEvent {
  std::int64_t ts_ns = 0;  // trace clock ("global" in the harness)
  unsigned cpu = 0;
  int pid = 0;       // the task that was current when the event fired
  std::string comm;  // its comm as the header shows it ("<...>" if unknown)
  std::string name;  // "sched_switch", ...
  Payload payload;   // monostate for events the harness does not read
};

// One line.  Returns nullopt for comments, blank lines and "LOST" notes;
// throws std::invalid_argument for a line that looks like an event but
// whose header or known fields do not parse.
std::optional<TraceEvent> parse_trace_line(std::string_view line);

struct ParsedTrace {
  std::vector<TraceEvent> events;
  std::vector<std::string> errors;  // "line N: why"
  std::uint64_t lost_events = 0;    // from "CPU:N [LOST M EVENTS]"
  std::optional<std::uint64_t> entries_in_buffer, entries_written;
  // "# execaff-schedtrace: key=value key=value" lines the harness writes at
  // the top of a kept trace file, so that `analyze` can classify it alone.
  std::map<std::string, std::string> meta;
};

// A whole `trace` file, or several concatenated (events come out in time
// order either way).  Never throws: bad lines are listed in `errors`.
ParsedTrace parse_trace_text(std::string_view text);

// "12.345678" (seconds with a fraction) or a bare counter, to nanoseconds.
std::optional<std::int64_t> parse_timestamp(std::string_view text);

}  // namespace schedtrace
