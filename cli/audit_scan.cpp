// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audit_scan.hpp"

#include <algorithm>
#include <cerrno>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unistd.h>

#include "audit_callers.hpp"
#include "audit_processes.hpp"
#include "decide.hpp"
#include "error.hpp"
#include "file_reader.hpp"
#include "node_facts.hpp"
#include "procfs.hpp"
#include "runtime_state.hpp"
#include "spec_json.hpp"

namespace execaff::cli {
namespace {

// One container as the audit works on it.
struct Subject {
  AuditedContainer info;
  std::string cgroup_dir;
  std::vector<pid_t> members;       // processes in its cgroup (or below)
  std::vector<pid_t> exec_members;  // those not descended from init
  std::string cpuset_file;
};

// Exec'd: the chain of parents leaves the container before it reaches the
// container's init (an exec's process is the runtime's child, not init's).
bool is_exec_process(pid_t pid, pid_t init, const std::map<pid_t, Process>& processes,
                     const std::string& cgroup_dir) {
  pid_t at = pid;
  for (int depth = 0; depth < 4096; ++depth) {
    if (at == init) return false;
    const auto it = processes.find(at);
    if (it == processes.end() || !within(it->second.cgroup_dir, cgroup_dir)) return true;
    at = it->second.ppid;
  }
  return true;
}

// The cpu controller's weight: cpu.weight on cgroup v2, cpu.shares on v1,
// in the cgroup the kernel says the process is in (procfs.hpp).  None when
// the controller is not there for it.
void read_cpu_weight(const std::string& root_fs, pid_t pid, AuditedContainer& c) {
  std::optional<ControllerCgroup> cpu;
  try {
    const ProcessCgroups cgroups(root_fs, pid);
    cpu = cgroups.controller_cgroup("cpu");
  } catch (const Error& e) {
    if (e.code() != ESRCH) throw;  // init exited since its cpuset was read
  }
  if (!cpu) return;
  const std::string file = under_root(root_fs, cpu->file(cpu->v2 ? "weight" : "shares"));
  if (const auto text = read_file_if_readable(file)) {
    c.cpu_weight = std::strtoul(std::string(trim_space(*text)).c_str(), nullptr, 10);
    c.cpu_weight_file = file;
  }
}

bool is_minimum_weight(const AuditedContainer& c) {
  if (!c.cpu_weight) return false;
  // Kubernetes gives BestEffort pods the minimum: cpu.shares 2 (v1), which
  // maps to cpu.weight 1 on v2.
  return c.cpu_weight_file.ends_with("shares") ? *c.cpu_weight <= 2 : *c.cpu_weight <= 1;
}

std::optional<Subject> read_subject(const NodeFacts& node, const AuditOptions& options,
                                    const std::string& state_root, const std::string& id,
                                    AuditResult& result, std::vector<Finding>& findings) {
  const auto state = read_container_state(under_root(options.root_fs, state_root), id,
                                          options.root_fs == "/" ? "" : options.root_fs);
  if (!state) return std::nullopt;
  Subject s;
  s.info.id = id;
  s.info.state_root = state_root;
  s.info.runtime = state->crun ? "crun" : "runc";
  s.info.init_pid = state->init_pid;
  std::optional<CgroupCpuset> cpuset;
  try {
    cpuset = node.cgroup_cpuset_of_pid(state->init_pid);
  } catch (const Error& e) {
    result.skipped.push_back(state_root + "/" + id + ": not running (init pid " +
                             std::to_string(state->init_pid) + " is gone)");
    return std::nullopt;
  }
  if (!cpuset) {
    result.errors.push_back("container " + quoted(id) + " (" + state_root + "): init pid " +
                            std::to_string(state->init_pid) +
                            " is in no cpuset cgroup, so its tasks cannot be told apart");
    return std::nullopt;
  }
  s.cpuset_file = cpuset->file;
  s.cgroup_dir = dir_of(cpuset->file);
  s.info.cgroup_dir = s.cgroup_dir;
  s.info.cpuset = cpuset->cpus;
  read_cpu_weight(options.root_fs, state->init_pid, s.info);

  DecideRequest request;
  const std::string config_text = read_file(state->config_path);
  request.container_pid = state->init_pid;
  // The decision for an unpinned caller: final does not depend on the caller.
  request.caller_cpus = node.online_cpus();
  request.handler_default = options.node_config.handler_default;
  request.housekeeping = options.node_config.housekeeping_cpus;
  try {
    request.config = parse_config_document(config_text, "config " + quoted(state->config_path));
    const Decision decision = decide(node, request);
    s.info.opted_in = decision.pinned;
    s.info.final = decision.final;
    s.info.source = to_string(decision.source);
  } catch (const Error& e) {
    findings.push_back({.kind = FindingKind::undecidable,
                        .container = id,
                        .state_root = state_root,
                        .pid = state->init_pid,
                        .detail = e.what()});
  }
  return s;
}

Finding task_finding(FindingKind kind, const Subject& s, const Process& p, const Thread& t,
                     const std::optional<CpuSet>& expected, std::string detail) {
  return {.kind = kind,
          .container = s.info.id,
          .state_root = s.info.state_root,
          .pid = p.pid,
          .tid = t.tid,
          .comm = p.comm,
          .affinity = t.affinity,
          .expected = expected,
          .detail = std::move(detail)};
}

void check_tasks(const std::vector<Subject>& subjects, const std::map<pid_t, Process>& processes,
                 const CpuSet& isolated, const CpuSet& online, std::vector<Finding>& findings) {
  for (const Subject& s : subjects) {
    // The isolated CPUs a container owns (spec/audit.md): those of its
    // cpuset that no container with a narrower cpuset holds; a container on
    // every online CPU has no placement at all and owns none.
    CpuSet owned;
    std::map<unsigned, std::string> claimed_by;
    if (s.info.cpuset != online) {
      owned = isolated.intersected_with(s.info.cpuset);
      for (const Subject& other : subjects) {
        if (&other == &s || other.info.cpuset.count() >= s.info.cpuset.count()) continue;
        for (const unsigned cpu : owned.intersected_with(other.info.cpuset).ids()) {
          claimed_by.emplace(cpu, other.info.id);
        }
        owned = owned.without(other.info.cpuset);
      }
    }
    for (const pid_t pid : s.members) {
      const Process& p = processes.at(pid);
      const bool exec =
          std::find(s.exec_members.begin(), s.exec_members.end(), pid) != s.exec_members.end();
      for (const Thread& t : p.threads) {
        if (exec && s.info.opted_in && s.info.final && t.affinity != *s.info.final) {
          findings.push_back(task_finding(
              FindingKind::escaped_exec, s, p, t, s.info.final,
              "exec'd task's affinity is not the decision's final (" + s.info.source + ")"));
        }
        const CpuSet foreign = t.affinity.intersected_with(isolated).without(owned);
        if (!foreign.empty()) {
          std::string why;
          for (const unsigned cpu : foreign.ids()) {
            const auto it = claimed_by.find(cpu);
            why += (why.empty() ? "" : ", ") + std::to_string(cpu) +
                   (it != claimed_by.end()         ? " (container " + quoted(it->second) + "'s)"
                    : !s.info.cpuset.contains(cpu) ? " (outside its cpuset)"
                                                   : "");
          }
          findings.push_back(task_finding(
              FindingKind::isolated_cpu_intruder, s, p, t, owned,
              "may run on isolated CPU " + why + ", which the container does not own" +
                  (s.info.cpuset == online ? " (its cpuset is every online CPU: it owns none)"
                                           : "")));
        }
      }
    }
  }
}

void check_min_weight(const std::vector<Subject>& subjects, std::vector<Finding>& findings) {
  for (const Subject& s : subjects) {
    if (!s.info.opted_in || !s.info.final || !is_minimum_weight(s.info)) continue;
    CpuSet contended;
    std::string with;
    for (const Subject& other : subjects) {
      if (&other == &s || !other.info.cpuset.intersects(*s.info.final)) continue;
      contended = contended.united_with(other.info.cpuset.intersected_with(*s.info.final));
      with += (with.empty() ? "" : ", ") + quoted(other.info.id);
    }
    if (contended.empty()) continue;
    findings.push_back({.kind = FindingKind::min_weight_pinned_exec,
                        .container = s.info.id,
                        .state_root = s.info.state_root,
                        .pid = s.info.init_pid,
                        .affinity = contended,
                        .expected = s.info.final,
                        .detail = "CPU weight " + std::to_string(*s.info.cpu_weight) + " (" +
                                  s.info.cpu_weight_file +
                                  ") is the minimum, and processes exec'd into it are "
                                  "pinned to " +
                                  s.info.final->format() + ", which containers " + with +
                                  " also run on: a pinned exec cannot move away from them"});
  }
}

// spec/audit.md, `exec_may_hang`: one finding per container with busy
// real-time threads on CPUs its next exec may run on — any of its cpuset
// when the exec is not pinned, `final` when it is.
void check_realtime(std::vector<Subject>& subjects, const std::vector<RealtimeThread>& threads,
                    const RtThrottling& throttling, std::vector<Finding>& findings) {
  for (Subject& s : subjects) {
    CpuSet hot;
    const RealtimeThread* first = nullptr;
    std::string named;
    for (const RealtimeThread& r : threads) {
      if (!r.affinity.intersects(s.info.cpuset)) continue;
      RealtimeThread mine = r;
      mine.in_container =
          std::find(s.members.begin(), s.members.end(), r.pid) != s.members.end();
      s.info.realtime_threads.push_back(mine);
      if (!r.busy || !s.info.cpuset.contains(r.cpu)) continue;
      hot.add(r.cpu);
      if (first == nullptr) first = &r;
      named += (named.empty() ? "" : ", ") + std::string("tid ") + std::to_string(r.tid) + " " +
               quoted(r.comm) + " " + to_string(r.policy) + " " + std::to_string(r.priority) +
               " on CPU " + std::to_string(r.cpu) + " (" +
               std::to_string(static_cast<int>(r.cpu_share * 100 + 0.5)) + "% of a CPU)";
    }
    if (first == nullptr) continue;
    const bool pinned = s.info.opted_in && s.info.final;
    if (pinned && !s.info.final->intersects(hot)) continue;
    const std::string outcome =
        throttling.off()
            ? "RT throttling is off (sched_rt_runtime_us -1): an exec may hang, or freeze the node"
            : "an exec may stall behind them (RT throttling leaves other tasks " +
                  (throttling.known && throttling.period_us > 0
                       ? std::to_string((throttling.period_us - throttling.runtime_us) * 100 /
                                        throttling.period_us) +
                             "%"
                       : std::string("a share")) +
                  " of those CPUs), and hang once throttling is turned off";
    Finding f{.kind = FindingKind::exec_may_hang,
              .container = s.info.id,
              .state_root = s.info.state_root,
              .pid = first->pid,
              .tid = first->tid,
              .comm = first->comm,
              .affinity = hot,
              .expected = pinned ? std::optional<CpuSet>(s.info.final->without(hot))
                                 : std::optional<CpuSet>(s.info.cpuset.without(hot))};
    if (pinned) {
      f.detail = "busy real-time threads (" + named + ") hold CPU " + hot.format() +
                 " of the final " + s.info.final->format() + " its execs are pinned to (" +
                 s.info.source + "): " + outcome;
      f.fix = "pin execs to CPUs no busy-poll thread holds: leave the pod's first CPU to "
              "housekeeping, or annotate exec-cpu-affinity.execaff.io with a CPU list without " +
              hot.format();
    } else {
      f.detail = "busy real-time threads (" + named + ") on CPU " + hot.format() +
                 ", and its execs are not pinned (" +
                 (s.info.source == "none" ? std::string("nothing opts it in") : s.info.source) +
                 "): " + outcome;
      f.fix = "annotate the pod exec-cpu-affinity.execaff.io: first (or set \"handler_default\": "
              "\"first\" in the node config), with its first CPU left to housekeeping";
    }
    findings.push_back(std::move(f));
  }
}

void check_irqs(const std::string& root_fs, const CpuSet& isolated,
                std::vector<Finding>& findings) {
  const std::string dir = under_root(root_fs, "/proc/irq");
  for (const long irq : numeric_entries(dir)) {
    const std::string file = dir + "/" + std::to_string(irq) + "/smp_affinity_list";
    const auto text = read_file_if_readable(file);
    if (!text) continue;
    CpuSet affinity;
    try {
      affinity = CpuSet::parse(trim_space(*text));
    } catch (const Error& e) {
      throw e.wrap(file);
    }
    const CpuSet on_isolated = affinity.intersected_with(isolated);
    if (on_isolated.empty()) continue;
    findings.push_back({.kind = FindingKind::irq_on_isolated,
                        .irq = std::to_string(irq),
                        .affinity = affinity,
                        .expected = affinity.without(isolated),
                        .detail = "IRQ " + std::to_string(irq) + " may fire on isolated CPU " +
                                  on_isolated.format() + " (/proc/irq/" + std::to_string(irq) +
                                  "/smp_affinity_list)"});
  }
}

void check_irqbalance(const std::string& root_fs, const CpuSet& isolated,
                      std::vector<Finding>& findings) {
  for (const char* file : {"/etc/default/irqbalance", "/etc/sysconfig/irqbalance"}) {
    const auto text = read_file_if_readable(under_root(root_fs, file));
    if (!text) continue;
    const auto banned = irqbalance_banned_cpus(*text, file);
    // Unset, irqbalance bans the isolcpus and nohz_full CPUs itself; set,
    // the value replaces that, and whatever it leaves out gets IRQs.
    if (!banned) continue;
    const CpuSet unbanned = isolated.without(*banned);
    if (unbanned.empty()) continue;
    findings.push_back(
        {.kind = FindingKind::irqbalance_unbanned_isolated,
         .affinity = *banned,
         .expected = isolated,
         .detail = std::string(file) + " bans " + (banned->empty() ? "no CPU" : banned->format()) +
                   ", so irqbalance may move IRQs onto isolated CPU " + unbanned.format()});
  }
}

}  // namespace

const char* to_string(FindingKind kind) noexcept {
  switch (kind) {
    case FindingKind::escaped_exec: return "escaped_exec";
    case FindingKind::isolated_cpu_intruder: return "isolated_cpu_intruder";
    case FindingKind::min_weight_pinned_exec: return "min_weight_pinned_exec";
    case FindingKind::undecidable: return "undecidable";
    case FindingKind::irq_on_isolated: return "irq_on_isolated";
    case FindingKind::irqbalance_unbanned_isolated: return "irqbalance_unbanned_isolated";
    case FindingKind::caller_on_exclusive_cpu: return "caller_on_exclusive_cpu";
    case FindingKind::exec_may_hang: return "exec_may_hang";
  }
  return "?";
}

bool is_node_kind(FindingKind kind) noexcept {
  return kind == FindingKind::irq_on_isolated ||
         kind == FindingKind::irqbalance_unbanned_isolated ||
         kind == FindingKind::caller_on_exclusive_cpu;
}

CpuSet parse_irqbalance_mask(std::string_view mask) {
  const std::string shown = quoted(mask);
  CpuSet cpus;
  std::vector<std::string_view> groups;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = mask.find(',', at);
    groups.push_back(mask.substr(at, comma == std::string_view::npos ? comma : comma - at));
    if (comma == std::string_view::npos) break;
    at = comma + 1;
  }
  unsigned base = 0;
  for (auto it = groups.rbegin(); it != groups.rend(); ++it, base += 32) {
    const std::string_view group = *it;
    if (group.empty() || group.size() > 8) {
      throw Error(EINVAL, "IRQBALANCE_BANNED_CPUS " + shown +
                              " is not a hex mask of comma-separated 32-bit groups");
    }
    unsigned bit = 0;
    for (auto c = group.rbegin(); c != group.rend(); ++c, bit += 4) {
      int v = -1;
      if (*c >= '0' && *c <= '9') v = *c - '0';
      if (*c >= 'a' && *c <= 'f') v = *c - 'a' + 10;
      if (*c >= 'A' && *c <= 'F') v = *c - 'A' + 10;
      if (v < 0) {
        throw Error(EINVAL, "IRQBALANCE_BANNED_CPUS " + shown + ": " + quoted(std::string(1, *c)) +
                                " is not a hex digit");
      }
      for (unsigned b = 0; b < 4; ++b) {
        if ((v >> b & 1) != 0) {
          if (base + bit + b > CpuSet::kMaxCpu) {
            throw Error(ERANGE, "IRQBALANCE_BANNED_CPUS " + shown + " names a CPU above " +
                                    std::to_string(CpuSet::kMaxCpu));
          }
          cpus.add(base + bit + b);
        }
      }
    }
  }
  return cpus;
}

std::optional<CpuSet> irqbalance_banned_cpus(std::string_view file_text, std::string_view source) {
  std::optional<CpuSet> banned;
  std::istringstream in{std::string(file_text)};
  for (std::string raw; std::getline(in, raw);) {
    std::string_view line = trim_space(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.starts_with("export ")) line = trim_space(line.substr(7));
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = trim_space(line.substr(0, eq));
    std::string_view value = trim_space(line.substr(eq + 1));
    if (const auto hash = value.find(" #"); hash != std::string_view::npos) {
      value = trim_space(value.substr(0, hash));
    }
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    try {
      // The last assignment wins, as in the shell that sources the file.
      if (name == "IRQBALANCE_BANNED_CPUS") {
        banned = value.empty() ? CpuSet() : parse_irqbalance_mask(value);
      } else if (name == "IRQBALANCE_BANNED_CPULIST") {
        banned = CpuSet::parse(value);
      }
    } catch (const Error& e) {
      throw e.wrap(std::string(source));
    }
  }
  return banned;
}

AuditResult run_audit(const AuditOptions& options) {
  AuditResult result;
  const NodeFacts node(options.root_fs);
  const IsolatedCpus isolated = node.isolated_cpus();
  result.isolated = isolated.cpus;
  result.isolated_sources = isolated.sources;

  std::vector<Finding> findings;
  std::vector<Subject> subjects;
  for (const std::string& root : options.state_roots) {
    std::vector<std::string> ids;
    try {
      ids = list_container_ids(under_root(options.root_fs, root));
    } catch (const Error& e) {
      result.errors.push_back(e.what());
      continue;
    }
    for (const std::string& id : ids) {
      try {
        if (auto s = read_subject(node, options, root, id, result, findings)) {
          subjects.push_back(std::move(*s));
        }
      } catch (const Error& e) {
        result.errors.push_back("container " + quoted(id) + " (" + root + "): " + e.what());
      }
    }
  }

  const std::map<pid_t, Process> processes = read_processes(node, options.root_fs);
  // A container in the host's own cgroup would claim every task.
  const auto host_init = processes.find(1);
  std::set<pid_t> in_containers;
  for (Subject& s : subjects) {
    if (host_init != processes.end() && !host_init->second.cgroup_dir.empty() &&
        within(host_init->second.cgroup_dir, s.cgroup_dir) && s.info.init_pid != 1) {
      result.errors.push_back("container " + quoted(s.info.id) + " (" + s.info.state_root +
                              ") shares the host's cgroup " + quoted(s.cgroup_dir) +
                              ": its tasks cannot be told apart");
      s.members.clear();
      continue;
    }
    for (const auto& [pid, p] : processes) {
      if (p.cgroup_dir.empty() || !within(p.cgroup_dir, s.cgroup_dir)) continue;
      s.members.push_back(pid);
      in_containers.insert(pid);
      if (is_exec_process(pid, s.info.init_pid, processes, s.cgroup_dir)) {
        s.exec_members.push_back(pid);
      }
    }
    s.info.processes = s.members.size();
    s.info.exec_processes = s.exec_members.size();
  }

  const CpuSet online = node.online_cpus();
  check_tasks(subjects, processes, result.isolated, online, findings);
  check_min_weight(subjects, findings);
  result.rt_throttling = read_rt_throttling(options.root_fs);
  check_realtime(subjects,
                 realtime_threads(processes, read_uptime(options.root_fs), ::sysconf(_SC_CLK_TCK)),
                 result.rt_throttling, findings);
  if (!result.isolated.empty()) {
    check_irqs(options.root_fs, result.isolated, findings);
    check_irqbalance(options.root_fs, result.isolated, findings);
  }
  for (Subject& s : subjects) result.containers.push_back(std::move(s.info));
  const auto housekeeping = options.node_config.housekeeping_cpus;
  const auto exclusive = exclusive_cpus(result.containers, online, housekeeping);
  for (std::size_t i = 0; i < exclusive.size(); ++i) result.containers[i].exclusive = exclusive[i];
  check_callers(processes, in_containers, result.containers, online, housekeeping, findings);
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.kind, a.state_root, a.container, a.pid, a.tid, a.irq) <
           std::tie(b.kind, b.state_root, b.container, b.pid, b.tid, b.irq);
  });
  result.findings = std::move(findings);
  return result;
}

}  // namespace execaff::cli
