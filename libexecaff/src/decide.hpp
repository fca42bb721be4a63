// SPDX-License-Identifier: LGPL-2.1-or-later
// One exec's decision from its documents, parsed once by the caller
// (spec_json.hpp), and the kernel: read the node's facts and the caller's
// affinity only when something opts in, then ask the policy.  An exec that
// opts in to nothing costs no file read here.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "cpu_set.hpp"
#include "json_writer.hpp"
#include "node_facts.hpp"
#include "policy.hpp"
#include "spec_json.hpp"

namespace execaff {

struct DecideRequest {
  std::optional<ProcessDocument> process;  // the exec's process file
  std::optional<ConfigDocument> config;    // the bundle's config.json
  std::optional<CpuSet> container_cpuset;  // known by the caller
  std::optional<pid_t> container_pid;      // its cgroup gives the cpuset
  std::optional<CpuSet> caller_cpus;       // default: this thread's affinity
  std::optional<CpuSet> housekeeping;
  std::optional<std::string> handler_default;
};

// The container's cpuset comes, in this order, from container_cpuset, the
// cgroup of container_pid (read once: Decision::container_cpuset_file
// names it), config.json's linux.resources.cpu.cpus, or the node's online
// CPUs.  Throws Error with the stage and input in the message.
[[nodiscard]] Decision decide(const NodeFacts& node, const DecideRequest& request);

// The decision's members: pinned, initial, final (canonical lists or
// null), source, reason, overridden_field (only when there is one),
// container_cpuset, housekeeping.
void write_decision_members(json::Writer& out, const Decision& decision);
// ... as one JSON object.
[[nodiscard]] std::string decision_to_json(const Decision& decision);

}  // namespace execaff
