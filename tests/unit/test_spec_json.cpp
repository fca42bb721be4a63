// SPDX-License-Identifier: LGPL-2.1-or-later
// spec_json: reading exec process files and config.json, and rewriting a
// process file's execCPUAffinity while every other byte stays as it was.
// Round trips are checked twice: with our own reader and with yajl_tree, an
// independent parser of the same library, so the rewrite cannot hide behind
// a reader that shares its mistakes.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cpu_set.hpp"
#include "error.hpp"
#include "error_from.hpp"
#include "spec_json.hpp"

namespace execaff {
namespace {

using namespace std::string_view_literals;

constexpr std::string_view kProcessSource = R"(process file "/tmp/p.json")";
constexpr std::string_view kConfigSource = R"(config "/b/config.json")";

// --- Helpers --------------------------------------------------------------

// `text` with every byte outside printable ASCII as \xNN: test names and
// traces end up in gtest's XML report, which must stay valid UTF-8 and XML.
std::string printable(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f && c != '\\') {
      out.push_back(c);
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[byte >> 4]);
      out.push_back(kHex[byte & 0xf]);
    }
  }
  return out;
}

// nullptr is "not set".
ExecCpuAffinity affinity_of(const char* initial, const char* final) {
  ExecCpuAffinity affinity;
  if (initial != nullptr) affinity.initial = CpuSet::parse(initial);
  if (final != nullptr) affinity.final = CpuSet::parse(final);
  return affinity;
}

// What a rewrite with `affinity` should read back as: a set that is engaged
// but empty is "not set", and an affinity with nothing set is no affinity.
std::optional<ExecCpuAffinity> normalized(const std::optional<ExecCpuAffinity>& affinity) {
  if (!affinity) return std::nullopt;
  ExecCpuAffinity out = *affinity;
  if (out.initial && out.initial->empty()) out.initial.reset();
  if (out.final && out.final->empty()) out.final.reset();
  if (out.empty()) return std::nullopt;
  return out;
}

std::string fixture_dir() {
  if (const char* dir = std::getenv("EXECAFF_FIXTURES")) return std::string(dir) + "/json";
  // Run by hand, from the source tree or a build directory in it.
  namespace fs = std::filesystem;
  for (const fs::path& candidate :
       {fs::path(__FILE__).parent_path().parent_path() / "fixtures", fs::path("tests/fixtures"),
        fs::path("../tests/fixtures"), fs::path("../../tests/fixtures")}) {
    if (fs::is_directory(candidate / "json")) return (candidate / "json").string();
  }
  return "tests/fixtures/json";
}

std::string fixture(const std::string& name) {
  const std::string path = fixture_dir() + "/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open fixture " << path << " (set EXECAFF_FIXTURES)";
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

struct TreeFree {
  void operator()(yajl_val value) const noexcept { yajl_tree_free(value); }
};
using Tree = std::unique_ptr<std::remove_pointer_t<yajl_val>, TreeFree>;

Tree tree_of(const std::string& json) {
  char error[512] = "";
  Tree tree(yajl_tree_parse(json.c_str(), error, sizeof error));
  EXPECT_TRUE(tree) << "yajl_tree rejects " << json << ": " << error;
  return tree;
}

bool same_value(yajl_val a, yajl_val b) {
  if (a->type != b->type) return false;
  switch (a->type) {
    case yajl_t_string: return std::string_view(a->u.string) == b->u.string;
    case yajl_t_number: return std::string_view(a->u.number.r) == b->u.number.r;
    case yajl_t_object:
      if (a->u.object.len != b->u.object.len) return false;
      for (std::size_t i = 0; i < a->u.object.len; ++i) {
        if (std::string_view(a->u.object.keys[i]) != b->u.object.keys[i] ||
            !same_value(a->u.object.values[i], b->u.object.values[i])) {
          return false;
        }
      }
      return true;
    case yajl_t_array:
      if (a->u.array.len != b->u.array.len) return false;
      for (std::size_t i = 0; i < a->u.array.len; ++i) {
        if (!same_value(a->u.array.values[i], b->u.array.values[i])) return false;
      }
      return true;
    default: return true;  // true, false, null
  }
}

// Top-level members of a yajl_tree object whose (decoded) key is not
// execCPUAffinity, and the values of those whose key is.
struct SplitMembers {
  std::vector<std::pair<std::string, yajl_val>> others;
  std::vector<yajl_val> affinities;
};

SplitMembers split_members(yajl_val object) {
  SplitMembers split;
  for (std::size_t i = 0; i < object->u.object.len; ++i) {
    if (std::string_view(object->u.object.keys[i]) == "execCPUAffinity") {
      split.affinities.push_back(object->u.object.values[i]);
    } else {
      split.others.emplace_back(object->u.object.keys[i], object->u.object.values[i]);
    }
  }
  return split;
}

// The rewrite's promises, checked with yajl_tree: the output is JSON; it has
// one top-level execCPUAffinity holding exactly `expected` (none when
// nullopt); every other member is there, in order, with the same value.
void expect_rewrite_semantics(const std::string& input, const std::string& output,
                              const std::optional<ExecCpuAffinity>& expected) {
  const Tree before = tree_of(input);
  const Tree after = tree_of(output);
  ASSERT_TRUE(before && after);
  ASSERT_TRUE(YAJL_IS_OBJECT(after.get()));
  const SplitMembers old_members = split_members(before.get());
  const SplitMembers new_members = split_members(after.get());
  ASSERT_EQ(old_members.others.size(), new_members.others.size()) << output;
  for (std::size_t i = 0; i < old_members.others.size(); ++i) {
    EXPECT_EQ(old_members.others[i].first, new_members.others[i].first) << output;
    EXPECT_TRUE(same_value(old_members.others[i].second, new_members.others[i].second))
        << "member " << old_members.others[i].first << " changed in " << output;
  }
  if (!expected) {
    EXPECT_TRUE(new_members.affinities.empty()) << output;
  } else {
    ASSERT_EQ(new_members.affinities.size(), 1U) << output;
    const yajl_val value = new_members.affinities.front();
    ASSERT_TRUE(YAJL_IS_OBJECT(value)) << output;
    std::size_t expected_members = 0;
    for (const auto& [name, list] :
         {std::pair{"initial", &expected->initial}, std::pair{"final", &expected->final}}) {
      const char* path[] = {name, nullptr};
      const yajl_val member = yajl_tree_get(value, path, yajl_t_string);
      if (*list) {
        ++expected_members;
        ASSERT_NE(member, nullptr) << name << " missing in " << output;
        EXPECT_EQ(std::string(YAJL_GET_STRING(member)), (*list)->format());
      } else {
        EXPECT_EQ(member, nullptr) << name << " should be omitted in " << output;
      }
    }
    EXPECT_EQ(value->u.object.len, expected_members) << output;
  }
  // And our own reader agrees.
  EXPECT_EQ(parse_process_document(output, kProcessSource).affinity, expected) << output;
}

// --- parse_process_document: what a valid document means ---------------

struct ProcessCase {
  std::string_view json;
  const char* initial;  // nullptr: not set
  const char* final;
  bool has_affinity;
};

void PrintTo(const ProcessCase& c, std::ostream* out) {
  *out << printable(c.json);
}

class ProcessDocumentReads : public ::testing::TestWithParam<ProcessCase> {};

TEST_P(ProcessDocumentReads, Affinity) {
  const ProcessCase& c = GetParam();
  const ProcessDocument document = parse_process_document(c.json, kProcessSource);
  if (!c.has_affinity) {
    EXPECT_EQ(document.affinity, std::nullopt) << c.json;
    return;
  }
  ASSERT_TRUE(document.affinity) << c.json;
  EXPECT_EQ(*document.affinity, affinity_of(c.initial, c.final)) << c.json;
}

INSTANTIATE_TEST_SUITE_P(
    Table, ProcessDocumentReads,
    ::testing::Values(
        // Absent, null, or with neither member set: no affinity at all.
        ProcessCase{R"({})", nullptr, nullptr, false},
        ProcessCase{R"({"args":["/bin/true"]})", nullptr, nullptr, false},
        ProcessCase{R"({"execCPUAffinity":null})", nullptr, nullptr, false},
        ProcessCase{R"({"execCPUAffinity":{}})", nullptr, nullptr, false},
        ProcessCase{R"({"execCPUAffinity":{"initial":"","final":""}})", nullptr, nullptr, false},
        ProcessCase{R"({"execCPUAffinity":{"initial":null,"final":null}})", nullptr, nullptr,
                    false},
        ProcessCase{R"({"execCPUAffinity":{"future":{"initial":"1"}}})", nullptr, nullptr, false},
        // One or both members.
        ProcessCase{R"({"execCPUAffinity":{"initial":"0-3,7"}})", "0-3,7", nullptr, true},
        ProcessCase{R"({"execCPUAffinity":{"final":"5"}})", nullptr, "5", true},
        ProcessCase{R"({"execCPUAffinity":{"initial":"0-1","final":"1"}})", "0-1", "1", true},
        ProcessCase{R"({"execCPUAffinity":{"final":"2","initial":""}})", nullptr, "2", true},
        ProcessCase{R"({"execCPUAffinity":{"initial":"3","final":null}})", "3", nullptr, true},
        // The schema's pattern ^[0-9, -]*$ admits spaces.
        ProcessCase{R"({"execCPUAffinity":{"initial":" 0-3, 7 "}})", "0-3,7", nullptr, true},
        // Masks are dynamic: ids past cpu_set_t's 1023.
        ProcessCase{R"({"execCPUAffinity":{"initial":"1023-1025,4095","final":"65535"}})",
                    "1023-1025,4095", "65535", true},
        // Unknown members of execCPUAffinity are ignored (config.md
        // "Extensibility"), whatever their type.
        ProcessCase{R"({"execCPUAffinity":{"initial":"1","x":[{"final":5}],"y":null,"z":1e999}})",
                    "1", nullptr, true},
        // Escapes decode: in keys as in values.
        ProcessCase{R"({"exec\u0043PUAffinity":{"\u0069nitial":"\u0030-\u0031"}})", "0-1", nullptr,
                    true},
        // Only the top-level member counts; nested look-alikes are data.
        ProcessCase{R"({"annotations":{"execCPUAffinity":{"initial":"x"}},)"
                    R"("other":[{"execCPUAffinity":"y"}],"execCPUAffinity":{"final":"9"}})",
                    nullptr, "9", true},
        ProcessCase{R"({"a":{"execCPUAffinity":{"initial":"1"}}})", nullptr, nullptr, false},
        ProcessCase{R"({"execCPUAffinityX":{"initial":"1"},"execcpuaffinity":{"initial":"1"}})",
                    nullptr, nullptr, false},
        // Numbers that fit no C type are fine where we do not read them.
        ProcessCase{R"({"rlimits":[{"hard":18446744073709551616,"soft":1e400,"x":-1E-400}],)"
                    R"("n":123456789012345678901234567890,"execCPUAffinity":{"initial":"2"}})",
                    "2", nullptr, true},
        // Whitespace of every kind, unicode elsewhere.
        ProcessCase{
            " \t\r\n{ \"cwd\" : \"/\u2603\" ,\r\n\t\"execCPUAffinity\"\n:\n{\"final\"\t:\t\"4\"}"
            " } \n",
            nullptr, "4", true},
        // A duplicated key we do not read is none of our business.
        ProcessCase{R"({"cwd":"/a","cwd":"/b","execCPUAffinity":{"x":1,"x":2,"initial":"1"}})", "1",
                    nullptr, true}));

TEST(ProcessDocument, RealisticCrioExecFile) {
  const ProcessDocument document =
      parse_process_document(fixture("process-crio.json"), kProcessSource);
  EXPECT_EQ(document.affinity, affinity_of("0-1,64-65", "4"));
}

TEST(ProcessDocument, OddButValidFile) {
  // Escaped key, spaces in the list, an escaped "7", an unknown member, and
  // execCPUAffinity look-alikes nested in other members and strings.
  const ProcessDocument document =
      parse_process_document(fixture("process-odd.json"), kProcessSource);
  EXPECT_EQ(document.affinity, affinity_of("0-3,7", "7"));
}

TEST(ProcessDocument, PrettyFileWithoutAffinity) {
  EXPECT_EQ(
      parse_process_document(fixture("process-pretty-no-affinity.json"), kProcessSource).affinity,
      std::nullopt);
}

TEST(ProcessDocument, DeepNestingElsewhereIsFine) {
  const std::string deep = std::string(20000, '[') + std::string(20000, ']');
  const std::string json = R"({"x":)" + deep + R"(,"execCPUAffinity":{"final":"1"}})";
  EXPECT_EQ(parse_process_document(json, kProcessSource).affinity, affinity_of(nullptr, "1"));
}

// --- parse_process_document: errors ---------------------------------------

struct ErrorCase {
  std::string_view json;
  std::string_view message;  // after "<source>: "
};

void PrintTo(const ErrorCase& c, std::ostream* out) {
  *out << printable(c.json);
}

class ProcessDocumentRefuses : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ProcessDocumentRefuses, WithPathValueAndReason) {
  const ErrorCase& c = GetParam();
  const Error e = error_from([&] { (void)parse_process_document(c.json, kProcessSource); });
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_EQ(std::string(e.what()), std::string(kProcessSource) + ": " + std::string(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ProcessDocumentRefuses,
    ::testing::Values(
        // The top level is the process object.
        ErrorCase{R"([])", "process: expected an object, got an array"},
        ErrorCase{R"("x")", R"(process: expected an object, got a string "x")"},
        ErrorCase{R"(null)", "process: expected an object, got null"},
        ErrorCase{R"(42)", "process: expected an object, got a number 42"},
        ErrorCase{R"(true)", "process: expected an object, got a boolean true"},
        // execCPUAffinity is an object.
        ErrorCase{R"({"execCPUAffinity":"0-3"})",
                  R"(process.execCPUAffinity: expected an object, got a string "0-3")"},
        ErrorCase{R"({"execCPUAffinity":["0"]})",
                  "process.execCPUAffinity: expected an object, got an array"},
        ErrorCase{R"({"execCPUAffinity":false})",
                  "process.execCPUAffinity: expected an object, got a boolean false"},
        ErrorCase{R"({"execCPUAffinity":0})",
                  "process.execCPUAffinity: expected an object, got a number 0"},
        // Its members are strings.
        ErrorCase{R"({"execCPUAffinity":{"initial":5}})",
                  "process.execCPUAffinity.initial: expected a string, got a number 5"},
        ErrorCase{R"({"execCPUAffinity":{"initial":-1.5e3}})",
                  "process.execCPUAffinity.initial: expected a string, got a number -1.5e3"},
        ErrorCase{R"({"execCPUAffinity":{"final":{}}})",
                  "process.execCPUAffinity.final: expected a string, got an object"},
        ErrorCase{R"({"execCPUAffinity":{"final":["1"]}})",
                  "process.execCPUAffinity.final: expected a string, got an array"},
        ErrorCase{R"({"execCPUAffinity":{"final":true}})",
                  "process.execCPUAffinity.final: expected a string, got a boolean true"},
        // ... and valid CPU lists.
        ErrorCase{R"({"execCPUAffinity":{"initial":"a"}})",
                  R"(process.execCPUAffinity.initial: invalid CPU list "a": item "a" at offset 0 )"
                  R"(is not a CPU number or a range of them)"},
        ErrorCase{R"({"execCPUAffinity":{"final":"3-1"}})",
                  R"(process.execCPUAffinity.final: invalid CPU list "3-1": range "3-1" at )"
                  R"(offset 0 runs backwards)"},
        ErrorCase{R"({"execCPUAffinity":{"initial":" , "}})",
                  R"(process.execCPUAffinity.initial: invalid CPU list " , ": it names no CPU)"},
        ErrorCase{R"({"execCPUAffinity":{"initial":"1 2"}})",
                  R"(process.execCPUAffinity.initial: invalid CPU list "1 2": item "1 2" at )"
                  R"(offset 0 is not a CPU number or a range of them)"},
        ErrorCase{R"({"execCPUAffinity":{"initial":"\u0000"}})",
                  R"(process.execCPUAffinity.initial: invalid CPU list "\x00": item "\x00" at )"
                  R"(offset 0 is not a CPU number or a range of them)"},
        // An id above CpuSet::kMaxCpu is one more invalid document: EINVAL.
        ErrorCase{R"({"execCPUAffinity":{"initial":"0,65536"}})",
                  R"(process.execCPUAffinity.initial: invalid CPU list "0,65536": CPU 65536 at )"
                  R"(offset 2 is above the highest supported id 65535)"},
        // The runtimes disagree on which copy of a key wins.
        ErrorCase{R"({"execCPUAffinity":{"initial":"1"},"execCPUAffinity":null})",
                  "process.execCPUAffinity: the key appears more than once; runtimes disagree on "
                  "which wins"},
        ErrorCase{R"({"execCPUAffinity":{},"exec\u0043PUAffinity":{}})",
                  "process.execCPUAffinity: the key appears more than once; runtimes disagree on "
                  "which wins"},
        ErrorCase{R"({"execCPUAffinity":{"initial":"1","initial":"1"}})",
                  "process.execCPUAffinity.initial: the key appears more than once; runtimes "
                  "disagree on which wins"},
        // A huge value is shown cut short.
        ErrorCase{R"({"execCPUAffinity":")"
                  "0123456789012345678901234567890123456789012345678901234567890123456789"
                  R"("})",
                  R"(process.execCPUAffinity: expected an object, got a string )"
                  R"("0123456789012345678901234567890123456789012345678901234567890123"... )"
                  R"((70 bytes))"}));

TEST(ProcessDocument, FirstProblemInTheTextWins) {
  // The semantic error comes before the syntax error, and is reported.
  const Error e = error_from(
      [] { (void)parse_process_document(R"({"execCPUAffinity":7, oops)", kProcessSource); });
  EXPECT_EQ(std::string(e.what()), std::string(kProcessSource) +
                                       ": process.execCPUAffinity: expected an object, got a "
                                       "number 7");
}

TEST(ProcessDocument, ValuesNotCutInsideUtf8) {
  // 63 ASCII bytes then "é" (2 bytes): a 64-byte cut would split it.
  const std::string value = std::string(63, 'a') + "\xc3\xa9" + "zz";
  const Error e = error_from([&] {
    (void)parse_process_document(R"({"execCPUAffinity":")" + value + R"("})", kProcessSource);
  });
  EXPECT_NE(std::string(e.what()).find('"' + std::string(63, 'a') + "\"... (67 bytes)"),
            std::string::npos)
      << e.what();
}

// --- Malformed JSON -------------------------------------------------------

struct MalformedCase {
  std::string_view json;
  std::string_view yajl_text;
  std::size_t offset;
};

void PrintTo(const MalformedCase& c, std::ostream* out) {
  *out << printable(c.json);
}

class MalformedJson : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedJson, NamesYajlsReasonAndOffset) {
  const MalformedCase& c = GetParam();
  for (const bool config : {false, true}) {
    const std::string_view source = config ? kConfigSource : kProcessSource;
    const Error e = error_from([&] {
      if (config) {
        (void)parse_config_document(c.json, source);
      } else {
        (void)parse_process_document(c.json, source);
      }
    });
    EXPECT_EQ(e.code(), EINVAL);
    EXPECT_EQ(std::string(e.what()), std::string(source) + ": malformed JSON near byte offset " +
                                         std::to_string(c.offset) + ": " +
                                         std::string(c.yajl_text));
  }
  // The rewrite refuses it the same way.
  const Error e = error_from(
      [&] { (void)process_json_with_affinity(c.json, affinity_of("1", nullptr), kProcessSource); });
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_NE(std::string(e.what()).find("malformed JSON"), std::string::npos) << e.what();
}

INSTANTIATE_TEST_SUITE_P(
    Table, MalformedJson,
    ::testing::Values(
        MalformedCase{R"({"a":1)", "parse error: premature EOF", 6},
        MalformedCase{R"({"execCPUAffinity":{"initial":"1")", "parse error: premature EOF", 33},
        MalformedCase{R"({"a":1}x)", "parse error: trailing garbage", 8},
        MalformedCase{R"({} {})", "parse error: trailing garbage", 4},
        // Comments stay refused: runc's Go decoder refuses them too.
        MalformedCase{R"({"a":/*c*/1})",
                      "lexical error: probable comment found in input text, comments are not "
                      "enabled.",
                      5},
        MalformedCase{R"({"a":1,})", "parse error: invalid object key (must be a string)", 8},
        MalformedCase{R"({"a":01})",
                      "parse error: after key and value, inside map, I expect ',' or '}'", 6},
        MalformedCase{R"({"a":[1,2})", "parse error: after array element, I expect ',' or ']'", 10},
        MalformedCase{R"({"a":tru)", "lexical error: invalid string in json text.", 8},
        MalformedCase{"{\"a\":\"\xff\"}"sv, "lexical error: invalid bytes in UTF8 string.", 7},
        MalformedCase{"{\"a\":\"x\0y\"}"sv, "lexical error: invalid character inside string.", 7},
        MalformedCase{"{\"a\":1}\0"sv, "parse error: trailing garbage", 8},
        MalformedCase{R"({"a":"\q"})",
                      "lexical error: inside a string, '\\' occurs before a character which it may "
                      "not.",
                      7}));

TEST(MalformedJsonMessage, HasNoVerboseContext) {
  const Error e = error_from([] { (void)parse_process_document("{\"a\":\n1,}", kProcessSource); });
  const std::string message = e.what();
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_EQ(message.find("right here"), std::string::npos) << message;
}

TEST(MalformedJsonMessage, EmptyDocumentIsNamedPlainly) {
  for (const std::string_view empty : {""sv, " \n\t\r\n"sv}) {
    const Error e = error_from([&] { (void)parse_config_document(empty, kConfigSource); });
    EXPECT_EQ(e.code(), EINVAL);
    EXPECT_EQ(std::string(e.what()),
              std::string(kConfigSource) + ": malformed JSON: the document is empty");
  }
}

// --- parse_config_document ------------------------------------------------

TEST(ConfigDocument, RealisticConfig) {
  const ConfigDocument config = parse_config_document(fixture("config-full.json"), kConfigSource);
  EXPECT_EQ(config.process.affinity, affinity_of("0-1", "4"));
  EXPECT_EQ(config.cpuset, CpuSet::parse("4-7"));
  EXPECT_EQ(config.cgroups_path, "kubepods-pod1234.slice:crio:0123456789abcdef");
  const std::map<std::string, std::string> expected = {
      {"io.kubernetes.cri-o.ContainerType", "container"},
      {"io.kubernetes.pod.name", "dpdk-testpmd-7c9d8f5b6-x2kqp"},
      {"exec-cpu-affinity.execaff.io", "first"},
      {"performance.openshift.io/exec-cpu-affinity", ""},
      {"io.kubernetes.cri-o.Annotations", R"({"cpu-load-balancing.crio.io":"disable"})"},
  };
  EXPECT_EQ(config.annotations, expected);
}

TEST(ConfigDocument, EmptyObjectMeansNothingSet) {
  const ConfigDocument config = parse_config_document("{}", kConfigSource);
  EXPECT_EQ(config.process.affinity, std::nullopt);
  EXPECT_TRUE(config.annotations.empty());
  EXPECT_EQ(config.cpuset, std::nullopt);
  EXPECT_EQ(config.cgroups_path, "");
}

TEST(ConfigDocument, NullsReadAsAbsent) {
  const ConfigDocument config = parse_config_document(
      R"({"process":null,"annotations":null,"linux":{"resources":{"cpu":{"cpus":null}},)"
      R"("cgroupsPath":null}})",
      kConfigSource);
  EXPECT_EQ(config.process.affinity, std::nullopt);
  EXPECT_TRUE(config.annotations.empty());
  EXPECT_EQ(config.cpuset, std::nullopt);
  EXPECT_EQ(config.cgroups_path, "");
  EXPECT_EQ(parse_config_document(R"({"linux":{"resources":{"cpu":null}}})", kConfigSource).cpuset,
            std::nullopt);
  EXPECT_EQ(parse_config_document(R"({"linux":{"resources":null}})", kConfigSource).cpuset,
            std::nullopt);
  EXPECT_EQ(parse_config_document(R"({"linux":null})", kConfigSource).cpuset, std::nullopt);
  EXPECT_EQ(parse_config_document(R"({"process":{"execCPUAffinity":null}})", kConfigSource)
                .process.affinity,
            std::nullopt);
}

TEST(ConfigDocument, EmptyCpusIsNotSet) {
  EXPECT_EQ(
      parse_config_document(R"({"linux":{"resources":{"cpu":{"cpus":""}}}})", kConfigSource).cpuset,
      std::nullopt);
}

TEST(ConfigDocument, OnlyTheRightPathsCount) {
  // execCPUAffinity at config.json's top level, process under something
  // else, cpus outside linux.resources.cpu: all data, none of ours.
  const ConfigDocument config = parse_config_document(
      R"({"execCPUAffinity":{"initial":"x"},"x":{"process":{"execCPUAffinity":"y"}},)"
      R"("resources":{"cpu":{"cpus":"z"}},"linux":{"cpu":{"cpus":"w"},"resources":{"cpus":"v",)"
      R"("cpu":{"mems":"0"}}},"cgroupsPath":7,"process":{"process":{"execCPUAffinity":1}}})",
      kConfigSource);
  EXPECT_EQ(config.process.affinity, std::nullopt);
  EXPECT_EQ(config.cpuset, std::nullopt);
  EXPECT_EQ(config.cgroups_path, "");
}

TEST(ConfigDocument, AnnotationKeysAndValuesKeepTheirBytes) {
  const ConfigDocument config = parse_config_document(
      R"({"annotations":{"a.b/c":"\u00e9\n","":"empty key","k\u0000":"x","\ud83d\ude00":""}})",
      kConfigSource);
  const std::map<std::string, std::string> expected = {
      {"a.b/c", "\xc3\xa9\n"},
      {"", "empty key"},
      {std::string("k\0", 2), "x"},
      {"\xf0\x9f\x98\x80", ""},
  };
  EXPECT_EQ(config.annotations, expected);
}

TEST(ConfigDocument, ProcessAffinityIsReadLikeAProcessFile) {
  EXPECT_EQ(parse_config_document(R"({"process":{"execCPUAffinity":{"initial":"","final":"2"},)"
                                  R"("args":["sh"]}})",
                                  kConfigSource)
                .process.affinity,
            affinity_of(nullptr, "2"));
  EXPECT_EQ(
      parse_config_document(R"({"process":{"execCPUAffinity":{"initial":""}}})", kConfigSource)
          .process.affinity,
      std::nullopt);
}

// --- parse_cpu_list_member / parse_affinity_members (the typed request) ----

// What a document gives for a CPU list at `member`: the set, or the error.
std::string document_outcome(std::string_view list, bool config, std::string_view member) {
  std::string field =
      R"({"execCPUAffinity":{")" + std::string(member) + R"(":")" + std::string(list) + R"("}})";
  try {
    const auto affinity =
        config
            ? parse_config_document(R"({"process":)" + field + "}", kConfigSource).process.affinity
            : parse_process_document(field, kProcessSource).affinity;
    if (!affinity) return "not set";
    const auto& set = member == "initial" ? affinity->initial : affinity->final;
    return set ? set->format() : "not set";
  } catch (const Error& e) {
    return std::to_string(e.code()) + " " + e.what();
  }
}

std::string typed_outcome(std::string_view list, bool config, std::string_view member) {
  try {
    const auto affinity =
        parse_affinity_members(member == "initial" ? list : "", member == "final" ? list : "",
                               config ? kConfigSource : kProcessSource, "process.execCPUAffinity");
    if (!affinity) return "not set";
    const auto& set = member == "initial" ? affinity->initial : affinity->final;
    return set ? set->format() : "not set";
  } catch (const Error& e) {
    return std::to_string(e.code()) + " " + e.what();
  }
}

class TypedListReadsAsDocument : public ::testing::TestWithParam<std::string_view> {};

TEST_P(TypedListReadsAsDocument, SameSetOrSameError) {
  for (const bool config : {false, true}) {
    for (const std::string_view member : {"initial"sv, "final"sv}) {
      EXPECT_EQ(typed_outcome(GetParam(), config, member),
                document_outcome(GetParam(), config, member))
          << (config ? "config " : "process ") << member;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Table, TypedListReadsAsDocument,
                         ::testing::Values(""sv, "0"sv, " 7, 0-3,1024-1025 "sv, "65535"sv, "a"sv,
                                           "3-1"sv, " , "sv, "1 2"sv, "0-"sv, "0,65536"sv,
                                           "0123456789012345678901234567890123456789012345678901"
                                           "234567890123456789"sv));

TEST(TypedList, CpusNameTheirDocumentAndPath) {
  EXPECT_EQ(parse_cpu_list_member("", kConfigSource, "linux.resources.cpu.cpus"), std::nullopt);
  const Error e = error_from(
      [] { (void)parse_cpu_list_member("2-x", kConfigSource, "linux.resources.cpu.cpus"); });
  const Error document = error_from([] {
    (void)parse_config_document(R"({"linux":{"resources":{"cpu":{"cpus":"2-x"}}}})", kConfigSource);
  });
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_EQ(std::string(e.what()), std::string(document.what()));
}

class ConfigDocumentRefuses : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConfigDocumentRefuses, WithPathValueAndReason) {
  const ErrorCase& c = GetParam();
  const Error e = error_from([&] { (void)parse_config_document(c.json, kConfigSource); });
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_EQ(std::string(e.what()), std::string(kConfigSource) + ": " + std::string(c.message));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ConfigDocumentRefuses,
    ::testing::Values(
        ErrorCase{R"([])", "expected an object at the top level, got an array"},
        ErrorCase{R"(null)", "expected an object at the top level, got null"},
        ErrorCase{R"("{}")", R"(expected an object at the top level, got a string "{}")"},
        ErrorCase{R"({"process":"x"})", R"(process: expected an object, got a string "x")"},
        ErrorCase{R"({"process":[]})", "process: expected an object, got an array"},
        ErrorCase{R"({"process":{"execCPUAffinity":"0-3"}})",
                  R"(process.execCPUAffinity: expected an object, got a string "0-3")"},
        ErrorCase{R"({"process":{"execCPUAffinity":{"final":1}}})",
                  "process.execCPUAffinity.final: expected a string, got a number 1"},
        ErrorCase{R"({"process":{"execCPUAffinity":{"initial":"0-"}}})",
                  R"(process.execCPUAffinity.initial: invalid CPU list "0-": item "0-" at offset )"
                  R"(0 is not a CPU number or a range of them)"},
        ErrorCase{R"({"process":{},"process":{}})",
                  "process: the key appears more than once; runtimes disagree on which wins"},
        ErrorCase{R"({"annotations":[]})", "annotations: expected an object, got an array"},
        ErrorCase{R"({"annotations":"a=b"})",
                  R"(annotations: expected an object, got a string "a=b")"},
        ErrorCase{R"({"annotations":{"ok":"1","a":1}})",
                  "annotations.a: expected a string, got a number 1"},
        ErrorCase{R"({"annotations":{"a":null}})", "annotations.a: expected a string, got null"},
        ErrorCase{R"({"annotations":{"exec-cpu-affinity.execaff.io":true}})",
                  "annotations.exec-cpu-affinity.execaff.io: expected a string, got a boolean "
                  "true"},
        ErrorCase{R"({"annotations":{"a b\n":{}}})",
                  R"(annotations."a b\x0a": expected a string, got an object)"},
        ErrorCase{R"({"annotations":{"":[]}})",
                  R"(annotations."": expected a string, got an array)"},
        ErrorCase{R"({"annotations":{"a":"1","\u0061":"2"}})",
                  "annotations.a: the key appears more than once; runtimes disagree on which wins"},
        ErrorCase{R"({"linux":[]})", "linux: expected an object, got an array"},
        ErrorCase{R"({"linux":{"resources":1}})",
                  "linux.resources: expected an object, got a number 1"},
        ErrorCase{R"({"linux":{"resources":{"cpu":"4-7"}}})",
                  R"(linux.resources.cpu: expected an object, got a string "4-7")"},
        ErrorCase{R"({"linux":{"resources":{"cpu":{"cpus":4}}}})",
                  "linux.resources.cpu.cpus: expected a string, got a number 4"},
        ErrorCase{R"({"linux":{"resources":{"cpu":{"cpus":"x"}}}})",
                  R"(linux.resources.cpu.cpus: invalid CPU list "x": item "x" at offset 0 is not )"
                  R"(a CPU number or a range of them)"},
        ErrorCase{R"({"linux":{"resources":{"cpu":{"cpus":"1","cpus":"2"}}}})",
                  "linux.resources.cpu.cpus: the key appears more than once; runtimes disagree "
                  "on which wins"},
        ErrorCase{R"({"linux":{"cgroupsPath":7}})",
                  "linux.cgroupsPath: expected a string, got a number 7"},
        ErrorCase{R"({"linux":{"cgroupsPath":["/a"]}})",
                  "linux.cgroupsPath: expected a string, got an array"}));

// --- parse_config_decision_view: what the whole reader reads, by a skim ---

// The decision's members, as the view and the whole document read them.
void expect_view_reads_alike(std::string_view json) {
  SCOPED_TRACE(printable(json));
  const ConfigDocument whole = parse_config_document(json, kConfigSource);
  const ConfigDocument view = parse_config_decision_view(json, kConfigSource, false);
  EXPECT_EQ(view.process.affinity, whole.process.affinity);
  EXPECT_EQ(view.annotations, whole.annotations);
  EXPECT_EQ(view.cpuset, whole.cpuset);
  EXPECT_EQ(view.source, whole.source);
}

TEST(ConfigDecisionView, ReadsTheDecisionsMembersAlike) {
  for (
      const char* json : {
          "{}",
          R"({"process":null,"annotations":null,"linux":{"resources":{"cpu":{"cpus":null}}}})",
          R"({"linux":{"resources":{"cpu":null}}})",
          R"({"linux":{"resources":null}})",
          R"({"linux":null})",
          R"({"process":{"execCPUAffinity":null}})",
          R"({"linux":{"resources":{"cpu":{"cpus":""}}}})",
          R"({"execCPUAffinity":{"initial":"x"},"x":{"process":{"execCPUAffinity":"y"}},)"
          R"("resources":{"cpu":{"cpus":"z"}},"linux":{"cpu":{"cpus":"w"},"resources":{"cpus":"v",)"
          R"("cpu":{"mems":"0"}}},"cgroupsPath":7,"process":{"process":{"execCPUAffinity":1}}})",
          R"({"annotations":{"a.b/c":"\u00e9\n","":"empty key","k\u0000":"x","\ud83d\ude00":""}})",
          R"({"process":{"execCPUAffinity":{"initial":"","final":"2"},"args":["sh"]}})",
          R"({"process":{"args":["a","b"],"execCPUAffinity":{"initial":"0-1","final":"3","x":{}}},)"
          R"( "linux" : { "resources" : { "cpu" : { "cpus" : "4-7" , "shares": 2 } } } })",
          // A key written with an escape, a duplicate on the way: read whole.
          R"({"proc\u0065ss":{"execCPUAffinity":{"initial":"1"}}})",
      }) {
    expect_view_reads_alike(json);
  }
  expect_view_reads_alike(fixture("config-full.json"));
}

TEST(ConfigDecisionView, ReadsOnlyWhatTheDecisionReads) {
  const std::string full = fixture("config-full.json");
  const ConfigDocument view = parse_config_decision_view(full, kConfigSource, false);
  EXPECT_FALSE(view.whole);
  EXPECT_EQ(view.cgroups_path, "");
  EXPECT_TRUE(view.process.launch.args.empty());
  EXPECT_FALSE(view.seccomp);
  // What it does not judge is parsed whole, the process as written kept
  // when asked for.
  const ConfigDocument whole =
      parse_config_decision_view(R"({"process":null,"x":1})", kConfigSource, true);
  EXPECT_TRUE(whole.whole);
}

TEST_P(ConfigDocumentRefuses, TheDecisionViewAlikeButForCgroupsPath) {
  const ErrorCase& c = GetParam();
  if (c.message.substr(0, 17) == "linux.cgroupsPath") {
    // Not a member the decision reads: the view leaves it unread.
    EXPECT_NO_THROW((void)parse_config_decision_view(c.json, kConfigSource, false));
    return;
  }
  const Error e =
      error_from([&] { (void)parse_config_decision_view(c.json, kConfigSource, false); });
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_EQ(std::string(e.what()), std::string(kConfigSource) + ": " + std::string(c.message));
}

// --- process_json_with_affinity: exact outputs ----------------------------

struct RewriteCase {
  std::string_view input;
  std::optional<ExecCpuAffinity> affinity;
  std::string_view expected;
};

void PrintTo(const RewriteCase& c, std::ostream* out) {
  *out << printable(c.input) << " with ";
  if (!c.affinity) {
    *out << "no affinity";
  } else {
    *out << "initial " << (c.affinity->initial ? c.affinity->initial->format() : "unset")
         << ", final " << (c.affinity->final ? c.affinity->final->format() : "unset");
  }
}

class Rewrite : public ::testing::TestWithParam<RewriteCase> {};

TEST_P(Rewrite, SplicesExactly) {
  const RewriteCase& c = GetParam();
  const std::string output = process_json_with_affinity(c.input, c.affinity, kProcessSource);
  EXPECT_EQ(output, c.expected);
  expect_rewrite_semantics(std::string(c.input), output, normalized(c.affinity));
  // Doing it again changes nothing.
  EXPECT_EQ(process_json_with_affinity(output, c.affinity, kProcessSource), output);
}

const auto kBoth = affinity_of("0-1", "1");
const auto kInitialOnly = affinity_of("2", nullptr);
const auto kFinalOnly = affinity_of(nullptr, "3");

INSTANTIATE_TEST_SUITE_P(
    Insert, Rewrite,
    ::testing::Values(
        RewriteCase{R"({})", kBoth, R"({"execCPUAffinity":{"initial":"0-1","final":"1"}})"},
        RewriteCase{R"({ })", kBoth, R"({ "execCPUAffinity":{"initial":"0-1","final":"1"}})"},
        RewriteCase{"{\n}\n", kFinalOnly, "{\n\"execCPUAffinity\":{\"final\":\"3\"}}\n"},
        RewriteCase{"  \n{\"a\":1}\n", kInitialOnly,
                    "  \n{\"execCPUAffinity\":{\"initial\":\"2\"},\"a\":1}\n"},
        // The spacing before the first key is repeated, so pretty stays pretty.
        RewriteCase{"{\n  \"a\": 1,\n  \"b\": [2]\n}\n", kBoth,
                    "{\n  \"execCPUAffinity\":{\"initial\":\"0-1\",\"final\":\"1\"},\n  \"a\": 1,"
                    "\n  \"b\": [2]\n}\n"},
        RewriteCase{"{\t\"a\":1}", kFinalOnly,
                    "{\t\"execCPUAffinity\":{\"final\":\"3\"},\t\"a\":1}"},
        // yajl also takes \v and \f for space; so must the splicer.
        RewriteCase{"\v\f{\v\"a\"\f:\v1\f}\v", kFinalOnly,
                    "\v\f{\v\"execCPUAffinity\":{\"final\":\"3\"},\v\"a\"\f:\v1\f}\v"},
        // Nested look-alikes are not the member.
        RewriteCase{R"({"annotations":{"execCPUAffinity":{"initial":"9"}}})", kFinalOnly,
                    R"({"execCPUAffinity":{"final":"3"},"annotations":{"execCPUAffinity":)"
                    R"({"initial":"9"}}})"},
        RewriteCase{
            R"({"execCPUAffinityX":1,"exec\u0143PUAffinity":2,"s":"\"execCPUAffinity\":1"})",
            kFinalOnly,
            R"({"execCPUAffinity":{"final":"3"},"execCPUAffinityX":1,)"
            R"("exec\u0143PUAffinity":2,"s":"\"execCPUAffinity\":1"})"},
        // Canonical list form.
        RewriteCase{R"({})", affinity_of("7, 0-3,2", "65535,1024-1026"),
                    R"({"execCPUAffinity":{"initial":"0-3,7","final":"1024-1026,65535"}})"}));

INSTANTIATE_TEST_SUITE_P(
    Replace, Rewrite,
    ::testing::Values(
        RewriteCase{R"({"a":1,"execCPUAffinity":{"initial":"7"},"b":2})", kBoth,
                    R"({"a":1,"execCPUAffinity":{"initial":"0-1","final":"1"},"b":2})"},
        RewriteCase{R"({"execCPUAffinity":null})", kFinalOnly,
                    R"({"execCPUAffinity":{"final":"3"}})"},
        // The old value is replaced, not judged.
        RewriteCase{R"({"execCPUAffinity":"junk"})", kInitialOnly,
                    R"({"execCPUAffinity":{"initial":"2"}})"},
        RewriteCase{R"({"execCPUAffinity":{"initial":"x","final":[1]}})", kInitialOnly,
                    R"({"execCPUAffinity":{"initial":"2"}})"},
        RewriteCase{R"({"execCPUAffinity":12345})", kInitialOnly,
                    R"({"execCPUAffinity":{"initial":"2"}})"},
        RewriteCase{R"({"execCPUAffinity":-1.5e+3,"x":false})", kInitialOnly,
                    R"({"execCPUAffinity":{"initial":"2"},"x":false})"},
        // The key keeps its spelling and the spacing around the value stays.
        RewriteCase{"{\"exec\\u0043PUAffinity\" :\n {} }", kFinalOnly,
                    "{\"exec\\u0043PUAffinity\" :\n {\"final\":\"3\"} }"},
        RewriteCase{R"({"\u0065\u0078ecCPUAffinity":[]})", kFinalOnly,
                    R"({"\u0065\u0078ecCPUAffinity":{"final":"3"}})"},
        // Strings, brackets and escapes inside the old value and around it.
        RewriteCase{R"({"s":"}\"{\\","execCPUAffinity":[1,{"a":"]\"}"}],"n":-1.5e+3})", kBoth,
                    R"({"s":"}\"{\\","execCPUAffinity":{"initial":"0-1","final":"1"},)"
                    R"("n":-1.5e+3})"},
        // An engaged but empty set is "not set".
        RewriteCase{R"({"execCPUAffinity":{}})", ExecCpuAffinity{CpuSet{}, CpuSet::parse("3")},
                    R"({"execCPUAffinity":{"final":"3"}})"}));

INSTANTIATE_TEST_SUITE_P(
    Remove, Rewrite,
    ::testing::Values(
        // First of several: the comma after it and the spacing to the next key go.
        RewriteCase{R"({"execCPUAffinity":{"initial":"1"},"a":1})", std::nullopt, R"({"a":1})"},
        RewriteCase{"{\n  \"execCPUAffinity\": {},\n  \"a\": 1\n}", std::nullopt,
                    "{\n  \"a\": 1\n}"},
        // In the middle.
        RewriteCase{R"({"a":1, "execCPUAffinity":{}, "b":2})", std::nullopt, R"({"a":1, "b":2})"},
        RewriteCase{"{\n  \"a\": 1,\n  \"execCPUAffinity\": {\"initial\": \"1\"},\n  \"b\": 2\n}",
                    std::nullopt, "{\n  \"a\": 1,\n  \"b\": 2\n}"},
        // Last: the comma before it goes.
        RewriteCase{R"({"a":1, "execCPUAffinity":{} })", std::nullopt, R"({"a":1 })"},
        RewriteCase{"{\n  \"a\": 1,\n  \"execCPUAffinity\": {\"final\": \"1\"}\n}\n", std::nullopt,
                    "{\n  \"a\": 1\n}\n"},
        RewriteCase{R"({"a":"x,","execCPUAffinity":true})", std::nullopt, R"({"a":"x,"})"},
        // The only member.
        RewriteCase{R"({"execCPUAffinity":{"initial":"1"}})", std::nullopt, R"({})"},
        RewriteCase{" { \"execCPUAffinity\" : null }\n", std::nullopt, " {}\n"},
        RewriteCase{"\f{\"a\":1\v,\f\"execCPUAffinity\"\v:\f{}\v}", std::nullopt, "\f{\"a\":1\v}"},
        // Removal also for an empty affinity, and for one whose sets are empty.
        RewriteCase{R"({"a":[],"execCPUAffinity":{"final":"2"}})", ExecCpuAffinity{},
                    R"({"a":[]})"},
        RewriteCase{R"({"exec\u0043PUAffinity":1,"b":{}})", ExecCpuAffinity{CpuSet{}, CpuSet{}},
                    R"({"b":{}})"},
        // Absent and not wanted: the text comes back as it was.
        RewriteCase{"\t{ \"a\" : 1e400 }  ", std::nullopt, "\t{ \"a\" : 1e400 }  "},
        RewriteCase{R"({"annotations":{"execCPUAffinity":{}}})", std::nullopt,
                    R"({"annotations":{"execCPUAffinity":{}}})"}));

// --- process_json_with_affinity: errors -----------------------------------

TEST(RewriteRefuses, DuplicatedAffinityKey) {
  for (const std::string_view json :
       {R"({"execCPUAffinity":{},"execCPUAffinity":{}})"sv,
        R"({"execCPUAffinity":1,"a":2,"exec\u0043PUAffinity":{"initial":"1"}})"sv,
        R"({"exec\u0043PUAffinity":null, "execCPUAffinity":null})"sv}) {
    for (const auto& affinity : {std::optional<ExecCpuAffinity>{}, std::optional{kBoth}}) {
      const Error e =
          error_from([&] { (void)process_json_with_affinity(json, affinity, kProcessSource); });
      EXPECT_EQ(e.code(), EINVAL);
      EXPECT_EQ(std::string(e.what()),
                std::string(kProcessSource) +
                    ": process.execCPUAffinity: the key appears more than once; runtimes "
                    "disagree on which wins");
    }
  }
}

TEST(RewriteRefuses, NonObjectTopLevel) {
  for (const std::string_view json : {"[]"sv, "null"sv, "\"{}\""sv, "1"sv}) {
    const Error e =
        error_from([&] { (void)process_json_with_affinity(json, kBoth, kProcessSource); });
    EXPECT_EQ(e.code(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("process: expected an object"), std::string::npos)
        << e.what();
  }
}

// --- process_json_with_affinity: fixtures, byte for byte ------------------

TEST(RewriteFixture, OddFileReplacesOnlyTheValue) {
  const std::string input = fixture("process-odd.json");
  const std::string old_value =
      R"({ "initial" : "0-3, 7" , "future-member": {"x": [1, 2]}, "final" : "\u0037" })";
  const std::size_t at = input.find(old_value);
  ASSERT_NE(at, std::string::npos);
  const auto affinity = affinity_of("0-1", "1");
  const std::string output = process_json_with_affinity(input, affinity, kProcessSource);
  const std::string value = R"({"initial":"0-1","final":"1"})";
  EXPECT_EQ(output.substr(0, at), input.substr(0, at));
  EXPECT_EQ(output.substr(at, value.size()), value);
  EXPECT_EQ(output.substr(at + value.size()), input.substr(at + old_value.size()));
  expect_rewrite_semantics(input, output, affinity);
}

TEST(RewriteFixture, OddFileRemovesTheMemberAndOneComma) {
  const std::string input = fixture("process-odd.json");
  const std::size_t key = input.find(R"("exec\u0043PUAffinity")");
  const std::size_t next_key = input.find(R"("annotations")");
  ASSERT_NE(key, std::string::npos);
  ASSERT_NE(next_key, std::string::npos);
  const std::string output = process_json_with_affinity(input, std::nullopt, kProcessSource);
  EXPECT_EQ(output, input.substr(0, key) + input.substr(next_key));
  expect_rewrite_semantics(input, output, std::nullopt);
}

TEST(RewriteFixture, CrioFileRoundTrips) {
  const std::string input = fixture("process-crio.json");
  for (const auto& affinity :
       {std::optional{affinity_of("0", "5")}, std::optional{affinity_of(nullptr, "4095")},
        std::optional<ExecCpuAffinity>{}}) {
    const std::string output = process_json_with_affinity(input, affinity, kProcessSource);
    expect_rewrite_semantics(input, output, affinity);
    // The member was last: everything before its comma is untouched.
    const std::size_t comma = input.find(R"(,"execCPUAffinity")");
    ASSERT_NE(comma, std::string::npos);
    EXPECT_EQ(output.substr(0, comma), input.substr(0, comma));
    EXPECT_EQ(output.substr(output.size() - 2), "}\n");
  }
}

TEST(RewriteFixture, PrettyFileGetsTheMemberFirst) {
  const std::string input = fixture("process-pretty-no-affinity.json");
  const auto affinity = affinity_of("0-1", "4");
  const std::string output = process_json_with_affinity(input, affinity, kProcessSource);
  const std::string inserted = "\"execCPUAffinity\":{\"initial\":\"0-1\",\"final\":\"4\"},\n  ";
  ASSERT_EQ(input.substr(0, 4), "{\n  ");
  EXPECT_EQ(output, "{\n  " + inserted + input.substr(4));
  expect_rewrite_semantics(input, output, affinity);
  // And taking it out again restores the file byte for byte.
  EXPECT_EQ(process_json_with_affinity(output, std::nullopt, kProcessSource), input);
}

TEST(RewriteFixture, DeepNestingIsNotRecursion) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::string input = R"({"x":)" + deep + R"(,"execCPUAffinity":1})";
  EXPECT_EQ(process_json_with_affinity(input, affinity_of("1", nullptr), kProcessSource),
            R"({"x":)" + deep + R"(,"execCPUAffinity":{"initial":"1"}})");
  EXPECT_EQ(process_json_with_affinity(input, std::nullopt, kProcessSource),
            R"({"x":)" + deep + "}");
}

// --- process_json_with_affinity: generated documents ----------------------

// Documents built from known member texts with random spacing, with or
// without an execCPUAffinity member (plainly or escaped, any old value) at
// a random place.  Whatever the rewrite does, every other member's text must
// come out unchanged and in order.
TEST(RewriteGenerated, KeepsEveryOtherMemberVerbatim) {
  const std::vector<std::string> members = {
      R"("a":1)",
      R"("s" : "x\"},]\\")",
      R"("arr":[1,[2,{"k":"v"}],"]"])",
      R"("o":{"execCPUAffinity":"nested","p":{}})",
      R"("big":18446744073709551616)",
      R"("inf" :1e400)",
      R"("u":"\u00e9\ud83d\ude00 ☃")",
      R"("t":true)",
      R"("n":null)",
      R"("execCPUAffinityX":{"initial":"1"})",
      R"("empty":{ })",
  };
  const std::vector<std::string> keys = {R"("execCPUAffinity")", R"("exec\u0043PUAffinity")",
                                         R"("\u0065xecCPUAffinit\u0079")"};
  const std::vector<std::string> old_values = {
      R"({"initial":"1"})", "null", R"("x")", "{}",
      "[1,{\"a\":[]}]",     "5",    "true",   R"({ "final" : "2" , "z" : [ ] })"};
  const std::vector<std::string> spaces = {"", " ", "\n  ", "\t", "\r\n", "  \n\t ", "\v\f"};
  const std::vector<std::optional<ExecCpuAffinity>> wanted = {
      std::nullopt, ExecCpuAffinity{}, kBoth,
      kInitialOnly, kFinalOnly,        affinity_of("0-3,64-127,1024", "64")};

  std::mt19937 random(20250401);  // fixed: failures must reproduce
  auto pick = [&random](std::size_t n) {
    return static_cast<std::size_t>(std::uniform_int_distribution<std::size_t>(0, n - 1)(random));
  };
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> chosen;
    const std::size_t count = pick(6);
    for (std::size_t i = 0; i < count; ++i) chosen.push_back(members[pick(members.size())]);
    // Duplicates of other keys are allowed; make them distinct anyway so
    // yajl_tree comparisons line up one to one.
    for (std::size_t i = 0; i < chosen.size(); ++i) {
      chosen[i].insert(1, std::to_string(i) + "_");
    }
    const bool with_affinity = pick(3) != 0;
    const std::size_t affinity_at = pick(chosen.size() + 1);

    std::string input = spaces[pick(spaces.size())] + "{" + spaces[pick(spaces.size())];
    std::vector<std::string> texts;  // the members in document order
    for (std::size_t i = 0; i <= chosen.size(); ++i) {
      if (with_affinity && i == affinity_at) {
        texts.push_back(keys[pick(keys.size())] + spaces[pick(spaces.size())] + ":" +
                        spaces[pick(spaces.size())] + old_values[pick(old_values.size())]);
      }
      if (i < chosen.size()) texts.push_back(chosen[i]);
    }
    for (std::size_t i = 0; i < texts.size(); ++i) {
      if (i > 0) input += spaces[pick(spaces.size())] + "," + spaces[pick(spaces.size())];
      input += texts[i];
    }
    input += spaces[pick(spaces.size())] + "}" + spaces[pick(spaces.size())];

    const std::optional<ExecCpuAffinity>& affinity = wanted[pick(wanted.size())];
    SCOPED_TRACE("input: " + printable(input));
    const std::string output = process_json_with_affinity(input, affinity, kProcessSource);
    const std::optional<ExecCpuAffinity> expected = normalized(affinity);
    expect_rewrite_semantics(input, output, expected);

    std::size_t from = 0;
    for (const std::string& member : chosen) {
      const std::size_t at = output.find(member, from);
      ASSERT_NE(at, std::string::npos) << member << " lost or reordered in " << output;
      from = at + member.size();
    }
    if (!with_affinity && !expected) {
      EXPECT_EQ(output, input);
    }
    EXPECT_EQ(process_json_with_affinity(output, affinity, kProcessSource), output);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace execaff
