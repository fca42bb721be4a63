// SPDX-License-Identifier: LGPL-2.1-or-later
#include "audit_callers.hpp"

#include "error.hpp"

namespace execaff::cli {
namespace {

// What each caller starts, and why its CPUs matter, for the finding's detail.
const char* role(Caller caller) noexcept {
  switch (caller) {
    case Caller::crio:
      return "CRI-O starts conmon and the runtime of every exec: they begin on its CPUs";
    case Caller::conmon:
      return "conmon starts the runtime of exec probes and hooks: it begins on its CPUs";
    case Caller::containerd:
      return "containerd starts the shims, which keep its CPUs and start the runtime of every exec";
    case Caller::containerd_shim:
      return "a containerd shim starts the runtime of every exec: it begins on its CPUs";
    case Caller::kubelet:
      return "kubelet drives every exec, probe and hook, and its threads wake on its CPUs";
  }
  return "";
}

// Kubelet's QoS parents, tested as CRI-O's high-performance hooks test a
// pod's cgroup parent (isCgroupParentBurstable, ...BestEffort).
bool in_shared_qos_cgroup(const std::string& cgroup_dir) {
  return cgroup_dir.find("burstable") != std::string::npos ||
         cgroup_dir.find("besteffort") != std::string::npos;
}

}  // namespace

std::optional<Caller> caller_named(std::string_view comm) noexcept {
  if (comm == "crio") return Caller::crio;
  if (comm == "conmon") return Caller::conmon;
  if (comm == "containerd") return Caller::containerd;
  if (comm.starts_with("containerd-shim")) return Caller::containerd_shim;
  if (comm == "kubelet") return Caller::kubelet;
  return std::nullopt;
}

std::vector<CpuSet> exclusive_cpus(const std::vector<AuditedContainer>& containers,
                                   const CpuSet& online,
                                   const std::optional<CpuSet>& housekeeping) {
  std::vector<CpuSet> out(containers.size());
  for (std::size_t i = 0; i < containers.size(); ++i) {
    const AuditedContainer& c = containers[i];
    if (c.cpuset == online || in_shared_qos_cgroup(c.cgroup_dir) ||
        (housekeeping && c.cpuset.intersects(*housekeeping))) {
      continue;
    }
    CpuSet held = c.cpuset;
    for (std::size_t j = 0; j < containers.size(); ++j) {
      if (j != i && containers[j].cpuset != online) held = held.without(containers[j].cpuset);
    }
    out[i] = held;
  }
  return out;
}

std::string caller_fix(Caller caller, const CpuSet& cpus) {
  const std::string list =
      cpus.empty() ? "<the node's housekeeping CPUs: kubelet's reservedSystemCPUs>" : cpus.format();
  const std::string crio_setting =
      "infra_ctr_cpuset = \"" + list +
      "\" in [crio.runtime] (a drop-in in /etc/crio/crio.conf.d; CRI-O then starts conmon and "
      "the runtime under taskset on those CPUs)";
  const auto unit = [&](const char* name) {
    return "CPUAffinity=" + list + " in [Service] of a " + name +
           ".service drop-in (/etc/systemd/system/" + name +
           ".service.d/), then systemctl daemon-reload and restart " + name;
  };
  switch (caller) {
    case Caller::crio: return crio_setting + ", and for CRI-O's own threads " + unit("crio");
    case Caller::conmon:
      return "fix its parent: conmon runs where CRI-O starts it: " + crio_setting +
             "; a running conmon keeps its CPUs until its container is restarted";
    case Caller::containerd: return unit("containerd");
    case Caller::containerd_shim:
      return "fix its parent: a shim inherits containerd's CPUs: " + unit("containerd") +
             "; a running shim keeps its CPUs until its pod is recreated";
    case Caller::kubelet: return unit("kubelet");
  }
  return "";
}

void check_callers(const std::map<pid_t, Process>& processes, const std::set<pid_t>& in_containers,
                   const std::vector<AuditedContainer>& containers, const CpuSet& online,
                   const std::optional<CpuSet>& housekeeping, std::vector<Finding>& findings) {
  CpuSet all_exclusive;
  for (const AuditedContainer& c : containers)
    all_exclusive = all_exclusive.united_with(c.exclusive);
  if (all_exclusive.empty()) return;
  const CpuSet target = housekeeping ? *housekeeping : online.without(all_exclusive);
  for (const auto& [pid, p] : processes) {
    const auto caller = caller_named(p.comm);
    // A process of that name inside a container (a node in a pod, kind) is
    // the container's, judged by the container's findings.
    if (!caller || in_containers.contains(pid)) continue;
    const CpuSet affinity = p.affinity();
    std::string on;
    unsigned holders = 0;
    for (const AuditedContainer& c : containers) {
      const CpuSet covered = affinity.intersected_with(c.exclusive);
      if (covered.empty()) continue;
      ++holders;
      on += (on.empty() ? "" : ", ") + covered.format() + " (container " + quoted(c.id) + " in " +
            c.state_root + ")";
    }
    if (on.empty()) continue;
    findings.push_back({.kind = FindingKind::caller_on_exclusive_cpu,
                        .pid = pid,
                        .comm = p.comm,
                        .affinity = affinity,
                        .expected = target,
                        .detail = std::string(role(*caller)) + "; it may run on CPU " + on +
                                  (holders == 1 ? ", which that container holds"
                                                : ", which those containers hold") +
                                  " exclusively",
                        .fix = caller_fix(*caller, target)});
  }
}

}  // namespace execaff::cli
