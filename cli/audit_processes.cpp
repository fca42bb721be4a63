// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audit_processes.hpp"

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

}  // namespace

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
        p.threads.push_back({p.pid, *affinity});
      }
    }
    for (const long tid : tids) {
      if (const auto affinity =
              status_affinity(base + "/task/" + std::to_string(tid) + "/status")) {
        p.threads.push_back({static_cast<pid_t>(tid), *affinity});
      }
    }
    if (!p.threads.empty()) processes.emplace(p.pid, std::move(p));
  }
  return processes;
}

}  // namespace execaff::cli
