// SPDX-License-Identifier: LGPL-2.1-or-later
#include "trace_event.hpp"

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <stdexcept>

namespace schedtrace {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

template <typename Int>
Int to_int(std::string_view s, const char* what, int base = 10) {
  Int value{};
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, base);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    throw std::invalid_argument(std::string("bad ") + what + " \"" + std::string(s) + "\"");
  }
  return value;
}

struct Key {
  const char* name;
  bool optional = false;
};

// Splits "k1=v1 k2=v2 ... kn=vn" into values, locating each " key=" marker
// from the right so that string values (comm, paths) may hold spaces.  The
// first key must start the text.  An optional key that is absent gets an
// empty value.
std::vector<std::string_view> split_fields(std::string_view text, std::initializer_list<Key> keys,
                                           const char* event) {
  std::vector<std::string_view> values(keys.size());
  std::size_t end = text.size();
  std::size_t i = keys.size();
  for (auto key = std::rbegin(keys); key != std::rend(keys); ++key) {
    --i;
    const std::string name = key->name;
    const std::string_view region = text.substr(0, end);
    std::size_t at = std::string_view::npos;
    std::size_t value_at = 0;
    if (i == 0) {
      if (region.substr(0, name.size() + 1) == name + "=") {
        at = 0;
        value_at = name.size() + 1;
      }
    } else {
      const std::string marker = " " + name + "=";
      at = region.rfind(marker);
      if (at != std::string_view::npos) value_at = at + marker.size();
    }
    if (at == std::string_view::npos) {
      if (key->optional) continue;
      throw std::invalid_argument(std::string(event) + ": no field " + name);
    }
    values[i] = text.substr(value_at, end - value_at);
    end = at;
  }
  return values;
}

struct Header {
  std::string comm;
  int pid = 0;
  unsigned cpu = 0;
  std::int64_t ts_ns = 0;
  std::string name;
  std::string_view fields;
};

// Finds "[<cpu>] " preceded by "<comm>-<pid>" and optional spaces.  The
// first '[' that fits wins; runc's "runc:[2:INIT]" has a '[' followed by
// "2:", which does not fit.
std::optional<Header> parse_header(std::string_view line) {
  for (std::size_t open = line.find('['); open != std::string_view::npos;
       open = line.find('[', open + 1)) {
    std::size_t close = open + 1;
    while (close < line.size() && is_digit(line[close])) ++close;
    if (close == open + 1 || close >= line.size() || line[close] != ']') continue;
    if (close + 1 >= line.size() || line[close + 1] != ' ') continue;
    // Before it: "<comm>-<pid>" then spaces (or "(<tgid>)" with record-tgid).
    std::size_t task_end = open;
    while (task_end > 0 && line[task_end - 1] == ' ') --task_end;
    if (task_end > 0 && line[task_end - 1] == ')') {
      const std::size_t paren = line.rfind('(', task_end);
      if (paren == std::string_view::npos) continue;
      task_end = paren;
      while (task_end > 0 && line[task_end - 1] == ' ') --task_end;
    }
    std::size_t pid_at = task_end;
    while (pid_at > 0 && is_digit(line[pid_at - 1])) --pid_at;
    if (pid_at == task_end || pid_at == 0 || line[pid_at - 1] != '-') continue;
    Header h;
    std::size_t comm_at = 0;
    while (comm_at < pid_at - 1 && line[comm_at] == ' ') ++comm_at;
    h.comm = std::string(line.substr(comm_at, pid_at - 1 - comm_at));
    h.pid = to_int<int>(line.substr(pid_at, task_end - pid_at), "pid");
    h.cpu = to_int<unsigned>(line.substr(open + 1, close - open - 1), "cpu");
    // Then "<flags> " (irq-info) or not, "<timestamp>: <name>: <fields>".
    std::size_t p = close + 1;
    auto next_token = [&line, &p]() {
      while (p < line.size() && line[p] == ' ') ++p;
      const std::size_t start = p;
      while (p < line.size() && line[p] != ' ') ++p;
      return line.substr(start, p - start);
    };
    std::string_view token = next_token();
    if (token.empty() || token.back() != ':') token = next_token();
    if (token.size() < 2 || token.back() != ':') {
      throw std::invalid_argument("no timestamp after the cpu");
    }
    const auto ts = parse_timestamp(token.substr(0, token.size() - 1));
    if (!ts) throw std::invalid_argument("bad timestamp \"" + std::string(token) + "\"");
    h.ts_ns = *ts;
    while (p < line.size() && line[p] == ' ') ++p;
    const std::size_t colon = line.find(": ", p);
    const std::size_t name_end = colon == std::string_view::npos ? line.size() : colon;
    if (name_end == line.size() && !line.empty() && line.back() == ':') {
      h.name = std::string(line.substr(p, line.size() - 1 - p));  // event with no fields
      h.fields = std::string_view();
    } else {
      h.name = std::string(line.substr(p, name_end - p));
      h.fields = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 2);
    }
    if (h.name.empty()) throw std::invalid_argument("no event name");
    return h;
  }
  return std::nullopt;
}

Payload parse_payload(const std::string& name, std::string_view f) {
  if (name == "sched_switch") {
    const auto v = split_fields(f,
                                {{"prev_comm"},
                                 {"prev_pid"},
                                 {"prev_prio"},
                                 {"prev_state"},
                                 {"next_comm"},
                                 {"next_pid"},
                                 {"next_prio"}},
                                "sched_switch");
    SwitchEvent e;
    e.prev_comm = std::string(v[0]);
    e.prev_pid = to_int<int>(v[1], "prev_pid");
    std::string_view state = v[3];
    if (state.size() >= 4 && state.substr(state.size() - 4) == " ==>") state.remove_suffix(4);
    e.prev_state = std::string(state);
    e.next_comm = std::string(v[4]);
    e.next_pid = to_int<int>(v[5], "next_pid");
    return e;
  }
  if (name == "sched_process_fork") {
    const auto v =
        split_fields(f, {{"comm"}, {"pid"}, {"child_comm"}, {"child_pid"}}, "sched_process_fork");
    return ForkEvent{std::string(v[0]), to_int<int>(v[1], "pid"), std::string(v[2]),
                     to_int<int>(v[3], "child_pid")};
  }
  if (name == "sched_process_exec") {
    const auto v = split_fields(f, {{"filename"}, {"pid"}, {"old_pid"}}, "sched_process_exec");
    return ExecEvent{std::string(v[0]), to_int<int>(v[1], "pid"), to_int<int>(v[2], "old_pid")};
  }
  if (name == "sched_process_exit") {
    // " group_dead=" exists since 6.16; 6.1 ends at prio.
    const auto v =
        split_fields(f, {{"comm"}, {"pid"}, {"prio"}, {"group_dead", true}}, "sched_process_exit");
    return ExitEvent{std::string(v[0]), to_int<int>(v[1], "pid")};
  }
  if (name == "sched_migrate_task") {
    const auto v = split_fields(f, {{"comm"}, {"pid"}, {"prio"}, {"orig_cpu"}, {"dest_cpu"}},
                                "sched_migrate_task");
    return MigrateEvent{std::string(v[0]), to_int<int>(v[1], "pid"), to_int<int>(v[3], "orig_cpu"),
                        to_int<int>(v[4], "dest_cpu")};
  }
  if (name == "cgroup_attach_task") {
    const auto v =
        split_fields(f, {{"dst_root"}, {"dst_id"}, {"dst_level"}, {"dst_path"}, {"pid"}, {"comm"}},
                     "cgroup_attach_task");
    return AttachEvent{to_int<int>(v[0], "dst_root"), std::string(v[3]), to_int<int>(v[4], "pid"),
                       std::string(v[5])};
  }
  if (name == "task_newtask") {
    const auto v =
        split_fields(f, {{"pid"}, {"comm"}, {"clone_flags"}, {"oom_score_adj"}}, "task_newtask");
    return NewTaskEvent{to_int<int>(v[0], "pid"), std::string(v[1]),
                        to_int<std::uint64_t>(v[2], "clone_flags", 16)};
  }
  if (name == "tracing_mark_write") {
    std::string_view text = f;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
    return MarkerEvent{std::string(text)};
  }
  return std::monostate{};
}

}  // namespace

std::optional<std::int64_t> parse_timestamp(std::string_view text) {
  const std::size_t dot = text.find('.');
  try {
    if (dot == std::string_view::npos) return to_int<std::int64_t>(text, "timestamp");
    const auto seconds = to_int<std::int64_t>(text.substr(0, dot), "timestamp");
    std::string_view frac = text.substr(dot + 1);
    if (frac.empty() || frac.size() > 9) return std::nullopt;
    std::int64_t ns = to_int<std::int64_t>(frac, "timestamp");
    for (std::size_t i = frac.size(); i < 9; ++i) ns *= 10;
    return seconds * 1000000000 + ns;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::optional<TraceEvent> parse_trace_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::size_t first = 0;
  while (first < line.size() && line[first] == ' ') ++first;
  if (first == line.size() || line[first] == '#') return std::nullopt;
  if (line.substr(first, 4) == "CPU:") return std::nullopt;  // "CPU:2 [LOST 12 EVENTS]"
  const auto header = parse_header(line);
  if (!header) throw std::invalid_argument("not a trace event line");
  TraceEvent e;
  e.ts_ns = header->ts_ns;
  e.cpu = header->cpu;
  e.pid = header->pid;
  e.comm = header->comm;
  e.name = header->name;
  e.payload = parse_payload(e.name, header->fields);
  return e;
}

ParsedTrace parse_trace_text(std::string_view text) {
  ParsedTrace out;
  std::size_t number = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++number;
    // "# entries-in-buffer/entries-written: 892/892   #P:4": more written than
    // kept means the ring buffer overwrote events (options/overwrite).
    constexpr std::string_view kEntries = "# entries-in-buffer/entries-written: ";
    constexpr std::string_view kMeta = "# execaff-schedtrace: ";
    if (line.substr(0, kEntries.size()) == kEntries) {
      std::string_view rest = line.substr(kEntries.size());
      const std::size_t slash = rest.find('/');
      const std::size_t space = rest.find(' ');
      // Summed: a kept trace may hold more than one instance's text.
      try {
        const auto kept = to_int<std::uint64_t>(rest.substr(0, slash), "entries");
        const auto written =
            to_int<std::uint64_t>(rest.substr(slash + 1, space - slash - 1), "entries");
        out.entries_in_buffer = out.entries_in_buffer.value_or(0) + kept;
        out.entries_written = out.entries_written.value_or(0) + written;
      } catch (const std::invalid_argument&) {
      }
      continue;
    }
    if (line.substr(0, kMeta.size()) == kMeta) {
      std::string_view rest = line.substr(kMeta.size());
      while (!rest.empty()) {
        const std::size_t space = rest.find(' ');
        const std::string_view item = rest.substr(0, space);
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
        const std::size_t eq = item.find('=');
        if (eq != std::string_view::npos) {
          out.meta[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
        }
      }
      continue;
    }
    const std::size_t lost = line.find("[LOST ");
    if (line.substr(0, 4) == "CPU:" && lost != std::string_view::npos) {
      std::string_view n = line.substr(lost + 6);
      n = n.substr(0, n.find(' '));
      try {
        out.lost_events += to_int<std::uint64_t>(n, "lost");
      } catch (const std::invalid_argument&) {
        out.lost_events += 1;
      }
      continue;
    }
    try {
      if (auto event = parse_trace_line(line)) out.events.push_back(std::move(*event));
    } catch (const std::invalid_argument& e) {
      out.errors.push_back("line " + std::to_string(number) + ": " + e.what() + ": " +
                           std::string(line.substr(0, 160)));
    }
  }
  // One instance's `trace` is merged across CPUs in time order already;
  // several concatenated are not.
  std::stable_sort(out.events.begin(), out.events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.ts_ns < b.ts_ns; });
  return out;
}

}  // namespace schedtrace
