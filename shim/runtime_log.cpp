// SPDX-License-Identifier: LGPL-2.1-or-later
#include "runtime_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string_view>

#include "json_writer.hpp"

namespace execaff::shim {
namespace {

// UTC from the calendar arithmetic of <chrono>: gmtime_r would link glibc's
// time zone code (tzset, tzfile, and through them sscanf: ~100 KB of the
// static shim's text) and read /etc/localtime on the first log line.
std::string now_rfc3339() {
  using namespace std::chrono;
  const auto now = floor<microseconds>(system_clock::now());
  const auto day = floor<days>(now);
  const year_month_day date{day};
  const hh_mm_ss<microseconds> time{now - day};
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%04d-%02u-%02uT%02d:%02d:%02d.%06lldZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                static_cast<int>(time.minutes().count()), static_cast<int>(time.seconds().count()),
                static_cast<long long>(time.subseconds().count()));
  return buffer;
}

// `text` as a JSON string literal, quotes included: logrus's text format
// quotes its values the same way.
std::string quoted_value(std::string_view text) {
  json::Writer out;
  out.string(text);
  return out.take();
}

void write_all(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n <= 0) return;  // nowhere left to report a reporting failure
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

// Errors go to stderr always (the runtimes print the plain message there
// even with --log); warnings and debug lines go to the log when there is
// one, so that a `runc exec` user's own stderr stays the program's.
void emit(const RuntimeLog& log, const char* level, const std::string& message,
          bool to_stderr = false) {
  const bool is_error = std::string_view(level) == "error";
  if (is_error || to_stderr || !log.file)
    write_all(STDERR_FILENO, "execaff-shim: " + message + "\n");
  if (!log.file) return;
  const int fd = ::open(log.file->c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const std::string text = "execaff-shim: " + message;
  std::string line;
  if (log.format && *log.format == "json") {
    json::Writer out;
    out.open_object().member("level", level).member("msg", text).member("time", now_rfc3339());
    line = out.close_object().take() + "\n";
  } else {
    line = "time=\"" + now_rfc3339() + "\" level=" + level + " msg=" + quoted_value(text) + "\n";
  }
  write_all(fd, line);
  ::close(fd);
}

}  // namespace

void RuntimeLog::error(const std::string& message) const {
  emit(*this, "error", message);
}
void RuntimeLog::warning(const std::string& message) const {
  emit(*this, "warning", message);
}
void RuntimeLog::warning_everywhere(const std::string& message) const {
  emit(*this, "warning", message, true);
}
void RuntimeLog::debug_line(const std::string& message) const {
  if (debug) emit(*this, "debug", message);
}

}  // namespace execaff::shim
