// SPDX-License-Identifier: LGPL-2.1-or-later
// The OCI documents execaff reads — an exec's process file and a bundle's
// config.json — each parsed once (json_reader.hpp) into the typed struct
// below, which then travels: the decision, the program look-up, the
// pre-flight and the rewrite of the process file all read the struct, never
// the text again.  No syscalls here.
//
// What the decision reads (execCPUAffinity, annotations, the cpuset) is
// checked strictly: a wrong type, a bad CPU list or a duplicated key
// refuses the document.  What only some paths read (args/env/cwd for the
// emulated path, capabilities for `execaff explain`, the pre-flight's view)
// keeps its first problem beside it instead: an exec that opts in to
// nothing must reach the runtime as it came, and the runtime reports its
// own errors.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cpu_set.hpp"
#include "error.hpp"
#include "json_value.hpp"
#include "json_writer.hpp"

namespace execaff {

// process.execCPUAffinity (runtime-spec config.md, v1.2.1+).  A member that
// is absent, null or "" is nullopt: "not set".
struct ExecCpuAffinity {
  std::optional<CpuSet> initial;
  std::optional<CpuSet> final;

  [[nodiscard]] bool empty() const noexcept { return !initial && !final; }
  friend bool operator==(const ExecCpuAffinity&, const ExecCpuAffinity&) = default;
};

// What the runtime will start: process.args, env and cwd.  Absent or null
// members are empty.
struct ProcessLaunch {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string cwd;
  // The first wrong type or duplicated member among the three, the source
  // in front (`process file "/p": process.args[1]: expected a string, ...`).
  std::optional<Error> problem;

  // *this, or Error(EINVAL) with the problem.
  [[nodiscard]] const ProcessLaunch& checked() const;
};

// process.capabilities and process.noNewPrivileges, as written (names are
// not checked here).
struct ProcessCapabilities {
  std::vector<std::string> effective;
  std::vector<std::string> permitted;
  std::vector<std::string> inheritable;
  std::vector<std::string> bounding;
  std::vector<std::string> ambient;
  bool no_new_privileges = false;  // true only for a JSON true
  std::optional<Error> problem;    // the first wrong type
};

// An OCI process object: an exec's process file, or config.json's process.
struct ProcessObject {
  // nullopt when the field is absent, null, or has neither member set.
  std::optional<ExecCpuAffinity> affinity;
  ProcessLaunch launch;
  ProcessCapabilities capabilities;
};

// Where the top-level members of a process file are, in bytes, so that it
// can be rewritten without being parsed again (process_rewrite.cpp).  Each
// span runs from the member's key to the end of its value.
struct MemberSpan {
  std::size_t key_begin = 0;
  std::size_t value_begin = 0;
  std::size_t value_end = 0;
};
struct ProcessLayout {
  std::size_t open = 0;                 // the top-level '{'
  std::size_t first = 0;                // the first byte after it that is not space: a key or '}'
  std::size_t close = 0;                // the top-level '}'
  std::vector<MemberSpan> members;      // in document order
  std::optional<std::size_t> affinity;  // index into members of execCPUAffinity
  std::optional<std::size_t> args;      // and of args
};

// An exec's process file: the process object at the top level.
struct ProcessDocument : ProcessObject {
  std::string source;  // names it in messages: `process file "/tmp/exec-1"`
  std::string text;    // as read, for the rewrite
  ProcessLayout layout;
};

// linux.seccomp as written, for the pre-flight (preflight/seccomp_profile.hpp
// builds it with libseccomp).  Numbers are unsigned 64-bit integers.
struct SeccompArgument {
  std::optional<std::uint64_t> index;
  std::string op;
  std::optional<std::uint64_t> value;
  std::optional<std::uint64_t> value_two;
};
struct SeccompRule {
  std::vector<std::string> names;
  bool names_given = false;  // names is an array (else `name` counts)
  std::string name;          // runtime-spec before 1.0.0-rc5
  std::string action;
  std::optional<std::uint64_t> errno_ret;
  std::vector<SeccompArgument> args;
};
struct SeccompProfile {
  std::string default_action;
  std::optional<std::uint64_t> default_errno_ret;
  std::vector<std::string> architectures;
  std::vector<std::string> flags;
  std::vector<SeccompRule> syscalls;
  // The first wrong type or duplicated key: the profile cannot be judged
  // (a failed, non-blocking pre-flight check; the runtime refuses it).
  std::optional<Error> problem;
};

// A bundle's config.json.
struct ConfigDocument {
  std::string source;  // `config "/b/config.json"`
  // False for parse_config_decision_view's document: only the members the
  // decision reads were read (process.execCPUAffinity, annotations,
  // linux.resources.cpu.cpus); everything else is at its default.
  bool whole = true;
  ProcessObject process;
  std::map<std::string, std::string> annotations;  // string values
  std::optional<CpuSet> cpuset;                    // linux.resources.cpu.cpus
  std::string cgroups_path;                        // linux.cgroupsPath
  // The pre-flight's view: linux.seccomp (nullopt when absent or null), and
  // whether mounts holds a proc file system at /proc.
  std::optional<SeccompProfile> seccomp;
  bool mounts_proc = false;
  // The process object as written (null when absent): runc's CLI form of
  // exec starts from a copy of it (shim/cli_process.hpp).  Its strings are
  // views into process_text, which the document shares with its copies.
  json::Value process_as_written;
  std::shared_ptr<const json::ValueText> process_text;
};

// Parse a process document (the top level is the process object) read
// from `source`.  Throws Error(EINVAL) naming the source, the JSON path and
// the value on malformed JSON, a non-object, a wrong type, a duplicated key
// or a bad CPU list in execCPUAffinity.
[[nodiscard]] ProcessDocument parse_process_document(std::string_view text,
                                                     std::string_view source);

// Parse a config.json (the process object is under "process").  Throws
// the same errors, for execCPUAffinity, annotations, linux.resources.cpu.cpus
// and linux.cgroupsPath.  Without `keep_process_as_written`,
// process_as_written stays null and process_text empty: an exec given a
// process file (--process, CRI-O's and containerd's form) never converts
// the CLI form, and building the tree was a quarter of the parse's work.
[[nodiscard]] ConfigDocument parse_config_document(std::string_view text, std::string_view source,
                                                   bool keep_process_as_written = true);

// What the decision reads of a config.json, by a skim (json::skim): the
// bytes of process.execCPUAffinity, annotations and
// linux.resources.cpu.cpus, read by the handlers parse_config_document
// reads them with, so their values and errors are the same.  The rest of
// the document is checked for structure only (json_reader.hpp).  Where
// the skim does not judge the text, or a member on the way is null or not
// an object, the whole document is parsed instead (`whole` is then true):
// its errors are parse_config_document's (`keep_process_as_written` is
// passed on).  For an exec that is not pinned or goes native with a
// process file, nothing else of config.json is used.
[[nodiscard]] ConfigDocument parse_config_decision_view(std::string_view text,
                                                        std::string_view source,
                                                        bool keep_process_as_written);

// A CPU list a runtime has already read from a document at `path` (the C
// ABI's typed request, EXECAFF_1.2): "" is not set, as in a document.
// Throws what the document reader throws for the same string value:
// Error(EINVAL) `<source>: <path>: invalid CPU list ...`, EINVAL also for an
// id above CpuSet::kMaxCpu.
[[nodiscard]] std::optional<CpuSet> parse_cpu_list_member(std::string_view text,
                                                          std::string_view source,
                                                          std::string_view path);

// execCPUAffinity from its two lists, each as above under `path`.initial and
// `path`.final: nullopt when neither is set, as for the document.
[[nodiscard]] std::optional<ExecCpuAffinity> parse_affinity_members(std::string_view initial,
                                                                    std::string_view final,
                                                                    std::string_view source,
                                                                    std::string_view path);

// A seccomp profile alone (the object linux.seccomp holds), for tests and
// the fuzzer; errors as in ConfigDocument::seccomp, kept in `problem`.
// Malformed JSON throws.
[[nodiscard]] SeccompProfile parse_seccomp_profile(std::string_view text, std::string_view source);

// The process file with its top-level "execCPUAffinity" member replaced by
// `affinity` — inserted first when absent, removed when `affinity` is
// nullopt or empty — and `args_prefix` inserted at the front of its "args"
// (the emulated path runs the trampoline as args[0]); every other byte as
// it was.  Set members are written in canonical list form; unset ones are
// omitted.  Error(EINVAL) when a prefix is given and args is not an array.
[[nodiscard]] std::string rewritten_process(const ProcessDocument& document,
                                            const std::optional<ExecCpuAffinity>& affinity,
                                            const std::vector<std::string>& args_prefix = {});

// `affinity` as an execCPUAffinity object: the members that are set, in
// the spec's order, as canonical lists.
void write_exec_cpu_affinity(json::Writer& out, const ExecCpuAffinity& affinity);

// The same on text that may not be a valid process document otherwise (its
// old execCPUAffinity is replaced, not judged): the C ABI's
// execaff_process_json_with_decision.  Error(EINVAL) for malformed JSON, a
// non-object or a duplicated execCPUAffinity key.
[[nodiscard]] std::string process_json_with_affinity(std::string_view text,
                                                     const std::optional<ExecCpuAffinity>& affinity,
                                                     std::string_view source);

}  // namespace execaff
