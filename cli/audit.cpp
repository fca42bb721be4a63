// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "audit_scan.hpp"
#include "command_options.hpp"
#include "error.hpp"
#include "json_writer.hpp"

namespace execaff::cli {
namespace {

constexpr int kExitClean = 0;
constexpr int kExitFindings = 1;
constexpr int kExitError = 2;

constexpr const char* kAuditUsage =
    "usage: execaff audit [--root DIR]... [--root-fs DIR] [--config FILE]\n"
    "                     [--json] [--prometheus FILE]\n"
    "\n"
    "Read-only: audit changes nothing on the node (it reads /proc, /sys, the\n"
    "runtimes' state files and the node config; --prometheus writes only FILE).\n"
    "\n"
    "For every container under the runtimes' state roots (--root, repeatable;\n"
    "default /run/runc and /run/crun) it lists the exec'd tasks of opted-in\n"
    "containers whose affinity is not the decision's final, every task allowed\n"
    "on an isolated CPU its container does not own, minimum-weight containers\n"
    "whose pinned execs share CPUs, IRQs and irqbalance settings that reach\n"
    "isolated CPUs, and the processes that start execs (crio, conmon, containerd,\n"
    "its shims, kubelet) allowed on a CPU a container holds exclusively, and\n"
    "the pods with busy SCHED_FIFO/SCHED_RR threads on CPUs their next exec may\n"
    "run on (an exec may hang, or freeze the node), each with its fix.\n"
    "--root-fs DIR reads the node under DIR (fixture trees);\n"
    "--config names the node config (default DIR/etc/execaff/shim.json).\n"
    "Exit status: 0 clean, 1 findings, 2 error.\n";

std::string list_or_dash(const std::optional<CpuSet>& set) {
  return set ? (set->empty() ? "(none)" : set->format()) : "-";
}

// A string member, null when empty.
void member_or_null(json::Writer& out, std::string_view name, const std::string& value) {
  out.member_or_null(name, value.empty() ? std::nullopt : std::optional<std::string>(value));
}

// A count member, null when 0 (a pid or tid that is not there).
void number_or_null(json::Writer& out, std::string_view name, std::int64_t value) {
  out.key(name);
  if (value != 0) {
    out.number(value);
  } else {
    out.null();
  }
}

std::string render_json(const AuditResult& r, const std::string& config_path) {
  json::Writer out;
  out.open_object();
  out.key("clean").boolean(r.findings.empty() && r.errors.empty());
  out.key("read_only").boolean(true);
  out.member("isolated", r.isolated.format());
  out.member("isolated_sources", r.isolated_sources);
  member_or_null(out, "node_config", config_path);
  out.key("rt_throttling").open_object();
  out.key("runtime_us");
  if (r.rt_throttling.known) {
    out.number(r.rt_throttling.runtime_us);
  } else {
    out.null();
  }
  out.key("period_us");
  if (r.rt_throttling.known) {
    out.number(r.rt_throttling.period_us);
  } else {
    out.null();
  }
  out.key("off").boolean(r.rt_throttling.off());
  out.close_object();
  out.key("containers").open_array();
  for (const AuditedContainer& c : r.containers) {
    out.open_object();
    out.member("id", c.id);
    out.member("root", c.state_root);
    out.member("runtime", c.runtime);
    out.key("init_pid").number(c.init_pid);
    out.member("cpuset", c.cpuset.format());
    out.member("exclusive", c.exclusive.format());
    out.key("opted_in").boolean(c.opted_in);
    out.member_or_null("final", c.final);
    out.member("source", c.source);
    out.key("processes").number(static_cast<std::int64_t>(c.processes));
    out.key("exec_processes").number(static_cast<std::int64_t>(c.exec_processes));
    out.key("cpu_weight");
    if (c.cpu_weight) {
      out.number(static_cast<std::int64_t>(*c.cpu_weight));
    } else {
      out.null();
    }
    out.key("realtime_threads").open_array();
    for (const RealtimeThread& t : c.realtime_threads) {
      out.open_object();
      out.key("pid").number(t.pid);
      out.key("tid").number(t.tid);
      out.member("comm", t.comm);
      out.member("policy", to_string(t.policy));
      out.key("priority").number(t.priority);
      out.key("cpu").number(t.cpu);
      out.member("affinity", t.affinity.format());
      out.key("cpu_percent").number(static_cast<std::int64_t>(t.cpu_share * 100 + 0.5));
      out.key("busy").boolean(t.busy);
      out.key("in_container").boolean(t.in_container);
      out.close_object();
    }
    out.close_array();
    out.close_object();
  }
  out.close_array();
  out.key("findings").open_array();
  for (const Finding& f : r.findings) {
    out.open_object();
    out.member("kind", to_string(f.kind));
    member_or_null(out, "container", f.container);
    member_or_null(out, "root", f.state_root);
    number_or_null(out, "pid", f.pid);
    number_or_null(out, "tid", f.tid);
    member_or_null(out, "comm", f.comm);
    member_or_null(out, "irq", f.irq);
    out.member_or_null("affinity", f.affinity);
    out.member_or_null("expected", f.expected);
    out.member("detail", f.detail);
    member_or_null(out, "fix", f.fix);
    out.close_object();
  }
  out.close_array();
  out.key("errors").open_array();
  for (const std::string& e : r.errors) out.string(e);
  out.close_array();
  out.key("skipped").open_array();
  for (const std::string& s : r.skipped) out.string(s);
  out.close_array();
  out.close_object();
  return out.take() + "\n";
}

std::string render_table(const AuditResult& r) {
  std::ostringstream out;
  out << "execaff audit (read-only): " << r.containers.size() << " containers, isolated CPUs "
      << (r.isolated.empty() ? "none" : r.isolated.format()) << ", RT throttling "
      << (!r.rt_throttling.known ? std::string("unknown")
          : r.rt_throttling.off()
              ? std::string("off")
              : std::to_string(r.rt_throttling.runtime_us) + "/" +
                    std::to_string(r.rt_throttling.period_us) + " us")
      << "\n";
  for (const AuditedContainer& c : r.containers) {
    out << "  " << c.runtime << " " << c.id << ": cpuset " << c.cpuset.format() << ", "
        << (c.exclusive.empty() ? "" : "exclusive " + c.exclusive.format() + ", ")
        << (c.opted_in ? "opted in (" + c.source + "), final " + list_or_dash(c.final)
                       : std::string("not opted in"))
        << ", " << c.processes << " processes (" << c.exec_processes << " exec'd)\n";
    for (const RealtimeThread& t : c.realtime_threads) {
      out << "    real-time: " << t.comm << " " << t.pid << "/" << t.tid << " "
          << to_string(t.policy) << " " << t.priority << " on CPU " << t.cpu << " (allowed "
          << t.affinity.format() << "), " << static_cast<int>(t.cpu_share * 100 + 0.5)
          << "% of a CPU" << (t.busy ? ", busy" : "")
          << (t.in_container ? "" : ", not the container's") << "\n";
    }
  }
  if (r.findings.empty()) {
    out << "no findings\n";
  } else {
    out << "\n"
        << std::left << std::setw(29) << "KIND" << std::setw(22) << "CONTAINER" << std::setw(14)
        << "PID/TID" << std::setw(16) << "COMM" << std::setw(12) << "AFFINITY" << std::setw(12)
        << "EXPECTED"
        << "DETAIL\n";
    for (const Finding& f : r.findings) {
      const std::string who =
          f.irq.empty()
              ? (f.pid ? std::to_string(f.pid) + "/" + (f.tid ? std::to_string(f.tid) : "-") : "-")
              : "irq " + f.irq;
      std::string container = f.container.empty() ? "(node)" : f.container;
      if (container.size() > 20) container = container.substr(0, 19) + "~";
      out << std::left << std::setw(29) << to_string(f.kind) << std::setw(22) << container
          << std::setw(14) << who << std::setw(16) << (f.comm.empty() ? "-" : f.comm)
          << std::setw(12) << list_or_dash(f.affinity) << std::setw(12) << list_or_dash(f.expected)
          << f.detail << (f.fix.empty() ? "" : " (fix: " + f.fix + ")") << "\n";
    }
  }
  for (const std::string& e : r.errors) out << "error: " << e << "\n";
  return out.str();
}

std::string prometheus_label(std::string_view value) {
  std::string out;
  for (const char c : value) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

const char* metric_help(FindingKind kind) {
  switch (kind) {
    case FindingKind::escaped_exec:
      return "Tasks exec'd into an opted-in container whose CPU affinity is not the decision's "
             "final.";
    case FindingKind::isolated_cpu_intruder:
      return "Tasks of a container allowed on an isolated CPU the container does not own.";
    case FindingKind::min_weight_pinned_exec:
      return "1 when a minimum-CPU-weight container pins its execs to CPUs other containers use.";
    case FindingKind::undecidable: return "1 when the container's exec decision is an error.";
    case FindingKind::irq_on_isolated:
      return "IRQs whose smp_affinity_list includes an isolated CPU.";
    case FindingKind::irqbalance_unbanned_isolated:
      return "irqbalance files whose IRQBALANCE_BANNED_CPUS leaves isolated CPUs unbanned.";
    case FindingKind::caller_on_exclusive_cpu:
      return "Processes that start execs (crio, conmon, containerd, its shims, kubelet) allowed "
             "on a CPU a container holds exclusively.";
    case FindingKind::exec_may_hang:
      return "1 when busy real-time threads hold CPUs the container's next exec may run on (not "
             "pinned, or pinned onto them): an exec may hang, or freeze the node.";
  }
  return "";
}

// node-exporter's textfile collector: one gauge per finding kind, one sample
// per audited container (0 included, so that an alert sees it clear).
std::string render_prometheus(const AuditResult& r) {
  std::ostringstream out;
  for (const FindingKind kind : kAllFindingKinds) {
    const std::string name = std::string("execaff_audit_") + to_string(kind);
    out << "# HELP " << name << " " << metric_help(kind) << "\n# TYPE " << name << " gauge\n";
    std::map<std::pair<std::string, std::string>, unsigned> counts;
    unsigned node_count = 0;
    for (const Finding& f : r.findings) {
      if (f.kind != kind) continue;
      if (is_node_kind(kind)) {
        ++node_count;
      } else {
        ++counts[{f.state_root, f.container}];
      }
    }
    if (is_node_kind(kind)) {
      out << name << " " << node_count << "\n";
      continue;
    }
    for (const AuditedContainer& c : r.containers) counts.try_emplace({c.state_root, c.id}, 0);
    for (const auto& [key, n] : counts) {
      out << name << "{container=\"" << prometheus_label(key.second) << "\",root=\""
          << prometheus_label(key.first) << "\"} " << n << "\n";
    }
  }
  out << "# HELP execaff_audit_containers Containers audited.\n"
      << "# TYPE execaff_audit_containers gauge\nexecaff_audit_containers " << r.containers.size()
      << "\n"
      << "# HELP execaff_audit_errors Errors met while auditing (exit status 2).\n"
      << "# TYPE execaff_audit_errors gauge\nexecaff_audit_errors " << r.errors.size() << "\n"
      << "# HELP execaff_audit_last_run_timestamp_seconds When the audit ran.\n"
      << "# TYPE execaff_audit_last_run_timestamp_seconds gauge\n"
      << "execaff_audit_last_run_timestamp_seconds " << std::time(nullptr) << "\n";
  return out.str();
}

// Written to a temp file in the same directory and renamed over FILE, so the
// collector never reads half a file; nothing is left behind on failure.
void write_atomically(const std::string& path, const std::string& text) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string temp = (slash == std::string::npos ? "" : dir) + "." + base + ".XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    const int code = errno;
    throw Error(code, "--prometheus " + execaff::quoted(path) + ": cannot create a file in " +
                          execaff::quoted(dir) + ": " + errno_text(code));
  }
  const auto fail = [&](const char* what) {
    const int code = errno != 0 ? errno : EIO;
    ::close(fd);
    ::unlink(temp.c_str());
    throw Error(code,
                "--prometheus " + execaff::quoted(path) + ": " + what + ": " + errno_text(code));
  };
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) fail("write");
    done += static_cast<std::size_t>(n);
  }
  if (::fchmod(fd, 0644) != 0) fail("fchmod");
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    const int code = errno;
    ::unlink(temp.c_str());
    throw Error(code, "--prometheus " + execaff::quoted(path) + ": close: " + errno_text(code));
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int code = errno;
    ::unlink(temp.c_str());
    throw Error(code, "--prometheus " + execaff::quoted(path) + ": rename: " + errno_text(code));
  }
}

int audit_usage_error(const std::string& message) {
  std::cerr << "execaff audit: " << message << "\n" << kAuditUsage;
  return kExitError;
}

}  // namespace

int run_audit_command(int argc, char** argv) {
  enum : int { kRoot = 1000, kJson, kPrometheus };
  const std::vector<option> options = with_shared_options({
      {"root", required_argument, nullptr, kRoot},
      {"json", no_argument, nullptr, kJson},
      {"prometheus", required_argument, nullptr, kPrometheus},
  });
  AuditOptions audit;
  NodeOptions node;
  std::optional<std::string> prometheus;
  bool json = false;
  optind = 2;
  opterr = 0;
  for (int c; (c = getopt_long(argc, argv, "", options.data(), nullptr)) != -1;) {
    if (take_shared_option(c, optarg, node)) continue;
    switch (c) {
      case kRoot: audit.state_roots.emplace_back(optarg); break;
      case kJson: json = true; break;
      case kPrometheus: prometheus = optarg; break;
      default:
        return audit_usage_error("unknown or incomplete option " +
                                 execaff::quoted(argv[optind - 1]));
    }
  }
  if (node.help) {
    std::cout << kAuditUsage;
    return kExitClean;
  }
  if (optind != argc)
    return audit_usage_error("unexpected argument " + execaff::quoted(argv[optind]));
  if (const auto problem = root_fs_problem(node)) return audit_usage_error(*problem);
  audit.root_fs = node.root_fs;
  if (audit.state_roots.empty()) audit.state_roots = {"/run/runc", "/run/crun"};
  try {
    audit.node_config = read_node_config(node);
    const AuditResult result = run_audit(audit);
    std::cout << (json ? render_json(result, audit.node_config.path) : render_table(result));
    if (prometheus) write_atomically(*prometheus, render_prometheus(result));
    if (!result.errors.empty()) {
      for (const std::string& e : result.errors) std::cerr << "execaff audit: " << e << "\n";
      return kExitError;
    }
    return result.findings.empty() ? kExitClean : kExitFindings;
  } catch (const Error& e) {
    std::cerr << "execaff audit: " << e.what() << "\n";
    return kExitError;
  }
}

}  // namespace execaff::cli
