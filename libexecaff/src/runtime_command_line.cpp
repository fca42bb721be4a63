// SPDX-License-Identifier: LGPL-2.1-or-later
// The two parsers, each as its source reads a token:
// * Go's flag.FlagSet.parseOne (runc, through urfave/cli v1): "-" or a
//   token not starting with '-' ends the options, "--" too (and is
//   consumed); one or two dashes alike; "name=value"; a value-taking flag
//   otherwise takes the next token whatever it is; a boolean flag takes a
//   value only after '='.  No clusters, no abbreviations.
// * glibc's getopt_long under argp with ARGP_IN_ORDER (crun): the first
//   non-option ends the options ("--" is consumed); "--name" matches
//   exactly, else as the unique prefix of one long name; "-abc" is a
//   cluster of short options, where one taking a value takes the rest of
//   the token, or (required only) the next token.
#include "runtime_command_line.hpp"

#include "error.hpp"

namespace execaff {
namespace {

using Options = std::span<const RuntimeOption>;

struct Reader {
  OptionSyntax syntax;
  std::span<const std::string> argv;
  std::optional<ReadProblem>& problem;

  void fail(std::size_t index, std::string reason) { problem = ReadProblem{index, std::move(reason)}; }

  static const RuntimeOption* by_short(Options options, char c) {
    for (const RuntimeOption& o : options) {
      if (o.shorts.find(c) != std::string_view::npos) return &o;
    }
    return nullptr;
  }

  static const RuntimeOption* by_name(Options options, std::string_view name) {
    for (const RuntimeOption& o : options) {
      if (o.name == name) return &o;
    }
    return nullptr;
  }

  // Reads options from argv[i] on into `out`; returns the index of the
  // first token that is not one (or argv.size()).  Stops early on a problem.
  std::size_t read(std::size_t i, Options options, std::vector<GivenOption>& out) {
    while (i < argv.size()) {
      const std::string& token = argv[i];
      if (token.size() < 2 || token[0] != '-') return i;
      if (token == "--") return i + 1;
      const std::size_t next = syntax == OptionSyntax::go_flag ? go_flag(i, options, out)
                               : token[1] == '-'               ? argp_long(i, options, out)
                                                               : argp_short(i, options, out);
      if (problem) return i;
      i = next;
    }
    return i;
  }

  // Takes the next token as the value of `given`; false (and a problem)
  // when there is none.
  bool value_from_next(std::size_t i, GivenOption& given) {
    if (i + 1 >= argv.size()) {
      fail(i, "option " + quoted(argv[i]) + " needs a value and the command line ends");
      return false;
    }
    given.value = argv[i + 1];
    given.value_index = i + 1;
    return true;
  }

  // "--name=value" (or "-name=value") at argv[i], `name` the token past
  // its `dashes`: the value and its spelling taken into the option given,
  // `name` cut to the name.
  GivenOption split_inline_value(std::size_t i, std::size_t dashes, std::string_view& name) const {
    GivenOption given;
    given.index = i;
    const std::size_t eq = name.find('=');
    if (eq != std::string_view::npos) {
      given.value = std::string(name.substr(eq + 1));
      given.value_index = i;
      given.inline_value = true;
      given.prefix = argv[i].substr(0, dashes + eq + 1);
      name = name.substr(0, eq);
    }
    return given;
  }

  std::size_t go_flag(std::size_t i, Options options, std::vector<GivenOption>& out) {
    const std::string& token = argv[i];
    const std::size_t dashes = token[1] == '-' ? 2 : 1;
    std::string_view name = std::string_view(token).substr(dashes);
    if (name.empty() || name[0] == '-' || name[0] == '=') {
      fail(i, "bad option syntax " + quoted(token));
      return i;
    }
    GivenOption given = split_inline_value(i, dashes, name);
    given.option = by_name(options, name);
    if (given.option == nullptr && name.size() == 1) given.option = by_short(options, name[0]);
    if (given.option == nullptr) {
      fail(i, "unknown option " + quoted(token));
      return i;
    }
    // "--name" for a long name, "-x" for a one-letter one: the spellings
    // every runtime reads alike.
    given.plain = (dashes == 2) == (name.size() > 1);
    std::size_t next = i + 1;
    if (given.option->argument != OptionArgument::none && !given.inline_value) {
      if (!value_from_next(i, given)) return i;
      next = i + 2;
    }
    out.push_back(std::move(given));
    return next;
  }

  std::size_t argp_long(std::size_t i, Options options, std::vector<GivenOption>& out) {
    const std::string& token = argv[i];
    std::string_view name = std::string_view(token).substr(2);
    GivenOption given = split_inline_value(i, 2, name);
    given.option = by_name(options, name);
    if (given.option == nullptr) {
      given.plain = false;
      std::size_t matches = 0;
      for (const RuntimeOption& o : options) {
        if (!name.empty() && o.name.substr(0, name.size()) == name) {
          given.option = &o;
          ++matches;
        }
      }
      if (matches > 1) {
        fail(i, "option " + quoted(token) + " is ambiguous");
        return i;
      }
    }
    if (given.option == nullptr) {
      fail(i, "unknown option " + quoted(token));
      return i;
    }
    switch (given.option->argument) {
      case OptionArgument::none:
        if (given.inline_value) {
          fail(i, "option " + quoted(token) + " takes no value");
          return i;
        }
        break;
      case OptionArgument::required:
        if (!given.inline_value) {
          if (!value_from_next(i, given)) return i;
          out.push_back(std::move(given));
          return i + 2;
        }
        break;
      case OptionArgument::optional: break;
    }
    out.push_back(std::move(given));
    return i + 1;
  }

  std::size_t argp_short(std::size_t i, Options options, std::vector<GivenOption>& out) {
    const std::string& token = argv[i];
    const bool cluster_of_one = token.size() == 2;
    for (std::size_t at = 1; at < token.size(); ++at) {
      GivenOption given;
      given.index = i;
      given.option = by_short(options, token[at]);
      if (given.option == nullptr) {
        fail(i, "unknown option " + quoted(std::string("-") + token[at]) + " in " + quoted(token));
        return i;
      }
      const bool rest = at + 1 < token.size();
      given.plain = cluster_of_one;
      if (given.option->argument == OptionArgument::none) {
        out.push_back(std::move(given));
        continue;
      }
      if (rest) {
        given.value = token.substr(at + 1);
        given.value_index = i;
        given.inline_value = true;
        given.prefix = token.substr(0, at + 1);
        given.plain = at == 1;  // "-pFILE"
      } else if (given.option->argument == OptionArgument::required) {
        if (!value_from_next(i, given)) return i;
        out.push_back(std::move(given));
        return i + 2;
      }
      out.push_back(std::move(given));
      return i + 1;
    }
    return i + 1;
  }
};

}  // namespace

const GivenOption* RuntimeCommandLine::last(std::string_view name, bool global_option) const {
  const GivenOption* found = nullptr;
  for (const GivenOption& g : global_option ? global : options) {
    if (g.option->name == name) found = &g;
  }
  return found;
}

std::vector<std::string> RuntimeCommandLine::values(std::string_view name) const {
  std::vector<std::string> all;
  for (const GivenOption& g : options) {
    if (g.option->name == name && g.value) all.push_back(*g.value);
  }
  return all;
}

RuntimeCommandLine read_runtime_command_line(const RuntimeOptionTable& table,
                                             std::span<const std::string> argv) {
  RuntimeCommandLine line;
  Reader reader{table.syntax, argv, line.problem};
  const std::size_t i = reader.read(1, table.global, line.global);
  if (line.problem || i >= argv.size()) return line;
  line.command_index = i;
  line.command = argv[i];
  const auto options = table.options_of(line.command);
  if (!options) return line;
  const std::size_t operand = reader.read(i + 1, *options, line.options);
  if (!line.problem && operand < argv.size()) line.operand_index = operand;
  return line;
}

}  // namespace execaff
