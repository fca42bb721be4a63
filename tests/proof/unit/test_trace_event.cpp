// SPDX-License-Identifier: LGPL-2.1-or-later
// The tracefs text parser: header forms, every event the classifier reads
// in its 6.1 and 6.18 layouts, awkward comm values, and the notes the
// kernel writes about lost events.  Lines are copied from real traces
// (fixtures/) unless said otherwise.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cpu_list.hpp"
#include "trace_event.hpp"

namespace schedtrace {
namespace {

TraceEvent parse(const std::string& line) {
  auto e = parse_trace_line(line);
  if (!e) throw std::runtime_error("no event in: " + line);
  return *e;
}

TEST(TraceLine, SchedSwitchOn61) {
  const TraceEvent e = parse(
      "            runc-208     [000]      5.653857: sched_switch: prev_comm=runc prev_pid=208 "
      "prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120");
  EXPECT_EQ(e.comm, "runc");
  EXPECT_EQ(e.pid, 208);
  EXPECT_EQ(e.cpu, 0u);
  EXPECT_EQ(e.ts_ns, 5653857000);
  EXPECT_EQ(e.name, "sched_switch");
  const auto& s = std::get<SwitchEvent>(e.payload);
  EXPECT_EQ(s.prev_comm, "runc");
  EXPECT_EQ(s.prev_pid, 208);
  EXPECT_EQ(s.prev_state, "S");
  EXPECT_EQ(s.next_comm, "swapper/0");
  EXPECT_EQ(s.next_pid, 0);
}

TEST(TraceLine, CommWithBracketsDashesAndSpaces) {
  // runc's stages name themselves "runc:[2:INIT]"; prctl(PR_SET_NAME) allows
  // spaces and dashes.  Made-up line in the kernel's layout.
  const TraceEvent e = parse(
      "   runc:[2:INIT]-219     [003]      6.147647: sched_switch: prev_comm=runc:[2:INIT] "
      "prev_pid=219 prev_prio=120 prev_state=R+ ==> next_comm=my task-1 x next_pid=4242 "
      "next_prio=100");
  EXPECT_EQ(e.comm, "runc:[2:INIT]");
  EXPECT_EQ(e.pid, 219);
  EXPECT_EQ(e.cpu, 3u);
  const auto& s = std::get<SwitchEvent>(e.payload);
  EXPECT_EQ(s.prev_comm, "runc:[2:INIT]");
  EXPECT_EQ(s.prev_state, "R+");
  EXPECT_EQ(s.next_comm, "my task-1 x");
  EXPECT_EQ(s.next_pid, 4242);
}

TEST(TraceLine, HeaderWithIrqInfoAndUnknownComm) {
  // options/irq-info adds a flags column; "<...>" is an uncached comm.
  const TraceEvent e = parse(
      "           <...>-1234    [001] d..2.  1234.567890: sched_process_exit: comm=true "
      "pid=1234 prio=120 group_dead=true");
  EXPECT_EQ(e.comm, "<...>");
  EXPECT_EQ(e.pid, 1234);
  EXPECT_EQ(e.cpu, 1u);
  EXPECT_EQ(e.ts_ns, 1234567890000);
  EXPECT_EQ(std::get<ExitEvent>(e.payload).pid, 1234);
}

TEST(TraceLine, ExitWithoutGroupDeadOn61) {
  const TraceEvent e = parse(
      "            true-219     [001]      6.420996: sched_process_exit: comm=true pid=219 "
      "prio=120");
  EXPECT_EQ(std::get<ExitEvent>(e.payload).comm, "true");
}

TEST(TraceLine, ForkExecNewtaskAttachMigrate) {
  const auto fork = std::get<ForkEvent>(
      parse("  runc:[1:CHILD]-218     [000]      6.023805: sched_process_fork: "
            "comm=runc:[1:CHILD] pid=218 child_comm=runc:[1:CHILD] child_pid=219")
          .payload);
  EXPECT_EQ(fork.parent_pid, 218);
  EXPECT_EQ(fork.child_pid, 219);
  EXPECT_EQ(fork.child_comm, "runc:[1:CHILD]");

  const auto exec =
      std::get<ExecEvent>(parse("            true-219     [001]      6.412625: sched_process_exec: "
                                "filename=/usr/sbin/true pid=219 old_pid=219")
                              .payload);
  EXPECT_EQ(exec.filename, "/usr/sbin/true");
  EXPECT_EQ(exec.pid, 219);

  const auto thread = std::get<NewTaskEvent>(
      parse("            true-219     [001]      6.097502: task_newtask: pid=220 "
            "comm=runc:[2:INIT] clone_flags=3d0f00 oom_score_adj=0")
          .payload);
  EXPECT_EQ(thread.pid, 220);
  EXPECT_NE(thread.clone_flags & kCloneThread, 0u);

  const auto into = std::get<NewTaskEvent>(
      parse(" memfd:crun_clon-221     [000]      7.511238: task_newtask: pid=222 "
            "comm=memfd:crun_clon clone_flags=200000000 oom_score_adj=0")
          .payload);
  EXPECT_EQ(into.clone_flags, kCloneIntoCgroup);

  const auto attach = std::get<AttachEvent>(
      parse("            runc-217     [000]      6.060242: cgroup_attach_task: dst_root=1 "
            "dst_id=22 dst_level=1 dst_path=/c-runc pid=219 comm=runc:[2:INIT]")
          .payload);
  EXPECT_EQ(attach.dst_root, 1);
  EXPECT_EQ(attach.dst_path, "/c-runc");
  EXPECT_EQ(attach.pid, 219);
  EXPECT_EQ(attach.comm, "runc:[2:INIT]");

  const TraceEvent migrate = parse(
      "     migration/1-20      [001]      5.230820: sched_migrate_task: comm=taskset "
      "pid=185 prio=120 orig_cpu=1 dest_cpu=0");
  EXPECT_EQ(migrate.comm, "migration/1");
  EXPECT_EQ(std::get<MigrateEvent>(migrate.payload).dest_cpu, 0);
}

TEST(TraceLine, AttachPathWithSpaces) {
  const auto a = std::get<AttachEvent>(
      parse("            runc-1     [000]      1.000000: cgroup_attach_task: dst_root=0 dst_id=7 "
            "dst_level=2 dst_path=/kube pods/pod 1 pid=5 comm=sh")
          .payload);
  EXPECT_EQ(a.dst_path, "/kube pods/pod 1");
  EXPECT_EQ(a.pid, 5);
}

TEST(TraceLine, MarkerAndUnknownEvents) {
  const TraceEvent m = parse(
      " execaff-schedtr-9     [000]    100.000001: tracing_mark_write: execaff-schedtrace start "
      "run=3");
  EXPECT_EQ(std::get<MarkerEvent>(m.payload).text, "execaff-schedtrace start run=3");
  const TraceEvent u = parse(
      "            sh-1     [000]      1.5: sched_wakeup: comm=x pid=2 prio=120 target_cpu=001");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(u.payload));
  EXPECT_EQ(u.ts_ns, 1500000000);
}

TEST(TraceLine, CommentsAndNotesAreNotEvents) {
  EXPECT_FALSE(parse_trace_line("# tracer: nop"));
  EXPECT_FALSE(parse_trace_line(""));
  EXPECT_FALSE(parse_trace_line("CPU:2 [LOST 12 EVENTS]"));
  EXPECT_THROW(parse_trace_line("garbage without a cpu"), std::invalid_argument);
  EXPECT_THROW(parse_trace_line("  sh-1  [000]  1.0: sched_switch: prev_comm=sh prev_pid=x"),
               std::invalid_argument);
}

TEST(TraceText, HeadersLossesMetaAndOrder) {
  const std::string text =
      "# execaff-schedtrace: root_pid=42 program=true hierarchy=0\n"
      "# tracer: nop\n"
      "# entries-in-buffer/entries-written: 2/5   #P:4\n"
      "CPU:1 [LOST 3 EVENTS]\n"
      "              sh-42      [001]      2.000000: sched_process_exit: comm=sh pid=42 prio=120\n"
      "              sh-42      [000]      1.000000: sched_process_exec: filename=/bin/sh pid=42 "
      "old_pid=42\n"
      "# entries-in-buffer/entries-written: 1/1   #P:4\n"
      "this line is broken\n";
  const ParsedTrace t = parse_trace_text(text);
  EXPECT_EQ(t.meta.at("root_pid"), "42");
  EXPECT_EQ(t.meta.at("hierarchy"), "0");
  EXPECT_EQ(t.lost_events, 3u);
  EXPECT_EQ(t.entries_in_buffer, 3u);
  EXPECT_EQ(t.entries_written, 6u);
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].name, "sched_process_exec");  // sorted by time
  ASSERT_EQ(t.errors.size(), 1u);
  EXPECT_NE(t.errors[0].find("line 8"), std::string::npos);
}

TEST(Timestamp, Forms) {
  EXPECT_EQ(parse_timestamp("5.590536"), 5590536000);
  EXPECT_EQ(parse_timestamp("0.000000001"), 1);
  EXPECT_EQ(parse_timestamp("123456"), 123456);  // counter clock
  EXPECT_FALSE(parse_timestamp("1.2.3"));
  EXPECT_FALSE(parse_timestamp("x"));
}

TEST(CpuListTest, ParseFormatAny) {
  EXPECT_EQ(CpuList::parse("0-3,7").format(), "0-3,7");
  EXPECT_EQ(CpuList::parse(" 1 , 3-4\n").format(), "1,3-4");
  EXPECT_TRUE(CpuList::parse("").empty());
  EXPECT_TRUE(CpuList::parse("any").contains(4000));
  EXPECT_EQ(CpuList::parse("2").united_with(CpuList::parse("0-1")).format(), "0-2");
  EXPECT_THROW(CpuList::parse("3-1"), std::invalid_argument);
  EXPECT_THROW(CpuList::parse("1,"), std::invalid_argument);
  EXPECT_THROW(CpuList::parse("(null)"), std::invalid_argument);
  EXPECT_THROW(CpuList::parse("70000"), std::invalid_argument);
}

}  // namespace
}  // namespace schedtrace
