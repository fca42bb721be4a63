// SPDX-License-Identifier: LGPL-2.1-or-later
// The report: sums over runs, medians, the summary row's round trip
// through TSV (the VM hands its rows back that way), and the outputs'
// shapes.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "report.hpp"

namespace schedtrace {
namespace {

Residency res(std::int64_t ts, unsigned cpu, int pid, const std::string& comm, Phase phase,
              bool violation, std::int64_t duration) {
  Residency r;
  r.ts = ts;
  r.cpu = cpu;
  r.pid = pid;
  r.comm = comm;
  r.phase = phase;
  r.violation = violation;
  r.duration = duration;
  r.on_isolated = cpu >= 2;  // the VM's layout: 2-3 isolated
  return r;
}

RunAnalysis run_with(std::int64_t window_ns, bool violating) {
  RunAnalysis a;
  a.start_ts = 1000;
  a.end_ts = 1000 + 50'000'000;
  a.tasks.resize(4);
  a.program_pid = 7;
  a.program_exec_ts = 1000 + 40'000'000;
  a.window_start_ts = *a.program_exec_ts - window_ns;
  a.join_seen = true;
  a.program_join_how = JoinHow::attach;
  a.residencies.push_back(res(1000, 0, 5, "execaff-shim", Phase::caller, false, 10));
  a.residencies.push_back(res(2000, 2, 5, "execaff-shim", Phase::caller, false, 10));
  a.residencies.push_back(res(3000, 0, 6, "runc", Phase::before_join, false, 10));
  a.residencies.push_back(res(4000, 2, 7, "runc:[2:INIT]", Phase::window, violating, 2'000'000));
  a.residencies.push_back(res(*a.program_exec_ts, 1, 7, "true", Phase::after_exec, false, 5));
  return a;
}

CellReport cell() {
  CellReport c;
  c.settings.label = "shim-runc";
  c.settings.kernel = "6.1.0-57-cloud-amd64";
  c.settings.cgroup = "v1";
  c.settings.caller = "0";
  c.settings.cpuset = "1-3";
  c.settings.initial = "0-1";
  c.settings.final_cpus = "1";
  c.settings.isolated = "2-3";
  c.settings.expect = "clean";
  for (int i = 0; i < 3; ++i) {
    RunRecord r;
    r.run = i;
    r.wall_ns = (i + 1) * 1'000'000;
    c.add(run_with((i + 1) * 10'000'000, i == 1), r);
  }
  return c;
}

TEST(CellReportTest, Sums) {
  const CellReport c = cell();
  EXPECT_EQ(c.runs.size(), 3u);
  EXPECT_EQ(c.residencies[static_cast<int>(Phase::caller)], 6u);
  EXPECT_EQ(c.residencies[static_cast<int>(Phase::window)], 3u);
  EXPECT_EQ(c.caller_on_isolated, 3u);
  EXPECT_EQ(c.violations[static_cast<int>(Phase::window)], 1u);
  EXPECT_EQ(c.total_violations(), 1u);
  EXPECT_EQ(c.violation_ns[static_cast<int>(Phase::window)], 2'000'000);
  EXPECT_EQ(c.runs_with_violation, 1u);
  EXPECT_EQ(c.window_median_ns(), 20'000'000);
  EXPECT_EQ(c.window_max_ns(), 30'000'000);
  EXPECT_EQ(c.exec_median_ns(), 2'000'000);
  EXPECT_EQ(c.tasks_total, 12u);
  ASSERT_EQ(c.examples.size(), 1u);
  EXPECT_EQ(c.examples[0].run, 1);
  EXPECT_EQ(c.examples[0].comm, "runc:[2:INIT]");
  EXPECT_EQ(c.invalid_runs, 0u);
  EXPECT_FALSE(c.passed(0, false));
  EXPECT_TRUE(c.passed(1, false));
  EXPECT_TRUE(c.passed(0, true));
}

TEST(CellReportTest, InvalidRuns) {
  CellReport c;
  RunAnalysis a = run_with(1, false);
  a.join_seen = false;
  c.add(a, RunRecord{});
  RunRecord lost;
  lost.lost_events = 3;
  c.add(run_with(1, false), lost);
  RunRecord failed;
  failed.exit_code = 255;
  c.add(run_with(1, false), failed);
  EXPECT_EQ(c.invalid_runs, 2u);
  EXPECT_EQ(c.failed_execs, 1u);
}

TEST(SummaryRowTest, TsvRoundTrip) {
  const SummaryRow row = summary_of(cell(), "FAIL");
  EXPECT_EQ(row.details, "b runc:[2:INIT]@cpu2 x1 2.00ms");
  EXPECT_EQ(row.window_median_ms, "20.00");
  const std::string line = to_tsv(row);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const SummaryRow back = summary_from_tsv(line);
  EXPECT_EQ(back.label, "shim-runc");
  EXPECT_EQ(back.kernel, row.kernel);
  EXPECT_EQ(back.residencies, row.residencies);
  EXPECT_EQ(back.violations, row.violations);
  EXPECT_EQ(back.caller_on_isolated, 3u);
  EXPECT_EQ(back.window_max_ms, "30.00");
  EXPECT_EQ(back.verdict, "FAIL");
  EXPECT_EQ(back.details, row.details);
  EXPECT_THROW(summary_from_tsv("row\tonly\ttwo"), std::invalid_argument);
  EXPECT_EQ(tsv_header().front(), '#');
}

TEST(SummaryRowTest, Tables) {
  const SummaryRow row = summary_of(cell(), "FAIL");
  const std::string text = render_table({row}, false);
  EXPECT_NE(text.find("shim-runc"), std::string::npos);
  EXPECT_NE(text.find("0/1/0"), std::string::npos);  // violations a/b/c
  EXPECT_NE(text.find("shim-runc (6.1.0-57-cloud-amd64 v1): b runc:[2:INIT]@cpu2"),
            std::string::npos);
  const std::string md = render_table({row}, true);
  EXPECT_EQ(md.rfind("| cell |", 0), 0u);
  EXPECT_NE(md.find("|---|"), std::string::npos);
}

TEST(OutputsTest, JsonAndCsv) {
  const CellReport c = cell();
  const std::string json = to_json(c, "FAIL");
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.substr(json.size() - 2), "}\n");
  EXPECT_NE(json.find("\"violations\": {\"before_join\": 0, \"window\": 1, \"after_exec\": 0}"),
            std::string::npos);
  EXPECT_NE(json.find("\"comm\": \"runc:[2:INIT]\""), std::string::npos);
  std::ostringstream csv;
  write_csv_rows(csv, run_with(10'000'000, true), "shim-runc", 4);
  std::istringstream lines(csv.str());
  std::string first;
  std::getline(lines, first);
  EXPECT_EQ(first, "0.000,-40.000,0,5,execaff-shim,p,shim-runc,4,0.000,0,switch");
  EXPECT_EQ(csv_header().substr(0, 17), "time_ms,t_exec_ms");
}

}  // namespace
}  // namespace schedtrace
