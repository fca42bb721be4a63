// SPDX-License-Identifier: LGPL-2.1-or-later
#include "trace_session.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace schedtrace {
namespace {

constexpr const char* kInstancePrefix = "execaff-schedtrace.";

std::runtime_error sys_error(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::uint64_t stat_value(const std::string& stats, const std::string& key) {
  const std::size_t at = stats.find(key + ":");
  if (at == std::string::npos) return 0;
  return std::strtoull(stats.c_str() + at + key.size() + 1, nullptr, 10);
}

}  // namespace

std::string read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw sys_error("open " + path);
  std::string out;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      const auto error = sys_error("read " + path);
      ::close(fd);
      throw error;
    }
    if (n == 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

const std::vector<std::string>& TraceSession::required_events() {
  static const std::vector<std::string> events = {
      "sched/sched_switch",       "sched/sched_process_fork",  "sched/sched_process_exec",
      "sched/sched_process_exit", "cgroup/cgroup_attach_task", "task/task_newtask",
  };
  return events;
}

const std::vector<std::string>& TraceSession::optional_events() {
  static const std::vector<std::string> events = {"sched/sched_migrate_task"};
  return events;
}

std::string TraceSession::ensure_tracefs(const std::string& root) {
  if (exists(root + "/instances")) return root;
  if (!exists(root))
    throw std::runtime_error(root + " does not exist (no tracefs in this kernel?)");
  if (::mount("nodev", root.c_str(), "tracefs", 0, nullptr) != 0) {
    throw sys_error("mount -t tracefs nodev " + root);
  }
  if (!exists(root + "/instances")) throw std::runtime_error(root + ": tracefs has no instances/");
  return root;
}

void TraceSession::remove_stale_instances(const std::string& root) {
  DIR* dir = ::opendir((root + "/instances").c_str());
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.rfind(kInstancePrefix, 0) != 0) continue;
    // "<prefix><pid>" and "<prefix><pid>-migrations"
    const long pid = std::strtol(name.c_str() + std::strlen(kInstancePrefix), nullptr, 10);
    if (pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH)) continue;
    (void)::rmdir((root + "/instances/" + name).c_str());
  }
  ::closedir(dir);
}

// Common settings of both instances.  A new instance starts with tracing
// on and every event off.
void TraceSession::configure(const std::string& dir, unsigned buffer_kb) {
  write_in(dir, "tracing_on", "0");
  write_in(dir, "set_event", "");
  write_in(dir, "buffer_size_kb", std::to_string(buffer_kb));
  write_in(dir, "trace_clock", "global");
  // Plain header: no irq-info column, no tgid column.
  write_in(dir, "options/irq-info", "0");
  write_in(dir, "options/record-tgid", "0");
}

TraceSession::TraceSession(const std::string& tracefs_root, unsigned buffer_kb_per_cpu) {
  const std::string base =
      tracefs_root + "/instances/" + kInstancePrefix + std::to_string(::getpid());
  dir_ = base;
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) throw sys_error("mkdir " + dir_);
  try {
    configure(dir_, buffer_kb_per_cpu);
    write("options/event-fork", "1");
    for (const std::string& event : required_events()) {
      if (!exists(dir_ + "/events/" + event)) {
        throw std::runtime_error("tracepoint " + event + " is missing in this kernel");
      }
      write("events/" + event + "/enable", "1");
    }
    bool have_optional = false;
    for (const std::string& event : optional_events()) {
      if (exists(dir_ + "/events/" + event)) {
        have_optional = true;
      } else {
        missing_optional_.push_back(event);
      }
    }
    if (have_optional) {
      migrations_dir_ = base + "-migrations";
      if (::mkdir(migrations_dir_.c_str(), 0700) != 0 && errno != EEXIST) {
        throw sys_error("mkdir " + migrations_dir_);
      }
      configure(migrations_dir_, std::max(256u, buffer_kb_per_cpu / 4));
      for (const std::string& event : optional_events()) {
        if (exists(migrations_dir_ + "/events/" + event)) {
          write_in(migrations_dir_, "events/" + event + "/enable", "1");
        }
      }
    }
    marker_fd_ = ::open((dir_ + "/trace_marker").c_str(), O_WRONLY | O_CLOEXEC);
  } catch (...) {
    if (!migrations_dir_.empty()) (void)::rmdir(migrations_dir_.c_str());
    (void)::rmdir(dir_.c_str());
    throw;
  }
}

TraceSession::~TraceSession() {
  if (marker_fd_ >= 0) ::close(marker_fd_);
  for (const std::string& dir : {dir_, migrations_dir_}) {
    if (dir.empty()) continue;
    try {
      write_in(dir, "tracing_on", "0");
      write_in(dir, "set_event", "");
      write_in(dir, "set_event_pid", "");
    } catch (const std::exception&) {
    }
    // An instance can only be removed once nothing holds a file of it open.
    (void)::rmdir(dir.c_str());
  }
}

void TraceSession::write_in(const std::string& dir, const std::string& file,
                            const std::string& value, bool append) {
  const std::string path = dir + "/" + file;
  // O_TRUNC: on `trace` it empties the ring buffer, on set_event and
  // set_event_pid it replaces the list instead of appending to it.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
  if (fd < 0) throw sys_error("open " + path);
  const std::string text = value.empty() ? std::string() : value + "\n";
  const ssize_t n = text.empty() ? 0 : ::write(fd, text.data(), text.size());
  const int code = errno;
  ::close(fd);
  if (n < 0 || static_cast<std::size_t>(n) != text.size()) {
    errno = n < 0 ? code : EIO;
    throw sys_error("write \"" + value + "\" to " + path);
  }
}

void TraceSession::prepare(int pid) {
  for (const std::string& dir : {dir_, migrations_dir_}) {
    if (dir.empty()) continue;
    write_in(dir, "tracing_on", "0");
    write_in(dir, "trace", "");
  }
  write_in(dir_, "set_event_pid", std::to_string(pid), true);
}

void TraceSession::follow(const std::vector<int>& tids) {
  std::string list;
  for (const int tid : tids) list += (list.empty() ? "" : " ") + std::to_string(tid);
  if (!list.empty()) write_in(dir_, "set_event_pid", list, true);
}

void TraceSession::start() {
  // Migrations first: nothing the COMMAND does can fall between the two.
  if (!migrations_dir_.empty()) write_in(migrations_dir_, "tracing_on", "1");
  write("tracing_on", "1");
}

void TraceSession::stop() {
  write("tracing_on", "0");
  if (!migrations_dir_.empty()) write_in(migrations_dir_, "tracing_on", "0");
}

void TraceSession::mark(const std::string& text) {
  if (marker_fd_ < 0) return;
  (void)!::write(marker_fd_, text.data(), text.size());
}

std::string TraceSession::read_trace() const {
  std::string text = read_file(dir_ + "/trace");
  if (!migrations_dir_.empty()) text += read_file(migrations_dir_ + "/trace");
  return text;
}

BufferLoss TraceSession::loss() const {
  BufferLoss loss;
  for (const std::string& instance : {dir_, migrations_dir_}) {
    if (instance.empty()) continue;
    DIR* dir = ::opendir((instance + "/per_cpu").c_str());
    if (dir == nullptr) continue;
    while (const dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      if (name.rfind("cpu", 0) != 0) continue;
      try {
        const std::string stats = read_file(instance + "/per_cpu/" + name + "/stats");
        loss.overrun += stat_value(stats, "overrun");
        loss.dropped += stat_value(stats, "dropped events");
      } catch (const std::exception&) {
      }
    }
    ::closedir(dir);
  }
  return loss;
}

}  // namespace schedtrace
