// SPDX-License-Identifier: LGPL-2.1-or-later
#include "process_tree.hpp"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

namespace schedtrace {

char phase_letter(Phase phase) {
  switch (phase) {
    case Phase::before_join: return 'a';
    case Phase::window: return 'b';
    case Phase::after_exec: return 'c';
    case Phase::caller: return 'p';
  }
  return '?';
}

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::before_join: return "before-join";
    case Phase::window: return "window";
    case Phase::after_exec: return "after-exec";
    case Phase::caller: return "caller";
  }
  return "?";
}

const char* entry_name(Entry entry) {
  switch (entry) {
    case Entry::switch_in: return "switch";
    case Entry::exec: return "exec";
    case Entry::join: return "join";
  }
  return "?";
}

const char* join_how_name(JoinHow how) {
  switch (how) {
    case JoinHow::none: return "none";
    case JoinHow::attach: return "attach";
    case JoinHow::clone_into_cgroup: return "clone-into-cgroup";
    case JoinHow::inherited: return "inherited";
  }
  return "?";
}

bool PhasePolicy::violates(Phase phase, unsigned cpu) const {
  switch (phase) {
    case Phase::before_join:
      // The runtime's own work belongs on housekeeping CPUs; an isolated
      // CPU is wrong whatever `initial` says (with --initial any, this is
      // the only check left).
      return (initial && !initial->contains(cpu)) || isolated.contains(cpu);
    case Phase::window: return !cpuset.contains(cpu) || isolated.contains(cpu);
    case Phase::after_exec: return !final_cpus.contains(cpu);
    case Phase::caller: return false;  // where the caller runs is the caller's choice
  }
  return true;
}

std::optional<std::int64_t> RunAnalysis::window_ns() const {
  if (!program_exec_ts || !window_start_ts) return std::nullopt;
  return *program_exec_ts - *window_start_ts;
}

namespace {

constexpr std::int64_t kBeforeTrace = std::numeric_limits<std::int64_t>::min();

std::string basename_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool in_cgroup(const std::string& path, const std::string& cgroup) {
  if (cgroup.empty()) return false;
  if (path == cgroup) return true;
  const std::string prefix = cgroup.back() == '/' ? cgroup : cgroup + "/";
  return path.compare(0, prefix.size(), prefix) == 0;
}

// Every task ever seen with a pid, oldest first (a pid reused within one
// run gets a second generation).
class TaskTable {
 public:
  TaskInfo* at(int pid, std::int64_t ts) {
    const auto it = by_pid_.find(pid);
    if (it == by_pid_.end()) return nullptr;
    TaskInfo* found = nullptr;
    for (TaskInfo& t : it->second) {
      if (t.fork_ts <= ts) found = &t;
    }
    return found;
  }
  TaskInfo* latest(int pid) {
    const auto it = by_pid_.find(pid);
    return it == by_pid_.end() || it->second.empty() ? nullptr : &it->second.back();
  }
  TaskInfo& add(TaskInfo task) {
    auto& generations = by_pid_[task.pid];
    generations.push_back(std::move(task));
    return generations.back();
  }
  template <typename F>
  void for_each_alive_in_group(int tgid, std::int64_t ts, F&& f) {
    for (auto& [pid, generations] : by_pid_) {
      for (TaskInfo& t : generations) {
        if (t.tgid == tgid && t.fork_ts <= ts && (!t.exit_ts || *t.exit_ts >= ts)) f(t);
      }
    }
  }
  std::vector<TaskInfo> all() const {
    std::vector<TaskInfo> out;
    for (const auto& [pid, generations] : by_pid_) {
      out.insert(out.end(), generations.begin(), generations.end());
    }
    std::sort(out.begin(), out.end(), [](const TaskInfo& a, const TaskInfo& b) {
      return a.fork_ts != b.fork_ts ? a.fork_ts < b.fork_ts : a.pid < b.pid;
    });
    return out;
  }

 private:
  std::map<int, std::vector<TaskInfo>> by_pid_;
};

Phase phase_of(const TaskInfo& task, std::int64_t ts) {
  if (task.exec_ts && *task.exec_ts <= ts) return Phase::after_exec;
  if (task.join_ts && *task.join_ts <= ts) return Phase::window;
  if (task.runtime_ts && *task.runtime_ts <= ts) return Phase::before_join;
  return Phase::caller;
}

// Pass 1: the tree, and when each task joined and became the program.
class TreeBuilder {
 public:
  TreeBuilder(const ClassifyOptions& options, RunAnalysis& out) : options_(options), out_(out) {
    TaskInfo root;
    root.pid = root.tgid = options.root_pid;
    root.fork_ts = kBeforeTrace;
    tasks_.add(root);
    for (const int tid : options.daemon_tids) {
      if (tid == options.root_pid) continue;
      TaskInfo thread;
      thread.pid = tid;
      thread.tgid = options.daemon_pid != 0 ? options.daemon_pid : tid;
      thread.fork_ts = kBeforeTrace;
      thread.daemon = true;
      tasks_.add(thread);
    }
  }

  void on(const TraceEvent& e) {
    std::visit(
        [this, &e](const auto& payload) {
          using T = std::decay_t<decltype(payload)>;
          if constexpr (std::is_same_v<T, MigrateEvent>) {
            migrations_.emplace_back(e.ts_ns, e.pid, e.comm, payload);
          } else if constexpr (std::is_same_v<T, SwitchEvent>) {
            if (tasks_.at(payload.next_pid, e.ts_ns) != nullptr) {
              switch_ins_[payload.next_pid].emplace_back(e.ts_ns, e.cpu);
            }
          } else if constexpr (!std::is_same_v<T, SwitchEvent> &&
                               !std::is_same_v<T, std::monostate>) {
            handle(e, payload);
            last_event_ts_[e.pid] = e.ts_ns;
          }
        },
        e.payload);
  }

  TaskTable& tasks() { return tasks_; }
  bool missing_newtask() const { return missing_newtask_; }

 private:
  void handle(const TraceEvent& e, const MarkerEvent& m) {
    if (m.text.rfind("execaff-schedtrace start", 0) == 0) out_.start_ts = e.ts_ns;
    if (m.text.rfind("execaff-schedtrace end", 0) == 0) out_.end_ts = e.ts_ns;
  }

  void handle(const TraceEvent&, const NewTaskEvent& n) { clone_flags_[n.pid] = n.clone_flags; }

  void handle(const TraceEvent& e, const ForkEvent& f) {
    TaskInfo* parent = tasks_.at(f.parent_pid, e.ts_ns);
    if (parent == nullptr) return;  // not ours
    std::uint64_t flags = 0;
    if (const auto it = clone_flags_.find(f.child_pid); it != clone_flags_.end()) {
      flags = it->second;
      clone_flags_.erase(it);
    } else {
      missing_newtask_ = true;
    }
    TaskInfo child;
    child.pid = f.child_pid;
    child.tgid = (flags & kCloneThread) != 0 ? parent->tgid : f.child_pid;
    child.parent_pid = parent->pid;
    child.comm = f.child_comm;
    child.fork_ts = e.ts_ns;
    if (parent->daemon) {
      // The daemon's new thread is the daemon; a process it forks is the
      // exec's, judged from its first instruction.
      if ((flags & kCloneThread) != 0) {
        child.daemon = true;
      } else {
        child.runtime_ts = e.ts_ns;
      }
    }
    if (parent->runtime_ts && *parent->runtime_ts <= e.ts_ns) child.runtime_ts = e.ts_ns;
    if (parent->exec_ts && *parent->exec_ts <= e.ts_ns) child.exec_ts = e.ts_ns;
    if (parent->join_ts && *parent->join_ts <= e.ts_ns) {
      child.join_ts = e.ts_ns;
      child.join_origin_ts = parent->join_origin_ts;
      child.join_how = JoinHow::inherited;
    } else if (options_.clone_into_cgroup_joins && (flags & kCloneIntoCgroup) != 0) {
      child.join_ts = child.join_origin_ts = e.ts_ns;
      child.join_how = JoinHow::clone_into_cgroup;
    }
    tasks_.add(std::move(child));
  }

  void handle(const TraceEvent& e, const AttachEvent& a) {
    if (options_.hierarchy && a.dst_root != *options_.hierarchy) return;
    if (!in_cgroup(a.dst_path, options_.container_cgroup)) return;
    ++out_.attaches_seen;
    TaskInfo* target = tasks_.at(a.pid, e.ts_ns);
    if (target == nullptr) return;
    const int tgid = target->tgid;
    // The tracepoint fires at the end of cgroup_attach_task(); the mask
    // changed earlier, in cpuset_attach().  A forced move into the cpuset
    // made inside this write marks that moment: a sched_migrate_task of a
    // thread of the group, to a CPU of the container's cpuset, emitted by
    // the writer itself (a queued task, move_queued_task) or by a stopper
    // thread "migration/N" (a running task — the writer itself when a task
    // moves itself), after the writer's previous event.  A load balancer's
    // move looks the same (active balancing runs on the stopper too), so a
    // candidate must also agree with what the join implies: from then on no
    // task of the group ran outside the cpuset.  The earliest candidate that
    // does is taken; without one, the attach event's own time.
    std::int64_t join = e.ts_ns;
    const auto last = last_event_ts_.find(e.pid);
    const std::int64_t since = last == last_event_ts_.end() ? kBeforeTrace : last->second;
    const CpuList& cpuset = options_.policy.cpuset;
    auto ran_outside_since = [this, tgid, &cpuset, &e](std::int64_t from) {
      for (const auto& [pid, ins] : switch_ins_) {
        for (auto it = ins.rbegin(); it != ins.rend() && it->first > from; ++it) {
          if (it->first > e.ts_ns || cpuset.contains(it->second)) continue;
          const TaskInfo* t = tasks_.at(pid, it->first);
          if (t != nullptr && t->tgid == tgid) return true;
        }
      }
      return false;
    };
    for (const Migration& m : migrations_) {
      if (m.ts <= since || m.ts > e.ts_ns || m.ts >= join) continue;
      if (m.by_pid != e.pid && m.by_comm.rfind("migration/", 0) != 0) continue;
      if (m.dest < 0 || !cpuset.contains(static_cast<unsigned>(m.dest))) continue;
      const TaskInfo* moved = tasks_.at(m.pid, m.ts);
      if (moved == nullptr || moved->tgid != tgid || ran_outside_since(m.ts)) continue;
      join = m.ts;
    }
    auto enter = [join](TaskInfo& t) {
      if (t.join_ts) return;
      t.join_ts = t.join_origin_ts = join;
      t.join_how = JoinHow::attach;
    };
    if (target->pid == tgid) {
      tasks_.for_each_alive_in_group(tgid, e.ts_ns, enter);
    } else {
      enter(*target);
    }
  }

  void handle(const TraceEvent& e, const ExecEvent& x) {
    TaskInfo* task = tasks_.at(x.old_pid, e.ts_ns);
    if (task == nullptr) return;
    if (x.old_pid != x.pid) {
      // A non-leader thread exec'd: it continues under the leader's pid.
      if (TaskInfo* leader = tasks_.at(x.pid, e.ts_ns)) {
        if (!leader->join_ts && task->join_ts) {
          leader->join_ts = task->join_ts;
          leader->join_origin_ts = task->join_origin_ts;
          leader->join_how = task->join_how;
        }
      }
      task->exit_ts = e.ts_ns;
    }
    const std::string base = basename_of(x.filename);
    TaskInfo* now = tasks_.at(x.pid, e.ts_ns);
    if (now != nullptr) {
      now->comm = base.substr(0, 15);
      // Without --runtime the COMMAND's own exec starts the runtime, unless
      // a daemon does the exec: the COMMAND is then only its client.
      const bool is_runtime = options_.runtime.empty()
                                  ? now->pid == options_.root_pid && options_.daemon_tids.empty()
                                  : base == options_.runtime;
      if (is_runtime && !now->runtime_ts && !now->daemon) now->runtime_ts = e.ts_ns;
    }
    if (out_.program_exec_ts || base != options_.program) return;
    out_.program_pid = x.pid;
    out_.program_exec_ts = e.ts_ns;
    out_.program_exec_cpu = e.cpu;
    if (task->join_ts && *task->join_ts <= e.ts_ns) {
      out_.join_seen = true;
      out_.window_start_ts = task->join_origin_ts;
      out_.program_join_how = task->join_how;
    } else {
      out_.window_start_ts = e.ts_ns;
      out_.warnings.push_back("no join into " + options_.container_cgroup +
                              " seen before the exec of " + x.filename + " (pid " +
                              std::to_string(x.pid) + "): window taken as empty");
    }
    const std::int64_t ts = e.ts_ns;
    tasks_.for_each_alive_in_group(task->tgid, ts, [ts](TaskInfo& t) {
      if (!t.exec_ts) t.exec_ts = ts;
    });
    if (now != nullptr && !now->exec_ts) now->exec_ts = ts;
  }

  void handle(const TraceEvent& e, const ExitEvent& x) {
    if (TaskInfo* task = tasks_.at(x.pid, e.ts_ns); task != nullptr && !task->exit_ts) {
      task->exit_ts = e.ts_ns;
    }
  }

  const ClassifyOptions& options_;
  RunAnalysis& out_;
  TaskTable tasks_;
  std::map<int, std::uint64_t> clone_flags_;
  struct Migration {
    std::int64_t ts;
    int by_pid;  // the task that was current: the writer, a stopper, ...
    std::string by_comm;
    int pid;  // the task moved
    int dest;
    Migration(std::int64_t t, int by, std::string comm, const MigrateEvent& m)
        : ts(t), by_pid(by), by_comm(std::move(comm)), pid(m.pid), dest(m.dest_cpu) {}
  };
  std::vector<Migration> migrations_;
  // Switch-ins of tracked tasks so far: (time, cpu) per pid.
  std::map<int, std::vector<std::pair<std::int64_t, unsigned>>> switch_ins_;
  // When each task last emitted an event other than a switch or migration:
  // bounds the write that an attach event ends.
  std::map<int, std::int64_t> last_event_ts_;
  bool missing_newtask_ = false;
};

}  // namespace

RunAnalysis classify_run(const std::vector<TraceEvent>& events, const ClassifyOptions& options) {
  RunAnalysis out;
  if (!events.empty()) {
    out.start_ts = events.front().ts_ns;
    out.end_ts = events.back().ts_ns;
  }
  TreeBuilder tree(options, out);
  for (const TraceEvent& e : events) tree.on(e);
  TaskTable& tasks = tree.tasks();
  if (tree.missing_newtask()) {
    out.warnings.push_back(
        "task_newtask missing for some forks: threads counted as processes, "
        "CLONE_INTO_CGROUP not seen");
  }
  if (!out.program_exec_ts) {
    out.warnings.push_back("no exec of \"" + options.program + "\" seen");
  }

  // Pass 2: the residencies.  Phase changes of a running task (a join by
  // attach, the exec of the program) split its residency in place.
  struct Change {
    std::int64_t ts;
    int pid;
    Entry entry;
  };
  std::vector<Change> changes;
  for (const TaskInfo& t : tasks.all()) {
    if (t.join_how == JoinHow::attach && t.join_ts)
      changes.push_back({*t.join_ts, t.pid, Entry::join});
  }
  std::sort(changes.begin(), changes.end(),
            [](const Change& a, const Change& b) { return a.ts < b.ts; });
  std::size_t next_change = 0;
  std::map<unsigned, std::size_t> open;  // cpu -> index in residencies

  auto close = [&out, &open](unsigned cpu, std::int64_t ts) {
    if (const auto it = open.find(cpu); it != open.end()) {
      Residency& r = out.residencies[it->second];
      r.duration = ts - r.ts;
      // A piece split off at a join and closed at the same instant ran for
      // no time: the task was being switched out as it joined (e.g. the
      // stopper moving it, whose migration the join refinement above may
      // take as the join itself).  No time on a CPU is no violation there.
      if (r.entry == Entry::join && r.duration == 0) r.violation = false;
      open.erase(it);
    }
  };
  auto begin = [&out, &open, &options](unsigned cpu, std::int64_t ts, const TaskInfo& task,
                                       const std::string& comm, Entry entry) {
    Residency in;
    in.ts = ts;
    in.cpu = cpu;
    in.pid = task.pid;
    in.comm = comm;
    in.entry = entry;
    in.phase = phase_of(task, ts);
    in.violation = options.policy.violates(in.phase, cpu);
    in.on_isolated = options.policy.isolated.contains(cpu);
    open[cpu] = out.residencies.size();
    out.residencies.push_back(std::move(in));
  };
  // A change for a task that is running somewhere right then.
  auto apply_changes_until = [&](std::int64_t ts) {
    for (; next_change < changes.size() && changes[next_change].ts <= ts; ++next_change) {
      const Change& c = changes[next_change];
      for (const auto& [cpu, index] : open) {
        const Residency& running = out.residencies[index];
        if (running.pid != c.pid) continue;
        const TaskInfo* task = tasks.at(c.pid, c.ts);
        if (task == nullptr || phase_of(*task, c.ts) == running.phase) break;
        const unsigned where = cpu;
        const std::string comm = running.comm;
        close(where, c.ts);
        begin(where, c.ts, *task, comm, c.entry);
        break;
      }
    }
  };

  for (const TraceEvent& e : events) {
    apply_changes_until(e.ts_ns);
    if (const auto* x = std::get_if<ExecEvent>(&e.payload)) {
      // The program starts where its exec ran, without a switch.
      if (out.program_exec_ts && *out.program_exec_ts == e.ts_ns && out.program_pid &&
          *out.program_pid == x->pid) {
        if (const TaskInfo* task = tasks.at(x->pid, e.ts_ns)) {
          close(e.cpu, e.ts_ns);
          const std::string base = x->filename.substr(x->filename.rfind('/') + 1);
          begin(e.cpu, e.ts_ns, *task, base.substr(0, 15), Entry::exec);
        }
      }
      continue;
    }
    const auto* sw = std::get_if<SwitchEvent>(&e.payload);
    if (sw == nullptr) continue;
    close(e.cpu, e.ts_ns);
    if (sw->next_pid == 0) continue;
    const TaskInfo* task = tasks.at(sw->next_pid, e.ts_ns);
    if (task == nullptr) continue;
    begin(e.cpu, e.ts_ns, *task, sw->next_comm, Entry::switch_in);
  }
  apply_changes_until(out.end_ts);
  for (const auto& [cpu, index] : open) {
    out.residencies[index].duration =
        std::max<std::int64_t>(0, out.end_ts - out.residencies[index].ts);
  }
  out.tasks = tasks.all();
  return out;
}

}  // namespace schedtrace
