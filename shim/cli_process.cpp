// SPDX-License-Identifier: LGPL-2.1-or-later
#include "cli_process.hpp"

#include <yajl/yajl_gen.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>

#include "error.hpp"
#include "yajl_tree.hpp"

namespace execaff::shim {
namespace {

enum class Kind { value, flag };
enum class Use { kept, cwd, env, user, cap, apparmor, label, tty, no_new_privs, not_converted };

struct Option {
  std::string_view name;   // "--cwd"
  std::string_view alias;  // "-e", or ""
  Kind kind;
  Use use;
  bool runc;  // runc 1.3's exec flags (exec.go)
  bool crun;  // crun 1.19-1.28's exec options (src/exec.c, `crun exec --help`)
};

// Both runtimes' exec options but --process.
constexpr std::array kOptions = {
    Option{"--console-socket", "", Kind::value, Use::kept, true, true},
    Option{"--pidfd-socket", "", Kind::value, Use::kept, true, false},
    Option{"--pid-file", "", Kind::value, Use::kept, true, true},
    Option{"--preserve-fds", "", Kind::value, Use::kept, true, true},
    Option{"--cgroup", "", Kind::value, Use::kept, true, true},
    Option{"--detach", "-d", Kind::flag, Use::kept, true, true},
    Option{"--ignore-paused", "", Kind::flag, Use::kept, true, false},
    Option{"--cwd", "", Kind::value, Use::cwd, true, true},
    Option{"--env", "-e", Kind::value, Use::env, true, true},
    Option{"--user", "-u", Kind::value, Use::user, true, true},
    // A single value reaches the process twice (groups "5 5": urfave/cli
    // v1.22's slice flag, measured with runc 1.3.6); not modelled.
    Option{"--additional-gids", "-g", Kind::value, Use::not_converted, true, false},
    Option{"--cap", "-c", Kind::value, Use::cap, true, true},
    Option{"--apparmor", "", Kind::value, Use::apparmor, true, true},
    Option{"--process-label", "", Kind::value, Use::label, true, true},
    Option{"--tty", "-t", Kind::flag, Use::tty, true, true},
    Option{"--no-new-privs", "", Kind::flag, Use::no_new_privs, true, true},
};

const Option* find_option(CliDialect dialect, std::string_view name) {
  for (const Option& o : kOptions) {
    const bool has = dialect == CliDialect::runc ? o.runc : o.crun;
    if (has && (o.name == name || (!o.alias.empty() && o.alias == name))) return &o;
  }
  return nullptr;
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

struct GenFree {
  void operator()(yajl_gen_t* g) const noexcept { yajl_gen_free(g); }
};
using Gen = std::unique_ptr<yajl_gen_t, GenFree>;

void put(yajl_gen g, std::string_view s) {
  yajl_gen_string(g, reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

void put_strings(yajl_gen g, const std::vector<std::string>& values) {
  yajl_gen_array_open(g);
  for (const auto& v : values) put(g, v);
  yajl_gen_array_close(g);
}

// `value` as it was parsed: numbers keep their text.
void put_value(yajl_gen g, yajl_val v) {
  if (v == nullptr || YAJL_IS_NULL(v)) {
    yajl_gen_null(g);
  } else if (YAJL_IS_TRUE(v)) {
    yajl_gen_bool(g, 1);
  } else if (YAJL_IS_FALSE(v)) {
    yajl_gen_bool(g, 0);
  } else if (YAJL_IS_STRING(v)) {
    put(g, YAJL_GET_STRING(v));
  } else if (YAJL_IS_NUMBER(v)) {
    const char* raw = YAJL_GET_NUMBER(v);
    yajl_gen_number(g, raw, std::strlen(raw));
  } else if (YAJL_IS_OBJECT(v)) {
    yajl_gen_map_open(g);
    for (std::size_t i = 0; i < v->u.object.len; ++i) {
      put(g, v->u.object.keys[i]);
      put_value(g, v->u.object.values[i]);
    }
    yajl_gen_map_close(g);
  } else if (YAJL_IS_ARRAY(v)) {
    yajl_gen_array_open(g);
    for (std::size_t i = 0; i < v->u.array.len; ++i) put_value(g, v->u.array.values[i]);
    yajl_gen_array_close(g);
  }
}

void put_raw_object(yajl_gen g, std::string_view object_text) {
  // yajl_gen has no "raw" call: parse and re-emit (the text is ours).
  const YajlTree tree = parse_json_object(std::string(object_text), "execCPUAffinity");
  put_value(g, tree.get());
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

// The value Go would decode for `key` in `object` (the last match), or null.
yajl_val go_member(yajl_val object, std::string_view key) {
  yajl_val found = nullptr;
  if (object == nullptr || !YAJL_IS_OBJECT(object)) return nullptr;
  for (std::size_t i = 0; i < object->u.object.len; ++i) {
    if (same_key(object->u.object.keys[i], key)) found = object->u.object.values[i];
  }
  return found;
}

struct Override {
  std::string_view key;
  std::function<void(yajl_gen, yajl_val)> write;  // given Go's current value
};

// `object` with every member named in `overrides` (any case) dropped and
// written again, last, by its override.
void put_object_with(yajl_gen g, yajl_val object, const std::vector<Override>& overrides) {
  yajl_gen_map_open(g);
  if (object != nullptr && YAJL_IS_OBJECT(object)) {
    for (std::size_t i = 0; i < object->u.object.len; ++i) {
      const std::string_view key = object->u.object.keys[i];
      if (std::any_of(overrides.begin(), overrides.end(),
                      [&](const Override& o) { return same_key(key, o.key); })) {
        continue;
      }
      put(g, key);
      put_value(g, object->u.object.values[i]);
    }
  }
  for (const Override& o : overrides) {
    put(g, o.key);
    o.write(g, go_member(object, o.key));
  }
  yajl_gen_map_close(g);
}

// A JSON array of strings `base` (null: none) with `more` appended.
void put_appended(yajl_gen g, yajl_val base, const std::vector<std::string>& more) {
  yajl_gen_array_open(g);
  if (base != nullptr && YAJL_IS_ARRAY(base)) {
    for (std::size_t i = 0; i < base->u.array.len; ++i) put_value(g, base->u.array.values[i]);
  }
  for (const auto& v : more) put(g, v);
  yajl_gen_array_close(g);
}

std::string generated(yajl_gen g) {
  const unsigned char* buffer = nullptr;
  std::size_t size = 0;
  yajl_gen_get_buf(g, &buffer, &size);
  return std::string(reinterpret_cast<const char*>(buffer), size);
}

std::optional<std::string> runc_process(const CliExec& e, const std::string& config_json,
                                        std::string_view affinity_json, std::string* why) {
  const YajlTree config = parse_json_object(config_json, "config.json");
  const yajl_val process = go_member(config.get(), "process");
  if (process == nullptr || !YAJL_IS_OBJECT(process)) {
    set_why(why, "config.json has no process object (runc would fail)");
    return std::nullopt;
  }
  const yajl_val caps = go_member(process, "capabilities");
  if (!e.caps.empty() && (caps == nullptr || !YAJL_IS_OBJECT(caps))) {
    set_why(why, "--cap with no capabilities in config.json (runc would crash)");
    return std::nullopt;
  }
  const Gen gen(yajl_gen_alloc(nullptr));
  yajl_gen g = gen.get();
  std::vector<Override> o;
  o.push_back({"args", [&](yajl_gen out, yajl_val) { put_strings(out, e.args); }});
  if (e.cwd && !e.cwd->empty())
    o.push_back({"cwd", [&](yajl_gen out, yajl_val) { put(out, *e.cwd); }});
  if (e.apparmor && !e.apparmor->empty()) {
    o.push_back({"apparmorProfile", [&](yajl_gen out, yajl_val) { put(out, *e.apparmor); }});
  }
  if (e.process_label && !e.process_label->empty()) {
    o.push_back({"selinuxLabel", [&](yajl_gen out, yajl_val) { put(out, *e.process_label); }});
  }
  if (!e.caps.empty()) {
    o.push_back({"capabilities", [&](yajl_gen out, yajl_val current) {
                   std::vector<Override> sets;
                   for (const char* set : {"bounding", "effective", "permitted"}) {
                     sets.push_back({set, [&](yajl_gen out2, yajl_val base) {
                                       put_appended(out2, base, e.caps);
                                     }});
                   }
                   // Go's `Inheritable != nil`: present and not null (an
                   // empty array counts).
                   const yajl_val inheritable = go_member(current, "inheritable");
                   if (inheritable != nullptr && !YAJL_IS_NULL(inheritable)) {
                     sets.push_back({"ambient", [&](yajl_gen out2, yajl_val base) {
                                       put_appended(out2, base, e.caps);
                                     }});
                   }
                   put_object_with(out, current, sets);
                 }});
  }
  if (!e.env.empty()) {
    o.push_back({"env", [&](yajl_gen out, yajl_val base) { put_appended(out, base, e.env); }});
  }
  o.push_back({"terminal", [&](yajl_gen out, yajl_val) { yajl_gen_bool(out, e.tty ? 1 : 0); }});
  if (e.no_new_privs) {
    o.push_back({"noNewPrivileges", [](yajl_gen out, yajl_val) { yajl_gen_bool(out, 1); }});
  }
  if (e.user) {
    o.push_back({"user", [&](yajl_gen out, yajl_val current) {
                   const std::size_t colon = e.user->find(':');
                   const std::string uid = e.user->substr(0, colon);
                   const std::string gid =
                       colon == std::string::npos ? "" : e.user->substr(colon + 1);
                   std::vector<Override> ids;
                   ids.push_back({"uid", [&](yajl_gen out2, yajl_val) {
                                    yajl_gen_number(out2, uid.data(), uid.size());
                                  }});
                   if (!gid.empty()) {
                     ids.push_back({"gid", [&](yajl_gen out2, yajl_val) {
                                      yajl_gen_number(out2, gid.data(), gid.size());
                                    }});
                   }
                   put_object_with(out, current, ids);
                 }});
  }
  o.push_back({"execCPUAffinity", [&](yajl_gen out, yajl_val) {
                 if (affinity_json.empty()) {
                   yajl_gen_null(out);
                 } else {
                   put_raw_object(out, affinity_json);
                 }
               }});
  put_object_with(g, process, o);
  return generated(g);
}

std::string crun_process(const CliExec& e, const std::vector<std::string>& env,
                         std::string_view affinity_json) {
  const Gen gen(yajl_gen_alloc(nullptr));
  yajl_gen g = gen.get();
  yajl_gen_map_open(g);
  put(g, "args");
  put_strings(g, e.args);
  // crun's process file needs a cwd; without --cwd crun's own exec uses
  // "/" (exec_process_entrypoint) and looks programs up from there.
  put(g, "cwd");
  put(g, e.cwd ? *e.cwd : "/");
  put(g, "terminal");
  yajl_gen_bool(g, e.tty ? 1 : 0);
  if (!env.empty()) {
    put(g, "env");
    put_strings(g, env);
  }
  if (e.user) {
    const std::size_t colon = e.user->find(':');
    const std::string uid = e.user->substr(0, colon);
    const std::string gid = colon == std::string::npos ? "0" : e.user->substr(colon + 1);
    put(g, "user");
    yajl_gen_map_open(g);
    put(g, "uid");
    yajl_gen_number(g, uid.data(), uid.size());
    put(g, "gid");
    yajl_gen_number(g, gid.data(), gid.size());
    yajl_gen_map_close(g);
  }
  if (e.process_label) {
    put(g, "selinuxLabel");
    put(g, *e.process_label);
  }
  if (e.apparmor) {
    put(g, "apparmorProfile");
    put(g, *e.apparmor);
  }
  if (!e.caps.empty()) {
    put(g, "capabilities");
    yajl_gen_map_open(g);
    for (const char* set : {"effective", "bounding", "ambient", "permitted"}) {
      put(g, set);
      put_strings(g, e.caps);
    }
    yajl_gen_map_close(g);
  }
  if (e.no_new_privs) {
    put(g, "noNewPrivileges");
    yajl_gen_bool(g, 1);
  }
  if (!affinity_json.empty()) {
    put(g, "execCPUAffinity");
    put_raw_object(g, affinity_json);
  }
  yajl_gen_map_close(g);
  return generated(g);
}

}  // namespace

std::optional<CliExec> read_cli_exec(const CommandLine& line, const CliRuntime& runtime,
                                     std::string* why) {
  const CliDialect dialect = runtime.dialect;
  if (line.command != "exec" || line.process || line.container_id_index == 0 ||
      line.program_index == 0) {
    set_why(why, "not the CLI form of exec with a program");
    return std::nullopt;
  }
  CliExec e;
  // urfave/cli (runc) refuses an option given in both its forms ("Cannot
  // use two forms of the same flag: e env"); argp (crun) takes both.
  std::vector<std::pair<const Option*, bool>> forms_seen;  // option, long form
  std::size_t i = line.command_index + 1;
  for (; i < line.argv.size(); ++i) {
    const std::string& arg = line.argv[i];
    if (arg.size() < 2 || arg[0] != '-') break;  // the container id
    const std::size_t eq = arg.rfind("--", 0) == 0 ? arg.find('=') : std::string::npos;
    const std::string name = arg.substr(0, eq);
    const Option* o = find_option(dialect, name);
    const bool long_form = name.rfind("--", 0) == 0;
    if (o == nullptr || (!long_form && name.size() != 2)) {
      set_why(why, "exec option " + quoted(arg) + " is not one the conversion knows");
      return std::nullopt;
    }
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
    std::optional<std::string> value;
    std::vector<std::string> tokens = {arg};
    if (o->kind == Kind::flag) {
      if (eq != std::string::npos) {
        set_why(why, "exec option " + quoted(arg) + ": a flag with a value is not converted");
        return std::nullopt;
      }
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else if (i + 1 < line.argv.size()) {
      value = line.argv[++i];
      tokens.push_back(*value);
    } else {
      set_why(why, "exec option " + quoted(arg) + " has no value");
      return std::nullopt;
    }
    switch (o->use) {
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
  if (i != line.container_id_index || line.argv[i] == "--") {
    set_why(why, "the command line does not read the same to the shim and to the conversion");
    return std::nullopt;
  }
  e.args.assign(line.argv.begin() + static_cast<long>(line.program_index), line.argv.end());
  return e;
}

std::optional<std::string> cli_process_json(const CliExec& exec, const CliRuntime& runtime,
                                            const std::string& config_json,
                                            std::string_view affinity_json, std::string* why) {
  if (runtime.dialect == CliDialect::runc) {
    return runc_process(exec, config_json, affinity_json, why);
  }
  if (exec.env.empty() || runtime.crun_env == CrunEnv::replaced) {
    return crun_process(exec, exec.env, affinity_json);
  }
  // crun 1.28 puts the container's env, then each --env value: the same
  // list in a process file gives the same environment.
  const YajlTree config = parse_json_object(config_json, "config.json");
  const yajl_val env = member(member(config.get(), "process"), "env");
  std::vector<std::string> merged;
  if (env != nullptr && YAJL_IS_ARRAY(env)) {
    for (std::size_t i = 0; i < env->u.array.len; ++i) {
      const yajl_val v = env->u.array.values[i];
      if (!YAJL_IS_STRING(v)) {
        set_why(why, "config.json's process.env is not an array of strings");
        return std::nullopt;
      }
      merged.emplace_back(YAJL_GET_STRING(v));
    }
  }
  merged.insert(merged.end(), exec.env.begin(), exec.env.end());
  return crun_process(exec, merged, affinity_json);
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
