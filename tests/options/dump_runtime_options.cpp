// SPDX-License-Identifier: LGPL-2.1-or-later
// Prints libexecaff's runtime option tables (runtime_options.hpp) as JSON,
// for test_runtime_help.py to hold against each installed runtime's --help.
#include <iostream>
#include <span>

#include "json_writer.hpp"
#include "runtime_options.hpp"

namespace {

const char* argument_name(execaff::OptionArgument a) {
  switch (a) {
    case execaff::OptionArgument::none: return "none";
    case execaff::OptionArgument::required: return "required";
    case execaff::OptionArgument::optional: return "optional";
  }
  return "?";
}

void put_options(execaff::json::Writer& out, std::span<const execaff::RuntimeOption> options) {
  out.open_array();
  for (const execaff::RuntimeOption& o : options) {
    out.open_object();
    out.member("name", o.name);
    out.member("shorts", o.shorts);
    out.member("argument", argument_name(o.argument));
    out.key("repeatable").boolean(o.repeatable);
    out.key("hidden").boolean(o.hidden);
    out.close_object();
  }
  out.close_array();
}

}  // namespace

int main() {
  execaff::json::Writer out;
  out.open_array();
  for (const execaff::RuntimeOptionTable& t : execaff::runtime_option_tables()) {
    out.open_object();
    out.member("kind", t.kind);
    out.member("release", t.release);
    out.member("syntax", t.syntax == execaff::OptionSyntax::go_flag ? "go_flag" : "argp");
    out.key("global");
    put_options(out, t.global);
    out.key("commands").open_object();
    for (const execaff::CommandOptions& c : t.commands) {
      out.key(c.command);
      put_options(out, c.options);
    }
    out.close_object();
    out.close_object();
  }
  out.close_array();
  std::cout << out.take() << "\n";
  return 0;
}
