// SPDX-License-Identifier: LGPL-2.1-or-later
#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace schedtrace {
namespace {

constexpr std::size_t kExamples = 8;
constexpr std::size_t kDetailGroups = 4;

std::string ms(std::int64_t ns, int decimals = 2) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, static_cast<double>(ns) / 1e6);
  return buffer;
}

std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// CSV and TSV fields: comm may hold commas or tabs; quote per RFC 4180.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string tsv_clean(std::string s) {
  std::replace(s.begin(), s.end(), '\t', ' ');
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s.empty() ? "-" : s;
}

template <typename T>
std::optional<T> median_of(std::vector<T> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string triple(const std::array<std::size_t, kPhases>& v) {
  return std::to_string(v[0]) + "/" + std::to_string(v[1]) + "/" + std::to_string(v[2]);
}

std::string triple_ms(const std::array<double, kPhases>& v) {
  return fixed(v[0], 1) + "/" + fixed(v[1], 1) + "/" + fixed(v[2], 1);
}

}  // namespace

void CellReport::add(const RunAnalysis& run, RunRecord record) {
  record.tasks = run.tasks.size();
  record.window_ns = run.window_ns();
  record.join_how = run.program_exec_ts ? join_how_name(run.program_join_how) : "";
  record.warnings = run.warnings;
  for (const Residency& in : run.residencies) {
    const auto p = static_cast<std::size_t>(in.phase);
    ++record.residencies[p];
    ++residencies[p];
    if (in.phase == Phase::caller && in.on_isolated) ++caller_on_isolated;
    if (!in.violation) continue;
    ++record.violations[p];
    ++violations[p];
    violation_ns[p] += in.duration;
    auto& group = groups[{static_cast<int>(p), in.comm, in.cpu}];
    ++group.count;
    group.time_ns += in.duration;
    if (examples.size() < kExamples) {
      examples.push_back(
          {record.run, in.ts - run.start_ts, in.duration, in.cpu, in.pid, in.comm, in.phase});
    }
  }
  if (record.violations[0] + record.violations[1] + record.violations[2] > 0) {  // caller: never
    ++runs_with_violation;
  }
  if (record.exit_code != 0 || record.timed_out) ++failed_execs;
  if (record.lost_events > 0 || !run.program_exec_ts || !run.join_seen) ++invalid_runs;
  tasks_total += record.tasks;
  wall_ns += record.wall_ns;
  runs.push_back(std::move(record));
}

std::size_t CellReport::total_violations() const {
  return violations[0] + violations[1] + violations[2];
}

std::optional<std::int64_t> CellReport::window_median_ns() const {
  std::vector<std::int64_t> w;
  for (const RunRecord& r : runs) {
    if (r.window_ns) w.push_back(*r.window_ns);
  }
  return median_of(w);
}

std::optional<std::int64_t> CellReport::window_max_ns() const {
  std::optional<std::int64_t> best;
  for (const RunRecord& r : runs) {
    if (r.window_ns && (!best || *r.window_ns > *best)) best = r.window_ns;
  }
  return best;
}

std::int64_t CellReport::exec_median_ns() const {
  std::vector<std::int64_t> w;
  for (const RunRecord& r : runs) w.push_back(r.wall_ns);
  return median_of(w).value_or(0);
}

bool CellReport::passed(std::size_t allow_violations, bool expect_violations) const {
  if (expect_violations) return total_violations() > 0;
  return total_violations() <= allow_violations;
}

SummaryRow summary_of(const CellReport& cell, const std::string& verdict) {
  const CellSettings& s = cell.settings;
  SummaryRow row;
  row.label = s.label;
  row.kernel = s.kernel;
  row.cgroup = s.cgroup;
  row.caller = s.caller;
  row.cpuset = s.cpuset;
  row.initial = s.initial;
  row.final_cpus = s.final_cpus;
  row.isolated = s.isolated;
  row.execs = cell.runs.size();
  row.failed = cell.failed_execs;
  row.invalid = cell.invalid_runs;
  row.tasks_per_exec = cell.runs.empty() ? 0
                                         : static_cast<double>(cell.tasks_total) /
                                               static_cast<double>(cell.runs.size());
  row.residencies = cell.residencies;
  row.violations = cell.violations;
  for (int p = 0; p < kPhases; ++p) {
    row.violation_ms[static_cast<std::size_t>(p)] =
        static_cast<double>(cell.violation_ns[static_cast<std::size_t>(p)]) / 1e6;
  }
  row.runs_with_violation = cell.runs_with_violation;
  row.caller_on_isolated = cell.caller_on_isolated;
  const auto wmed = cell.window_median_ns();
  const auto wmax = cell.window_max_ns();
  row.window_median_ms = wmed ? ms(*wmed) : "-";
  row.window_max_ms = wmax ? ms(*wmax) : "-";
  row.exec_median_ms = static_cast<double>(cell.exec_median_ns()) / 1e6;
  row.expect = s.expect;
  row.verdict = verdict;
  // The biggest groups by count: "b runc:[2:INIT]@2 x14 3.2ms".
  std::vector<std::pair<std::tuple<int, std::string, unsigned>, ViolationGroup>> groups(
      cell.groups.begin(), cell.groups.end());
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  std::string details;
  for (std::size_t i = 0; i < groups.size() && i < kDetailGroups; ++i) {
    const auto& [key, g] = groups[i];
    if (!details.empty()) details += "; ";
    details += std::string(1, phase_letter(static_cast<Phase>(std::get<0>(key)))) + " " +
               std::get<1>(key) + "@cpu" + std::to_string(std::get<2>(key)) + " x" +
               std::to_string(g.count) + " " + ms(g.time_ns) + "ms";
  }
  if (groups.size() > kDetailGroups) {
    details += "; +" + std::to_string(groups.size() - kDetailGroups) + " more";
  }
  row.details = details;
  return row;
}

std::string tsv_header() {
  return "#execaff-schedtrace-summary\tlabel\tkernel\tcgroup\tcaller\tcpuset\tinitial\tfinal\t"
         "isolated\texecs\tfailed\tinvalid\ttasks_per_exec\tsw_a\tsw_b\tsw_c\tviol_a\tviol_b\t"
         "viol_c\tviol_ms_a\tviol_ms_b\tviol_ms_c\tsw_caller\tcaller_on_isolated\t"
         "runs_with_violation\twindow_median_ms\t"
         "window_max_ms\texec_median_ms\texpect\tverdict\tdetails";
}

std::string to_tsv(const SummaryRow& r) {
  std::ostringstream out;
  out << "row\t" << tsv_clean(r.label) << '\t' << tsv_clean(r.kernel) << '\t' << tsv_clean(r.cgroup)
      << '\t' << tsv_clean(r.caller) << '\t' << tsv_clean(r.cpuset) << '\t' << tsv_clean(r.initial)
      << '\t' << tsv_clean(r.final_cpus) << '\t' << tsv_clean(r.isolated) << '\t' << r.execs << '\t'
      << r.failed << '\t' << r.invalid << '\t' << fixed(r.tasks_per_exec, 1);
  for (std::size_t p = 0; p < 3; ++p) out << '\t' << r.residencies[p];
  for (std::size_t p = 0; p < 3; ++p) out << '\t' << r.violations[p];
  for (std::size_t p = 0; p < 3; ++p) out << '\t' << fixed(r.violation_ms[p], 3);
  out << '\t' << r.residencies[3] << '\t' << r.caller_on_isolated;
  out << '\t' << r.runs_with_violation << '\t' << r.window_median_ms << '\t' << r.window_max_ms
      << '\t' << fixed(r.exec_median_ms, 2) << '\t' << tsv_clean(r.expect) << '\t'
      << tsv_clean(r.verdict) << '\t' << tsv_clean(r.details);
  return out.str();
}

SummaryRow summary_from_tsv(const std::string& line) {
  std::vector<std::string> f;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', start);
    f.push_back(line.substr(start, tab - start));
    if (tab == std::string::npos) break;
    start = tab + 1;
  }
  if (f.size() != 31 || f[0] != "row") throw std::invalid_argument("not a summary row");
  auto count = [](const std::string& s) { return static_cast<std::size_t>(std::stoull(s)); };
  SummaryRow r;
  r.label = f[1];
  r.kernel = f[2];
  r.cgroup = f[3];
  r.caller = f[4];
  r.cpuset = f[5];
  r.initial = f[6];
  r.final_cpus = f[7];
  r.isolated = f[8];
  r.execs = count(f[9]);
  r.failed = count(f[10]);
  r.invalid = count(f[11]);
  r.tasks_per_exec = std::stod(f[12]);
  for (std::size_t p = 0; p < 3; ++p) {
    r.residencies[p] = count(f[13 + p]);
    r.violations[p] = count(f[16 + p]);
    r.violation_ms[p] = std::stod(f[19 + p]);
  }
  r.residencies[3] = count(f[22]);
  r.caller_on_isolated = count(f[23]);
  r.runs_with_violation = count(f[24]);
  r.window_median_ms = f[25];
  r.window_max_ms = f[26];
  r.exec_median_ms = std::stod(f[27]);
  r.expect = f[28];
  r.verdict = f[29];
  r.details = f[30] == "-" ? "" : f[30];
  return r;
}

std::string render_table(const std::vector<SummaryRow>& rows, bool markdown) {
  const std::vector<std::string> head = {"cell",
                                         "kernel",
                                         "cg",
                                         "caller",
                                         "cpuset/initial/final/isolated",
                                         "execs",
                                         "fail",
                                         "tasks/exec",
                                         "caller res. (iso.)",
                                         "residencies a/b/c",
                                         "violations a/b/c",
                                         "viol. ms a/b/c",
                                         "runs w/ viol.",
                                         "window ms med/max",
                                         "exec ms",
                                         "expect",
                                         "verdict"};
  std::vector<std::vector<std::string>> cells;
  for (const SummaryRow& r : rows) {
    cells.push_back(
        {r.label, r.kernel, r.cgroup, r.caller,
         r.cpuset + " / " + r.initial + " / " + r.final_cpus + " / " + r.isolated,
         std::to_string(r.execs),
         std::to_string(r.failed) + (r.invalid ? " (" + std::to_string(r.invalid) + " inv.)" : ""),
         fixed(r.tasks_per_exec, 1),
         std::to_string(r.residencies[3]) + " (" + std::to_string(r.caller_on_isolated) + ")",
         triple(r.residencies), triple(r.violations), triple_ms(r.violation_ms),
         std::to_string(r.runs_with_violation), r.window_median_ms + " / " + r.window_max_ms,
         fixed(r.exec_median_ms, 1), r.expect, r.verdict});
  }
  std::ostringstream out;
  if (markdown) {
    auto line = [&out](const std::vector<std::string>& v) {
      out << '|';
      for (const std::string& s : v) out << ' ' << s << " |";
      out << '\n';
    };
    line(head);
    out << '|';
    for (std::size_t i = 0; i < head.size(); ++i) out << (i >= 5 && i <= 14 ? "---:|" : "---|");
    out << '\n';
    for (const auto& c : cells) line(c);
  } else {
    std::vector<std::size_t> width(head.size());
    for (std::size_t i = 0; i < head.size(); ++i) width[i] = head[i].size();
    for (const auto& c : cells) {
      for (std::size_t i = 0; i < c.size(); ++i) width[i] = std::max(width[i], c[i].size());
    }
    auto line = [&out, &width](const std::vector<std::string>& v) {
      for (std::size_t i = 0; i < v.size(); ++i) {
        out << v[i] << std::string(width[i] - v[i].size() + (i + 1 < v.size() ? 2 : 0), ' ');
      }
      out << '\n';
    };
    line(head);
    for (const auto& c : cells) line(c);
  }
  bool any = false;
  for (const SummaryRow& r : rows) {
    if (r.details.empty()) continue;
    if (!any)
      out << (markdown ? "\nViolations (phase comm@cpu xcount time):\n\n"
                       : "\nviolations (phase comm@cpu xcount time):\n");
    any = true;
    out << (markdown ? "* **" : "  ") << r.label << (markdown ? "** (" : " (") << r.kernel << ' '
        << r.cgroup << "): " << r.details << '\n';
  }
  return out.str();
}

std::string to_json(const CellReport& cell, const std::string& verdict) {
  const CellSettings& s = cell.settings;
  std::ostringstream o;
  o << "{\n  \"label\": " << json_string(s.label) << ",\n  \"kernel\": " << json_string(s.kernel)
    << ",\n  \"cgroup\": " << json_string(s.cgroup) << ",\n  \"caller\": " << json_string(s.caller)
    << ",\n  \"cpuset\": " << json_string(s.cpuset)
    << ",\n  \"initial\": " << json_string(s.initial)
    << ",\n  \"final\": " << json_string(s.final_cpus)
    << ",\n  \"isolated\": " << json_string(s.isolated) << ",\n  \"busy\": " << json_string(s.busy)
    << ",\n  \"container_cgroup\": " << json_string(s.container_cgroup)
    << ",\n  \"program\": " << json_string(s.program)
    << ",\n  \"command\": " << json_string(s.command)
    << ",\n  \"expect\": " << json_string(s.expect) << ",\n  \"verdict\": " << json_string(verdict)
    << ",\n  \"execs\": " << cell.runs.size() << ",\n  \"failed_execs\": " << cell.failed_execs
    << ",\n  \"invalid_runs\": " << cell.invalid_runs << ",\n  \"tasks_seen\": " << cell.tasks_total
    << ",\n  \"wall_ms\": " << ms(cell.wall_ns);
  const char* names[] = {"before_join", "window", "after_exec", "caller"};
  o << ",\n  \"residencies\": {";
  for (std::size_t p = 0; p < 4; ++p)
    o << (p ? ", " : "") << '"' << names[p] << "\": " << cell.residencies[p];
  o << "},\n  \"violations\": {";
  for (std::size_t p = 0; p < 3; ++p)
    o << (p ? ", " : "") << '"' << names[p] << "\": " << cell.violations[p];
  o << "},\n  \"violation_ms\": {";
  for (std::size_t p = 0; p < 3; ++p)
    o << (p ? ", " : "") << '"' << names[p] << "\": " << ms(cell.violation_ns[p], 3);
  o << "},\n  \"caller_on_isolated\": " << cell.caller_on_isolated;
  o << ",\n  \"runs_with_violation\": " << cell.runs_with_violation;
  const auto wmed = cell.window_median_ns();
  const auto wmax = cell.window_max_ns();
  o << ",\n  \"window_ms\": {\"median\": " << (wmed ? ms(*wmed, 3) : "null")
    << ", \"max\": " << (wmax ? ms(*wmax, 3) : "null") << "}";
  o << ",\n  \"exec_median_ms\": " << ms(cell.exec_median_ns(), 3);
  o << ",\n  \"violation_groups\": [";
  bool first = true;
  for (const auto& [key, g] : cell.groups) {
    o << (first ? "\n" : ",\n") << "    {\"phase\": \""
      << phase_letter(static_cast<Phase>(std::get<0>(key)))
      << "\", \"comm\": " << json_string(std::get<1>(key)) << ", \"cpu\": " << std::get<2>(key)
      << ", \"count\": " << g.count << ", \"ms\": " << ms(g.time_ns, 3) << "}";
    first = false;
  }
  o << (first ? "]" : "\n  ]") << ",\n  \"examples\": [";
  first = true;
  for (const ViolationExample& e : cell.examples) {
    o << (first ? "\n" : ",\n") << "    {\"run\": " << e.run << ", \"t_ms\": " << ms(e.t_ns, 3)
      << ", \"pid\": " << e.pid << ", \"comm\": " << json_string(e.comm) << ", \"cpu\": " << e.cpu
      << ", \"phase\": \"" << phase_letter(e.phase) << "\", \"ms\": " << ms(e.duration_ns, 3)
      << "}";
    first = false;
  }
  o << (first ? "]" : "\n  ]") << ",\n  \"runs\": [";
  first = true;
  for (const RunRecord& r : cell.runs) {
    o << (first ? "\n" : ",\n") << "    {\"run\": " << r.run << ", \"exit\": " << r.exit_code
      << ", \"timed_out\": " << (r.timed_out ? "true" : "false")
      << ", \"wall_ms\": " << ms(r.wall_ns, 3) << ", \"tasks\": " << r.tasks
      << ", \"residencies\": [" << r.residencies[0] << ", " << r.residencies[1] << ", "
      << r.residencies[2] << ", " << r.residencies[3] << "], \"violations\": [" << r.violations[0]
      << ", " << r.violations[1] << ", " << r.violations[2]
      << "], \"window_ms\": " << (r.window_ns ? ms(*r.window_ns, 3) : "null")
      << ", \"join\": " << json_string(r.join_how) << ", \"lost_events\": " << r.lost_events
      << ", \"warnings\": [";
    for (std::size_t i = 0; i < r.warnings.size(); ++i)
      o << (i ? ", " : "") << json_string(r.warnings[i]);
    o << "]}";
    first = false;
  }
  o << (first ? "]" : "\n  ]") << "\n}\n";
  return o.str();
}

std::string csv_header() {
  return "time_ms,t_exec_ms,cpu,pid,comm,phase,scenario,run,dur_ms,violation,entry";
}

void write_csv_rows(std::ostream& out, const RunAnalysis& run, const std::string& scenario,
                    int run_index) {
  for (const Residency& in : run.residencies) {
    out << ms(in.ts - run.start_ts, 3) << ','
        << (run.program_exec_ts ? ms(in.ts - *run.program_exec_ts, 3) : std::string()) << ','
        << in.cpu << ',' << in.pid << ',' << csv_field(in.comm) << ',' << phase_letter(in.phase)
        << ',' << csv_field(scenario) << ',' << run_index << ',' << ms(in.duration, 3) << ','
        << (in.violation ? 1 : 0) << ',' << entry_name(in.entry) << '\n';
  }
}

}  // namespace schedtrace
