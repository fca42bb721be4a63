// SPDX-License-Identifier: LGPL-2.1-or-later
// The one JSON reader (its policy, paths in messages, problem slots, the
// parse count) and the one writer (yajl_gen: escaping, pieces joined by
// separators), and the documents' views that keep their problems instead
// of refusing the document: the launch, the capabilities, the seccomp
// profile.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "error.hpp"
#include "error_from.hpp"
#include "json_handlers.hpp"
#include "json_reader.hpp"
#include "json_value.hpp"
#include "json_writer.hpp"
#include "node_config.hpp"
#include "read_tally.hpp"
#include "spec_json.hpp"

namespace execaff {
namespace {

using namespace std::string_view_literals;

template <typename Action>
std::string error_text(Action&& action) {
  return error_from(std::forward<Action>(action)).what();
}

// {"list": [{"name": "..."}...], "other": ...}: names into a vector.
struct Names {
  std::vector<std::string> names;
  std::optional<Error> problem;
  std::string name;

  class Entry : public json::ObjectOf<1> {
   public:
    Entry(Names* owner, std::optional<Error>* problem)
        : ObjectOf({{{"name", &name_}}}, json::Nulls::refused, problem),
          owner_(owner),
          name_(&owner->name, json::Nulls::refused, problem) {}
    void on_end(json::Reader& /*reader*/) override { owner_->names.push_back(owner_->name); }

   private:
    Names* owner_;
    json::StringValue name_;
  };
  class List : public json::Handler {
   public:
    List(Entry* entry, std::optional<Error>* problem)
        : Handler("an array", problem), entry_(entry) {}
    json::Handler* on_array(json::Reader& /*reader*/) override { return this; }
    json::Handler* on_element(json::Reader& /*reader*/) override { return entry_; }

   private:
    Entry* entry_;
  };

  // With `soft`, problems are kept in `problem`; else they refuse.
  explicit Names(bool soft)
      : entry_(this, soft ? &problem : nullptr),
        list_(&entry_, soft ? &problem : nullptr),
        root_({{{"list", &list_}}}, json::Nulls::refused) {}
  void read(std::string_view text) { json::read(text, root_, "test doc"); }

 private:
  Entry entry_;
  List list_;
  json::ObjectOf<1> root_;
};

TEST(JsonReader, PathsNameMembersAndElements) {
  EXPECT_EQ(error_text([] { Names(false).read(R"({"list":[{"name":"a"},{"name":5}]})"); }),
            "test doc: list[1].name: expected a string, got a number 5");
  EXPECT_EQ(error_text([] { Names(false).read(R"({"list":{}})"); }),
            "test doc: list: expected an array, got an object");
  EXPECT_EQ(error_text([] { Names(false).read(R"([])"); }),
            "test doc: expected an object at the top level, got an array");
  // A key written with escapes is shown decoded; one that is not plain
  // ASCII is quoted.
  EXPECT_EQ(error_text([] { Names(false).read(R"({"l\u0069st":[{"name":true}]})"); }),
            "test doc: list[0].name: expected a string, got a boolean true");
  EXPECT_EQ(error_text([] { Names(false).read(R"({"list":[{"name":"a","name":"b"}]})"); }),
            "test doc: list[0].name: " + std::string(json::kDuplicateKey));
}

TEST(JsonReader, ProblemSlotsKeepTheFirstProblemAndReadOn) {
  Names names(true);
  names.read(R"({"list":[{"name":"a"},{"name":5},{"name":"c"},{"name":[]}],"x":1})");
  ASSERT_TRUE(names.problem);
  EXPECT_EQ(std::string(names.problem->what()),
            "test doc: list[1].name: expected a string, got a number 5");
  EXPECT_EQ(names.names, (std::vector<std::string>{"a", "a", "c", "c"}));
  // Syntax errors are never a value's problem: the document is refused.
  EXPECT_NE(error_text([] {
              Names(true).read(R"({"list":[{"name":"a"})");
            }).find("malformed JSON near byte offset"),
            std::string::npos);
}

TEST(JsonReader, SkippedValuesAreCountedNotWalked) {
  Names names(false);
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  names.read(R"({"x":)" + deep + R"(,"list":[{"name":"z","y":)" + deep + "}]}");
  EXPECT_EQ(names.names, (std::vector<std::string>{"z"}));
}

TEST(JsonReader, OnePolicyForEveryDocument) {
  // No comments, whatever the document: runc's decoder refuses them in the
  // files it reads after us, and the node config is read the same way.
  const std::string comment = R"({"list":[] /* c */})";
  EXPECT_NE(error_text([&] { Names(false).read(comment); }).find("comments are not enabled"),
            std::string::npos);
  EXPECT_NE(error_text([] {
              (void)parse_node_config(R"({"debug": true // c
})",
                                      "shim config \"x\"");
            }).find(R"(shim config "x": malformed JSON near byte offset)"),
            std::string::npos);
  // yajl's white space, \v and \f included; an empty document named plainly.
  Names names(false);
  names.read("\v\f{\v\"list\"\f:\t[\r]\n}\v");
  EXPECT_EQ(error_text([] { Names(false).read(" \v\f\n"); }),
            "test doc: malformed JSON: the document is empty");
  EXPECT_EQ(error_text([] { (void)parse_node_config("\v", "shim config \"x\""); }),
            "shim config \"x\": malformed JSON: the document is empty");
  EXPECT_EQ(error_text([] { (void)parse_node_config("[]", "shim config \"x\""); }),
            "shim config \"x\": expected an object at the top level, got an array");
}

TEST(JsonReader, TallyCountsEachParse) {
  tally::enable();
  Names(false).read(R"({"list":[]})");
  Names(false).read(R"({"list":[]})");
  (void)parse_process_document("{}", "process file \"p\"");
  (void)process_json_with_affinity("{}", std::nullopt, "process file \"p\"");
  const tally::Counts expected = {{"test doc", 2}, {"process file \"p\"", 2}};
  EXPECT_EQ(tally::json_documents_parsed(), expected);
}

TEST(JsonReader, UnsignedNumbers) {
  EXPECT_EQ(json::unsigned_number("0"), 0U);
  EXPECT_EQ(json::unsigned_number("18446744073709551615"), 18446744073709551615U);
  for (const std::string_view bad : {"18446744073709551616"sv, "-1"sv, "1.0"sv, "1e3"sv, ""sv}) {
    EXPECT_EQ(json::unsigned_number(bad), std::nullopt) << bad;
  }
}

// --- Writer ---------------------------------------------------------------

TEST(JsonWriter, EscapesWhatJsonRequiresAndPassesBytesThrough) {
  json::Writer out;
  out.open_object()
      .member("q", "a\"b\\c/d")
      .member("ctl", std::string_view("\n\t\x01\x7f", 4))
      .member("bytes", "\xff\xc3\xa9")
      .member_or_null("none", std::optional<std::string>())
      .member_or_null("cpus", std::optional<CpuSet>(CpuSet::parse("3,1-2")))
      .key("n")
      .number(-5)
      .key("b")
      .boolean(false)
      .close_object();
  EXPECT_EQ(out.text(),
            "{\"q\":\"a\\\"b\\\\c/d\",\"ctl\":\"\\n\\t\\u0001\x7f\",\"bytes\":\"\xff\xc3\xa9\","
            "\"none\":null,\"cpus\":\"1-3\",\"n\":-5,\"b\":false}");
}

TEST(JsonWriter, PiecesJoinedBySeparators) {
  json::Writer out;
  out.string("execCPUAffinity").then(":").open_object().member("final", "1").close_object();
  out.then(",").string("x\"");
  EXPECT_EQ(out.text(), R"("execCPUAffinity":{"final":"1"},"x\"")");
}

TEST(JsonWriter, MisuseIsAnErrorNotBadOutput) {
  json::Writer out;
  out.open_object();
  EXPECT_THROW(out.number(1), Error);  // a value where a key belongs
}

// --- Views that keep their problems ----------------------------------------

constexpr std::string_view kSource = R"(process file "/p")";

TEST(ProcessLaunch, ReadWithTheDocument) {
  const ProcessDocument document = parse_process_document(
      R"({"args":["sh","-c","x"],"env":["A=1"],"cwd":"/w","user":{"uid":0}})", kSource);
  const ProcessLaunch& launch = document.launch.checked();
  EXPECT_EQ(launch.args, (std::vector<std::string>{"sh", "-c", "x"}));
  EXPECT_EQ(launch.env, (std::vector<std::string>{"A=1"}));
  EXPECT_EQ(launch.cwd, "/w");
  const ProcessDocument empty = parse_process_document(R"({"args":null,"env":null})", kSource);
  EXPECT_TRUE(empty.launch.checked().args.empty());
}

TEST(ProcessLaunch, ProblemsWaitForWhoeverLaunches) {
  // The affinity is still read: an exec that is not launched through us
  // must reach the runtime as it came, which reports its own errors.
  for (const auto& [json, problem] : std::vector<std::pair<std::string_view, std::string_view>>{
           {R"({"args":"sh","execCPUAffinity":{"final":"1"}})",
            R"(process.args: expected an array, got a string "sh")"},
           {R"({"args":["sh",1],"execCPUAffinity":{"final":"1"}})",
            "process.args[1]: expected a string, got a number 1"},
           {R"({"cwd":7,"execCPUAffinity":{"final":"1"}})",
            "process.cwd: expected a string, got a number 7"},
           {R"({"env":[],"env":["A=1"],"execCPUAffinity":{"final":"1"}})",
            "process.env: the key appears more than once; runtimes disagree on which wins"},
       }) {
    const ProcessDocument document = parse_process_document(json, kSource);
    EXPECT_EQ(document.affinity->final, CpuSet::parse("1")) << json;
    EXPECT_EQ(error_text([&] { (void)document.launch.checked(); }),
              std::string(kSource) + ": " + std::string(problem));
  }
}

TEST(ConfigView, ProcessLaunchAndCapabilities) {
  const ConfigDocument config = parse_config_document(
      R"({"process":{"args":["sh"],"cwd":"/","noNewPrivileges":true,
          "capabilities":{"bounding":["CAP_KILL"],"effective":[]}}})",
      "config");
  EXPECT_EQ(config.process.launch.checked().args, (std::vector<std::string>{"sh"}));
  EXPECT_TRUE(config.process.capabilities.no_new_privileges);
  EXPECT_EQ(config.process.capabilities.bounding, (std::vector<std::string>{"CAP_KILL"}));
  EXPECT_FALSE(config.process.capabilities.problem);
}

TEST(ConfigView, TheProcessObjectAsWrittenOnlyWhenAsked) {
  // An exec with a process file never converts the CLI form: the typed view
  // alone, the same as with the tree.
  const std::string text =
      R"({"annotations":{"a":"b"},"process":{"args":["sh"],"execCPUAffinity":{"final":"1"}},)"
      R"("linux":{"resources":{"cpu":{"cpus":"0-1"}}}})";
  const ConfigDocument typed = parse_config_document(text, "config", false);
  const ConfigDocument both = parse_config_document(text, "config");
  EXPECT_EQ(typed.process_as_written.kind, json::Kind::null);
  EXPECT_FALSE(typed.process_text);
  EXPECT_EQ(both.process_as_written.kind, json::Kind::object);
  EXPECT_EQ(typed.process.affinity->final, both.process.affinity->final);
  EXPECT_EQ(typed.process.launch.checked().args, both.process.launch.checked().args);
  EXPECT_EQ(typed.annotations, both.annotations);
  EXPECT_EQ(typed.cpuset, both.cpuset);
  // And as strict.
  EXPECT_THROW((void)parse_config_document(R"({"process":{"execCPUAffinity":{"final":"x"}}})",
                                           "config", false),
               execaff::Error);
}

TEST(ConfigView, TheProcessObjectAsWrittenToo) {
  // Read in the same pass as its typed view: runc's CLI form copies it whole.
  const std::string process =
      R"({"args":["sh"],"Args":["x"],"user":{"uid":0,"gid":18446744073709551616},)"
      R"("env":[],"execCPUAffinity":{"final":"1"},"n":null,"t":true,"e":"\u00e9"})";
  const ConfigDocument config =
      parse_config_document(R"({"annotations":{},"process":)" + process + "}", "config");
  EXPECT_EQ(config.process.affinity->final, CpuSet::parse("1"));
  EXPECT_EQ(config.process.launch.checked().args, (std::vector<std::string>{"sh"}));
  json::Writer out;
  json::write_value(out, config.process_as_written);
  EXPECT_EQ(out.text(),
            R"({"args":["sh"],"Args":["x"],"user":{"uid":0,"gid":18446744073709551616},)"
            R"("env":[],"execCPUAffinity":{"final":"1"},"n":null,"t":true,"e":")"
            "\xc3\xa9\"}");
  EXPECT_EQ(parse_config_document("{}", "config").process_as_written.kind, json::Kind::null);
  // The typed view stays strict beside it.
  EXPECT_EQ(error_text([] {
              (void)parse_config_document(R"({"process":{"execCPUAffinity":{"final":5}}})", "c");
            }),
            "c: process.execCPUAffinity.final: expected a string, got a number 5");
}

TEST(ConfigView, ProcMountIsFoundLeniently) {
  EXPECT_TRUE(
      parse_config_document(
          R"({"mounts":[7,{"destination":1},{"type":"proc","destination":"/proc"}]})", "config")
          .mounts_proc);
  EXPECT_FALSE(
      parse_config_document(R"({"mounts":[{"destination":"/proc","type":"tmpfs"}]})", "config")
          .mounts_proc);
  EXPECT_FALSE(
      parse_config_document(R"({"mounts":{"destination":"/proc","type":"proc"}})", "config")
          .mounts_proc);
}

TEST(ConfigView, SeccompProfileAsWritten) {
  const ConfigDocument config = parse_config_document(
      R"({"linux":{"seccomp":{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,
          "architectures":["SCMP_ARCH_X86_64"],"flags":["SECCOMP_FILTER_FLAG_LOG"],
          "syscalls":[{"names":["read","write"],"action":"SCMP_ACT_ALLOW"},
                      {"name":"execve","action":"SCMP_ACT_ALLOW","errnoRet":1,
                       "args":[{"index":0,"value":18446744073709551615,"op":"SCMP_CMP_EQ"}]}]}}})",
      "config");
  ASSERT_TRUE(config.seccomp);
  const SeccompProfile& p = *config.seccomp;
  EXPECT_FALSE(p.problem);
  EXPECT_EQ(p.default_action, "SCMP_ACT_ERRNO");
  EXPECT_EQ(p.default_errno_ret, 38U);
  EXPECT_EQ(p.architectures, (std::vector<std::string>{"SCMP_ARCH_X86_64"}));
  EXPECT_EQ(p.flags, (std::vector<std::string>{"SECCOMP_FILTER_FLAG_LOG"}));
  ASSERT_EQ(p.syscalls.size(), 2U);
  EXPECT_TRUE(p.syscalls[0].names_given);
  EXPECT_EQ(p.syscalls[0].names, (std::vector<std::string>{"read", "write"}));
  EXPECT_FALSE(p.syscalls[1].names_given);
  EXPECT_EQ(p.syscalls[1].name, "execve");
  EXPECT_EQ(p.syscalls[1].errno_ret, 1U);
  ASSERT_EQ(p.syscalls[1].args.size(), 1U);
  EXPECT_EQ(p.syscalls[1].args[0].index, 0U);
  EXPECT_EQ(p.syscalls[1].args[0].value, 18446744073709551615U);
  EXPECT_EQ(p.syscalls[1].args[0].value_two, std::nullopt);
  EXPECT_EQ(p.syscalls[1].args[0].op, "SCMP_CMP_EQ");
  // Absent or null: no profile.
  EXPECT_FALSE(parse_config_document(R"({"linux":{"seccomp":null}})", "config").seccomp);
  EXPECT_FALSE(parse_config_document(R"({"linux":{}})", "config").seccomp);
}

TEST(ConfigView, ASeccompProfileThatCannotBeJudgedIsNotTheConfigsError) {
  for (const auto& [json, problem] : std::vector<std::pair<std::string_view, std::string_view>>{
           {R"({"linux":{"seccomp":"x"}})",
            R"(linux.seccomp: expected an object, got a string "x")"},
           {R"({"linux":{"seccomp":{"syscalls":[{"names":["read"],"errnoRet":-1}]}}})",
            "linux.seccomp.syscalls[0].errnoRet: expected an unsigned 64-bit integer, got a "
            "number -1"},
           {R"({"linux":{"seccomp":{"defaultAction":1}}})",
            "linux.seccomp.defaultAction: expected a string, got a number 1"},
           {R"({"linux":{"seccomp":{},"seccomp":{}}})",
            "linux.seccomp: the key appears more than once; runtimes disagree on which wins"},
           {R"({"linux":{"seccomp":{"syscalls":[{"args":[{"index":"0"}]}]}}})",
            R"(linux.seccomp.syscalls[0].args[0].index: expected an unsigned 64-bit integer, )"
            R"(got a string "0")"},
       }) {
    const ConfigDocument config = parse_config_document(json, "config");
    ASSERT_TRUE(config.seccomp && config.seccomp->problem) << json;
    EXPECT_EQ(std::string(config.seccomp->problem->what()), "config: " + std::string(problem));
  }
}

}  // namespace
}  // namespace execaff
