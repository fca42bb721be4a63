// SPDX-License-Identifier: LGPL-2.1-or-later
// One exec's decision from its inputs as they are on disk and in the
// kernel: parse the documents, and — only when something opts in — read the
// node's facts and the caller's affinity, then ask the policy.  An exec that
// opts in to nothing costs two JSON parses and no other file read.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "cpu_set.hpp"
#include "node_facts.hpp"
#include "policy.hpp"

namespace execaff {

struct DecideRequest {
  std::optional<std::string> process_json;  // the exec's process document
  std::string process_source = "process file";
  std::optional<std::string> config_json;  // the bundle's config.json
  std::string config_source = "config.json";
  std::optional<CpuSet> container_cpuset;  // known by the caller
  std::optional<pid_t> container_pid;      // its cgroup gives the cpuset
  std::optional<CpuSet> caller_cpus;       // default: this thread's affinity
  std::optional<CpuSet> housekeeping;
  std::optional<std::string> handler_default;
};

// The container's cpuset comes, in this order, from container_cpuset, the
// cgroup of container_pid, config.json's linux.resources.cpu.cpus, or the
// node's online CPUs.  Throws Error with the stage and input in the message.
[[nodiscard]] Decision decide(const NodeFacts& node, const DecideRequest& request);

// The decision as one JSON object: pinned, initial, final (canonical lists
// or null), source, reason, container_cpuset, housekeeping.
[[nodiscard]] std::string decision_to_json(const Decision& decision);

}  // namespace execaff
