// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audit_processes.hpp"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <optional>

#include "error.hpp"
#include "procfs.hpp"

namespace execaff::cli {
namespace {

std::optional<CpuSet> status_affinity(const std::string& status_path) {
  const auto status = read_file_if_readable(status_path);
  if (!status) return std::nullopt;
  const auto list = status_field(*status, "Cpus_allowed_list");
  if (!list) return std::nullopt;
  try {
    return CpuSet::parse(*list);
  } catch (const Error& e) {
    throw e.wrap(status_path + " Cpus_allowed_list");
  }
}

std::optional<TaskStat> thread_stat(const std::string& stat_path) {
  const auto text = read_file_if_readable(stat_path);
  if (!text) return std::nullopt;
  return parse_task_stat(*text, stat_path);
}

}  // namespace

const char* to_string(SchedPolicy policy) noexcept {
  switch (policy) {
    case SchedPolicy::other: return "SCHED_OTHER";
    case SchedPolicy::fifo: return "SCHED_FIFO";
    case SchedPolicy::rr: return "SCHED_RR";
    case SchedPolicy::batch: return "SCHED_BATCH";
    case SchedPolicy::idle: return "SCHED_IDLE";
    case SchedPolicy::deadline: return "SCHED_DEADLINE";
  }
  return "?";
}

TaskStat parse_task_stat(std::string_view line, std::string_view source) {
  const auto fail = [&](const std::string& why) {
    return Error(EINVAL, std::string(source) + ": " + why);
  };
  const auto close = line.rfind(')');
  if (close == std::string_view::npos) throw fail("no ')' closing the comm");
  // Fields from 3 (state) on, split at single spaces.
  std::vector<std::string_view> fields;
  std::string_view rest = line.substr(close + 1);
  while (!rest.empty()) {
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\n')) rest.remove_prefix(1);
    if (rest.empty()) break;
    const auto end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  }
  constexpr std::size_t kLastField = 41;
  if (fields.size() + 2 < kLastField) {
    throw fail("has " + std::to_string(fields.size() + 2) + " fields, fewer than " +
               std::to_string(kLastField));
  }
  const auto number = [&](std::size_t field) {
    const std::string_view text = fields[field - 3];
    unsigned long long value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
      throw fail("field " + std::to_string(field) + " " + quoted(text) + " is not a number");
    }
    return value;
  };
  constexpr unsigned long long kPfKthread = 0x00200000;
  TaskStat stat;
  stat.kernel_thread = (number(9) & kPfKthread) != 0;
  stat.cpu_ticks = number(14) + number(15);
  stat.start_ticks = number(22);
  stat.processor = static_cast<unsigned>(number(39));
  stat.rt_priority = static_cast<unsigned>(number(40));
  const auto policy = number(41);
  switch (policy) {
    case 0: case 1: case 2: case 3: case 5: case 6:
      stat.policy = static_cast<SchedPolicy>(policy);
      break;
    default: throw fail("field 41 (policy) " + std::to_string(policy) + " is no known policy");
  }
  return stat;
}

CpuSet Process::affinity() const {
  CpuSet all;
  for (const Thread& t : threads) all = all.united_with(t.affinity);
  return all;
}

std::string dir_of(const std::string& file) {
  const auto slash = file.rfind('/');
  return slash == std::string::npos ? "" : file.substr(0, slash);
}

bool within(const std::string& dir, const std::string& container_dir) {
  return dir == container_dir || (dir.size() > container_dir.size() &&
                                  dir.compare(0, container_dir.size(), container_dir) == 0 &&
                                  dir[container_dir.size()] == '/');
}

std::map<pid_t, Process> read_processes(const NodeFacts& node, const std::string& root_fs) {
  std::map<pid_t, Process> processes;
  const std::string proc = under_root(root_fs, "/proc");
  for (const long pid : numeric_entries(proc)) {
    const std::string base = proc + "/" + std::to_string(pid);
    const auto status = read_file_if_readable(base + "/status");
    if (!status) continue;
    Process p;
    p.pid = static_cast<pid_t>(pid);
    if (const auto name = status_field(*status, "Name")) p.comm = *name;
    if (const auto ppid = status_field(*status, "PPid")) {
      p.ppid = static_cast<pid_t>(std::strtol(std::string(*ppid).c_str(), nullptr, 10));
    }
    try {
      if (const auto cpuset = node.cgroup_cpuset_of_pid(p.pid)) p.cgroup_dir = dir_of(cpuset->file);
    } catch (const Error&) {
      continue;  // exited between the two reads
    }
    const std::vector<long> tids = numeric_entries(base + "/task");
    if (tids.empty()) {
      if (const auto affinity = status_affinity(base + "/status")) {
        p.threads.push_back({p.pid, *affinity, thread_stat(base + "/stat")});
      }
    }
    for (const long tid : tids) {
      const std::string task = base + "/task/" + std::to_string(tid);
      if (const auto affinity = status_affinity(task + "/status")) {
        p.threads.push_back({static_cast<pid_t>(tid), *affinity, thread_stat(task + "/stat")});
      }
    }
    if (!p.threads.empty()) processes.emplace(p.pid, std::move(p));
  }
  return processes;
}

}  // namespace execaff::cli
