// SPDX-License-Identifier: LGPL-2.1-or-later
// What this process has read and parsed, counted per file and per JSON
// document, for the shim's debug line and the tests that hold us to
// "each document is parsed once per exec" (issue 18).  Off unless enabled:
// when off, each read costs one test of a flag and nothing else.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace execaff::tally {

// Starts counting (and forgets earlier counts).
void enable();
[[nodiscard]] bool enabled() noexcept;

// Called by the one file reader and the one JSON reader.
void file_read(std::string_view path);
void json_parsed(std::string_view source);
// A document passed over by json::skim (json_reader.hpp), its few values
// parsed: counted apart from the documents parsed whole.
void json_skimmed(std::string_view source);

// {name, count} in the order first seen.
using Counts = std::vector<std::pair<std::string, unsigned>>;
[[nodiscard]] const Counts& files_read();
[[nodiscard]] const Counts& json_documents_parsed();
[[nodiscard]] const Counts& json_documents_skimmed();

// One line: `files read: "/proc/1/cgroup" x1, ...; JSON parsed: process file "/p.json" x1, ...;
// JSON skimmed: config "/b/config.json" x1, ...`.
[[nodiscard]] std::string summary();

}  // namespace execaff::tally
