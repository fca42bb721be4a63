// SPDX-License-Identifier: LGPL-2.1-or-later
// execaff audit's scan on fixture trees (tests/fixtures/nodes/audit-v2, its
// README row says what each task is) and its parsers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "audit_callers.hpp"
#include "audit_scan.hpp"
#include "command_options.hpp"
#include "error.hpp"

namespace {

using execaff::CpuSet;
using execaff::cli::AuditOptions;
using execaff::cli::FindingKind;

std::string fixture(const std::string& tree) {
  const char* dir = std::getenv("EXECAFF_FIXTURES");
  return std::string(dir != nullptr ? dir : "tests/fixtures") + "/nodes/" + tree;
}

AuditOptions audit_v2() {
  AuditOptions options;
  options.root_fs = fixture("audit-v2");
  options.state_roots = {"/run/runc", "/run/crun"};
  options.node_config.housekeeping_cpus = CpuSet::parse("0-1");
  return options;
}

using Row = std::tuple<std::string, std::string, pid_t, pid_t, std::string>;

std::vector<Row> rows(const execaff::cli::AuditResult& r) {
  std::vector<Row> out;
  for (const auto& f : r.findings) {
    out.emplace_back(to_string(f.kind), f.container, f.pid, f.tid,
                     f.affinity ? f.affinity->format() : "");
  }
  return out;
}

TEST(Audit, FindsEachKindOnTheFixtureNode) {
  const auto r = run_audit(audit_v2());
  EXPECT_TRUE(r.errors.empty()) << r.errors.front();
  EXPECT_EQ(r.isolated.format(), "2-3");
  // 120 is an exec whose two threads left final "2"; 110 (on final) and 130
  // (120's child, put back on 2) are exec'd and clean; 100, 101 and 140 are
  // the workload's own (descended from init) and stay on the CPUs it owns.
  const std::vector<Row> want = {
      {"escaped_exec", "guaranteed", 120, 120, "2-3"},
      {"escaped_exec", "guaranteed", 120, 122, "3"},
      // besteffort spans every online CPU: it owns no isolated one.
      {"isolated_cpu_intruder", "besteffort", 200, 200, "0-3"},
      // a containerd inside burstable (0-1) allowed on 2-3.
      {"isolated_cpu_intruder", "burstable", 320, 320, "0-3"},
      // weight 1, opted in with final 0, which burstable (0-1) also runs on.
      {"min_weight_pinned_exec", "besteffort", 200, 0, "0"},
      {"irq_on_isolated", "", 0, 0, "0-3"},  // irq 24; 0 and 25 stay on 0-1
      {"irqbalance_unbanned_isolated", "", 0, 0, "2"},
      // the callers that may run on guaranteed's 2-3: a shim on 3, crio
      // (thread 71 on 0-3), containerd on 0-2.  conmon 60, the shim 50 and
      // kubelet 80 stay on 0-1; 95 is no caller; 320 is burstable's.
      {"caller_on_exclusive_cpu", "", 52, 0, "3"},
      {"caller_on_exclusive_cpu", "", 70, 0, "0-3"},
      {"caller_on_exclusive_cpu", "", 90, 0, "0-2"},
      // burstable (0-1, not opted in) runs a SCHED_FIFO busy-poll thread on
      // CPU 1.  guaranteed's poller holds 3 and its final is 2; besteffort's
      // final 0 is free: neither is flagged.
      {"exec_may_hang", "burstable", 330, 330, "1"},
  };
  EXPECT_EQ(rows(r), want);
  ASSERT_EQ(r.containers.size(), 3u);
  EXPECT_EQ(r.containers[0].id, "guaranteed");
  EXPECT_EQ(r.containers[0].processes, 5u);
  EXPECT_EQ(r.containers[0].exec_processes, 3u);
  EXPECT_EQ(r.containers[0].final, CpuSet::of({2}));
  EXPECT_EQ(r.containers[1].cpu_weight, 1ul);
  EXPECT_FALSE(r.containers[2].opted_in);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_NE(r.skipped[0].find("/run/crun/stopped"), std::string::npos);
}

std::vector<execaff::cli::Finding> caller_findings(const execaff::cli::AuditResult& r) {
  std::vector<execaff::cli::Finding> out;
  for (const auto& f : r.findings) {
    if (f.kind == FindingKind::caller_on_exclusive_cpu) out.push_back(f);
  }
  return out;
}

TEST(AuditCallers, EachNamesTheContainerItsCpusAndTheFixForThatCaller) {
  const auto r = run_audit(audit_v2());
  ASSERT_EQ(r.containers.size(), 3u);
  EXPECT_EQ(r.containers[0].exclusive, CpuSet::parse("2-3"));  // guaranteed
  EXPECT_TRUE(r.containers[1].exclusive.empty());              // besteffort: every online CPU
  EXPECT_TRUE(r.containers[2].exclusive.empty());              // burstable: its QoS cgroup, and 0-1
  const auto found = caller_findings(r);
  ASSERT_EQ(found.size(), 3u);
  const struct {
    std::string comm, covered, fix;
  } want[] = {
      {"containerd-shim", "3 (container \"guaranteed\" in /run/runc)",
       "fix its parent: a shim inherits containerd's CPUs: CPUAffinity=0-1 in [Service] of a "
       "containerd.service drop-in"},
      {"crio", "2-3 (container \"guaranteed\" in /run/runc)",
       "infra_ctr_cpuset = \"0-1\" in [crio.runtime]"},
      {"containerd", "2 (container \"guaranteed\" in /run/runc)",
       "CPUAffinity=0-1 in [Service] of a containerd.service drop-in"},
  };
  for (std::size_t i = 0; i < found.size(); ++i) {
    EXPECT_EQ(found[i].comm, want[i].comm);
    EXPECT_EQ(found[i].container, "");
    EXPECT_EQ(found[i].expected, CpuSet::parse("0-1"));  // the node config's housekeeping
    EXPECT_NE(found[i].detail.find("may run on CPU " + want[i].covered), std::string::npos)
        << found[i].detail;
    EXPECT_EQ(found[i].fix.rfind(want[i].fix, 0), 0u) << found[i].fix;
  }
  EXPECT_NE(found[1].fix.find("CPUAffinity=0-1 in [Service] of a crio.service drop-in"),
            std::string::npos)
      << found[1].fix;
}

TEST(AuditCallers, WithoutHousekeepingTheFixNamesTheCpusNoContainerHolds) {
  AuditOptions options = audit_v2();
  options.node_config.housekeeping_cpus.reset();
  const auto found = caller_findings(run_audit(options));
  ASSERT_EQ(found.size(), 3u);  // burstable's 0-1 is still the shared pool: its QoS cgroup
  for (const auto& f : found) {
    EXPECT_EQ(f.expected, CpuSet::parse("0-1")) << f.pid;  // online 0-3 less guaranteed's 2-3
    EXPECT_NE(f.fix.find("0-1"), std::string::npos) << f.fix;
  }
}

TEST(AuditCallers, HousekeepingCpusAreNeverHeldExclusively) {
  AuditOptions options = audit_v2();
  // guaranteed's cpuset 2-3 now holds a housekeeping CPU: it is no pinned pod.
  options.node_config.housekeeping_cpus = CpuSet::parse("1-2");
  const auto r = run_audit(options);
  EXPECT_TRUE(caller_findings(r).empty());
  EXPECT_TRUE(r.containers[0].exclusive.empty());
}

execaff::cli::AuditedContainer placed(const std::string& id, const char* cpus,
                                      const std::string& cgroup = "/sys/fs/cgroup/x") {
  execaff::cli::AuditedContainer c;
  c.id = id;
  c.cpuset = CpuSet::parse(cpus);
  c.cgroup_dir = cgroup + "/" + id;
  return c;
}

TEST(AuditCallers, ExclusiveCpus) {
  using execaff::cli::exclusive_cpus;
  const CpuSet online = CpuSet::parse("0-2047");
  const auto formatted = [](const std::vector<CpuSet>& sets) {
    std::vector<std::string> out;
    for (const auto& s : sets) out.push_back(s.format());
    return out;
  };
  // Two containers of one cpuset share it; a sandbox on every CPU counts as none.
  EXPECT_EQ(formatted(exclusive_cpus({placed("a", "4-5"), placed("b", "4-5"),
                                      placed("pause", "0-2047"), placed("g", "6,1030-1031")},
                                     online, std::nullopt)),
            (std::vector<std::string>{"", "", "", "6,1030-1031"}));
  // What another container also holds is taken out; the rest stays exclusive.
  EXPECT_EQ(formatted(exclusive_cpus({placed("g", "2-5"), placed("shared", "0-3")}, online,
                                     std::nullopt)),
            (std::vector<std::string>{"4-5", "0-1"}));
  // ... unless the other is kubelet's shared pool, known by its QoS cgroup
  // or by the housekeeping CPUs it holds.
  EXPECT_EQ(formatted(exclusive_cpus(
                {placed("g", "2-5"), placed("b", "0-3", "/sys/fs/cgroup/kubepods/burstable/pod1")},
                online, std::nullopt)),
            (std::vector<std::string>{"4-5", ""}));
  EXPECT_EQ(formatted(exclusive_cpus(
                {placed("g", "2-5"),
                 placed("e", "0-1", "/sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice")},
                online, std::nullopt)),
            (std::vector<std::string>{"2-5", ""}));
  EXPECT_EQ(formatted(exclusive_cpus({placed("g", "2-5"), placed("shared", "0-1")}, online,
                                     CpuSet::parse("0"))),
            (std::vector<std::string>{"2-5", ""}));
}

TEST(AuditCallers, CallerNamedByComm) {
  using execaff::cli::Caller;
  using execaff::cli::caller_named;
  EXPECT_EQ(caller_named("crio"), Caller::crio);
  EXPECT_EQ(caller_named("conmon"), Caller::conmon);
  EXPECT_EQ(caller_named("containerd"), Caller::containerd);
  EXPECT_EQ(caller_named("containerd-shim"), Caller::containerd_shim);  // -runc-v2, cut at 15
  EXPECT_EQ(caller_named("containerd-shim-runc-v1"), Caller::containerd_shim);
  EXPECT_EQ(caller_named("kubelet"), Caller::kubelet);
  for (const char* other : {"", "crio-x", "runc", "containerd-", "kubelet2", "dockerd", "Crio"}) {
    EXPECT_FALSE(caller_named(other)) << other;
  }
}

TEST(AuditCallers, FixWithoutKnownCpusSaysWhichCpusToUse) {
  const std::string fix = execaff::cli::caller_fix(execaff::cli::Caller::kubelet, CpuSet());
  EXPECT_NE(fix.find("CPUAffinity=<the node's housekeeping CPUs"), std::string::npos) << fix;
}

TEST(Audit, HandlerDefaultOptsInPodsWithoutTheAnnotation) {
  AuditOptions options = audit_v2();
  options.state_roots = {"/run/crun"};
  options.node_config.handler_default = "first";
  const auto r = run_audit(options);
  // burstable's exec'd sh (0-1) is now off its final "0"; its nginx is init.
  bool found = false;
  for (const auto& f : r.findings) {
    if (f.kind == FindingKind::escaped_exec) {
      EXPECT_EQ(f.container, "burstable");
      EXPECT_EQ(f.pid, 310);
      found = true;
    }
    // Its execs are now pinned to 0, off the poller's CPU 1.
    EXPECT_NE(f.kind, FindingKind::exec_may_hang) << f.detail;
  }
  EXPECT_TRUE(found);
}

TEST(TaskStat, FieldsCountedFromTheLastParenthesis) {
  using execaff::cli::SchedPolicy;
  const std::string line =
      "330 (a (b) c) R 300 330 330 0 -1 4194368 100 0 0 0 445500 49500 0 0 -61 0 1 0 500000 "
      "8581120 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 60 1 0 0 0\n";
  const auto stat = execaff::cli::parse_task_stat(line, "stat");
  EXPECT_EQ(stat.policy, SchedPolicy::fifo);
  EXPECT_EQ(stat.rt_priority, 60u);
  EXPECT_EQ(stat.processor, 1u);
  EXPECT_EQ(stat.cpu_ticks, 495000u);
  EXPECT_EQ(stat.start_ticks, 500000u);
  EXPECT_FALSE(stat.kernel_thread);
  const auto kthread = execaff::cli::parse_task_stat(
      "15 (migration/1) S 2 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 -100 0 1 0 100 0 0 "
      "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 99 1 0 0 0",
      "stat");
  EXPECT_TRUE(kthread.kernel_thread);
  for (const char* bad : {"330 poller R 1", "330 (p) R 300 330", "330 (p) R x 330 330 0 -1 a"}) {
    try {
      (void)execaff::cli::parse_task_stat(bad, "/proc/330/stat");
      ADD_FAILURE() << bad;
    } catch (const execaff::Error& e) {
      EXPECT_NE(std::string(e.what()).find("/proc/330/stat"), std::string::npos) << e.what();
    }
  }
  try {
    (void)execaff::cli::parse_task_stat(
        "1 (p) R 0 0 0 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 4",
        "stat");
    ADD_FAILURE() << "policy 4";
  } catch (const execaff::Error& e) {
    EXPECT_NE(std::string(e.what()).find("policy"), std::string::npos) << e.what();
  }
}

TEST(AuditRealtime, EachContainerListsTheRealtimeThreadsOnItsCpus) {
  const auto r = run_audit(audit_v2());
  EXPECT_TRUE(r.rt_throttling.known);
  EXPECT_TRUE(r.rt_throttling.off());
  std::map<std::string, std::vector<std::tuple<pid_t, std::string, unsigned, unsigned, int, bool,
                                               bool>>>
      got;
  for (const auto& c : r.containers) {
    auto& list = got[c.id];
    for (const auto& t : c.realtime_threads) {
      list.emplace_back(t.tid, to_string(t.policy), t.priority, t.cpu,
                        static_cast<int>(t.cpu_share * 100 + 0.5), t.busy, t.in_container);
    }
  }
  // migration/1 (pid 15) is a kernel thread: never listed.  rt-logger 96
  // (SCHED_RR, 2 %) is on 0-1 and no container's.
  using T = std::tuple<pid_t, std::string, unsigned, unsigned, int, bool, bool>;
  EXPECT_EQ(got["guaranteed"], (std::vector<T>{{101, "SCHED_FIFO", 50, 3, 98, true, true}}));
  EXPECT_EQ(got["burstable"], (std::vector<T>{{96, "SCHED_RR", 20, 0, 2, false, false},
                                              {330, "SCHED_FIFO", 60, 1, 99, true, true}}));
  EXPECT_EQ(got["besteffort"], (std::vector<T>{{96, "SCHED_RR", 20, 0, 2, false, false},
                                               {101, "SCHED_FIFO", 50, 3, 98, true, false},
                                               {330, "SCHED_FIFO", 60, 1, 99, true, false}}));
}

// The fixture tree copied, so that one file can change.
class AuditRealtimeCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/execaff-audit-rt-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    std::filesystem::copy(fixture("audit-v2"), root_, std::filesystem::copy_options::recursive);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const std::string& file, const std::string& text) const {
    std::ofstream(root_ + file) << text;
  }
  [[nodiscard]] AuditOptions options() const {
    AuditOptions o = audit_v2();
    o.root_fs = root_;
    return o;
  }
  std::string root_;
};

std::vector<execaff::cli::Finding> may_hang(const execaff::cli::AuditResult& r) {
  std::vector<execaff::cli::Finding> out;
  for (const auto& f : r.findings) {
    if (f.kind == FindingKind::exec_may_hang) out.push_back(f);
  }
  return out;
}

TEST_F(AuditRealtimeCopy, APinnedExecWhoseFinalABusyThreadHoldsIsFlagged) {
  // guaranteed's poller moved from CPU 3 to its final, 2.
  write("/proc/100/task/101/status", "Name:\tdpdk-app\nPid:\t101\nCpus_allowed_list:\t2\n");
  write("/proc/100/task/101/stat",
        "101 (dpdk-app) R 50 101 101 0 -1 4194368 100 0 0 0 873180 97020 0 0 -51 0 1 0 10000 "
        "8581120 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 2 50 1 0 0 0\n");
  const auto found = may_hang(run_audit(options()));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[1].container, "guaranteed");
  EXPECT_EQ(found[1].tid, 101);
  EXPECT_EQ(found[1].affinity, CpuSet::of({2}));
  EXPECT_NE(found[1].detail.find("final 2"), std::string::npos) << found[1].detail;
  EXPECT_NE(found[1].detail.find("freeze the node"), std::string::npos) << found[1].detail;
  EXPECT_NE(found[1].fix.find("without 2"), std::string::npos) << found[1].fix;
}

TEST_F(AuditRealtimeCopy, WithThrottlingOnTheExecMayStall) {
  write("/proc/sys/kernel/sched_rt_runtime_us", "950000\n");
  const auto r = run_audit(options());
  EXPECT_FALSE(r.rt_throttling.off());
  const auto found = may_hang(r);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_NE(found[0].detail.find("leaves other tasks 5% of those CPUs"), std::string::npos)
      << found[0].detail;
  EXPECT_NE(found[0].fix.find("exec-cpu-affinity.execaff.io: first"), std::string::npos);
}

TEST_F(AuditRealtimeCopy, AnIdleRealtimeThreadIsNoFinding) {
  // The poller has used 10 % of a CPU: it sleeps, as a real-time thread
  // waiting for work does.
  write("/proc/330/task/330/stat",
        "330 (poller) S 300 330 330 0 -1 4194368 100 0 0 0 45000 5000 0 0 -61 0 1 0 500000 "
        "8581120 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 60 1 0 0 0\n");
  EXPECT_TRUE(may_hang(run_audit(options())).empty());
}

TEST(Audit, ABrokenStateFileIsAnErrorNamingIt) {
  AuditOptions options = audit_v2();
  options.state_roots = {"/run/broken", "/run/absent"};
  const auto r = run_audit(options);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("run/broken/bad/state.json"), std::string::npos) << r.errors[0];
  EXPECT_TRUE(r.containers.empty());
}

TEST(Audit, NoIsolatedCpusNoIrqFindings) {
  AuditOptions options;
  options.root_fs = fixture("hybrid-v1");
  options.state_roots = {"/run/runc"};
  const auto r = run_audit(options);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_TRUE(r.errors.empty());
}

TEST(IrqbalanceMask, Groups) {
  EXPECT_EQ(execaff::cli::parse_irqbalance_mask("0000000c").format(), "2-3");
  EXPECT_EQ(execaff::cli::parse_irqbalance_mask("C").format(), "2-3");
  EXPECT_EQ(execaff::cli::parse_irqbalance_mask("00000001,00000000").format(), "32");
  EXPECT_EQ(execaff::cli::parse_irqbalance_mask("80000000,00000000,00000001").format(), "0,95");
  EXPECT_TRUE(execaff::cli::parse_irqbalance_mask("0").empty());
  for (const char* bad : {"", "0x4", "000000004", "4,,4", "g"}) {
    EXPECT_THROW((void)execaff::cli::parse_irqbalance_mask(bad), execaff::Error) << bad;
  }
}

TEST(IrqbalanceFile, AssignmentsAsTheShellReadsThem) {
  using execaff::cli::irqbalance_banned_cpus;
  EXPECT_FALSE(irqbalance_banned_cpus("#IRQBALANCE_BANNED_CPUS=f\nIRQBALANCE_ONESHOT=1\n", "f"));
  EXPECT_EQ(irqbalance_banned_cpus("IRQBALANCE_BANNED_CPUS=\"0000000c\"\n", "f")->format(), "2-3");
  EXPECT_EQ(irqbalance_banned_cpus("export IRQBALANCE_BANNED_CPUS='3'\n", "f")->format(), "0-1");
  EXPECT_EQ(irqbalance_banned_cpus("IRQBALANCE_BANNED_CPUS=1\nIRQBALANCE_BANNED_CPULIST=4-5\n", "f")
                ->format(),
            "4-5");
  EXPECT_TRUE(irqbalance_banned_cpus("IRQBALANCE_BANNED_CPUS=\n", "f")->empty());
  try {
    (void)irqbalance_banned_cpus("IRQBALANCE_BANNED_CPUS=zz\n", "/etc/default/irqbalance");
    FAIL();
  } catch (const execaff::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/etc/default/irqbalance"), std::string::npos);
  }
}

execaff::NodeConfig read_config(const std::string& path) {
  execaff::cli::NodeOptions options;
  options.config_path = path;
  return execaff::cli::read_node_config(options);
}

TEST(NodeConfig, AbsentFileIsNoConfig) {
  const auto config = read_config("/nonexistent/execaff/shim.json");
  EXPECT_FALSE(config.handler_default);
  EXPECT_FALSE(config.housekeeping_cpus);
  EXPECT_EQ(config.path, "");
}

TEST(NodeConfig, ReadThroughTheShimsRules) {
  if (::geteuid() != 0) GTEST_SKIP() << "the shim's reader wants a root-owned file";
  char dir[] = "/tmp/execaff-audit-config-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/shim.json";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"housekeeping_cpus\": \"0-1\", \"handler_default\": \"first\"}", f);
  std::fclose(f);
  const auto config = read_config(path);
  EXPECT_EQ(config.housekeeping_cpus, CpuSet::parse("0-1"));
  EXPECT_EQ(config.handler_default, "first");
  EXPECT_EQ(std::getenv("EXECAFF_CONFIG"), nullptr);  // restored
  ::chmod(path.c_str(), 0666);
  EXPECT_THROW((void)read_config(path), execaff::Error);
  ::unlink(path.c_str());
  ::rmdir(dir);
}

}  // namespace
