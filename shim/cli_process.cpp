// SPDX-License-Identifier: LGPL-2.1-or-later
#include "cli_process.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>

#include "error.hpp"
#include "json_value.hpp"
#include "json_writer.hpp"

namespace execaff::shim {
namespace {

enum class Use { kept, cwd, env, user, cap, apparmor, label, tty, no_new_privs, not_converted };

// What the conversion does with each exec option of runc and crun (but
// --process: a process file is not the CLI form).  Which options a runtime
// has, and whether they take a value, is its table's (runtime_options.hpp).
struct Conversion {
  std::string_view name;
  Use use;
};
constexpr std::array kConversions = {
    Conversion{"console-socket", Use::kept},
    Conversion{"pidfd-socket", Use::kept},
    Conversion{"pid-file", Use::kept},
    Conversion{"preserve-fds", Use::kept},
    Conversion{"cgroup", Use::kept},
    Conversion{"detach", Use::kept},
    Conversion{"ignore-paused", Use::kept},
    Conversion{"cwd", Use::cwd},
    Conversion{"env", Use::env},
    Conversion{"user", Use::user},
    // A single value reaches the process twice (groups "5 5": urfave/cli
    // v1.22's slice flag, measured with runc 1.3.6); not modelled.
    Conversion{"additional-gids", Use::not_converted},
    Conversion{"cap", Use::cap},
    Conversion{"apparmor", Use::apparmor},
    Conversion{"process-label", Use::label},
    Conversion{"tty", Use::tty},
    Conversion{"no-new-privs", Use::no_new_privs},
};

Use use_of(std::string_view name) {
  for (const Conversion& c : kConversions) {
    if (c.name == name) return c.use;
  }
  return Use::not_converted;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A decimal number both runtimes read as the same uint32 (runc: Atoi then
// uint32(); crun: strtol): digits only, at most UINT32_MAX.
bool uint32_text(std::string_view s) {
  if (!all_digits(s) || s.size() > 10) return false;
  return std::stoull(std::string(s)) <= UINT32_MAX;
}

// --user UID[:GID], as both runtimes read it alike.
bool user_text(std::string_view s) {
  const std::size_t colon = s.find(':');
  if (colon == std::string_view::npos) return uint32_text(s);
  return uint32_text(s.substr(0, colon)) && uint32_text(s.substr(colon + 1));
}

void set_why(std::string* why, std::string text) {
  if (why != nullptr) *why = std::move(text);
}

// ---------------------------------------------------------------- JSON out

using json::Value;
using json::Writer;

void put_strings(Writer& out, const std::vector<std::string>& values) {
  out.open_array();
  for (const auto& v : values) out.string(v);
  out.close_array();
}

char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Go's encoding/json matches keys case-insensitively, the last match
// winning: runc reads "Args" as args.
bool same_key(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return ascii_lower(x) == ascii_lower(y);
         });
}

bool is(const Value* v, json::Kind kind) {
  return v != nullptr && v->kind == kind;
}

// The value Go would decode for `key` in `object` (the last match), or null.
const Value* go_member(const Value* object, std::string_view key) {
  const Value* found = nullptr;
  if (!is(object, json::Kind::object)) return nullptr;
  for (const Value& member : object->children) {
    if (same_key(member.key, key)) found = &member;
  }
  return found;
}

struct Override {
  std::string_view key;
  std::function<void(Writer&, const Value*)> write;  // given Go's current value
};

// `object` with every member named in `overrides` (any case) dropped and
// written again, last, by its override.
void put_object_with(Writer& out, const Value* object, const std::vector<Override>& overrides) {
  out.open_object();
  if (is(object, json::Kind::object)) {
    for (const Value& member : object->children) {
      if (std::any_of(overrides.begin(), overrides.end(),
                      [&](const Override& o) { return same_key(member.key, o.key); })) {
        continue;
      }
      out.key(member.key);
      json::write_value(out, member);
    }
  }
  for (const Override& o : overrides) {
    out.key(o.key);
    o.write(out, go_member(object, o.key));
  }
  out.close_object();
}

// A JSON array of strings `base` (null: none) with `more` appended.
void put_appended(Writer& out, const Value* base, const std::vector<std::string>& more) {
  out.open_array();
  if (is(base, json::Kind::array)) {
    for (const Value& element : base->children) json::write_value(out, element);
  }
  for (const auto& v : more) out.string(v);
  out.close_array();
}

std::optional<std::string> runc_process(const CliExec& e, const ConfigDocument& config,
                                        const ExecCpuAffinity& affinity, std::string* why) {
  // config.json's "process" (Go would take "Process" too; the shim reads
  // the exact key, and such a config is left to the emulated path).
  const Value* process = &config.process_as_written;
  if (!is(process, json::Kind::object)) {
    set_why(why, "config.json has no process object (runc would fail)");
    return std::nullopt;
  }
  const Value* caps = go_member(process, "capabilities");
  if (!e.caps.empty() && !is(caps, json::Kind::object)) {
    set_why(why, "--cap with no capabilities in config.json (runc would crash)");
    return std::nullopt;
  }
  Writer out;
  std::vector<Override> o;
  o.push_back({"args", [&](Writer& w, const Value*) { put_strings(w, e.args); }});
  if (e.cwd && !e.cwd->empty())
    o.push_back({"cwd", [&](Writer& w, const Value*) { w.string(*e.cwd); }});
  if (e.apparmor && !e.apparmor->empty()) {
    o.push_back({"apparmorProfile", [&](Writer& w, const Value*) { w.string(*e.apparmor); }});
  }
  if (e.process_label && !e.process_label->empty()) {
    o.push_back({"selinuxLabel", [&](Writer& w, const Value*) { w.string(*e.process_label); }});
  }
  if (!e.caps.empty()) {
    o.push_back({"capabilities", [&](Writer& w, const Value* current) {
                   std::vector<Override> sets;
                   for (const char* set : {"bounding", "effective", "permitted"}) {
                     sets.push_back({set, [&](Writer& w2, const Value* base) {
                                       put_appended(w2, base, e.caps);
                                     }});
                   }
                   // Go's `Inheritable != nil`: present and not null (an
                   // empty array counts).
                   const Value* inheritable = go_member(current, "inheritable");
                   if (inheritable != nullptr && inheritable->kind != json::Kind::null) {
                     sets.push_back({"ambient", [&](Writer& w2, const Value* base) {
                                       put_appended(w2, base, e.caps);
                                     }});
                   }
                   put_object_with(w, current, sets);
                 }});
  }
  if (!e.env.empty()) {
    o.push_back({"env", [&](Writer& w, const Value* base) { put_appended(w, base, e.env); }});
  }
  o.push_back({"terminal", [&](Writer& w, const Value*) { w.boolean(e.tty); }});
  if (e.no_new_privs) {
    o.push_back({"noNewPrivileges", [](Writer& w, const Value*) { w.boolean(true); }});
  }
  if (e.user) {
    o.push_back(
        {"user", [&](Writer& w, const Value* current) {
           const std::size_t colon = e.user->find(':');
           const std::string uid = e.user->substr(0, colon);
           const std::string gid = colon == std::string::npos ? "" : e.user->substr(colon + 1);
           std::vector<Override> ids;
           ids.push_back({"uid", [&](Writer& w2, const Value*) { w2.number_as_written(uid); }});
           if (!gid.empty()) {
             ids.push_back({"gid", [&](Writer& w2, const Value*) { w2.number_as_written(gid); }});
           }
           put_object_with(w, current, ids);
         }});
  }
  o.push_back(
      {"execCPUAffinity", [&](Writer& w, const Value*) { write_exec_cpu_affinity(w, affinity); }});
  put_object_with(out, process, o);
  return out.take();
}

std::string crun_process(const CliExec& e, const std::vector<std::string>& env,
                         const ExecCpuAffinity& affinity) {
  Writer out;
  out.open_object();
  out.key("args");
  put_strings(out, e.args);
  // crun's process file needs a cwd; without --cwd crun's own exec uses
  // "/" (exec_process_entrypoint) and looks programs up from there.
  out.member("cwd", e.cwd ? *e.cwd : "/");
  out.key("terminal").boolean(e.tty);
  if (!env.empty()) {
    out.key("env");
    put_strings(out, env);
  }
  if (e.user) {
    const std::size_t colon = e.user->find(':');
    const std::string uid = e.user->substr(0, colon);
    const std::string gid = colon == std::string::npos ? "0" : e.user->substr(colon + 1);
    out.key("user").open_object();
    out.key("uid").number_as_written(uid);
    out.key("gid").number_as_written(gid);
    out.close_object();
  }
  if (e.process_label) out.member("selinuxLabel", *e.process_label);
  if (e.apparmor) out.member("apparmorProfile", *e.apparmor);
  if (!e.caps.empty()) {
    out.key("capabilities").open_object();
    for (const char* set : {"effective", "bounding", "ambient", "permitted"}) {
      out.key(set);
      put_strings(out, e.caps);
    }
    out.close_object();
  }
  if (e.no_new_privs) out.key("noNewPrivileges").boolean(true);
  out.key("execCPUAffinity");
  write_exec_cpu_affinity(out, affinity);
  out.close_object();
  return out.take();
}

}  // namespace

std::optional<CliExec> read_cli_exec(const CommandLine& line, const CliRuntime& runtime,
                                     std::string* why) {
  const CliDialect dialect = runtime.dialect;
  if (line.command != "exec" || line.process || line.problem || line.container_id_index == 0 ||
      line.program_index == 0) {
    set_why(why, "not the CLI form of exec with a program");
    return std::nullopt;
  }
  CliExec e;
  // urfave/cli (runc) refuses an option given in both its forms ("Cannot
  // use two forms of the same flag: e env"); argp (crun) takes both.
  std::vector<std::pair<const RuntimeOption*, bool>> forms_seen;  // option, long form
  for (const GivenOption& given : line.read.options) {
    const std::string& arg = line.argv[given.index];
    const RuntimeOption* o = given.option;
    // An argp cluster ("-dt") holds options the conversion would split
    // between kept tokens and the document.
    const bool shares_its_token =
        std::count_if(line.read.options.begin(), line.read.options.end(),
                      [&](const GivenOption& other) { return other.index == given.index; }) > 1;
    if (shares_its_token) {
      set_why(why, "exec option " + quoted(arg) + " is a cluster of options");
      return std::nullopt;
    }
    // The name as spelled, without dashes or value: urfave/cli's two forms
    // are the long name and its alias, whatever the dashes.
    const std::size_t start = arg.find_first_not_of('-');
    const std::string spelled = arg.substr(start, arg.find('=') - start);
    const bool long_form = spelled.size() > 1;
    if (dialect == CliDialect::runc) {
      const bool other_form_seen = std::any_of(
          forms_seen.begin(), forms_seen.end(),
          [&](const auto& seen) { return seen.first == o && seen.second != long_form; });
      if (other_form_seen) {
        set_why(why,
                "exec option " + quoted(arg) + " is given in both its forms (runc refuses that)");
        return std::nullopt;
      }
      forms_seen.emplace_back(o, long_form);
    }
    if (o->argument != OptionArgument::required && given.value) {
      set_why(why, "exec option " + quoted(arg) + ": a flag with a value is not converted");
      return std::nullopt;
    }
    std::vector<std::string> tokens = {arg};
    if (given.value && !given.inline_value) tokens.push_back(*given.value);
    const std::optional<std::string>& value = given.value;
    switch (use_of(o->name)) {
      case Use::kept: e.kept.insert(e.kept.end(), tokens.begin(), tokens.end()); break;
      case Use::cwd: e.cwd = value; break;
      case Use::env:
        if (dialect == CliDialect::crun && runtime.crun_env == CrunEnv::unknown) {
          set_why(why, "what this crun's --env does to the container's env is not known");
          return std::nullopt;
        }
        e.env.push_back(*value);
        break;
      case Use::cap: e.caps.push_back(*value); break;
      case Use::apparmor: e.apparmor = value; break;
      case Use::label: e.process_label = value; break;
      case Use::tty: e.tty = true; break;
      case Use::no_new_privs: e.no_new_privs = true; break;
      case Use::user:
        if (!user_text(*value)) {
          set_why(why, "--user " + quoted(*value) + " is not UID[:GID] in decimal");
          return std::nullopt;
        }
        e.user = value;
        break;
      case Use::not_converted:
        set_why(why, "exec option " + quoted(arg) + " is not converted");
        return std::nullopt;
    }
  }
  e.args.assign(line.argv.begin() + static_cast<long>(line.program_index), line.argv.end());
  return e;
}

std::optional<std::string> cli_process_json(const CliExec& exec, const CliRuntime& runtime,
                                            const ConfigDocument& config,
                                            const ExecCpuAffinity& affinity, std::string* why) {
  if (runtime.dialect == CliDialect::runc) return runc_process(exec, config, affinity, why);
  if (exec.env.empty() || runtime.crun_env == CrunEnv::replaced) {
    return crun_process(exec, exec.env, affinity);
  }
  // crun 1.28 puts the container's env, then each --env value: the same
  // list in a process file gives the same environment.  (The first "env"
  // of the process object, as crun's reader takes it.)
  std::vector<std::string> merged;
  const Value& process = config.process_as_written;
  const auto env = std::find_if(process.children.begin(), process.children.end(),
                                [](const Value& member) { return member.key == "env"; });
  if (process.kind == json::Kind::object && env != process.children.end() &&
      env->kind == json::Kind::array) {
    for (const Value& v : env->children) {
      if (v.kind != json::Kind::string) {
        set_why(why, "config.json's process.env is not an array of strings");
        return std::nullopt;
      }
      merged.emplace_back(v.text);
    }
  }
  merged.insert(merged.end(), exec.env.begin(), exec.env.end());
  return crun_process(exec, merged, affinity);
}

std::vector<std::string> cli_as_process_argv(const CommandLine& line, const CliExec& exec,
                                             const std::string& process_path) {
  std::vector<std::string> argv(line.argv.begin(),
                                line.argv.begin() + static_cast<long>(line.command_index) + 1);
  argv.insert(argv.end(), exec.kept.begin(), exec.kept.end());
  argv.insert(argv.end(), {"--process", process_path, line.container_id});
  return argv;
}

}  // namespace execaff::shim
