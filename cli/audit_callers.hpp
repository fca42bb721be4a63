// SPDX-License-Identifier: LGPL-2.1-or-later
// The processes that start execs — crio, conmon, containerd, its shims,
// kubelet — audited for where they may run.  Everything before a runtime's
// first instruction runs on its caller's CPUs (the runtime, and the shim,
// inherit them), so a caller allowed on a CPU that a pinned container holds
// exclusively puts that phase of every exec there, whatever the exec's own
// decision.  spec/audit.md defines the finding (caller_on_exclusive_cpu),
// which CPUs a container holds exclusively and each caller's fix.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "audit_processes.hpp"
#include "audit_scan.hpp"
#include "cpu_set.hpp"

namespace execaff::cli {

enum class Caller { crio, conmon, containerd, containerd_shim, kubelet };

// The caller a process's comm names: "crio", "conmon", "containerd",
// "containerd-shim" and what starts with it (containerd-shim-runc-v2's comm
// is its first 15 characters, "containerd-shim"), "kubelet"; nullopt for
// any other.
[[nodiscard]] std::optional<Caller> caller_named(std::string_view comm) noexcept;

// The CPUs each container holds exclusively, in the containers' order: the
// CPUs of its cpuset that no other container's cpuset holds — a container
// on every online CPU (a pod's sandbox, an unplaced container) counting as
// none — for a container outside Kubernetes' Burstable and BestEffort
// cgroups and whose cpuset holds no housekeeping CPU: kubelet's static CPU
// manager gives exclusive CPUs to Guaranteed pods only, never the reserved
// CPUs, and its shared pool always holds them.
[[nodiscard]] std::vector<CpuSet> exclusive_cpus(const std::vector<AuditedContainer>& containers,
                                                 const CpuSet& online,
                                                 const std::optional<CpuSet>& housekeeping);

// What moves `caller` onto `cpus` (the node's housekeeping CPUs): CRI-O's
// infra_ctr_cpuset, systemd's CPUAffinity= for containerd and kubelet, the
// parent's fix for conmon and the containerd shims, which inherit it.
[[nodiscard]] std::string caller_fix(Caller caller, const CpuSet& cpus);

// One caller_on_exclusive_cpu finding per caller process outside every
// audited container (`in_containers`: their tasks) whose threads may run on
// a CPU in some container's `exclusive`.  Its expected CPUs are the node
// config's housekeeping CPUs, else every online CPU no container holds
// exclusively.
void check_callers(const std::map<pid_t, Process>& processes, const std::set<pid_t>& in_containers,
                   const std::vector<AuditedContainer>& containers, const CpuSet& online,
                   const std::optional<CpuSet>& housekeeping, std::vector<Finding>& findings);

}  // namespace execaff::cli
