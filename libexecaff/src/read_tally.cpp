// SPDX-License-Identifier: LGPL-2.1-or-later
#include "read_tally.hpp"

#include "error.hpp"

namespace execaff::tally {
namespace {

struct State {
  bool on = false;
  Counts files;
  Counts documents;
  Counts skimmed;
};

State& state() {
  static State instance;
  return instance;
}

void count(Counts& counts, std::string_view name) {
  for (auto& [seen, n] : counts) {
    if (seen == name) {
      ++n;
      return;
    }
  }
  counts.emplace_back(std::string(name), 1);
}

std::string listed(const Counts& counts) {
  std::string out;
  for (const auto& [name, n] : counts) {
    out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(n);
  }
  return out.empty() ? "(none)" : out;
}

}  // namespace

void enable() {
  state() = State{true, {}, {}, {}};
}

bool enabled() noexcept {
  return state().on;
}

void file_read(std::string_view path) {
  if (state().on) count(state().files, quoted(path));
}

void json_parsed(std::string_view source) {
  if (state().on) count(state().documents, source);
}

void json_skimmed(std::string_view source) {
  if (state().on) count(state().skimmed, source);
}

const Counts& files_read() {
  return state().files;
}

const Counts& json_documents_parsed() {
  return state().documents;
}

const Counts& json_documents_skimmed() {
  return state().skimmed;
}

std::string summary() {
  return "files read: " + listed(state().files) + "; JSON parsed: " + listed(state().documents) +
         "; JSON skimmed: " + listed(state().skimmed);
}

}  // namespace execaff::tally
