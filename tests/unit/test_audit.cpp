// SPDX-License-Identifier: LGPL-2.1-or-later
// execaff audit's scan on fixture trees (tests/fixtures/nodes/audit-v2, its
// README row says what each task is) and its parsers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "audit_scan.hpp"
#include "error.hpp"
#include "command_options.hpp"

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
      // weight 1, opted in with final 0, which burstable (0-1) also runs on.
      {"min_weight_pinned_exec", "besteffort", 200, 0, "0"},
      {"irq_on_isolated", "", 0, 0, "0-3"},  // irq 24; 0 and 25 stay on 0-1
      {"irqbalance_unbanned_isolated", "", 0, 0, "2"},
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
  }
  EXPECT_TRUE(found);
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
