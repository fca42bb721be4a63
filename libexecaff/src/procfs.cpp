// SPDX-License-Identifier: LGPL-2.1-or-later
#include "procfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <utility>

#include "error.hpp"

namespace execaff {
namespace {

// ---- /proc/self/mountinfo ------------------------------------------------

// mountinfo writes ' ', '\t', '\n' and '\\' in paths as "\ooo" (octal).
std::string unescape_mountinfo(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && field.size() - i > 3) {
      const char a = field[i + 1];
      const char b = field[i + 2];
      const char c = field[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// One line of mountinfo, as views into its text; the two paths are still
// escaped ("\\040" for a space), which compares just as well.
struct Mount {
  std::string_view root;         // the part of the filesystem mounted (field 4)
  std::string_view mount_point;  // field 5
  std::string_view fstype;
  std::string_view super_options;
};

// The lines of mountinfo (proc(5)): "id parent major:minor root mount-point
// options [optional fields...] - fstype source super-options".
std::vector<Mount> parse_mountinfo(const std::string& path, std::string_view text) {
  std::vector<Mount> mounts;
  std::size_t line_number = 0;
  Parts lines(text, '\n');
  while (const auto line = lines.next()) {
    ++line_number;
    if (line->empty()) continue;
    // Fields 4 and 5, then the "-" that ends the optional fields (from the
    // seventh on), then fstype, source and super options.
    std::string_view fields[4];
    std::size_t index = 0;
    std::size_t after_separator = 0;  // fields seen after "-"
    Parts words(*line, ' ');
    while (const auto word = words.next()) {
      if (index == 3) fields[0] = *word;
      if (index == 4) fields[1] = *word;
      if (after_separator > 0) {
        if (after_separator == 1) fields[2] = *word;
        if (after_separator == 3) fields[3] = *word;
        ++after_separator;
      } else if (index >= 6 && *word == "-") {
        after_separator = 1;
      }
      ++index;
    }
    if (after_separator < 4) {
      throw Error(EINVAL, path + ": line " + std::to_string(line_number) + " " + quoted(*line) +
                              " is not \"id parent dev root mount-point options ... - fstype "
                              "source super-options\"");
    }
    mounts.push_back({fields[0], fields[1], fields[2], fields[3]});
  }
  return mounts;
}

// Whether a mount listed later sits on the same mount point and hides this
// one, as a tmpfs over a cgroup mount would.
bool is_covered(const std::vector<Mount>& mounts, std::size_t index) {
  for (std::size_t later = index + 1; later < mounts.size(); ++later) {
    if (mounts[later].mount_point == mounts[index].mount_point) return true;
  }
  return false;
}

// The directory of cgroup `cgroup_path` through `mount`, or nullopt when
// the mount shows another part of the hierarchy: a container's cgroup mount
// has the container's own cgroup as its root (field 4).  Both paths are
// relative to our cgroup namespace; a path going up ("/../x") lies outside
// it and so outside every mount we can see.
std::optional<std::string> cgroup_dir(const Mount& mount, std::string_view cgroup_path) {
  if (cgroup_path.empty() || cgroup_path.front() != '/' || cgroup_path_goes_up(cgroup_path)) {
    return std::nullopt;
  }
  const std::string root = unescape_mountinfo(mount.root);
  std::string_view mount_root = root;
  while (!mount_root.empty() && mount_root.back() == '/') mount_root.remove_suffix(1);
  std::string_view relative = cgroup_path;
  if (!mount_root.empty()) {
    if (cgroup_path.substr(0, mount_root.size()) != mount_root) return std::nullopt;
    relative = cgroup_path.substr(mount_root.size());
    if (!relative.empty() && relative.front() != '/') return std::nullopt;
  }
  return join_path(unescape_mountinfo(mount.mount_point), relative);
}

std::vector<CgroupLine> parse_pid_cgroup(const std::string& path, std::string_view text) {
  std::vector<CgroupLine> lines;
  std::size_t line_number = 0;
  Parts text_lines(text, '\n');
  while (const auto next_line = text_lines.next()) {
    const std::string_view line = *next_line;
    ++line_number;
    if (line.empty()) continue;
    // The path is last and may itself hold ':'.
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      throw Error(EINVAL, path + ": line " + std::to_string(line_number) + " " + quoted(line) +
                              " is not \"hierarchy-ID:controller-list:path\"");
    }
    lines.push_back({line.substr(0, first), line.substr(first + 1, second - first - 1),
                     line.substr(second + 1)});
  }
  return lines;
}

[[noreturn]] void throw_read_error(const std::string& path, int code) {
  throw Error(code, path + ": " + errno_text(code));
}

}  // namespace

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view trim_trailing_space(std::string_view text) noexcept {
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

std::string_view trim_space(std::string_view text) noexcept {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  return trim_trailing_space(text);
}

std::optional<std::string_view> Parts::next() noexcept {
  if (done_) return std::nullopt;
  const std::size_t end = rest_.find(separator_);
  if (end == std::string_view::npos) {
    done_ = true;
    return rest_;
  }
  const std::string_view part = rest_.substr(0, end);
  rest_.remove_prefix(end + 1);
  return part;
}

bool contains_item(std::string_view list, std::string_view item, char separator) {
  Parts parts(list, separator);
  while (const auto part = parts.next()) {
    if (*part == item) return true;
  }
  return false;
}

std::string join_path(std::string_view a, std::string_view b) {
  while (!a.empty() && a.back() == '/') a.remove_suffix(1);
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  std::string out(a);
  out.push_back('/');
  out += b;
  return out;
}

std::string under_root(std::string_view root, std::string_view path) {
  while (!root.empty() && root.back() == '/') root.remove_suffix(1);
  if (root.empty()) return std::string(path);
  return join_path(root, path);
}

int read_whole_file(const std::string& path, std::string& out) {
  return try_read_file(path, out, kMaxKernelFileBytes);
}

std::optional<std::string> read_optional_file(const std::string& path) {
  std::string text;
  const int code = read_whole_file(path, text);
  if (code == ENOENT || code == ENOTDIR) return std::nullopt;
  if (code != 0) throw_read_error(path, code);
  text.resize(trim_trailing_space(text).size());
  return text;
}

std::optional<std::string> read_file_if_readable(const std::string& path) {
  std::string text;
  if (read_whole_file(path, text) != 0) return std::nullopt;
  return text;
}

std::vector<long> numeric_entries(const std::string& dir_path) {
  std::vector<long> out;
  const std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(dir_path.c_str()), ::closedir);
  if (!dir) return out;
  while (const dirent* entry = ::readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    if (name.empty() || name.size() > 9 ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      continue;
    }
    out.push_back(std::stol(std::string(name)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string_view> status_field(std::string_view status, std::string_view key) {
  Parts lines(status, '\n');
  while (const auto line = lines.next()) {
    if (line->size() > key.size() && line->substr(0, key.size()) == key &&
        (*line)[key.size()] == ':') {
      return trim_space(line->substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

bool cgroup_path_goes_up(std::string_view cgroup_path) {
  Parts parts(cgroup_path, '/');
  while (const auto part = parts.next()) {
    if (*part == "..") return true;
  }
  return false;
}

std::string ControllerCgroup::file(std::string_view name) const {
  return join_path(dir, file_prefix + std::string(name));
}

ProcessCgroups::ProcessCgroups(std::string root, pid_t pid) : root_(std::move(root)), pid_(pid) {
  if (pid <= 0) throw Error(EINVAL, "invalid pid " + std::to_string(pid));
  const std::string path = under_root(root_, "/proc/" + std::to_string(pid) + "/cgroup");
  if (const int code = read_whole_file(path, text_); code != 0) {
    // ESRCH: the task died between open and read.
    if (code == ENOENT || code == ESRCH) {
      throw Error(ESRCH, "container process " + std::to_string(pid) + " is gone: " + path + ": " +
                             errno_text(code));
    }
    throw_read_error(path, code);
  }
  lines_ = parse_pid_cgroup(path, text_);
}

std::optional<ControllerCgroup> ProcessCgroups::controller_cgroup(
    std::string_view controller) const {
  const std::string mountinfo_path = under_root(root_, "/proc/self/mountinfo");
  std::string mountinfo_text;
  if (const int code = read_whole_file(mountinfo_path, mountinfo_text); code != 0) {
    throw_read_error(mountinfo_path, code);
  }
  const std::vector<Mount> mounts = parse_mountinfo(mountinfo_path, mountinfo_text);

  // cgroup v1: the hierarchy that carries the controller, when mounted, is
  // where it lives; it cannot also be on the v2 hierarchy.
  for (const CgroupLine& line : lines_) {
    if (line.hierarchy == "0" || !contains_item(line.controllers, controller, ',')) continue;
    for (std::size_t i = 0; i < mounts.size(); ++i) {
      const Mount& mount = mounts[i];
      if (mount.fstype != "cgroup" || !contains_item(mount.super_options, controller, ',') ||
          is_covered(mounts, i)) {
        continue;
      }
      std::optional<std::string> dir = cgroup_dir(mount, line.path);
      if (!dir) continue;
      const bool noprefix = contains_item(mount.super_options, "noprefix", ',');
      return ControllerCgroup{std::move(*dir), false,
                              noprefix ? "" : std::string(controller) + "."};
    }
  }

  // cgroup v2: "0::/path".  A controller's files exist in a cgroup only
  // when its parent enables the controller for it, which cgroup.controllers
  // lists.
  for (const CgroupLine& line : lines_) {
    if (line.hierarchy != "0" || !line.controllers.empty()) continue;
    for (std::size_t i = 0; i < mounts.size(); ++i) {
      const Mount& mount = mounts[i];
      if (mount.fstype != "cgroup2" || is_covered(mounts, i)) continue;
      std::optional<std::string> dir = cgroup_dir(mount, line.path);
      if (!dir) continue;
      const std::string controllers_file = under_root(root_, join_path(*dir, "cgroup.controllers"));
      const std::optional<std::string> controllers = read_optional_file(controllers_file);
      if (!controllers) {
        throw Error(ENOENT, controllers_file + ": " + errno_text(ENOENT) + " (the cgroup of pid " +
                                std::to_string(pid_) + " is gone or not visible here)");
      }
      if (!contains_item(*controllers, controller, ' ')) return std::nullopt;
      return ControllerCgroup{std::move(*dir), true, std::string(controller) + "."};
    }
  }
  return std::nullopt;
}

}  // namespace execaff
