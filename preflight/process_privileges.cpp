// SPDX-License-Identifier: LGPL-2.1-or-later
#include "process_privileges.hpp"

#include <sys/capability.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <memory>

#include "error.hpp"

namespace execaff::preflight {
namespace {

struct CapFree {
  void operator()(void* p) const noexcept { cap_free(p); }
};

}  // namespace

ProcessPrivileges read_process_privileges(const ProcessCapabilities& capabilities) {
  if (capabilities.problem) throw *capabilities.problem;
  ProcessPrivileges out;
  out.no_new_privileges = capabilities.no_new_privileges;
  const std::unique_ptr<std::remove_pointer_t<cap_t>, CapFree> set(cap_init());
  if (!set) throw Error(ENOMEM, "cap_init");
  const auto value_of = [&](const std::string& name, cap_value_t& value) {
    if (cap_from_name(name.c_str(), &value) == 0) return true;
    if (std::find(out.unknown.begin(), out.unknown.end(), name) == out.unknown.end()) {
      out.unknown.push_back(name);
    }
    return false;
  };
  const std::pair<const std::vector<std::string>*, cap_flag_t> flagged[] = {
      {&capabilities.effective, CAP_EFFECTIVE},
      {&capabilities.permitted, CAP_PERMITTED},
      {&capabilities.inheritable, CAP_INHERITABLE}};
  for (const auto& [names, flag] : flagged) {
    for (const std::string& cap : *names) {
      cap_value_t value = 0;
      if (value_of(cap, value)) (void)cap_set_flag(set.get(), flag, 1, &value, CAP_SET);
    }
  }
  for (const auto& [names, into] : {std::pair{&capabilities.bounding, &out.bounding},
                                    std::pair{&capabilities.ambient, &out.ambient}}) {
    for (const std::string& cap : *names) {
      cap_value_t value = 0;
      if (!value_of(cap, value)) continue;
      const std::unique_ptr<char, CapFree> text(cap_to_name(value));
      into->emplace_back(text ? text.get() : cap);
    }
  }
  const std::unique_ptr<char, CapFree> text(cap_to_text(set.get(), nullptr));
  out.text = text ? text.get() : "?";
  return out;
}

PreflightCheck check_process_privileges(const ProcessCapabilities& capabilities) {
  PreflightCheck c{.name = "capabilities"};
  const ProcessPrivileges p = read_process_privileges(capabilities);
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
