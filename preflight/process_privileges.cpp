// SPDX-License-Identifier: LGPL-2.1-or-later
#include "process_privileges.hpp"

#include <sys/capability.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <memory>

#include "error.hpp"
#include "yajl_tree.hpp"

namespace execaff::preflight {
namespace {

struct CapFree {
  void operator()(void* p) const noexcept { cap_free(p); }
};

std::vector<std::string> names_in(yajl_val caps, const char* set, const std::string& where) {
  std::vector<std::string> out;
  const yajl_val list = member(caps, set);
  if (list == nullptr) return out;
  if (!YAJL_IS_ARRAY(list)) throw Error(EINVAL, where + "." + set + " must be an array");
  for (std::size_t i = 0; i < list->u.array.len; ++i) {
    if (!YAJL_IS_STRING(list->u.array.values[i])) {
      throw Error(EINVAL, where + "." + set + " must hold strings");
    }
    out.emplace_back(YAJL_GET_STRING(list->u.array.values[i]));
  }
  return out;
}

}  // namespace

ProcessPrivileges read_process_privileges(yajl_val process, std::string_view source) {
  ProcessPrivileges out;
  const std::string where = std::string(source) + " process.capabilities";
  const yajl_val nnp = member(process, "noNewPrivileges");
  out.no_new_privileges = nnp != nullptr && YAJL_IS_TRUE(nnp);
  const yajl_val caps = member(process, "capabilities");
  const std::unique_ptr<std::remove_pointer_t<cap_t>, CapFree> set(cap_init());
  if (!set) throw Error(ENOMEM, "cap_init");
  const auto value_of = [&](const std::string& name, cap_value_t& value) {
    if (cap_from_name(name.c_str(), &value) == 0) return true;
    if (std::find(out.unknown.begin(), out.unknown.end(), name) == out.unknown.end()) {
      out.unknown.push_back(name);
    }
    return false;
  };
  if (caps != nullptr) {
    if (!YAJL_IS_OBJECT(caps)) throw Error(EINVAL, where + " must be an object");
    const std::pair<const char*, cap_flag_t> flagged[] = {{"effective", CAP_EFFECTIVE},
                                                          {"permitted", CAP_PERMITTED},
                                                          {"inheritable", CAP_INHERITABLE}};
    for (const auto& [name, flag] : flagged) {
      for (const std::string& cap : names_in(caps, name, where)) {
        cap_value_t value = 0;
        if (value_of(cap, value)) (void)cap_set_flag(set.get(), flag, 1, &value, CAP_SET);
      }
    }
    for (const auto& [name, into] :
         {std::pair{"bounding", &out.bounding}, std::pair{"ambient", &out.ambient}}) {
      for (const std::string& cap : names_in(caps, name, where)) {
        cap_value_t value = 0;
        if (!value_of(cap, value)) continue;
        const std::unique_ptr<char, CapFree> text(cap_to_name(value));
        into->emplace_back(text ? text.get() : cap);
      }
    }
  }
  const std::unique_ptr<char, CapFree> text(cap_to_text(set.get(), nullptr));
  out.text = text ? text.get() : "?";
  return out;
}

PreflightCheck check_process_privileges(yajl_val process, std::string_view source) {
  PreflightCheck c{.name = "capabilities"};
  const ProcessPrivileges p = read_process_privileges(process, source);
  std::string text = "effective/permitted/inheritable \"" + p.text + "\"; bounding";
  for (const auto& n : p.bounding) text += " " + n;
  if (p.bounding.empty()) text += " (none)";
  text += "; ambient";
  for (const auto& n : p.ambient) text += " " + n;
  if (p.ambient.empty()) text += " (none)";
  text += std::string("; no_new_privs ") + (p.no_new_privileges ? "true" : "false");
  text +=
      ". The trampoline needs no capability: sched_setaffinity on itself and execve need none, "
      "and no_new_privs does not stop it";
  if (!p.unknown.empty()) {
    c.ok = false;
    text += ". Unknown to libcap, so the runtime refuses the exec itself:";
    for (const auto& n : p.unknown) text += " " + n;
    c.fix = "correct the capability names";
  }
  c.detail = text;
  return c;
}

}  // namespace execaff::preflight
