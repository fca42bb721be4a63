// SPDX-License-Identifier: LGPL-2.1-or-later
// Messages in the runtime's own log format, so podman, conmon and CRI-O show
// the shim's errors where they show the runtime's: with --log FILE, a line
// appended to FILE (--log-format json: {"level","msg","time"}; text: runc's
// `time="…" level=error msg="…"`), and the plain message on stderr.
#pragma once

#include <optional>
#include <string>

namespace execaff::shim {

struct RuntimeLog {
  std::optional<std::string> file;
  std::optional<std::string> format;  // "json" or "text"
  bool debug = false;

  void error(const std::string& message) const;
  void warning(const std::string& message) const;
  // On stderr even with --log: for what the person who started the
  // container or the exec must see (an exec run unpinned, an annotation
  // every exec will refuse), not only the node's log.
  void warning_everywhere(const std::string& message) const;
  // Only with --debug or the config's "debug".
  void debug_line(const std::string& message) const;
};

}  // namespace execaff::shim
