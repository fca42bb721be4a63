// SPDX-License-Identifier: LGPL-2.1-or-later
// CpuList: the kernel's cpu list format ("0-3,7"), as used by cpuset.cpus,
// /sys/devices/system/cpu/isolated and the harness's command line.  The
// harness keeps its own small copy (rather than linking libexecaff) so that
// it stays a libc/libstdc++-only binary that runs in the VM's initramfs and
// so that it does not share code with what it is proving.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace schedtrace {

class CpuList {
 public:
  // The highest CPU id accepted; far above any machine this runs on.
  static constexpr unsigned kMaxCpu = 65535;

  CpuList() = default;

  // "0-3,7", "" (empty) or "any" (every CPU).  Spaces around items are
  // accepted, as in the OCI schema.  Throws std::invalid_argument.
  static CpuList parse(std::string_view text);
  static CpuList any();
  static CpuList of(std::initializer_list<unsigned> cpus);

  bool contains(unsigned cpu) const;
  bool is_any() const { return any_; }
  bool empty() const;
  // Canonical form: "0-3,7", "any", or "" for the empty list.
  std::string format() const;
  CpuList united_with(const CpuList& other) const;
  std::vector<unsigned> cpus() const;  // not for "any"

  bool operator==(const CpuList& other) const = default;

 private:
  void add(unsigned cpu);
  std::vector<bool> bits_;
  bool any_ = false;
};

}  // namespace schedtrace
