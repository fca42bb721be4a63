// SPDX-License-Identifier: LGPL-2.1-or-later
// What a cell (one scenario: a runtime, a caller, a kernel, N execs) found,
// and the three ways it is written out:
//   * a summary row (TSV, one line per cell) that `table` turns into the
//     human table or a Markdown one for tests/proof/results/;
//   * a JSON document with every number, per-run records and examples;
//   * a CSV timeline of residencies for plotting.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "process_tree.hpp"

namespace schedtrace {

struct CellSettings {
  std::string label;
  std::string kernel;  // uname -r
  std::string cgroup;  // "v1", "v2"
  std::string caller;  // the COMMAND's CPUs, as given or inherited
  std::string cpuset, initial, final_cpus, isolated, busy;
  std::string container_cgroup;
  std::string program;
  std::string command;
  std::string expect;  // "clean", "violations" or "<=N"
};

struct RunRecord {
  int run = 0;
  int exit_code = 0;
  bool timed_out = false;
  std::int64_t wall_ns = 0;
  std::size_t tasks = 0;
  std::array<std::size_t, kPhases> residencies{};
  std::array<std::size_t, kPhases> violations{};
  std::optional<std::int64_t> window_ns;
  std::string join_how;
  std::uint64_t lost_events = 0;
  std::vector<std::string> warnings;
};

struct ViolationExample {
  int run = 0;
  std::int64_t t_ns = 0;  // since the run's start
  std::int64_t duration_ns = 0;
  unsigned cpu = 0;
  int pid = 0;
  std::string comm;
  Phase phase = Phase::before_join;
};

struct ViolationGroup {
  std::size_t count = 0;
  std::int64_t time_ns = 0;
};

struct CellReport {
  CellSettings settings;
  std::vector<RunRecord> runs;
  std::array<std::size_t, kPhases> residencies{};
  std::array<std::size_t, kPhases> violations{};
  std::array<std::int64_t, kPhases> violation_ns{};
  std::size_t runs_with_violation = 0;
  std::size_t caller_on_isolated = 0;  // caller-phase residencies on isolated CPUs (info)
  std::size_t failed_execs = 0;        // non-zero exit or timeout
  std::size_t invalid_runs = 0;        // lost events, program or join not seen
  std::size_t tasks_total = 0;
  std::vector<ViolationExample> examples;  // the first few
  // (phase, comm, cpu) -> how often and how long
  std::map<std::tuple<int, std::string, unsigned>, ViolationGroup> groups;
  std::int64_t wall_ns = 0;

  void add(const RunAnalysis& run, RunRecord record);
  std::size_t total_violations() const;
  std::optional<std::int64_t> window_median_ns() const;
  std::optional<std::int64_t> window_max_ns() const;
  std::int64_t exec_median_ns() const;
  // Whether the expectation holds, and the verdict word.
  bool passed(std::size_t allow_violations, bool expect_violations) const;
};

// One line per cell; `table` reads them back.
struct SummaryRow {
  std::string label, kernel, cgroup, caller, cpuset, initial, final_cpus, isolated;
  std::size_t execs = 0, failed = 0, invalid = 0;
  double tasks_per_exec = 0;
  std::array<std::size_t, kPhases> residencies{};  // a, b, c, caller
  std::array<std::size_t, kPhases> violations{};
  std::array<double, kPhases> violation_ms{};
  std::size_t runs_with_violation = 0;
  std::size_t caller_on_isolated = 0;
  std::string window_median_ms, window_max_ms;  // "-" when no window was measured
  double exec_median_ms = 0;
  std::string expect, verdict;
  std::string details;  // the top violation groups
};

SummaryRow summary_of(const CellReport& cell, const std::string& verdict);
std::string to_tsv(const SummaryRow& row);
std::string tsv_header();
// Throws std::invalid_argument for a line that is not a summary row.
SummaryRow summary_from_tsv(const std::string& line);
std::string render_table(const std::vector<SummaryRow>& rows, bool markdown);

std::string to_json(const CellReport& cell, const std::string& verdict);

std::string csv_header();
// Rows for one run: time since the run's start, time relative to the
// user-program exec (empty when unseen), cpu, pid, comm, phase, scenario,
// run, duration, violation, entry (switch, exec, join).
void write_csv_rows(std::ostream& out, const RunAnalysis& run, const std::string& scenario,
                    int run_index);

}  // namespace schedtrace
