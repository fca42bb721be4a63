// SPDX-License-Identifier: LGPL-2.1-or-later
// Whether the real runtime applies process.execCPUAffinity itself.  The
// forked crun (contrib/crun) carries an ELF note, name "execaff", type 1,
// found by reading the ELF and program headers and the note segments —
// a few hundred bytes, whatever the binary's size.  Running `crun --version`
// instead costs 3.5 ms, seven times the shim's whole budget.  Upstream runc
// >= 1.3.0, crun >= 1.19 and youki >= 0.5.4 are declared with "native": true.
#pragma once

#include <string>

namespace execaff::shim {

inline constexpr const char* kNoteName = "execaff";
inline constexpr unsigned kNoteTypeExecCpuAffinity = 1;

// True when `binary` is an ELF file carrying the note.  Never throws: an
// unreadable or foreign binary simply does not carry it.
[[nodiscard]] bool runtime_has_native_mark(const std::string& binary) noexcept;

}  // namespace execaff::shim
