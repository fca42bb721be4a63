// SPDX-License-Identifier: LGPL-2.1-or-later
// A dynamically sized set of CPU ids and the cpuset list format
// ("0-3,7") that the runtime-spec, sysfs and cgroupfs use.  The grammar is
// spec/cpu-list.md.  Sized by the highest id it holds, never by cpu_set_t's
// 1024 bits (runc and crun both had bugs above CPU 1023).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace execaff {

class CpuSet {
 public:
  // The highest id a list may name.  Linux's NR_CPUS tops out at 8192 today;
  // 65535 leaves headroom while keeping a hostile "99999999" from allocating
  // a huge mask.
  static constexpr unsigned kMaxCpu = 65535;

  CpuSet() = default;

  // Parses a cpuset list.  "" yields an empty set (the field's "not set").
  // Throws Error(EINVAL) for a malformed list and Error(ERANGE) for an id
  // above kMaxCpu; the message quotes the list and says what is wrong where.
  [[nodiscard]] static CpuSet parse(std::string_view list);

  // A set holding exactly the given ids (each <= kMaxCpu).
  [[nodiscard]] static CpuSet of(std::initializer_list<unsigned> cpus);

  // Canonical form: ascending, runs of two or more merged as "a-b", no spaces.
  [[nodiscard]] std::string format() const;

  void add(unsigned cpu);
  void add_range(unsigned first, unsigned last);
  void remove(unsigned cpu);
  [[nodiscard]] bool contains(unsigned cpu) const noexcept;
  [[nodiscard]] bool empty() const noexcept;
  [[nodiscard]] std::size_t count() const noexcept;
  // Lowest / highest id; nullopt for the empty set.
  [[nodiscard]] std::optional<unsigned> first() const noexcept;
  [[nodiscard]] std::optional<unsigned> last() const noexcept;
  [[nodiscard]] std::vector<unsigned> ids() const;

  [[nodiscard]] CpuSet united_with(const CpuSet& other) const;
  [[nodiscard]] CpuSet intersected_with(const CpuSet& other) const;
  [[nodiscard]] CpuSet without(const CpuSet& other) const;
  [[nodiscard]] bool is_subset_of(const CpuSet& other) const noexcept;
  [[nodiscard]] bool intersects(const CpuSet& other) const noexcept;

  // The words of the mask, bit i of word w being CPU 64*w+i; trailing zero
  // words are never stored, so equal sets compare equal.
  [[nodiscard]] const std::vector<std::uint64_t>& words() const noexcept { return words_; }
  [[nodiscard]] static CpuSet from_words(std::vector<std::uint64_t> words);

  friend bool operator==(const CpuSet&, const CpuSet&) = default;

 private:
  void trim() noexcept;
  std::vector<std::uint64_t> words_;
};

}  // namespace execaff
