// SPDX-License-Identifier: LGPL-2.1-or-later
// execaff-schedtrace: proves where an exec'd process and the runtime's
// helpers ran, from the kernel's own scheduler trace.  See
// tests/proof/README.md for the method; `execaff-schedtrace --help` for use.
#include <dirent.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "command_runner.hpp"
#include "cpu_list.hpp"
#include "process_tree.hpp"
#include "report.hpp"
#include "trace_event.hpp"
#include "trace_session.hpp"

namespace {

using namespace schedtrace;

constexpr int kExitPass = 0;
constexpr int kExitFail = 1;  // the expectation does not hold
constexpr int kExitUsage = 2;
constexpr int kExitInvalid = 3;  // the proof is incomplete: lost events, failed execs, ...
constexpr int kExitSkip = 77;    // `check`: tracing is impossible here
constexpr std::size_t kVerboseViolations = 10;

const char* const kUsage = R"(usage:
  execaff-schedtrace run [OPTIONS] -- COMMAND [ARG...]
  execaff-schedtrace analyze [OPTIONS] [--root-pid N] TRACE-FILE...
  execaff-schedtrace table [--markdown] [--title TEXT] SUMMARY-FILE...
  execaff-schedtrace check [--tracefs DIR]

run: runs COMMAND --execs times under a private tracefs instance, follows
every task it starts and classifies each time one of them is switched in:
  (a) before the task joined the container's cgroup  -> must be in --initial,
      never on an --isolated CPU
  (b) joined, before the user's program was exec'd   -> must be in --cpuset,
      never on an --isolated CPU
  (c) the user's program and its children            -> must be in --final

classification options (run, analyze):
  --label NAME               scenario name in every output (default "cell")
  --container-cgroup PATH    the container's cgroup, as in /proc/PID/cgroup
                             (required; "/id" or the cgroupsPath)
  --cgroup-hierarchy auto|any|N
                             hierarchy whose joins count (dst_root); auto:
                             cpuset's from /proc/cgroups (0 = cgroup v2)
  --cpuset LIST              the container's CPUs (required)
  --initial LIST|any         allowed before the join (default: any)
  --final LIST               allowed after the exec (default: --cpuset)
  --isolated LIST            never allowed before the exec (default: sysfs
                             isolated + nohz_full)
  --program NAME             basename of the user's program (default: the
                             last word of COMMAND)
  --runtime NAME             basename of the runtime binary; before a task
                             of COMMAND execs it, it is the caller's code
                             (the shim's own), counted apart, never a
                             violation (default: COMMAND's own exec)
  --daemon-pid N             the exec is done by this running daemon (CRI-O),
                             COMMAND is its client: every thread of N is
                             followed and is the caller, as COMMAND is; a
                             process N forks during a run is the exec's,
                             in (a) from its fork (run: the threads of
                             /proc/N/task at each run's start)
  --allow-violations N       pass with up to N violations (default 0)
  --expect-violations        pass only if there is at least one violation
  --expect clean|violations|any
                             the same as a word; "any" asserts nothing
  --json FILE                full report
  --csv FILE                 residency timeline (one row per stretch on a CPU)
  --csv-runs N               only the first N runs in the CSV (default all)
  --summary FILE             append the summary row (for `table`)
  --keep-traces DIR          keep each run's raw trace text (for analyze)
  --progress                 one line per run on stderr
  --verbose                  that, and each run's violations and warnings
run options:
  --execs N                  how many times to run COMMAND (default 1)
  --caller-cpus LIST|all     COMMAND's affinity (default: inherited)
  --busy LIST                spin one busy loop on each of these CPUs
  --buffer-kb N              ring buffer per CPU (default 4096)
  --timeout S                per exec (default 120)
  --settle-ms N              keep tracing N ms after COMMAND exits (default 0)
  --tracefs DIR              default /sys/kernel/tracing (mounted if needed)

exit: 0 expectation met, 1 not met, 2 usage, 3 invalid (failed execs, lost
events, program exec or cgroup join not seen), 77 (check) cannot trace.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string mode;
  std::string label = "cell";
  std::string container_cgroup;
  std::string hierarchy = "auto";
  std::optional<CpuList> cpuset, initial, final_cpus, isolated, caller, busy;
  std::string program;
  std::string runtime;
  std::optional<int> daemon_pid;
  std::size_t allow_violations = 0;
  bool expect_violations = false;
  bool expect_any = false;
  std::string json, csv, summary, keep_traces;
  std::optional<std::size_t> csv_runs;
  bool verbose = false;
  bool progress = false;
  unsigned execs = 1;
  unsigned buffer_kb = 4096;
  unsigned timeout_s = 120;
  unsigned settle_ms = 0;
  std::string tracefs = "/sys/kernel/tracing";
  std::optional<int> root_pid;
  bool markdown = false;
  std::string title;
  std::vector<std::string> rest;  // COMMAND, or files
};

unsigned to_unsigned(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  errno = 0;
  const unsigned long v = std::strtoul(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || v > 100000000UL) {
    throw UsageError(flag + " wants a number, not \"" + value + "\"");
  }
  return static_cast<unsigned>(v);
}

CpuList to_list(const std::string& flag, const std::string& value) {
  try {
    return CpuList::parse(value);
  } catch (const std::invalid_argument& e) {
    throw UsageError(flag + ": " + e.what());
  }
}

Options parse_options(int argc, char** argv) {
  if (argc < 2) throw UsageError("no mode given");
  Options o;
  o.mode = argv[1];
  if (o.mode == "-h" || o.mode == "--help") {
    std::cout << kUsage;
    std::exit(kExitPass);
  }
  if (o.mode != "run" && o.mode != "analyze" && o.mode != "table" && o.mode != "check") {
    throw UsageError("unknown mode \"" + o.mode + "\"");
  }
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--") {
      for (++i; i < argc; ++i) o.rest.emplace_back(argv[i]);
      break;
    }
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(kExitPass);
    } else if (a == "--label") {
      o.label = value();
    } else if (a == "--container-cgroup") {
      o.container_cgroup = value();
    } else if (a == "--cgroup-hierarchy") {
      o.hierarchy = value();
    } else if (a == "--cpuset") {
      o.cpuset = to_list(a, value());
    } else if (a == "--initial") {
      o.initial = to_list(a, value());
    } else if (a == "--final") {
      o.final_cpus = to_list(a, value());
    } else if (a == "--isolated") {
      o.isolated = to_list(a, value());
    } else if (a == "--caller-cpus") {
      const std::string v = value();
      o.caller = v == "all" ? CpuList::any() : to_list(a, v);
    } else if (a == "--busy") {
      o.busy = to_list(a, value());
    } else if (a == "--program") {
      o.program = value();
    } else if (a == "--runtime") {
      o.runtime = value();
    } else if (a == "--daemon-pid") {
      o.daemon_pid = static_cast<int>(to_unsigned(a, value()));
    } else if (a == "--allow-violations") {
      o.allow_violations = to_unsigned(a, value());
    } else if (a == "--expect-violations") {
      o.expect_violations = true;
    } else if (a == "--expect") {
      const std::string v = value();
      if (v == "violations") {
        o.expect_violations = true;
      } else if (v == "any") {
        o.expect_any = true;
      } else if (v != "clean") {
        throw UsageError("--expect wants clean, violations or any");
      }
    } else if (a == "--json") {
      o.json = value();
    } else if (a == "--csv") {
      o.csv = value();
    } else if (a == "--csv-runs") {
      o.csv_runs = to_unsigned(a, value());
    } else if (a == "--summary") {
      o.summary = value();
    } else if (a == "--keep-traces") {
      o.keep_traces = value();
    } else if (a == "--verbose" || a == "-v") {
      o.verbose = true;
    } else if (a == "--progress") {
      o.progress = true;
    } else if (a == "--execs") {
      o.execs = to_unsigned(a, value());
    } else if (a == "--buffer-kb") {
      o.buffer_kb = to_unsigned(a, value());
    } else if (a == "--timeout") {
      o.timeout_s = to_unsigned(a, value());
    } else if (a == "--settle-ms") {
      o.settle_ms = to_unsigned(a, value());
    } else if (a == "--tracefs") {
      o.tracefs = value();
    } else if (a == "--root-pid") {
      o.root_pid = static_cast<int>(to_unsigned(a, value()));
    } else if (a == "--markdown") {
      o.markdown = true;
    } else if (a == "--title") {
      o.title = value();
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option " + a);
    } else {
      o.rest.push_back(a);
    }
  }
  return o;
}

std::string kernel_release() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "?";
}

// sysfs "isolated" (isolcpus=domain) and "nohz_full" ("(null)" on 6.1 when
// the parameter is absent; missing without CONFIG_NO_HZ_FULL).
CpuList sysfs_isolated() {
  CpuList out;
  for (const char* f : {"/sys/devices/system/cpu/isolated", "/sys/devices/system/cpu/nohz_full"}) {
    try {
      out = out.united_with(CpuList::parse(read_file(f)));
    } catch (const std::exception&) {
    }
  }
  return out;
}

// The cpuset controller's hierarchy id from /proc/cgroups (0: cgroup v2).
std::optional<int> cpuset_hierarchy() {
  std::istringstream in(read_file("/proc/cgroups"));
  std::string name;
  int hierarchy = 0, count = 0, enabled = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    if (words >> name >> hierarchy >> count >> enabled && name == "cpuset" && enabled) {
      return hierarchy;
    }
  }
  return std::nullopt;
}

std::string own_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return "?";
  CpuList list;
  std::string text;
  for (unsigned cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) text += (text.empty() ? "" : ",") + std::to_string(cpu);
  }
  return CpuList::parse(text).format();
}

// The threads of a running process, from /proc/PID/task.
std::vector<int> threads_of(int pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/task";
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) {
    throw std::runtime_error("--daemon-pid " + std::to_string(pid) + ": cannot list " + path +
                             ": " + std::strerror(errno) + " (has the daemon exited?)");
  }
  std::vector<int> tids;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9')
      tids.push_back(std::atoi(entry->d_name));
  }
  ::closedir(dir);
  if (tids.empty()) throw std::runtime_error(path + " lists no thread");
  return tids;
}

// "1,2,3" <-> {1, 2, 3}: the daemon's threads in a kept trace's first line.
std::string joined(const std::vector<int>& values) {
  std::string out;
  for (const int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
  return out;
}

std::vector<int> split_ints(const std::string& text) {
  std::vector<int> out;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(static_cast<int>(to_unsigned("daemon_tids", item)));
  }
  return out;
}

std::string basename_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct Classification {
  ClassifyOptions options;
  CellSettings settings;
};

Classification classification_of(const Options& o, const std::map<std::string, std::string>& meta) {
  Classification c;
  ClassifyOptions& k = c.options;
  std::string cgroup = o.container_cgroup;
  if (cgroup.empty() && meta.count("container_cgroup")) cgroup = meta.at("container_cgroup");
  if (cgroup.empty()) throw UsageError("--container-cgroup is required");
  if (!o.cpuset) throw UsageError("--cpuset is required");
  k.container_cgroup = cgroup;
  std::string hierarchy = o.hierarchy;
  if (hierarchy == "auto" && meta.count("hierarchy")) hierarchy = meta.at("hierarchy");
  if (hierarchy == "auto") {
    const auto h = cpuset_hierarchy();
    if (!h) throw std::runtime_error("no cpuset controller in /proc/cgroups");
    k.hierarchy = *h;
  } else if (hierarchy != "any") {
    k.hierarchy = static_cast<int>(to_unsigned("--cgroup-hierarchy", hierarchy));
  }
  // CLONE_INTO_CGROUP exists only on cgroup v2 (hierarchy 0).
  k.clone_into_cgroup_joins = !k.hierarchy || *k.hierarchy == 0;
  k.program = o.program;
  if (k.program.empty() && meta.count("program")) k.program = meta.at("program");
  if (k.program.empty() && !o.rest.empty() && o.mode == "run")
    k.program = basename_of(o.rest.back());
  if (k.program.empty()) throw UsageError("--program is required");
  k.runtime = o.runtime;
  if (k.runtime.empty() && meta.count("runtime") && meta.at("runtime") != "-")
    k.runtime = meta.at("runtime");
  k.policy.cpuset = *o.cpuset;
  k.policy.initial = o.initial;
  if (k.policy.initial && k.policy.initial->is_any()) k.policy.initial.reset();
  k.policy.final_cpus = o.final_cpus ? *o.final_cpus : *o.cpuset;
  k.policy.isolated = o.isolated ? *o.isolated : sysfs_isolated();

  CellSettings& s = c.settings;
  s.label = o.label;
  s.kernel = meta.count("kernel") ? meta.at("kernel") : kernel_release();
  s.cgroup = !k.hierarchy ? "any" : *k.hierarchy == 0 ? "v2" : "v1";
  s.caller = o.caller ? (o.caller->is_any() ? "all" : o.caller->format())
                      : (meta.count("caller") ? meta.at("caller") : own_affinity());
  s.cpuset = k.policy.cpuset.format();
  s.initial = k.policy.initial ? k.policy.initial->format() : "any";
  s.final_cpus = k.policy.final_cpus.format();
  s.isolated = k.policy.isolated.empty() ? "none" : k.policy.isolated.format();
  s.busy = o.busy ? o.busy->format() : "";
  s.container_cgroup = k.container_cgroup;
  s.program = k.program;
  for (const std::string& a : o.rest) s.command += (s.command.empty() ? "" : " ") + a;
  std::optional<int> daemon = o.daemon_pid;
  if (!daemon && meta.count("daemon_pid")) {
    daemon = static_cast<int>(to_unsigned("daemon_pid", meta.at("daemon_pid")));
  }
  if (daemon) {
    std::string comm;  // named while it runs; a kept trace's pid may be another's now
    if (o.mode == "run") {
      try {
        comm = read_file("/proc/" + std::to_string(*daemon) + "/comm");
        if (!comm.empty() && comm.back() == '\n') comm.pop_back();
      } catch (const std::exception&) {
      }
    }
    s.command = "[exec by daemon " + std::to_string(*daemon) +
                (comm.empty() ? "" : " (" + comm + ")") + "] " + s.command;
  }
  s.expect = o.expect_any              ? "any"
             : o.expect_violations     ? "violations"
             : o.allow_violations == 0 ? "clean"
                                       : "<=" + std::to_string(o.allow_violations);
  return c;
}

void write_text(const std::string& path, const std::string& text, bool append = false) {
  std::ofstream out(path, append ? std::ios::app : std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

struct Outputs {
  std::ofstream csv;
  std::size_t csv_runs = 0;
};

void record_run(const Options& o, CellReport& cell, Outputs& out, const ParsedTrace& parsed,
                const RunAnalysis& analysis, RunRecord record) {
  for (const std::string& e : parsed.errors) record.warnings.push_back("parse: " + e);
  if (!parsed.errors.empty()) ++record.lost_events;  // an unread line may hide a violation
  if (out.csv.is_open() && (!o.csv_runs || out.csv_runs < *o.csv_runs)) {
    write_csv_rows(out.csv, analysis, o.label, record.run);
    ++out.csv_runs;
  }
  if (o.verbose || o.progress) {
    std::size_t sw[kPhases] = {0, 0, 0, 0}, v[kPhases] = {0, 0, 0, 0};
    for (const Residency& in : analysis.residencies) {
      ++sw[static_cast<int>(in.phase)];
      if (in.violation) ++v[static_cast<int>(in.phase)];
    }
    std::cerr << o.label << " run " << record.run + 1 << "/" << o.execs << ": exit "
              << record.exit_code << (record.timed_out ? " (timed out)" : "") << ", "
              << static_cast<double>(record.wall_ns) / 1e6 << " ms, " << analysis.tasks.size()
              << " tasks, residencies caller " << sw[3] << ", a/b/c " << sw[0] << "/" << sw[1]
              << "/" << sw[2] << ", violations " << v[0] << "/" << v[1] << "/" << v[2];
    if (const auto w = analysis.window_ns()) {
      std::cerr << ", window " << static_cast<double>(*w) / 1e6 << " ms ("
                << join_how_name(analysis.program_join_how) << ")";
    }
    std::cerr << std::endl;
  }
  if (o.verbose) {
    for (const std::string& w : analysis.warnings) std::cerr << "  warning: " << w << "\n";
    std::size_t shown = 0;
    for (const Residency& in : analysis.residencies) {
      if (!in.violation || ++shown > kVerboseViolations) continue;
      std::cerr << "  violation (" << phase_letter(in.phase) << ") pid " << in.pid << " " << in.comm
                << " on cpu " << in.cpu << " at +"
                << static_cast<double>(in.ts - analysis.start_ts) / 1e6 << " ms for "
                << static_cast<double>(in.duration) / 1e6 << " ms\n";
    }
    if (shown > kVerboseViolations) {
      std::cerr << "  ... " << shown - kVerboseViolations << " more violations\n";
    }
  }
  cell.add(analysis, std::move(record));
}

int finish(const Options& o, const CellReport& cell) {
  const bool invalid = cell.failed_execs > 0 || cell.invalid_runs > 0 || cell.runs.empty();
  const bool pass = o.expect_any || cell.passed(o.allow_violations, o.expect_violations);
  const std::string verdict = invalid ? "INVALID" : pass ? "PASS" : "FAIL";
  const SummaryRow row = summary_of(cell, verdict);
  if (!o.json.empty()) write_text(o.json, to_json(cell, verdict));
  if (!o.summary.empty()) write_text(o.summary, to_tsv(row) + "\n", true);
  std::cout << render_table({row}, false);
  for (const RunRecord& r : cell.runs) {
    for (const std::string& w : r.warnings) {
      std::cout << "  run " << r.run << ": " << w << "\n";
    }
    if (r.exit_code != 0 || r.timed_out) {
      std::cout << "  run " << r.run << ": COMMAND exited " << r.exit_code
                << (r.timed_out ? " (timed out)" : "") << "\n";
    }
  }
  std::cout.flush();
  return invalid ? kExitInvalid : pass ? kExitPass : kExitFail;
}

int cmd_run(const Options& o) {
  if (o.rest.empty()) throw UsageError("run: no COMMAND after --");
  if (o.execs == 0) throw UsageError("--execs must be at least 1");
  install_stop_handlers();
  const Classification base = classification_of(o, {});
  const std::string tracefs = TraceSession::ensure_tracefs(o.tracefs);
  TraceSession::remove_stale_instances(tracefs);
  TraceSession session(tracefs, o.buffer_kb);
  for (const std::string& e : session.missing_optional()) {
    std::cerr << "execaff-schedtrace: note: optional tracepoint " << e << " missing\n";
  }
  if (!o.keep_traces.empty()) ::mkdir(o.keep_traces.c_str(), 0755);
  CellReport cell;
  cell.settings = base.settings;
  Outputs out;
  if (!o.csv.empty()) {
    out.csv.open(o.csv, std::ios::trunc);
    if (!out.csv) throw std::runtime_error("cannot write " + o.csv);
    out.csv << csv_header() << '\n';
  }
  std::optional<BusyLoops> busy;
  if (o.busy && !o.busy->empty()) {
    busy.emplace(*o.busy);
    ::usleep(100000);  // let them reach their CPUs
  }
  for (unsigned run = 0; run < o.execs && !stop_requested(); ++run) {
    // Read in the parent, before the launch: the callback runs in the child
    // (on_exec_setup), whose copy of anything it sets the parent never sees.
    const std::vector<int> daemon_tids =
        o.daemon_pid ? threads_of(*o.daemon_pid) : std::vector<int>{};
    const CommandOutcome outcome = run_command(
        o.rest, o.caller,
        [&](pid_t pid) {
          session.prepare(pid);
          if (!daemon_tids.empty()) session.follow(daemon_tids);
          session.start();
          session.mark("execaff-schedtrace start run=" + std::to_string(run));
        },
        o.timeout_s);
    const pid_t root = outcome.pid;
    if (o.settle_ms > 0) ::usleep(o.settle_ms * 1000);
    session.mark("execaff-schedtrace end run=" + std::to_string(run));
    session.stop();
    const std::string text = session.read_trace();
    const BufferLoss loss = session.loss();
    const ParsedTrace parsed = parse_trace_text(text);
    ClassifyOptions options = base.options;
    options.root_pid = root;
    options.daemon_tids = daemon_tids;
    options.daemon_pid = o.daemon_pid.value_or(0);
    const RunAnalysis analysis = classify_run(parsed.events, options);
    if (!o.keep_traces.empty()) {
      std::ostringstream head;
      head << "# execaff-schedtrace: label=" << o.label << " run=" << run << " root_pid=" << root
           << " program=" << options.program
           << " runtime=" << (options.runtime.empty() ? "-" : options.runtime)
           << " container_cgroup=" << options.container_cgroup
           << " hierarchy=" << (options.hierarchy ? std::to_string(*options.hierarchy) : "any")
           << " kernel=" << base.settings.kernel << " caller=" << base.settings.caller;
      if (o.daemon_pid) {
        head << " daemon_pid=" << *o.daemon_pid << " daemon_tids=" << joined(daemon_tids);
      }
      head << "\n";
      write_text(o.keep_traces + "/" + o.label + "-" + std::to_string(run) + ".trace",
                 head.str() + text);
    }
    RunRecord record;
    record.run = static_cast<int>(run);
    record.exit_code = outcome.exit_code;
    record.timed_out = outcome.timed_out;
    record.wall_ns = outcome.wall_ns;
    std::uint64_t overwritten = 0;
    if (parsed.entries_written && parsed.entries_in_buffer &&
        *parsed.entries_written > *parsed.entries_in_buffer) {
      overwritten = *parsed.entries_written - *parsed.entries_in_buffer;
    }
    record.lost_events = loss.total() + parsed.lost_events + overwritten;
    if (record.lost_events > 0) {
      record.warnings.push_back(std::to_string(record.lost_events) +
                                " events lost: raise --buffer-kb");
    }
    record_run(o, cell, out, parsed, analysis, std::move(record));
  }
  if (stop_requested()) std::cerr << "execaff-schedtrace: interrupted\n";
  return finish(o, cell);
}

int cmd_analyze(const Options& o) {
  if (o.rest.empty()) throw UsageError("analyze: no trace files");
  CellReport cell;
  Outputs out;
  if (!o.csv.empty()) {
    out.csv.open(o.csv, std::ios::trunc);
    out.csv << csv_header() << '\n';
  }
  int run = 0;
  for (const std::string& file : o.rest) {
    const ParsedTrace parsed = parse_trace_text(read_file(file));
    Classification c = classification_of(o, parsed.meta);
    if (o.root_pid) {
      c.options.root_pid = *o.root_pid;
    } else if (parsed.meta.count("root_pid")) {
      c.options.root_pid = std::stoi(parsed.meta.at("root_pid"));
    } else {
      throw UsageError(file + ": no root_pid in the file; give --root-pid");
    }
    if (parsed.meta.count("daemon_tids") && parsed.meta.count("daemon_pid")) {
      c.options.daemon_tids = split_ints(parsed.meta.at("daemon_tids"));
      c.options.daemon_pid =
          static_cast<int>(to_unsigned("daemon_pid", parsed.meta.at("daemon_pid")));
    }
    if (run == 0) cell.settings = c.settings;
    const RunAnalysis analysis = classify_run(parsed.events, c.options);
    RunRecord record;
    record.run = run++;
    record.lost_events = parsed.lost_events;
    record_run(o, cell, out, parsed, analysis, std::move(record));
  }
  return finish(o, cell);
}

int cmd_table(const Options& o) {
  std::vector<SummaryRow> rows;
  for (const std::string& file : o.rest) {
    std::istringstream in(read_file(file));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("row\t", 0) == 0) rows.push_back(summary_from_tsv(line));
    }
  }
  if (!o.title.empty()) std::cout << (o.markdown ? "### " : "") << o.title << "\n\n";
  std::cout << render_table(rows, o.markdown);
  return kExitPass;
}

int cmd_check(const Options& o) {
  if (::geteuid() != 0) {
    std::cout << "not root: cannot trace\n";
    return kExitSkip;
  }
  try {
    const std::string tracefs = TraceSession::ensure_tracefs(o.tracefs);
    TraceSession::remove_stale_instances(tracefs);
    TraceSession session(tracefs, 64);
    session.prepare(::getpid());
    std::cout << "kernel " << kernel_release() << ": tracefs " << tracefs
              << ", instance, set_event_pid, event-fork and the required tracepoints: ok\n";
    for (const std::string& e : session.missing_optional())
      std::cout << "missing (optional): " << e << "\n";
    const auto h = cpuset_hierarchy();
    std::cout << "cpuset hierarchy: "
              << (h ? (*h == 0 ? std::string("0 (cgroup v2)") : std::to_string(*h) + " (cgroup v1)")
                    : std::string("none"))
              << ", isolated (sysfs): " << sysfs_isolated().format() << "\n";
    return kExitPass;
  } catch (const std::exception& e) {
    std::cout << "cannot trace: " << e.what() << "\n";
    return kExitSkip;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Options o = parse_options(argc, argv);
    if (o.mode == "run") return cmd_run(o);
    if (o.mode == "analyze") return cmd_analyze(o);
    if (o.mode == "table") return cmd_table(o);
    return cmd_check(o);
  } catch (const UsageError& e) {
    std::cerr << "execaff-schedtrace: " << e.what() << "\n" << kUsage;
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "execaff-schedtrace: " << e.what() << "\n";
    return kExitInvalid;
  }
}
