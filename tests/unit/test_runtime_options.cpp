// SPDX-License-Identifier: LGPL-2.1-or-later
// The option tables (runtime_options.hpp) and the reader of a runtime's
// command line (runtime_command_line.hpp): each case is a line and what the
// runtime itself does with it, as measured with the binaries
// (spec/runtime-options.md); tests/runtimes/test_runtime_help.py holds the
// tables against each runtime's --help.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "runtime_command_line.hpp"
#include "runtime_options.hpp"

using execaff::OptionArgument;
using execaff::read_runtime_command_line;
using execaff::RuntimeCommandLine;
using execaff::RuntimeOption;
using execaff::RuntimeOptionTable;

namespace {

const RuntimeOptionTable& table(const char* kind, const char* release) {
  const RuntimeOptionTable* t = execaff::runtime_option_table(kind, release);
  if (t == nullptr) throw std::runtime_error(std::string("no table for ") + kind + " " + release);
  return *t;
}

RuntimeCommandLine read(const RuntimeOptionTable& t, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"runtime"};
  argv.reserve(args.size() + 1);
  for (const auto& a : args) argv.push_back(a);
  return read_runtime_command_line(t, argv);
}

// The container id a line names (its index in `args`, counted without the
// program name), or -1 when the runtime's parser stops before it.
int id_index(const RuntimeCommandLine& line) {
  return line.problem || line.operand_index == 0 ? -1 : static_cast<int>(line.operand_index) - 1;
}

const RuntimeOption* find(std::span<const RuntimeOption> options, std::string_view name) {
  for (const RuntimeOption& o : options) {
    if (o.name == name) return &o;
  }
  return nullptr;
}

// An option both know reads alike; one the newest lacks (runc 1.1.5's
// --criu) makes the newest table stop, and the release's own table reads
// the line (exec_command.cpp asks `--version` then).
TEST(RuntimeOptionTables, NewestOfAKindReadsEveryOlderReleaseAlike) {
  for (const RuntimeOptionTable& t : execaff::runtime_option_tables()) {
    const RuntimeOptionTable* newest = execaff::newest_runtime_option_table(t.kind);
    ASSERT_NE(newest, nullptr);
    EXPECT_EQ(newest->syntax, t.syntax);
    const auto same = [&](std::span<const RuntimeOption> older, std::span<const RuntimeOption> newer,
                          std::string_view what) {
      for (const RuntimeOption& o : older) {
        const RuntimeOption* n = find(newer, o.name);
        if (n == nullptr) continue;
        EXPECT_EQ(n->argument, o.argument) << what << " --" << o.name;
        EXPECT_EQ(n->shorts, o.shorts) << what << " --" << o.name;
      }
    };
    same(t.global, newest->global, "global");
    same(newest->global, t.global, "global");
    for (const auto& c : t.commands) same(c.options, *newest->options_of(c.command), c.command);
  }
}

TEST(RuntimeOptionTables, NamesAndShortFormsAreUniquePerCommand) {
  for (const RuntimeOptionTable& t : execaff::runtime_option_tables()) {
    std::vector<std::span<const RuntimeOption>> sets = {t.global};
    for (const auto& c : t.commands) sets.push_back(c.options);
    for (const auto& options : sets) {
      std::set<std::string_view> names;
      std::set<char> shorts;
      for (const RuntimeOption& o : options) {
        EXPECT_TRUE(names.insert(o.name).second) << t.release << " --" << o.name;
        for (const char c : o.shorts) EXPECT_TRUE(shorts.insert(c).second) << t.release << " -" << c;
      }
    }
  }
}

TEST(RuntimeOptionTables, FoundByKindVersionAndPath) {
  EXPECT_EQ(execaff::runtime_option_table("runc", "1.1.5+ds1"), &table("runc", "1.1.5"));
  EXPECT_EQ(execaff::runtime_option_table_of_version_line("runc version 1.3.6"),
            &table("runc", "1.3.6"));
  EXPECT_EQ(execaff::runtime_option_table_of_version_line("crun version 1.21"),
            &table("crun", "1.21"));
  EXPECT_EQ(execaff::runtime_option_table_of_version_line("crun version 1.19.3-e5f3"), nullptr);
  EXPECT_EQ(execaff::runtime_option_table_of_version_line("youki version 0.4.1"), nullptr);
  EXPECT_EQ(execaff::newest_runtime_option_table("runc"), &table("runc", "1.3.6"));
  EXPECT_EQ(execaff::newest_runtime_option_table("crun"), &table("crun", "1.28"));
  EXPECT_EQ(execaff::newest_runtime_option_table("youki"), nullptr);
  EXPECT_EQ(execaff::runtime_kind_of("/var/tmp/execaff-peers/runc-1.3.6/runc"), "runc");
  EXPECT_EQ(execaff::runtime_kind_of("/usr/local/bin/crun-fork"), "crun");
  EXPECT_EQ(execaff::runtime_kind_of("/usr/bin/youki"), "");
}

TEST(RuntimeOptionTables, EveryExecOptionTakingAValueIsListed) {
  // The option whose absence from one list let an exec run unpinned.
  const auto* pidfd = find(*table("runc", "1.3.6").options_of("exec"), "pidfd-socket");
  ASSERT_NE(pidfd, nullptr);
  EXPECT_EQ(pidfd->argument, OptionArgument::required);
  EXPECT_EQ(find(*table("runc", "1.1.5").options_of("exec"), "pidfd-socket"), nullptr);
  const auto* tty = find(*table("crun", "1.28").options_of("exec"), "tty");
  ASSERT_NE(tty, nullptr);
  EXPECT_EQ(tty->argument, OptionArgument::optional);
}

struct Case {
  std::vector<std::string> args;
  int id;  // index of the container id in args, -1: the runtime refuses the line
};

void expect_cases(const RuntimeOptionTable& t, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    const RuntimeCommandLine line = read(t, c.args);
    std::string text;
    for (const auto& a : c.args) text += a + " ";
    EXPECT_EQ(id_index(line), c.id) << t.kind << " " << t.release << ": " << text
                                    << (line.problem ? line.problem->reason : "");
    if (c.id < 0) {
      EXPECT_TRUE(line.problem) << text;
    }
  }
}

TEST(ReadRuntimeCommandLine, AsRuncReadsIt) {
  // Each as runc 1.3.6 does (measured: "flag provided but not defined", exit 1).
  expect_cases(table("runc", "1.3.6"),
               {
                   {{"exec", "--pidfd-socket", "/s", "ID", "cmd"}, 3},
                   {{"exec", "--pidfd-socket=/s", "ID", "cmd"}, 2},
                   {{"exec", "-pidfd-socket", "/s", "ID", "cmd"}, 3},  // Go: one dash alike
                   {{"exec", "-process", "/p", "ID"}, 3},
                   {{"exec", "--e", "A=1", "ID", "cmd"}, 3},  // a one-letter name, two dashes
                   {{"exec", "--detach=false", "ID", "cmd"}, 2},
                   {{"exec", "-t", "-d", "ID", "cmd"}, 3},
                   {{"exec", "--", "ID", "cmd"}, 2},
                   {{"exec", "--env", "--cwd", "ID", "cmd"}, 3},  // a value may start with '-'
                   {{"--root", "/r", "--log=/l", "--debug", "exec", "ID", "cmd"}, 5},
                   {{"-root", "/r", "exec", "ID", "cmd"}, 3},
                   {{"exec", "-dt", "ID", "cmd"}, -1},  // no clusters
                   {{"exec", "-pfoo", "ID"}, -1},
                   {{"exec", "--proc", "/p", "ID"}, -1},  // no abbreviations
                   {{"exec", "--bogus", "ID", "cmd"}, -1},
                   {{"exec", "---x", "ID"}, -1},
                   {{"exec", "--cwd"}, -1},
                   {{"--bogus", "exec", "ID", "cmd"}, -1},
               });
  // 1.1.5 has no --pidfd-socket: it refuses the line.
  expect_cases(table("runc", "1.1.5"), {{{"exec", "--pidfd-socket", "/s", "ID", "cmd"}, -1}});
}

TEST(ReadRuntimeCommandLine, AsCrunReadsIt) {
  for (const char* release : {"1.8.1", "1.21", "1.28"}) {
    expect_cases(table("crun", release),
                 {
                     {{"exec", "-dp", "/p", "ID"}, 3},
                     {{"exec", "-dp/p", "ID"}, 2},
                     {{"exec", "-process", "/x", "ID"}, 2},  // -p "rocess", then the id "/x"
                     {{"exec", "--pid", "/f", "ID", "cmd"}, 3},   // --pid-file
                     {{"exec", "--e", "A=1", "ID", "cmd"}, 3},    // --env
                     {{"exec", "--cw", "/", "ID", "cmd"}, 3},     // --cwd
                     {{"exec", "-tX", "ID", "cmd"}, 2},           // --tty=X
                     {{"exec", "-t", "ID", "cmd"}, 2},            // no value: never the next token
                     {{"exec", "--tty", "ID", "cmd"}, 2},
                     {{"exec", "-ed", "ID", "cmd"}, 2},  // -e "d"
                     {{"exec", "--", "ID", "cmd"}, 2},
                     {{"--root=/r", "--log", "/l", "exec", "ID", "cmd"}, 4},
                     {{"exec", "--proc", "/p", "ID"}, -1},  // ambiguous: --process, --process-label
                     {{"exec", "--detach=1", "ID", "cmd"}, -1},
                     {{"exec", "--pidfd-socket", "/s", "ID", "cmd"}, -1},
                     {{"exec", "-Z", "ID", "cmd"}, -1},
                     {{"exec", "-p"}, -1},
                     {{"--bogus", "exec", "ID", "cmd"}, -1},
                 });
  }
}

TEST(ReadRuntimeCommandLine, GivesValuesAndWhereTheyStand) {
  const RuntimeCommandLine line =
      read(table("crun", "1.21"), {"--root", "/r", "exec", "-dp/p", "-e", "A=1", "--env=B=2",
                                   "--preserve-fds", "2", "ID", "sh"});
  ASSERT_FALSE(line.problem);
  EXPECT_EQ(line.command, "exec");
  EXPECT_EQ(line.command_index, 3U);
  const auto* root = line.last("root", true);
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->value, "/r");
  const auto* process = line.last("process");
  ASSERT_NE(process, nullptr);
  EXPECT_EQ(process->value, "/p");
  EXPECT_TRUE(process->inline_value);
  EXPECT_EQ(process->prefix, "-dp");
  EXPECT_FALSE(process->plain);
  EXPECT_EQ(line.values("env"), (std::vector<std::string>{"A=1", "B=2"}));
  const auto* fds = line.last("preserve-fds");
  ASSERT_NE(fds, nullptr);
  EXPECT_EQ(fds->value_index, 9U);
  EXPECT_FALSE(fds->inline_value);
  EXPECT_EQ(line.operand_index, 10U);
}

TEST(ReadRuntimeCommandLine, OtherCommandsPassWithTheirOwnOptions) {
  const RuntimeCommandLine create =
      read(table("crun", "1.8.1"), {"create", "--config", "/c.json", "-b", "/b", "ID"});
  ASSERT_FALSE(create.problem);
  const auto* config = create.last("config");
  const auto* bundle = create.last("bundle");
  ASSERT_TRUE(config != nullptr && bundle != nullptr);
  EXPECT_EQ(config->value, "/c.json");
  EXPECT_EQ(bundle->value, "/b");
  const RuntimeCommandLine kill = read(table("runc", "1.1.5"), {"kill", "--all", "ID", "KILL"});
  EXPECT_FALSE(kill.problem);  // not read: passed through
  EXPECT_EQ(kill.command, "kill");
  EXPECT_EQ(kill.operand_index, 0U);
}

}  // namespace
