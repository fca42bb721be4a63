// SPDX-License-Identifier: LGPL-2.1-or-later
#include "cpu_set.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>

#include "error.hpp"

namespace execaff {
namespace {

constexpr unsigned kWordBits = 64;

[[noreturn]] void reject(std::string_view list, int code, const std::string& why) {
  throw Error(code, "invalid CPU list " + quoted(list) + ": " + why);
}

// A decimal CPU id: digits only (no sign, no "0x"), at most kMaxCpu.
// `item_offset` is where the item starts in `list`, `digits_offset` where
// these digits do: a malformed item is reported where it starts, an id out
// of range where that id is ("0-99999": CPU 99999 at offset 2).
unsigned parse_id(std::string_view list, std::string_view item, std::string_view digits,
                  std::size_t item_offset, std::size_t digits_offset) {
  if (digits.empty() ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    reject(list, EINVAL,
           "item " + quoted(item) + " at offset " + std::to_string(item_offset) +
               " is not a CPU number or a range of them");
  }
  unsigned long value = 0;
  for (const char c : digits) {
    value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > CpuSet::kMaxCpu) {
      reject(list, ERANGE,
             "CPU " + std::string(digits) + " at offset " + std::to_string(digits_offset) +
                 " is above the highest supported id " + std::to_string(CpuSet::kMaxCpu));
    }
  }
  return static_cast<unsigned>(value);
}

}  // namespace

CpuSet CpuSet::parse(std::string_view list) {
  CpuSet set;
  if (list.empty()) return set;

  bool saw_item = false;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    std::string_view item = list.substr(start, comma - start);
    std::size_t offset = start;
    // The schema (^[0-9, -]*$) admits spaces; we accept them around items
    // only, so "0-3, 8" is a list and "1 2" is not.
    while (!item.empty() && item.front() == ' ') {
      item.remove_prefix(1);
      ++offset;
    }
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);

    if (!item.empty()) {
      saw_item = true;
      const std::size_t dash = item.find('-');
      if (dash == std::string_view::npos) {
        set.add(parse_id(list, item, item, offset, offset));
      } else {
        const unsigned lo = parse_id(list, item, item.substr(0, dash), offset, offset);
        const unsigned hi = parse_id(list, item, item.substr(dash + 1), offset, offset + dash + 1);
        if (lo > hi) {
          reject(
              list, EINVAL,
              "range " + quoted(item) + " at offset " + std::to_string(offset) + " runs backwards");
        }
        set.add_range(lo, hi);
      }
    }
    start = comma + 1;
  }
  if (!saw_item) reject(list, EINVAL, "it names no CPU");
  return set;
}

CpuSet CpuSet::of(std::initializer_list<unsigned> cpus) {
  CpuSet set;
  for (const unsigned cpu : cpus) set.add(cpu);
  return set;
}

std::string CpuSet::format() const {
  std::string out;
  const auto all = ids();
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j + 1 < all.size() && all[j + 1] == all[j] + 1) ++j;
    if (!out.empty()) out.push_back(',');
    out += std::to_string(all[i]);
    if (j > i) {
      out.push_back('-');
      out += std::to_string(all[j]);
    }
    i = j + 1;
  }
  return out;
}

void CpuSet::add(unsigned cpu) {
  if (cpu > kMaxCpu) {
    throw Error(ERANGE, "CPU " + std::to_string(cpu) + " is above the highest supported id " +
                            std::to_string(kMaxCpu));
  }
  const std::size_t word = cpu / kWordBits;
  if (words_.size() <= word) words_.resize(word + 1, 0);
  words_[word] |= std::uint64_t{1} << (cpu % kWordBits);
}

void CpuSet::add_range(unsigned first, unsigned last) {
  for (unsigned cpu = first; cpu <= last; ++cpu) add(cpu);
}

void CpuSet::remove(unsigned cpu) {
  const std::size_t word = cpu / kWordBits;
  if (word >= words_.size()) return;
  words_[word] &= ~(std::uint64_t{1} << (cpu % kWordBits));
  trim();
}

bool CpuSet::contains(unsigned cpu) const noexcept {
  const std::size_t word = cpu / kWordBits;
  return word < words_.size() && ((words_[word] >> (cpu % kWordBits)) & 1U) != 0;
}

bool CpuSet::empty() const noexcept {
  return words_.empty();
}

std::size_t CpuSet::count() const noexcept {
  std::size_t n = 0;
  for (const auto w : words_) n += static_cast<std::size_t>(std::popcount(w));
  return n;
}

std::optional<unsigned> CpuSet::first() const noexcept {
  for (std::size_t w = 0; w < words_.size(); ++w) {
    if (words_[w] != 0) return static_cast<unsigned>(w * kWordBits + std::countr_zero(words_[w]));
  }
  return std::nullopt;
}

std::optional<unsigned> CpuSet::last() const noexcept {
  if (words_.empty()) return std::nullopt;
  const std::size_t w = words_.size() - 1;
  return static_cast<unsigned>(w * kWordBits + (kWordBits - 1 - std::countl_zero(words_[w])));
}

std::vector<unsigned> CpuSet::ids() const {
  std::vector<unsigned> out;
  out.reserve(count());
  for (std::size_t w = 0; w < words_.size(); ++w) {
    std::uint64_t bits = words_[w];
    while (bits != 0) {
      out.push_back(static_cast<unsigned>(w * kWordBits + std::countr_zero(bits)));
      bits &= bits - 1;
    }
  }
  return out;
}

CpuSet CpuSet::united_with(const CpuSet& other) const {
  CpuSet out = *this;
  if (out.words_.size() < other.words_.size()) out.words_.resize(other.words_.size(), 0);
  for (std::size_t w = 0; w < other.words_.size(); ++w) out.words_[w] |= other.words_[w];
  return out;
}

CpuSet CpuSet::intersected_with(const CpuSet& other) const {
  CpuSet out;
  out.words_.resize(std::min(words_.size(), other.words_.size()), 0);
  for (std::size_t w = 0; w < out.words_.size(); ++w) out.words_[w] = words_[w] & other.words_[w];
  out.trim();
  return out;
}

CpuSet CpuSet::without(const CpuSet& other) const {
  CpuSet out = *this;
  for (std::size_t w = 0; w < std::min(out.words_.size(), other.words_.size()); ++w) {
    out.words_[w] &= ~other.words_[w];
  }
  out.trim();
  return out;
}

bool CpuSet::is_subset_of(const CpuSet& other) const noexcept {
  for (std::size_t w = 0; w < words_.size(); ++w) {
    const std::uint64_t theirs = w < other.words_.size() ? other.words_[w] : 0;
    if ((words_[w] & ~theirs) != 0) return false;
  }
  return true;
}

bool CpuSet::intersects(const CpuSet& other) const noexcept {
  for (std::size_t w = 0; w < std::min(words_.size(), other.words_.size()); ++w) {
    if ((words_[w] & other.words_[w]) != 0) return true;
  }
  return false;
}

CpuSet CpuSet::from_words(std::vector<std::uint64_t> words) {
  CpuSet out;
  out.words_ = std::move(words);
  out.trim();
  if (const auto top = out.last(); top && *top > kMaxCpu) {
    throw Error(ERANGE, "CPU " + std::to_string(*top) + " is above the highest supported id " +
                            std::to_string(kMaxCpu));
  }
  return out;
}

void CpuSet::trim() noexcept {
  while (!words_.empty() && words_.back() == 0) words_.pop_back();
}

}  // namespace execaff
