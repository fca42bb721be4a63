// SPDX-License-Identifier: LGPL-2.1-or-later
// Whether the real runtime applies process.execCPUAffinity itself, and which
// kind of runtime it is (the native path hands it different things:
// exec_native.hpp).
//
// * The forked crun (contrib/crun) carries an ELF note, name "execaff",
//   type 1, found by reading the ELF and program headers and the note
//   segments — a few hundred bytes, whatever the binary's size.
// * Upstream runc >= 1.3.0 and crun >= 1.19 are known by the first line of
//   `<runtime> --version` ("runc version 1.3.6", "crun version 1.21").  That
//   costs an exec (1-10 ms, README "Performance"), so the answer is cached
//   per binary (native_cache.hpp), and a `--version` that does not answer
//   within 2 s is killed and means "not native".
//
// Only an exec that something opts in to ever asks (exec_command.cpp).
#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace execaff::shim {

inline constexpr const char* kNoteName = "execaff";
inline constexpr unsigned kNoteTypeExecCpuAffinity = 1;

// What the runtime is, as far as the native path cares.
enum class NativeFlavour {
  none,  // ignores the field (or unknown): the emulated path
  fork,  // execaff's forked crun: decides with libexecaff itself
  runc,  // runc >= 1.3.0: applies the field; reads config.json's when the
         // process has none (libcontainer's ExecCPUAffinity default)
  crun,  // crun >= 1.19: applies the process's field only
};
[[nodiscard]] const char* to_string(NativeFlavour flavour) noexcept;
[[nodiscard]] std::optional<NativeFlavour> native_flavour_from_string(std::string_view name);

struct NativeSupport {
  NativeFlavour flavour = NativeFlavour::none;
  std::string version;  // "1.3.6"; empty for the fork and when unknown
  // How it was found, for the debug log: `ELF note`, `"runc version 1.3.6"`,
  // `cached in /run/execaff/native`, `"native": true`.
  std::string evidence;
  // The probe failed (no answer in time, a non-zero exit): flavour none,
  // cached for kFailedProbeRetrySeconds only — a transient stall under load
  // must not make a native runtime emulated for good, and a `--version`
  // that always hangs must not cost every exec 2 s.
  bool probe_failed = false;

  [[nodiscard]] bool native() const noexcept { return flavour != NativeFlavour::none; }
};

// The oldest releases that apply the field (spec/upstream.md), and the
// highest CPU runc's parser takes (1.3 parses into a 1024-bit unix.CPUSet
// and refuses more: toCPUSet in libcontainer/configs).
inline constexpr unsigned kRuncNativeSince[3] = {1, 3, 0};
inline constexpr unsigned kCrunNativeSince[3] = {1, 19, 0};
inline constexpr unsigned kRuncMaxCpu = 1023;

// The answer a first line of `--version` gives.  Pure.  "runc version
// 1.3.6" is runc 1.3.6; a runc pre-release of the first native version
// ("1.3.0-rc.1", semver) is not native; crun's git builds ("1.19.3-e5f3":
// commits after the tag) count as the tag; build metadata ("+dev") is
// ignored.  Anything else — another runtime, an older version, a line that
// does not parse — is flavour none, with `evidence` saying why.
[[nodiscard]] NativeSupport native_support_from_version_line(std::string_view first_line);

// The numeric part of a version ("1.3.6+ds1" -> 1, 3, 6; "1.21" -> 1, 21,
// 0), or nullopt when it does not start with one.
[[nodiscard]] std::optional<std::array<unsigned, 3>> numeric_version(std::string_view version);

// True when the ELF file open at `fd` carries the fork's note.  Never
// throws: an unreadable or foreign binary simply does not carry it.
[[nodiscard]] bool runtime_has_native_mark(int fd) noexcept;
[[nodiscard]] bool runtime_has_native_mark(const std::string& binary) noexcept;

inline constexpr std::chrono::milliseconds kVersionProbeTimeout{2000};
inline constexpr long kFailedProbeRetrySeconds = 60;

// The first line `binary --version` prints on stdout, when it exits 0
// within `timeout`; stdin and stderr are /dev/null and no fd of the caller
// but those reaches it.  A probe still running at the deadline is killed
// with its whole process group (it runs in a group of its own) and gives
// nullopt, as do a failed exec, a non-zero exit and a signal.  `why` (when
// given) says what happened, for the log.  Never throws.
[[nodiscard]] std::optional<std::string> runtime_version_line(const std::string& binary,
                                                              std::chrono::milliseconds timeout,
                                                              std::string* why = nullptr) noexcept;

struct DetectOptions {
  std::string cache_path;  // "" : no cache
  std::chrono::milliseconds timeout = kVersionProbeTimeout;
  uid_t cache_owner = 0;  // the only owner a cache file may have
};

// The whole detection for `"native": "detect"`: the cache, else the ELF
// note, else `--version`; a fresh answer is stored when the binary did not
// change meanwhile.  `note` collects what the debug log should say about
// the cache (refused, not writable).  Never throws: whatever fails means
// "probe again" or "not native".
[[nodiscard]] NativeSupport detect_native_support(const std::string& binary,
                                                  const DetectOptions& options,
                                                  std::string* note = nullptr) noexcept;

}  // namespace execaff::shim
