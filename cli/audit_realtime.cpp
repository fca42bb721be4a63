// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audit_realtime.hpp"

#include <cstdlib>
#include <string>

#include "procfs.hpp"

namespace execaff::cli {
namespace {

std::optional<long long> read_number(const std::string& file) {
  const auto text = read_file_if_readable(file);
  if (!text) return std::nullopt;
  const std::string value(trim_space(*text));
  char* end = nullptr;
  const long long n = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end == nullptr || *end != '\0') return std::nullopt;
  return n;
}

}  // namespace

RtThrottling read_rt_throttling(const std::string& root_fs) {
  RtThrottling t;
  const auto runtime = read_number(under_root(root_fs, "/proc/sys/kernel/sched_rt_runtime_us"));
  const auto period = read_number(under_root(root_fs, "/proc/sys/kernel/sched_rt_period_us"));
  if (runtime && period) {
    t.known = true;
    t.runtime_us = *runtime;
    t.period_us = *period;
  }
  return t;
}

double read_uptime(const std::string& root_fs) {
  const auto text = read_file_if_readable(under_root(root_fs, "/proc/uptime"));
  return text ? std::strtod(text->c_str(), nullptr) : 0;
}

std::vector<RealtimeThread> realtime_threads(const std::map<pid_t, Process>& processes,
                                             double uptime, long clock_ticks) {
  std::vector<RealtimeThread> out;
  const double hz = clock_ticks > 0 ? static_cast<double>(clock_ticks) : 100.0;
  for (const auto& [pid, p] : processes) {
    for (const Thread& t : p.threads) {
      if (!t.stat || t.stat->kernel_thread) continue;
      if (t.stat->policy != SchedPolicy::fifo && t.stat->policy != SchedPolicy::rr) continue;
      RealtimeThread r;
      r.pid = pid;
      r.tid = t.tid;
      r.comm = p.comm;
      r.policy = t.stat->policy;
      r.priority = t.stat->rt_priority;
      r.cpu = t.stat->processor;
      r.affinity = t.affinity;
      const double age = uptime - static_cast<double>(t.stat->start_ticks) / hz;
      if (age > 0) r.cpu_share = static_cast<double>(t.stat->cpu_ticks) / hz / age;
      r.busy = r.cpu_share >= kBusyShare;
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace execaff::cli
