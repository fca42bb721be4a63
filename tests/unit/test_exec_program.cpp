// SPDX-License-Identifier: LGPL-2.1-or-later
// Which program an exec runs (libexecaff/src/exec_program.hpp): the
// documents plus the exec's command line, by runc's and crun's rules; and
// runc's path cleaning, written twice — libexecaff's and the freestanding
// trampoline's (shim/go_path_clean.h) — held to one table.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "error.hpp"
#include "exec_program.hpp"

extern "C" unsigned long execaff_test_trampoline_clean(const char* in, unsigned long n, char* out);

namespace {

using execaff::DecideRequest;
using execaff::ExecArgv;
using execaff::ExecProgram;
using execaff::RuntimeRules;

std::string trampoline_clean(const std::string& path) {
  std::vector<char> out(path.size() + 2, 'X');
  const unsigned long n = execaff_test_trampoline_clean(path.data(), path.size(), out.data());
  EXPECT_EQ(out[n], '\0') << path;
  return std::string(out.data(), n);
}

// Go's own table for filepath.Clean (path/filepath/path_test.go,
// cleantests), and the spellings a $PATH candidate takes.
struct CleanCase {
  const char* path;
  const char* clean;
};
constexpr CleanCase kCleanCases[] = {
    // Already clean.
    {"abc", "abc"}, {"abc/def", "abc/def"}, {"a/b/c", "a/b/c"}, {".", "."}, {"..", ".."},
    {"../..", "../.."}, {"../../abc", "../../abc"}, {"/abc", "/abc"}, {"/", "/"},
    // Empty is current dir.
    {"", "."},
    // Trailing slashes, doubled slashes.
    {"abc/", "abc"}, {"abc/def/", "abc/def"}, {"a/b/c/", "a/b/c"}, {"./", "."}, {"../", ".."},
    {"../../", "../.."}, {"/abc/", "/abc"}, {"abc//def//ghi", "abc/def/ghi"}, {"//abc", "/abc"},
    {"///abc", "/abc"}, {"//abc//", "/abc"}, {"abc//", "abc"},
    // "." elements.
    {"abc/./def", "abc/def"}, {"/./abc/def", "/abc/def"}, {"abc/.", "abc"},
    // ".." elements.
    {"abc/def/ghi/../jkl", "abc/def/jkl"}, {"abc/def/../ghi/../jkl", "abc/jkl"},
    {"abc/def/..", "abc"}, {"abc/def/../..", "."}, {"/abc/def/../..", "/"},
    {"abc/def/../../..", ".."}, {"/abc/def/../../..", "/"},
    {"abc/def/../../../ghi/jkl/../../../mno", "../../mno"}, {"/../abc", "/abc"},
    {"a/../b/../../c", "../c"},
    // Combinations.
    {"abc/./../def", "def"}, {"abc//./../def", "def"}, {"abc/../../././../def", "../../def"},
    // $PATH candidates: dir + "/" + program.
    {"/usr/local/bin/../../bin/sh", "/usr/bin/sh"}, {"/bin//sh", "/bin/sh"},
    {"/nowhere/../bin/sh", "/bin/sh"}, {"./sh", "sh"}, {"bin/./sh", "bin/sh"},
    {"/..", "/"}, {"/../..", "/"}, {"...", "..."}, {"/a/.../b", "/a/.../b"}, {"..a/b", "..a/b"},
    {"a/..b/..", "a"}, {".a/./b.", ".a/b."},
};

TEST(GoCleanPath, LibexecaffAndTheTrampolineAgreeWithGo) {
  for (const CleanCase& c : kCleanCases) {
    EXPECT_EQ(execaff::go_clean_path(c.path), c.clean) << "libexecaff, path \"" << c.path << "\"";
    EXPECT_EQ(trampoline_clean(c.path), c.clean) << "trampoline, path \"" << c.path << "\"";
  }
}

TEST(RuntimeRules, ByTheBinarysName) {
  EXPECT_EQ(execaff::runtime_rules_of("/usr/bin/crun"), RuntimeRules::crun);
  EXPECT_EQ(execaff::runtime_rules_of("/usr/local/bin/crun-execaff"), RuntimeRules::crun);
  EXPECT_EQ(execaff::runtime_rules_of("/usr/sbin/runc"), RuntimeRules::runc);
  EXPECT_EQ(execaff::runtime_rules_of("/opt/crun/bin/youki"), RuntimeRules::runc);
  EXPECT_EQ(execaff::runtime_rules_of("crun"), RuntimeRules::crun);
  EXPECT_EQ(execaff::parse_runtime_rules("crun"), RuntimeRules::crun);
  EXPECT_EQ(execaff::parse_runtime_rules("runc"), RuntimeRules::runc);
  EXPECT_FALSE(execaff::parse_runtime_rules("youki"));
  EXPECT_STREQ(execaff::to_string(RuntimeRules::crun), "crun");
}

DecideRequest config_only(const char* process) {
  DecideRequest request;
  request.config = execaff::parse_config_document(std::string("{\"process\": ") + process + "}",
                                                  "config \"c.json\"");
  return request;
}

constexpr const char* kConfigProcess =
    R"({"args": ["nginx", "-g"], "env": ["PATH=/usr/bin:/bin", "TERM=xterm"], "cwd": "/srv"})";

TEST(ResolveExecProgram, TheProcessFileAloneCounts) {
  DecideRequest request = config_only(kConfigProcess);
  request.process = execaff::parse_process_document(
      R"({"args": ["sh", "-c", "true"], "env": ["PATH=/sbin"], "cwd": "/tmp"})", "process file");
  // The command line is ignored with --process, as both runtimes ignore it.
  const ExecArgv argv{.program = "ls", .env = {"PATH=/x"}, .cwd = "/y"};
  for (const RuntimeRules rules : {RuntimeRules::runc, RuntimeRules::crun}) {
    const ExecProgram exec = execaff::resolve_exec_program(request, argv, rules);
    EXPECT_EQ(exec.program, "sh");
    EXPECT_EQ(exec.env, std::vector<std::string>{"PATH=/sbin"});
    EXPECT_EQ(exec.cwd, "/tmp");
    EXPECT_EQ(exec.rules, rules);
  }
}

TEST(ResolveExecProgram, RuncAppendsEnvCrunReplacesIt) {
  const DecideRequest request = config_only(kConfigProcess);
  const ExecArgv argv{.program = "sh", .env = {"A=b"}, .cwd = std::nullopt};
  const ExecProgram runc = execaff::resolve_exec_program(request, argv, RuntimeRules::runc);
  EXPECT_EQ(runc.program, "sh");
  EXPECT_EQ(runc.env, (std::vector<std::string>{"PATH=/usr/bin:/bin", "TERM=xterm", "A=b"}));
  EXPECT_EQ(runc.cwd, "/srv");
  const ExecProgram crun = execaff::resolve_exec_program(request, argv, RuntimeRules::crun);
  EXPECT_EQ(crun.program, "sh");
  EXPECT_EQ(crun.env, std::vector<std::string>{"A=b"});  // no PATH: crun finds no sh
  // Without --env, crun keeps config.json's env as runc does.
  const ExecProgram plain =
      execaff::resolve_exec_program(request, ExecArgv{.program = "sh"}, RuntimeRules::crun);
  EXPECT_EQ(plain.env, (std::vector<std::string>{"PATH=/usr/bin:/bin", "TERM=xterm"}));
}

TEST(ResolveExecProgram, CwdAndProgramFromTheCommandLine) {
  const DecideRequest request = config_only(kConfigProcess);
  const ExecProgram cwd = execaff::resolve_exec_program(
      request, ExecArgv{.program = "ls", .cwd = "/var"}, RuntimeRules::runc);
  EXPECT_EQ(cwd.program, "ls");
  EXPECT_EQ(cwd.cwd, "/var");
  // No program on the command line: config.json's (execaff explain without PROGRAM).
  EXPECT_EQ(execaff::resolve_exec_program(request, ExecArgv{}, RuntimeRules::runc).program, "nginx");
  // An empty one (the shim's CLI form without a command) stays empty.
  EXPECT_EQ(execaff::resolve_exec_program(request, ExecArgv{.program = ""}, RuntimeRules::runc)
                .program,
            "");
}

TEST(ResolveExecProgram, MissingMembersAreEmpty) {
  const ExecProgram none =
      execaff::resolve_exec_program(config_only("{}"), ExecArgv{}, RuntimeRules::crun);
  EXPECT_EQ(none.program, "");
  EXPECT_TRUE(none.env.empty());
  EXPECT_EQ(none.cwd, "");
  EXPECT_EQ(execaff::resolve_exec_program(DecideRequest{}, ExecArgv{.program = "sh"},
                                          RuntimeRules::runc)
                .program,
            "sh");
}

TEST(ResolveExecProgram, AWrongTypeNamesTheDocument) {
  DecideRequest request = config_only(kConfigProcess);
  request.process = execaff::parse_process_document(R"({"args": "sh"})", "process file \"p.json\"");
  try {
    (void)execaff::resolve_exec_program(request, ExecArgv{}, RuntimeRules::runc);
    FAIL() << "no error";
  } catch (const execaff::Error& e) {
    EXPECT_EQ(e.code(), EINVAL);
    EXPECT_EQ(std::string(e.what()),
              R"(process file "p.json": process.args: expected an array, got a string "sh")");
  }
}

}  // namespace
