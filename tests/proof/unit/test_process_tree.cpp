// SPDX-License-Identifier: LGPL-2.1-or-later
// The classifier: how tasks join, when the user's program starts, the phase
// and verdict of each residency.  Made-up traces (trace_builder.hpp) pin
// down one rule each; recorded ones (fixtures/, see README.md) check the
// whole chain on what the kernels and runtimes really emit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "process_tree.hpp"
#include "trace_builder.hpp"
#include "trace_event.hpp"

namespace schedtrace {
namespace {

using testing::TraceBuilder;

constexpr std::uint64_t kGoThread = 0x3d0f00;  // Go's clone flags (CLONE_THREAD among them)
constexpr std::uint64_t kFork = 0x1200000;     // fork(): CHILD_SETTID | CHILD_CLEARTID
constexpr std::uint64_t kParent = 0x8000;      // nsexec's CLONE_PARENT
constexpr std::int64_t ms(double v) {
  return static_cast<std::int64_t>(v * 1e6);
}

// The VM's layout: container 1-3, final 1, isolated 2-3.
ClassifyOptions vm_options(int root, std::optional<int> hierarchy) {
  ClassifyOptions o;
  o.root_pid = root;
  o.container_cgroup = "/c";
  o.hierarchy = hierarchy;
  o.clone_into_cgroup_joins = !hierarchy || *hierarchy == 0;
  o.program = "true";
  o.policy.cpuset = CpuList::parse("1-3");
  o.policy.isolated = CpuList::parse("2-3");
  o.policy.final_cpus = CpuList::parse("1");
  return o;
}

RunAnalysis classify(const TraceBuilder& b, const ClassifyOptions& o) {
  const ParsedTrace t = parse_trace_text(b.text());
  EXPECT_TRUE(t.errors.empty()) << t.errors.front();
  return classify_run(t.events, o);
}

const Residency& at(const RunAnalysis& r, double t_ms) {
  for (const Residency& in : r.residencies) {
    if (in.ts == ms(t_ms)) return in;
  }
  throw std::runtime_error("no residency at " + std::to_string(t_ms));
}

const TaskInfo& task(const RunAnalysis& r, int pid) {
  for (const TaskInfo& t : r.tasks) {
    if (t.pid == pid) return t;
  }
  throw std::runtime_error("no task " + std::to_string(pid));
}

// runc 1.1 exec on cgroup v1, caller pinned to 0: the parent writes the
// stage-2 pid into each hierarchy; the cpuset one moves it (6.1: to 1-3).
TEST(Classify, RuncOnCgroupV1) {
  TraceBuilder b;
  b.mark(0.5, "execaff-schedtrace start run=0")
      .sw(1.0, 0, "swapper/0", 0, "execaff-schedtr", 100)
      .exec(1.1, 0, "runc", 100, "/usr/sbin/runc")
      .sw(1.2, 0, "swapper/0", 0, "runc", 100)
      .fork(1.3, 0, "runc", 100, 101, kGoThread)
      .sw(1.35, 1, "swapper/1", 0, "runc", 101)  // (a) outside initial 0
      .fork(1.4, 0, "runc", 100, 110, 0x4100)
      .exec(1.5, 0, "runc", 110, "/proc/self/exe")
      .fork(1.6, 0, "runc:[0:PARENT]", 110, 111, kParent)
      .fork(1.7, 0, "runc:[1:CHILD]", 111, 112, kParent)
      .exit(1.72, 0, "runc:[1:CHILD]", 111)
      .attach(1.75, 0, "runc", 100, 3, "/c", 112, "runc:[2:INIT]")  // cpuacct: not cpuset
      .migrate(1.79, 0, "runc", 100, "runc:[2:INIT]", 112, 0, 2)    // inside the cpuset write
      .sw(1.795, 2, "swapper/2", 0, "runc:[2:INIT]", 112)           // (b) on isolated 2
      .attach(1.8, 0, "runc", 100, 1, "/c", 112, "runc:[2:INIT]")
      .fork(1.85, 2, "runc:[2:INIT]", 112, 113, kGoThread)
      .sw(1.86, 3, "swapper/3", 0, "runc:[2:INIT]", 113)  // (b) on isolated 3
      .exec(1.9, 2, "runc:[2:INIT]", 112, "/usr/sbin/true")
      .sw(1.95, 1, "swapper/1", 0, "true", 112)  // (c) fine
      .sw(1.96, 3, "swapper/3", 0, "true", 112)  // (c) outside final
      .fork(1.97, 3, "true", 112, 114, kFork)
      .sw(1.98, 1, "swapper/1", 0, "true", 114)  // (c) child, fine
      .sw(1.99, 1, "true", 114, "swapper/1", 0)
      .mark(2.5, "execaff-schedtrace end run=0");
  ClassifyOptions o = vm_options(100, 1);
  o.runtime = "runc";
  o.policy.initial = CpuList::parse("0");
  const RunAnalysis r = classify(b, o);

  EXPECT_EQ(r.start_ts, ms(0.5));
  EXPECT_EQ(r.end_ts, ms(2.5));
  EXPECT_EQ(r.tasks.size(), 7u);
  EXPECT_EQ(r.attaches_seen, 1u);  // the cpuacct one does not count
  ASSERT_TRUE(r.program_exec_ts);
  EXPECT_EQ(*r.program_pid, 112);
  EXPECT_TRUE(r.join_seen);
  EXPECT_EQ(r.program_join_how, JoinHow::attach);
  EXPECT_EQ(r.window_ns(), ms(1.9) - ms(1.79));  // from the forced migration
  EXPECT_EQ(task(r, 101).tgid, 100);
  EXPECT_EQ(task(r, 113).tgid, 112);
  EXPECT_EQ(task(r, 113).join_how, JoinHow::inherited);

  EXPECT_EQ(at(r, 1.0).phase, Phase::caller);  // the harness's child before exec
  EXPECT_FALSE(at(r, 1.0).violation);
  EXPECT_EQ(at(r, 1.2).phase, Phase::before_join);
  EXPECT_FALSE(at(r, 1.2).violation);
  EXPECT_EQ(at(r, 1.35).phase, Phase::before_join);
  EXPECT_TRUE(at(r, 1.35).violation);
  EXPECT_EQ(at(r, 1.795).phase, Phase::window);
  EXPECT_TRUE(at(r, 1.795).violation);
  EXPECT_EQ(at(r, 1.86).phase, Phase::window);
  EXPECT_TRUE(at(r, 1.86).violation);
  // The program starts on the CPU of its exec, with no switch.
  EXPECT_EQ(at(r, 1.9).entry, Entry::exec);
  EXPECT_EQ(at(r, 1.9).phase, Phase::after_exec);
  EXPECT_EQ(at(r, 1.9).cpu, 2u);
  EXPECT_TRUE(at(r, 1.9).violation);
  EXPECT_EQ(at(r, 1.9).comm, "true");
  EXPECT_EQ(at(r, 1.795).duration, ms(1.85) - ms(1.795) + (ms(1.9) - ms(1.85)));
  EXPECT_EQ(at(r, 1.95).phase, Phase::after_exec);
  EXPECT_FALSE(at(r, 1.95).violation);
  EXPECT_TRUE(at(r, 1.96).violation);
  EXPECT_EQ(at(r, 1.98).phase, Phase::after_exec);
  EXPECT_FALSE(at(r, 1.98).violation);
  EXPECT_EQ(at(r, 1.98).duration, ms(1.99) - ms(1.98));
  EXPECT_TRUE(r.warnings.empty());
}

// crun 1.8 on cgroup v2: clone3(CLONE_INTO_CGROUP), no attach event at all.
TraceBuilder crun_v2() {
  TraceBuilder b;
  b.sw(1.0, 0, "swapper/0", 0, "sh", 200)
      .exec(1.1, 0, "crun", 200, "/usr/bin/crun")
      .fork(1.2, 0, "memfd:crun_clon", 200, 201, kCloneIntoCgroup)
      .sw(1.3, 1, "swapper/1", 0, "memfd:crun_clon", 201)
      .fork(1.4, 1, "memfd:crun_clon", 201, 202, kFork)
      .sw(1.45, 2, "swapper/2", 0, "memfd:crun_clon", 202)  // (b) on 2
      .exec(1.5, 2, "memfd:crun_clon", 202, "/usr/sbin/true")
      .sw(1.6, 2, "swapper/2", 0, "true", 202);  // (c) on 2
  return b;
}

TEST(Classify, CloneIntoCgroupIsAJoinOnV2) {
  const RunAnalysis r = classify(crun_v2(), vm_options(200, 0));
  EXPECT_TRUE(r.join_seen);
  EXPECT_EQ(task(r, 201).join_how, JoinHow::clone_into_cgroup);
  EXPECT_EQ(r.program_join_how, JoinHow::inherited);
  EXPECT_EQ(r.window_ns(), ms(1.5) - ms(1.201));  // from 201's fork, not 202's
  EXPECT_EQ(at(r, 1.3).phase, Phase::window);
  EXPECT_FALSE(at(r, 1.3).violation);
  EXPECT_TRUE(at(r, 1.45).violation);
  EXPECT_EQ(at(r, 1.6).phase, Phase::after_exec);
  EXPECT_TRUE(at(r, 1.6).violation);
}

TEST(Classify, NoJoinSeenIsReported) {
  // The same trace judged as cgroup v1, where CLONE_INTO_CGROUP cannot join
  // the cpuset hierarchy: the join is missing, and the run says so.
  const RunAnalysis r = classify(crun_v2(), vm_options(200, 1));
  EXPECT_FALSE(r.join_seen);
  EXPECT_EQ(r.window_ns(), 0);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("no join"), std::string::npos);
  EXPECT_EQ(at(r, 1.45).phase, Phase::before_join);  // (a), still on isolated 2
  EXPECT_TRUE(at(r, 1.45).violation);
}

TEST(Classify, ProgramNotSeen) {
  ClassifyOptions o = vm_options(200, 0);
  o.program = "sleep";
  const RunAnalysis r = classify(crun_v2(), o);
  EXPECT_FALSE(r.program_exec_ts);
  EXPECT_FALSE(r.window_ns());
  EXPECT_EQ(at(r, 1.6).phase, Phase::window);
  ASSERT_FALSE(r.warnings.empty());
}

// An attach written for a thread-group leader moves every thread; an exec
// from a non-leader thread continues under the leader's pid.
TEST(Classify, ThreadGroupJoinAndExecFromAThread) {
  TraceBuilder b;
  b.exec(1.0, 0, "rt", 300, "/usr/bin/rt")
      .fork(1.1, 0, "rt", 300, 301, kGoThread)
      .fork(1.2, 0, "rt", 300, 310, kFork)
      .fork(1.3, 0, "rt", 310, 311, kGoThread)
      .attach(1.4, 0, "rt", 300, 0, "/c/sub", 310, "rt")  // below the container cgroup
      .sw(1.5, 1, "swapper/1", 0, "rt", 311)
      .exec(1.6, 1, "rt", 310, "/bin/true", 311)  // thread 311 execs
      .sw(1.7, 1, "swapper/1", 0, "true", 310)
      .sw(1.8, 0, "swapper/0", 0, "rt", 301);  // the runtime's own thread
  const RunAnalysis r = classify(b, vm_options(300, 0));
  EXPECT_EQ(task(r, 311).join_how, JoinHow::attach);
  EXPECT_EQ(at(r, 1.5).phase, Phase::window);
  EXPECT_EQ(*r.program_pid, 310);
  EXPECT_TRUE(r.join_seen);
  EXPECT_EQ(at(r, 1.7).phase, Phase::after_exec);
  EXPECT_EQ(at(r, 1.8).phase, Phase::before_join);  // not in the attached group
  EXPECT_FALSE(task(r, 301).join_ts);
}

TEST(Classify, OtherCgroupsAndHierarchiesDoNotCount) {
  TraceBuilder b;
  b.exec(1.0, 0, "rt", 400, "/usr/bin/rt")
      .fork(1.1, 0, "rt", 400, 401, kFork)
      .attach(1.2, 0, "rt", 400, 1, "/cc", 401, "rt")  // "/cc" is not below "/c"
      .attach(1.3, 0, "rt", 400, 2, "/c", 401, "rt")   // not the cpuset hierarchy
      .sw(1.4, 1, "swapper/1", 0, "rt", 401);
  const RunAnalysis r = classify(b, vm_options(400, 1));
  EXPECT_EQ(r.attaches_seen, 0u);
  EXPECT_EQ(at(r, 1.4).phase, Phase::before_join);
}

// A task that writes itself into the cgroup is running: cpuset_attach()
// moves it through the stopper thread, whose migration the pid filter
// would drop (the harness records migrations unfiltered).  The switch-in
// on the new CPU comes before the attach event.
TEST(Classify, SelfAttachUsesTheStopperMigration) {
  TraceBuilder b;
  b.exec(1.0, 0, "execaff-shim", 500, "/usr/bin/execaff-shim")
      .sw(1.1, 0, "swapper/0", 0, "execaff-shim", 500)
      .migrate(1.15, 0, "migration/0", 15, "execaff-shim", 500, 0, 0)  // not into the cpuset
      .migrate(1.2, 0, "migration/0", 15, "execaff-shim", 500, 0, 2)
      .sw(1.21, 2, "swapper/2", 0, "execaff-shim", 500)
      .attach(1.3, 2, "execaff-shim", 500, 0, "/c", 500, "execaff-shim")
      .exec(1.4, 1, "execaff-shim", 500, "/usr/sbin/runc")
      .sw(1.5, 1, "swapper/1", 0, "runc", 500);
  ClassifyOptions o = vm_options(500, 0);
  o.runtime = "runc";
  o.policy.initial = CpuList::parse("0-1");
  const RunAnalysis r = classify(b, o);
  EXPECT_EQ(task(r, 500).join_ts, ms(1.2));
  EXPECT_EQ(at(r, 1.1).phase, Phase::caller);
  EXPECT_EQ(at(r, 1.21).phase, Phase::window);
  EXPECT_TRUE(at(r, 1.21).violation);  // the shim itself on isolated 2
  EXPECT_EQ(at(r, 1.5).phase, Phase::window);
  EXPECT_FALSE(at(r, 1.5).violation);
}

TEST(Classify, MigrationsBeforeTheWritersLastEventDoNotCount) {
  TraceBuilder b;
  b.exec(1.0, 0, "rt", 600, "/usr/bin/rt")
      .fork(1.1, 0, "rt", 600, 601, kFork)
      .migrate(1.2, 0, "migration/0", 15, "rt", 601, 0, 1)  // a load balance, long before
      .fork(1.3, 0, "rt", 600, 602, kGoThread)              // the writer's last event
      .attach(1.4, 0, "rt", 600, 0, "/c", 601, "rt");
  const RunAnalysis r = classify(b, vm_options(600, 0));
  EXPECT_EQ(task(r, 601).join_ts, ms(1.4));
}

// An unpinned task may be moved by the load balancer (on the stopper as
// well) before the attach; it then runs outside the cpuset again, which a
// joined task cannot: that move is not the join.
TEST(Classify, ALoadBalancingMoveIsNotTheJoin) {
  TraceBuilder b;
  b.exec(1.0, 0, "rt", 800, "/usr/bin/rt")
      .fork(1.1, 0, "rt", 800, 801, kFork)
      .migrate(1.2, 1, "migration/1", 21, "rt", 801, 0, 1)  // balanced to 1
      .sw(1.25, 1, "swapper/1", 0, "rt", 801)
      .sw(1.3, 0, "swapper/0", 0, "rt", 801)                // back on 0: not joined yet
      .migrate(1.4, 0, "migration/0", 15, "rt", 801, 0, 2)  // the join's forced move
      .sw(1.45, 2, "swapper/2", 0, "rt", 801)
      .attach(1.5, 0, "rt", 800, 0, "/c", 801, "rt");
  const RunAnalysis r = classify(b, vm_options(800, 0));
  EXPECT_EQ(task(r, 801).join_ts, ms(1.4));
  EXPECT_EQ(at(r, 1.3).phase, Phase::before_join);
  EXPECT_EQ(at(r, 1.45).phase, Phase::window);
}

// A task moved into the cgroup while it runs, with no migration (its CPU is
// in the cpuset), enters the window in place: a residency of entry "join".
TEST(Classify, JoinWhileRunningSplitsTheResidency) {
  TraceBuilder b;
  b.exec(1.0, 0, "rt", 900, "/usr/bin/rt")
      .fork(1.1, 0, "rt", 900, 901, kFork)
      .sw(1.2, 2, "swapper/2", 0, "rt", 901)  // (a) on isolated 2
      .attach(1.3, 0, "rt", 900, 0, "/c", 901, "rt")
      .sw(1.4, 2, "rt", 901, "swapper/2", 0);
  const RunAnalysis r = classify(b, vm_options(900, 0));
  EXPECT_EQ(at(r, 1.2).phase, Phase::before_join);
  EXPECT_EQ(at(r, 1.2).duration, ms(1.3) - ms(1.2));
  const Residency& joined = at(r, 1.3);
  EXPECT_EQ(joined.entry, Entry::join);
  EXPECT_EQ(joined.phase, Phase::window);
  EXPECT_EQ(joined.cpu, 2u);
  EXPECT_TRUE(joined.violation);
  EXPECT_EQ(joined.duration, ms(1.4) - ms(1.3));
}

// Seen in the proof harness on 6.1: the shim stands on F before its early
// cpuset join, so the stopper moves it from CPU 0 to 1 — a move into the
// cpuset the join refinement takes as the join — and switches it out at the
// same instant.  The piece split off at that join ran for no time on CPU 0:
// not a violation.  Time it does spend there afterwards still is one.
TEST(Classify, AJoinSplitClosedAtOnceIsNoResidency) {
  TraceBuilder b;
  b.exec(1.0, 0, "execaff-shim", 500, "/usr/bin/execaff-shim")
      .sw(1.1, 0, "swapper/0", 0, "execaff-shim", 500)
      .migrate(1.2, 0, "migration/0", 15, "execaff-shim", 500, 0, 1)
      .sw(1.2, 0, "execaff-shim", 500, "migration/0", 15)
      .sw(1.21, 1, "swapper/1", 0, "execaff-shim", 500)
      .attach(1.3, 1, "execaff-shim", 500, 0, "/c", 500, "execaff-shim");
  ClassifyOptions o = vm_options(500, 0);
  o.policy.initial = CpuList::parse("0-1");
  const RunAnalysis r = classify(b, o);
  EXPECT_EQ(task(r, 500).join_ts, ms(1.2));
  const Residency& split = at(r, 1.2);
  EXPECT_EQ(split.cpu, 0u);
  EXPECT_EQ(split.duration, 0);
  EXPECT_FALSE(split.violation);
  EXPECT_EQ(at(r, 1.21).phase, Phase::window);
  EXPECT_FALSE(at(r, 1.21).violation);
}

TEST(Classify, PidReuseGetsANewTask) {
  TraceBuilder b;
  b.exec(1.0, 0, "rt", 700, "/usr/bin/rt")
      .fork(1.1, 0, "rt", 700, 701, kFork)
      .attach(1.2, 0, "rt", 700, 0, "/c", 701, "rt")
      .sw(1.25, 1, "swapper/1", 0, "rt", 701)
      .exit(1.3, 1, "rt", 701)
      .fork(1.4, 0, "rt", 700, 701, kFork)
      .sw(1.5, 0, "swapper/0", 0, "rt", 701);
  const RunAnalysis r = classify(b, vm_options(700, 0));
  EXPECT_EQ(r.tasks.size(), 3u);
  EXPECT_EQ(at(r, 1.25).phase, Phase::window);
  EXPECT_EQ(at(r, 1.5).phase, Phase::before_join);
}

// The CRI cells (--daemon-pid): the client asks CRI-O, whose threads were
// there before the run; a thread of it forks (Go's vfork) the exec's first
// process.  Host layout: cpuset 0-1, CPU 1 "isolated", initial and final 0.
TEST(Classify, ADaemonsForksAreTheExecsTasks) {
  constexpr std::uint64_t kGoForkExec = 0x4111;  // CLONE_VM | CLONE_VFORK | SIGCHLD
  TraceBuilder b;
  b.exec(1.0, 0, "execaff-schedtr", 100, "/usr/bin/python3")  // the client
      .sw(1.05, 1, "swapper/1", 0, "python3", 100)            // caller: no violation
      .fork(1.1, 1, "crio", 501, 502, kGoThread)              // the daemon's new thread
      .sw(1.15, 1, "swapper/1", 0, "crio", 502)               // caller: no violation
      .fork(1.2, 0, "crio", 501, 510, kGoForkExec)            // the exec's first process
      .sw(1.25, 1, "swapper/1", 0, "crio", 510)               // (a) on 1: a violation
      .exec(1.3, 1, "crio", 510, "/usr/bin/taskset")
      .exec(1.35, 0, "taskset", 510, "/usr/bin/conmon")
      .fork(1.4, 0, "conmon", 510, 511, kFork)
      .exec(1.45, 0, "conmon", 511, "/usr/sbin/runc")
      .fork(1.5, 0, "runc", 511, 512, kParent)
      .attach(1.6, 0, "runc", 511, 1, "/c", 512, "runc:[2:INIT]")
      .sw(1.65, 0, "swapper/0", 0, "runc:[2:INIT]", 512)  // (b) on 0: fine
      .exec(1.7, 0, "runc:[2:INIT]", 512, "/bin/true");
  ClassifyOptions o = vm_options(100, 1);
  o.daemon_pid = 500;
  o.daemon_tids = {500, 501};
  o.policy.cpuset = CpuList::parse("0-1");
  o.policy.isolated = CpuList::parse("1");
  o.policy.final_cpus = o.policy.initial.emplace(CpuList::parse("0"));
  const RunAnalysis r = classify(b, o);
  EXPECT_TRUE(task(r, 502).daemon);
  EXPECT_EQ(task(r, 502).tgid, 500);
  EXPECT_FALSE(task(r, 510).daemon);
  EXPECT_EQ(task(r, 510).runtime_ts, ms(1.2) + ms(0.001));
  EXPECT_EQ(at(r, 1.05).phase, Phase::caller);  // no --runtime: the client stays the caller
  EXPECT_FALSE(at(r, 1.05).violation);
  EXPECT_EQ(at(r, 1.15).phase, Phase::caller);
  EXPECT_FALSE(at(r, 1.15).violation);
  EXPECT_EQ(at(r, 1.25).phase, Phase::before_join);
  EXPECT_TRUE(at(r, 1.25).violation);
  EXPECT_EQ(at(r, 1.65).phase, Phase::window);
  EXPECT_FALSE(at(r, 1.65).violation);
  ASSERT_TRUE(r.program_pid);
  EXPECT_EQ(*r.program_pid, 512);
  EXPECT_TRUE(r.join_seen);
  EXPECT_TRUE(r.warnings.empty());
}
TEST(Policy, Rules) {
  PhasePolicy p;
  p.cpuset = CpuList::parse("1-3");
  p.isolated = CpuList::parse("2-3");
  p.final_cpus = CpuList::parse("1");
  EXPECT_FALSE(p.violates(Phase::before_join, 0));  // no initial: only isolation
  EXPECT_TRUE(p.violates(Phase::before_join, 2));
  p.initial = CpuList::parse("0-1");
  EXPECT_FALSE(p.violates(Phase::before_join, 1));
  EXPECT_TRUE(p.violates(Phase::before_join, 4));
  EXPECT_TRUE(p.violates(Phase::window, 0));  // outside the cpuset
  EXPECT_TRUE(p.violates(Phase::window, 3));  // isolated
  EXPECT_FALSE(p.violates(Phase::window, 1));
  EXPECT_TRUE(p.violates(Phase::after_exec, 2));
  EXPECT_FALSE(p.violates(Phase::after_exec, 1));
  EXPECT_FALSE(p.violates(Phase::caller, 3));
}

// ---- recorded traces --------------------------------------------------------

std::string fixture(const std::string& name) {
  const char* dir = std::getenv("PROOF_FIXTURES");
  std::ifstream in(std::string(dir ? dir : "tests/proof/fixtures") + "/" + name);
  std::stringstream s;
  s << in.rdbuf();
  if (s.str().empty()) throw std::runtime_error("fixture " + name + " missing or empty");
  return s.str();
}

struct Recorded {
  ParsedTrace trace;
  RunAnalysis run;
};

// Classifies a kept trace the way `execaff-schedtrace analyze` does, from
// the meta line the harness wrote on top of it.
Recorded recorded(const std::string& name, const std::string& cpuset, const std::string& final_cpus,
                  const std::string& isolated, std::optional<std::string> initial) {
  Recorded r;
  r.trace = parse_trace_text(fixture(name));
  EXPECT_TRUE(r.trace.errors.empty()) << name << ": " << r.trace.errors.front();
  ClassifyOptions o;
  o.root_pid = std::stoi(r.trace.meta.at("root_pid"));
  o.container_cgroup = r.trace.meta.at("container_cgroup");
  o.hierarchy = std::stoi(r.trace.meta.at("hierarchy"));
  o.clone_into_cgroup_joins = *o.hierarchy == 0;
  o.program = r.trace.meta.at("program");
  o.runtime = r.trace.meta.at("runtime");
  o.policy.cpuset = CpuList::parse(cpuset);
  o.policy.final_cpus = CpuList::parse(final_cpus);
  o.policy.isolated = CpuList::parse(isolated);
  if (initial) o.policy.initial = CpuList::parse(*initial);
  r.run = classify_run(r.trace.events, o);
  return r;
}

std::size_t count(const RunAnalysis& r, Phase phase, bool violations_only) {
  std::size_t n = 0;
  for (const Residency& in : r.residencies) {
    if (in.phase == phase && (!violations_only || in.violation)) ++n;
  }
  return n;
}

// Linux 6.18, cgroup v1 (hybrid host), runc 1.1.5, caller on both CPUs,
// CPU 1 busy and treated as isolated: the helpers run on CPU 1 before the
// join (a) and runc init after it (b); the kernel keeps runc init's mask
// (0-1) at the join, as 6.2+ does.
TEST(Recorded, Host618RuncUnpinned) {
  const Recorded r = recorded("host-6.18-v1-runc-unpinned.trace", "0-1", "0", "1", std::nullopt);
  EXPECT_EQ(r.trace.lost_events, 0u);
  ASSERT_TRUE(r.run.program_exec_ts);
  EXPECT_TRUE(r.run.join_seen);
  EXPECT_EQ(r.run.program_join_how, JoinHow::attach);
  EXPECT_EQ(r.run.attaches_seen, 1u);  // the cpuset hierarchy's only
  EXPECT_GT(*r.run.window_ns(), 0);
  EXPECT_GE(r.run.tasks.size(), 14u);  // runc's Go threads, the nsexec stages, init's threads
  EXPECT_GT(count(r.run, Phase::before_join, true), 0u);
  EXPECT_GT(count(r.run, Phase::window, false), 0u);
  EXPECT_GT(count(r.run, Phase::after_exec, false), 0u);
  EXPECT_TRUE(r.run.warnings.empty());
}

// Linux 6.18, cgroup v1, execaff-shim over crun 1.8.1 (trampoline), caller
// on both CPUs: the shim narrows itself to CPU 0 (a stopper migration from
// 1 to 0), crun re-execs itself from a memfd, its grandchild is attached in
// every hierarchy, execs the trampoline (/proc/self/fd/3), then `true`.
TEST(Recorded, Host618ShimCrunUnpinned) {
  const Recorded r =
      recorded("host-6.18-v1-shim-crun-unpinned.trace", "0-1", "0", "1", std::string("0"));
  ASSERT_TRUE(r.run.program_exec_ts);
  EXPECT_TRUE(r.run.join_seen);
  EXPECT_EQ(r.run.tasks.size(), 3u);
  EXPECT_GT(count(r.run, Phase::caller, false), 0u);
  EXPECT_EQ(count(r.run, Phase::before_join, true), 0u);
  EXPECT_EQ(count(r.run, Phase::window, true), 0u);
  EXPECT_EQ(count(r.run, Phase::after_exec, true), 0u);
  // The trampoline's exec is not the program's.
  const TaskInfo& program = task(r.run, *r.run.program_pid);
  EXPECT_EQ(program.comm, "true");
}

std::int64_t attach_ts(const ParsedTrace& t, int hierarchy) {
  for (const TraceEvent& e : t.events) {
    const auto* a = std::get_if<AttachEvent>(&e.payload);
    if (a != nullptr && a->dst_root == hierarchy) return e.ts_ns;
  }
  return 0;
}

// Linux 6.1 (VM), cgroup v1, runc 1.1.5, caller pinned to CPU 0, busy loops
// on the isolated CPUs 2-3: runc init (stage 2) is attached on every v1
// hierarchy; the cpuset one moves it, and it and its Go threads run on the
// isolated CPUs until the exec; `true` starts where the exec ran.
TEST(Recorded, Vm61V1Runc) {
  const Recorded r = recorded("vm-6.1-v1-runc.trace", "1-3", "1", "2-3", std::string("0"));
  EXPECT_EQ(r.trace.lost_events, 0u);
  ASSERT_TRUE(r.run.program_exec_ts);
  EXPECT_TRUE(r.run.join_seen);
  EXPECT_EQ(r.run.program_join_how, JoinHow::attach);
  EXPECT_EQ(r.run.attaches_seen, 1u);
  const TaskInfo& init = task(r.run, *r.run.program_pid);
  ASSERT_TRUE(init.join_ts);
  EXPECT_LE(*init.join_ts, attach_ts(r.trace, 1));
  EXPECT_EQ(count(r.run, Phase::before_join, true), 0u);  // the caller was pinned to 0
  EXPECT_GT(count(r.run, Phase::window, true), 0u);
  for (const Residency& in : r.run.residencies) {
    if (in.phase == Phase::window && in.violation) {
      EXPECT_EQ(in.comm, "runc:[2:INIT]");
      EXPECT_GE(in.cpu, 2u);
    }
  }
  bool started_in_place = false;
  for (const Residency& in : r.run.residencies) {
    if (in.entry == Entry::exec)
      started_in_place = in.phase == Phase::after_exec && in.comm == "true";
  }
  EXPECT_TRUE(started_in_place);
  EXPECT_TRUE(r.run.warnings.empty());
}

// Linux 6.1, pure cgroup v2, crun 1.8.1: clone3(CLONE_INTO_CGROUP), so no
// attach event at all; the program's parent joined at its fork.
TEST(Recorded, Vm61V2CrunCloneIntoCgroup) {
  const Recorded r = recorded("vm-6.1-v2-crun.trace", "1-3", "1", "2-3", std::string("0"));
  ASSERT_TRUE(r.run.program_exec_ts);
  EXPECT_EQ(r.run.attaches_seen, 0u);
  EXPECT_TRUE(r.run.join_seen);
  EXPECT_EQ(r.run.program_join_how, JoinHow::inherited);
  EXPECT_EQ(r.run.tasks.size(), 3u);
  std::size_t into = 0;
  for (const TaskInfo& t : r.run.tasks) into += t.join_how == JoinHow::clone_into_cgroup;
  EXPECT_EQ(into, 1u);
  EXPECT_GT(*r.run.window_ns(), 0);
}

// Linux 6.1, cgroup v2, execaff-shim (joining the container's cgroup itself
// before it execs crun) over crun 1.8.1: the shim writes itself into the
// cgroup while running on CPU 0; the kernel moves it through the stopper to
// CPU 3 (isolated) before the attach event fires; it runs there until it
// narrows its own affinity.  The join is the stopper's migration.
TEST(Recorded, Vm61V2ShimCrunSelfJoin) {
  const Recorded r = recorded("vm-6.1-v2-shim-crun.trace", "1-3", "1", "2-3", std::string("0-1"));
  ASSERT_TRUE(r.run.program_exec_ts);
  EXPECT_TRUE(r.run.join_seen);
  const TaskInfo& shim = task(r.run, std::stoi(r.trace.meta.at("root_pid")));
  ASSERT_TRUE(shim.join_ts);
  EXPECT_EQ(shim.join_how, JoinHow::attach);
  EXPECT_LT(*shim.join_ts, attach_ts(r.trace, 0));
  std::size_t on_isolated = 0;
  for (const Residency& in : r.run.residencies) {
    if (in.violation) {
      EXPECT_EQ(in.phase, Phase::window);
      EXPECT_EQ(in.comm, "execaff-shim");
      EXPECT_EQ(in.cpu, 3u);
      ++on_isolated;
    }
  }
  EXPECT_EQ(on_isolated, 2u);
  EXPECT_GT(count(r.run, Phase::caller, false), 0u);
  EXPECT_EQ(count(r.run, Phase::after_exec, true), 0u);
}

}  // namespace
}  // namespace schedtrace
