// SPDX-License-Identifier: LGPL-2.1-or-later
#include "cpu_list.hpp"

#include <charconv>
#include <stdexcept>

namespace schedtrace {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

unsigned parse_cpu(std::string_view s, std::string_view whole) {
  s = trimmed(s);
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || value > CpuList::kMaxCpu) {
    throw std::invalid_argument("not a cpu list: \"" + std::string(whole) + "\"");
  }
  return value;
}

}  // namespace

CpuList CpuList::parse(std::string_view text) {
  const std::string_view whole = text;
  text = trimmed(text);
  CpuList list;
  if (text == "any") return any();
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const std::size_t dash = item.find('-');
    const unsigned lo = parse_cpu(item.substr(0, dash), whole);
    const unsigned hi =
        dash == std::string_view::npos ? lo : parse_cpu(item.substr(dash + 1), whole);
    if (hi < lo)
      throw std::invalid_argument("descending range in cpu list \"" + std::string(whole) + "\"");
    for (unsigned cpu = lo; cpu <= hi; ++cpu) list.add(cpu);
    if (comma != std::string_view::npos && trimmed(text).empty()) {
      throw std::invalid_argument("trailing comma in cpu list \"" + std::string(whole) + "\"");
    }
  }
  return list;
}

CpuList CpuList::any() {
  CpuList list;
  list.any_ = true;
  return list;
}

CpuList CpuList::of(std::initializer_list<unsigned> cpus) {
  CpuList list;
  for (unsigned cpu : cpus) list.add(cpu);
  return list;
}

void CpuList::add(unsigned cpu) {
  if (cpu >= bits_.size()) bits_.resize(cpu + 1, false);
  bits_[cpu] = true;
}

bool CpuList::contains(unsigned cpu) const {
  return any_ || (cpu < bits_.size() && bits_[cpu]);
}

bool CpuList::empty() const {
  if (any_) return false;
  for (bool b : bits_) {
    if (b) return false;
  }
  return true;
}

std::vector<unsigned> CpuList::cpus() const {
  std::vector<unsigned> out;
  for (unsigned cpu = 0; cpu < bits_.size(); ++cpu) {
    if (bits_[cpu]) out.push_back(cpu);
  }
  return out;
}

std::string CpuList::format() const {
  if (any_) return "any";
  std::string out;
  const std::vector<unsigned> all = cpus();
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j + 1 < all.size() && all[j + 1] == all[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(all[i]);
    if (j > i) out += '-' + std::to_string(all[j]);
    i = j + 1;
  }
  return out;
}

CpuList CpuList::united_with(const CpuList& other) const {
  if (any_ || other.any_) return any();
  CpuList out = *this;
  for (unsigned cpu : other.cpus()) out.add(cpu);
  return out;
}

}  // namespace schedtrace
