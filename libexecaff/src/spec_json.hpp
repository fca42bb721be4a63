// SPDX-License-Identifier: LGPL-2.1-or-later
// Reading the OCI documents execaff cares about — an exec's process file and
// a bundle's config.json — and rewriting a process file's execCPUAffinity
// while keeping every other byte as it was.  Parsing uses yajl (as crun
// does); no syscalls here but the one read in read_document_file.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cpu_set.hpp"

namespace execaff {

// process.execCPUAffinity (runtime-spec config.md, v1.2.1+).  A member that
// is absent, null or "" is nullopt: "not set".
struct ExecCpuAffinity {
  std::optional<CpuSet> initial;
  std::optional<CpuSet> final;

  [[nodiscard]] bool empty() const noexcept { return !initial && !final; }
  friend bool operator==(const ExecCpuAffinity&, const ExecCpuAffinity&) = default;
};

// What an exec process file says that matters here.
struct ProcessDocument {
  // nullopt when the field is absent, null, or has neither member set.
  std::optional<ExecCpuAffinity> affinity;
};

// What a bundle's config.json says that matters here.
struct ConfigDocument {
  std::optional<ExecCpuAffinity> affinity;         // process.execCPUAffinity
  std::map<std::string, std::string> annotations;  // annotations (string values)
  std::optional<CpuSet> cpuset;                    // linux.resources.cpu.cpus
  std::string cgroups_path;                        // linux.cgroupsPath
};

// Parse a process document (the top level is the process object).  `source`
// names the input in messages, e.g. `process file "/tmp/exec-process-1"`.
// Throws Error(EINVAL) naming the JSON path and value on malformed JSON, a
// non-object, a wrong type, or a bad CPU list.
[[nodiscard]] ProcessDocument parse_process_document(std::string_view json,
                                                     std::string_view source);

// Parse a config.json (the process object is under "process").  Same errors.
[[nodiscard]] ConfigDocument parse_config_document(std::string_view json, std::string_view source);

// The whole file, with an error naming the path and the reason (ENOENT,
// EACCES, not a regular file, larger than kMaxDocumentBytes).
inline constexpr std::size_t kMaxDocumentBytes = 16 * 1024 * 1024;
[[nodiscard]] std::string read_document_file(const std::string& path);
// The same for a file the caller has opened (`path` names it in messages).
[[nodiscard]] std::string read_opened_document(int fd, const std::string& path);

// `json` (a process document) with its top-level "execCPUAffinity" member
// replaced by `affinity` — inserted when absent, removed when `affinity` is
// nullopt or empty — and every other byte unchanged.  Set members are written
// in canonical list form; unset members are omitted.  Throws Error(EINVAL) on
// malformed JSON or a duplicated execCPUAffinity key.
[[nodiscard]] std::string process_json_with_affinity(std::string_view json,
                                                     const std::optional<ExecCpuAffinity>& affinity,
                                                     std::string_view source);

// `json` (a process document) with `prefix` inserted at the front of its
// top-level "args" array, every other byte unchanged (the emulated path runs
// the trampoline as args[0]).  Error(EINVAL) when args is not an array.
[[nodiscard]] std::string process_json_with_args_prefix(std::string_view json,
                                                        const std::vector<std::string>& prefix,
                                                        std::string_view source);

// `text` as a JSON string literal, quotes included (RFC 8259 escaping).
[[nodiscard]] std::string json_string(std::string_view text);

}  // namespace execaff
