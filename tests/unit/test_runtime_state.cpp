// SPDX-License-Identifier: LGPL-2.1-or-later
// The runtime's state files (runtime_state.hpp): runc's state.json read by
// a skim of its three members (json::skim) and, where the skim does not
// judge the file, by the whole reader, with the same answer either way.
// The skim itself: what it finds, and what it leaves to the reader.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "error_from.hpp"
#include "json_handlers.hpp"
#include "json_reader.hpp"
#include "read_tally.hpp"
#include "runtime_state.hpp"

namespace execaff {
namespace {

using Paths = std::vector<std::vector<std::string_view>>;

std::string skimmed(std::string_view text, const Paths& paths, std::size_t which) {
  const json::Skimmed found = json::skim(text, paths, "test");
  if (!found.complete) return "<incomplete>";
  if (!found.values.at(which)) return "<absent>";
  return std::string(*found.values[which]);
}

TEST(Skim, FindsMembersAtTheirDepthAsWritten) {
  const std::string text =
      R"( {"a": 1, "b" : {"c": [1, {"d": "}"}], "d": {"x":"\"{["} , "e":null}, "f":"t\\"} )";
  const Paths paths = {{"a"}, {"b", "d"}, {"b", "e"}, {"f"}, {"b", "c"}, {"d"}, {"b", "d", "x"}};
  EXPECT_EQ(skimmed(text, paths, 0), "1");
  EXPECT_EQ(skimmed(text, paths, 1), R"({"x":"\"{["})");
  EXPECT_EQ(skimmed(text, paths, 2), "null");
  EXPECT_EQ(skimmed(text, paths, 3), R"("t\\")");
  EXPECT_EQ(skimmed(text, paths, 4), R"([1, {"d": "}"}])");
  // "d" inside b.c's array and inside b are not the top level's.
  EXPECT_EQ(skimmed(text, paths, 5), "<absent>");
  // A path through a member that is found whole as well.
  EXPECT_EQ(skimmed(text, paths, 6), R"("\"{[")");
}

TEST(Skim, APathThroughSomethingElseThanAnObjectIsAbsent) {
  EXPECT_EQ(skimmed(R"({"config": [{"labels": []}]})", {{"config", "labels"}}, 0), "<absent>");
  EXPECT_EQ(skimmed(R"({"config": "labels"})", {{"config", "labels"}}, 0), "<absent>");
  EXPECT_EQ(skimmed(R"({})", {{"config", "labels"}}, 0), "<absent>");
}

TEST(Skim, LeavesToTheReaderWhatItDoesNotJudge) {
  const Paths paths = {{"pid"}, {"config", "labels"}};
  for (const std::string_view text : {
           R"({"pid": 1)",                                 // truncated
           R"({"pid": 1, "x": "abc)",                      // truncated in a string
           R"({"pid": 1, "x": [1, 2})",                    // brackets not matched
           R"({"pid": 1, "x": {"y": 2]})",                 //
           R"({"pid": 1} {})",                             // text after the document
           R"({"pid": 1, "pid": 2})",                      // a member on a path twice
           R"({"config": {}, "config": {"labels": []}})",  // on the way, twice
           R"({"p\u0069d": 1})",                           // a key with an escape
           "{\"pid\": 1, \"x\": \"a\nb\"}",                // a control character
           R"([{"pid": 1}])",                              // not an object
           R"({"pid": })",                                 // no value
           R"({"pid" 1})",                                 // no colon
           "",
       }) {
    EXPECT_EQ(skimmed(text, paths, 0), "<incomplete>") << text;
  }
  // A duplicate elsewhere is the reader's business only where it is read.
  EXPECT_EQ(skimmed(R"({"x": 1, "x": 2, "pid": 3})", paths, 0), "3");
}

TEST(Skim, ACompleteSkimIsCountedAsOne) {
  tally::enable();
  (void)json::skim(R"({"a": 1})", {{"a"}}, "doc one");
  (void)json::skim(R"({"a": 1)", {{"a"}}, "doc two");
  EXPECT_TRUE(tally::json_documents_parsed().empty());
  ASSERT_EQ(tally::json_documents_skimmed().size(), 1U);
  EXPECT_EQ(tally::json_documents_skimmed()[0].first, "doc one");
}

std::string fixture(const std::string& name) {
  std::string dir = "tests/fixtures/json";
  if (const char* env = std::getenv("EXECAFF_FIXTURES")) dir = std::string(env) + "/json";
  std::ifstream in(dir + "/" + name, std::ios::binary);
  EXPECT_TRUE(in) << "cannot open fixture " << dir << "/" << name << " (set EXECAFF_FIXTURES)";
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

class StateRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "execaff-state-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << errno_text(errno);
    root_ = pattern;
  }
  void TearDown() override {
    if (!root_.empty()) std::filesystem::remove_all(root_);
  }
  void write(const std::string& id, const std::string& name, const std::string& text) {
    std::filesystem::create_directories(root_ + "/" + id);
    std::ofstream(root_ + "/" + id + "/" + name, std::ios::binary) << text;
  }
  std::string root_;
};

// runc 1.3.6's own state.json (a container of the integration fixture,
// 2026-12-05), as the skim reads it and, after a key with an escape is put
// in front, as the whole reader does.
TEST_F(StateRoot, RuncStateFileTheSameBySkimAndWhole) {
  const std::string text = fixture("runc-1.3.6-state.json");
  ASSERT_EQ(text.front(), '{');
  write("skimmed", "state.json", text);
  write("whole", "state.json", "{\"\\u0078\":0," + text.substr(1));
  ASSERT_FALSE(json::skim("{\"\\u0078\":0," + text.substr(1), {{"id"}}, "t").complete);

  tally::enable();
  const auto skim = read_container_state(root_, "skimmed");
  const auto whole = read_container_state(root_, "whole");
  ASSERT_TRUE(skim && whole);
  EXPECT_EQ(skim->init_pid, 2210);
  EXPECT_EQ(skim->config_path, "/tmp/execaff-bundle-wv3nx_ad/config.json");
  EXPECT_FALSE(skim->crun);
  EXPECT_EQ(whole->init_pid, skim->init_pid);
  EXPECT_EQ(whole->config_path, skim->config_path);
  // One file skimmed once, the other parsed whole once.
  ASSERT_EQ(tally::json_documents_skimmed().size(), 1U);
  EXPECT_EQ(tally::json_documents_skimmed()[0].second, 1U);
  ASSERT_EQ(tally::json_documents_parsed().size(), 1U);
  EXPECT_EQ(tally::json_documents_parsed()[0].second, 1U);
  EXPECT_NE(tally::json_documents_parsed()[0].first.find("/whole/"), std::string::npos);
}

TEST_F(StateRoot, WhatTheSkimFindsIsReadByTheReadersRules) {
  // The last bundle= label counts (as in the whole reader's loop),
  // a pid that is not a number is none, another type of labels is absent.
  write("a", "state.json",
        R"({"init_process_pid":42,"config":{"labels":["x=y","bundle=/b1","bundle=/b2",7]}})");
  const auto a = read_container_state(root_, "a");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->init_pid, 42);
  EXPECT_EQ(a->config_path, "/b2/config.json");

  write("b", "state.json", R"({"init_process_pid":"42","config":{"labels":["bundle=/b"]}})");
  EXPECT_EQ(
      error_from([&] { (void)read_container_state(root_, "b"); }).what(),
      "runtime state \"" + root_ + "/b/state.json\": \"init_process_pid\" is not a process id");

  write("c", "state.json", R"({"init_process_pid":42,"config":{"labels":{"bundle":"/b"}}})");
  EXPECT_EQ(error_from([&] { (void)read_container_state(root_, "c"); }).what(),
            "runtime state \"" + root_ + "/c/state.json\" names no bundle");
}

TEST_F(StateRoot, ABrokenFileIsTheWholeReadersError) {
  write("half", "state.json", R"({"init_process_pid":42,"config":{"labels":["bundle=/b"])");
  const std::string what = error_from([&] { (void)read_container_state(root_, "half"); }).what();
  EXPECT_NE(what.find("runtime state \"" + root_ + "/half/state.json\": malformed JSON"),
            std::string::npos)
      << what;
}

TEST_F(StateRoot, CrunsStatusFileAndAMissingContainer) {
  write("c1", "status", R"({"pid": 7, "bundle": "/bundle", "rootfs": "/r"})");
  const auto c1 = read_container_state(root_, "c1");
  ASSERT_TRUE(c1);
  EXPECT_TRUE(c1->crun);
  EXPECT_EQ(c1->init_pid, 7);
  EXPECT_EQ(c1->config_path, "/bundle/config.json");
  EXPECT_FALSE(read_container_state(root_, "absent"));
  EXPECT_FALSE(read_container_state(root_, "../c1"));
}

}  // namespace
}  // namespace execaff
