// SPDX-License-Identifier: LGPL-2.1-or-later
// The shim's std::terminate message, without libstdc++'s demangler.
//
// libstdc++'s default terminate handler, __gnu_cxx::__verbose_terminate_handler
// (libsupc++/vterminate.cc), demangles the exception's type name: linked
// statically, that pulls in the whole demangler (cp-demangle.o, about 40 KB
// of text and tables) for a message nothing should ever print — main()
// catches what an exec's plan throws.  A definition here is found before
// libstdc++.a's, so vterminate.o and the demangler stay out (issue 18 §5,
// the shim's text).  The message keeps libstdc++'s wording; the type is
// shown as the compiler names it (`St13runtime_error`), not demangled.
#include <cxxabi.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <typeinfo>

namespace {

void say(const char* text) noexcept {
  std::size_t left = std::strlen(text);
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, text, left);
    if (n <= 0) return;
    text += n;
    left -= static_cast<std::size_t>(n);
  }
}

bool terminating = false;

}  // namespace

namespace __gnu_cxx {

void __verbose_terminate_handler() {
  if (terminating) {
    say("terminate called recursively\n");
    std::abort();
  }
  terminating = true;
  const std::type_info* type = abi::__cxa_current_exception_type();
  if (type == nullptr) {
    say("terminate called without an active exception\n");
    std::abort();
  }
  say("terminate called after throwing an instance of '");
  const char* name = type->name();
  say(name[0] == '*' ? name + 1 : name);
  say("'\n");
  try {
    throw;
  } catch (const std::exception& e) {
    say("  what():  ");
    say(e.what());
    say("\n");
  } catch (...) {
  }
  std::abort();
}

}  // namespace __gnu_cxx
