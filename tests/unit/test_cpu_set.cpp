// SPDX-License-Identifier: LGPL-2.1-or-later
// CpuSet: the shared vectors (../shared/vectors/cpulist.json and our copy in
// tests/vectors), odd inputs, set operations, and ids above 1023.
#include <gtest/gtest.h>
#include <yajl/yajl_tree.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "cpu_set.hpp"
#include "error.hpp"

using execaff::CpuSet;
using execaff::Error;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Runs every case of a cpulist.json vector file; returns how many ran.
int run_vectors(const std::string& path) {
  const std::string text = slurp(path);
  char error[256] = "";
  yajl_val root = yajl_tree_parse(text.c_str(), error, sizeof error);
  EXPECT_NE(root, nullptr) << path << ": " << error;
  if (root == nullptr) return 0;
  const char* cases_path[] = {"cases", nullptr};
  yajl_val cases = yajl_tree_get(root, cases_path, yajl_t_array);
  if (cases == nullptr || !YAJL_IS_ARRAY(cases)) {
    ADD_FAILURE() << path << " has no \"cases\" array";
    yajl_tree_free(root);
    return 0;
  }
  int ran = 0;
  const auto& list = cases->u.array;
  for (std::size_t i = 0; i < list.len; ++i) {
    yajl_val c = list.values[i];
    const char* in_path[] = {"in", nullptr};
    const char* out_path[] = {"out", nullptr};
    yajl_val in_value = yajl_tree_get(c, in_path, yajl_t_string);
    yajl_val out_value = yajl_tree_get(c, out_path, yajl_t_string);
    if (in_value == nullptr || out_value == nullptr) {
      ADD_FAILURE() << path << ": case " << i << " lacks string \"in\" / \"out\"";
      continue;
    }
    const std::string in = in_value->u.string;
    const std::string out = out_value->u.string;
    SCOPED_TRACE("input \"" + in + "\"");
    if (out == "error") {
      try {
        (void)CpuSet::parse(in);
        ADD_FAILURE() << "accepted";
      } catch (const Error& e) {
        // The message must quote the input.
        EXPECT_NE(std::string(e.what()).find(execaff::quoted(in)), std::string::npos) << e.what();
        EXPECT_TRUE(e.code() == EINVAL || e.code() == ERANGE);
      }
    } else if (out == "unset") {
      EXPECT_TRUE(CpuSet::parse(in).empty());
    } else {
      EXPECT_EQ(CpuSet::parse(in).format(), out);
      // Canonical output parses back to itself.
      EXPECT_EQ(CpuSet::parse(out).format(), out);
    }
    ++ran;
  }
  yajl_tree_free(root);
  return ran;
}

}  // namespace

TEST(CpuSetVectors, OurCopy) {
  const char* dir = std::getenv("EXECAFF_VECTORS");
  ASSERT_NE(dir, nullptr) << "EXECAFF_VECTORS is set by meson test";
  EXPECT_GE(run_vectors(std::string(dir) + "/cpulist.json"), 28);
}

TEST(CpuSetVectors, SharedCopyAgrees) {
  const char* dir = std::getenv("EXECAFF_SHARED_VECTORS");
  if (dir == nullptr || !std::ifstream(std::string(dir) + "/cpulist.json")) {
    GTEST_SKIP() << "no ../shared/vectors beside the checkout";
  }
  EXPECT_GE(run_vectors(std::string(dir) + "/cpulist.json"), 28);
  EXPECT_EQ(slurp(std::string(dir) + "/cpulist.json"),
            slurp(std::string(std::getenv("EXECAFF_VECTORS")) + "/cpulist.json"))
      << "tests/vectors/cpulist.json has drifted from the shared vectors";
}

TEST(CpuSetParse, OddInputs) {
  struct Case {
    const char* in;
    const char* out;  // nullptr: error
  } cases[] = {
      {"0", "0"},           {"00", "0"},
      {"007", "7"},         {"3,2,1,0", "0-3"},
      {"1,3", "1,3"},       {"1-1,1", "1"},
      {"0-2,3-5", "0-5"},   {"5-9,0-4", "0-9"},
      {",,1,,", "1"},       {"  0  ,  1  ", "0-1"},
      {"0 -1", nullptr},    {"0- 1", nullptr},
      {"\t1", nullptr},     {"1\n", nullptr},
      {"1.5", nullptr},     {"1-", nullptr},
      {"--1", nullptr},     {"1--2", nullptr},
      {"65535", "65535"},   {"65534-65535", "65534-65535"},
      {"0-65536", nullptr}, {"4294967297", nullptr},
      {"1,a", nullptr},     {"١", nullptr},  // Arabic-Indic digit one
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(execaff::quoted(c.in));
    if (c.out == nullptr) {
      EXPECT_THROW((void)CpuSet::parse(c.in), Error);
    } else {
      EXPECT_EQ(CpuSet::parse(c.in).format(), c.out);
    }
  }
}

TEST(CpuSetParse, MessagesSayWhatAndWhere) {
  try {
    (void)CpuSet::parse("0-3,7-5");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), EINVAL);
    EXPECT_STREQ(e.what(),
                 "invalid CPU list \"0-3,7-5\": range \"7-5\" at offset 4 runs backwards");
  }
  try {
    (void)CpuSet::parse("1,70000");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ERANGE);
    EXPECT_STREQ(e.what(),
                 "invalid CPU list \"1,70000\": CPU 70000 at offset 2 is above the highest "
                 "supported id 65535");
  }
  // The upper bound of a range is reported where it is (issue 11, 3).
  try {
    (void)CpuSet::parse("0-99999");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ERANGE);
    EXPECT_STREQ(e.what(),
                 "invalid CPU list \"0-99999\": CPU 99999 at offset 2 is above the highest "
                 "supported id 65535");
  }
  try {
    (void)CpuSet::parse("4, 1-99999");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "invalid CPU list \"4, 1-99999\": CPU 99999 at offset 5 is above the highest "
                 "supported id 65535");
  }
  try {
    (void)CpuSet::parse("0x1");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "invalid CPU list \"0x1\": item \"0x1\" at offset 0 is not a CPU number or a "
                 "range of them");
  }
  try {
    (void)CpuSet::parse(",");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "invalid CPU list \",\": it names no CPU");
  }
}

// Every error names the offset of what it is about: an id out of range
// where that id starts (issue 11: "0-99999" said offset 0), a malformed or
// backwards item where the item starts (after the spaces the grammar skips).
TEST(CpuSetParse, EveryErrorNamesTheRightOffset) {
  const struct {
    const char* in;
    const char* message;
  } cases[] = {
      {"0-99999", "CPU 99999 at offset 2 is above"},
      {"99999", "CPU 99999 at offset 0 is above"},
      {"99999-100000", "CPU 99999 at offset 0 is above"},
      {"1,2-70000", "CPU 70000 at offset 4 is above"},
      {"  1,  3-65536", "CPU 65536 at offset 8 is above"},
      {"0,65534-4294967297", "CPU 4294967297 at offset 8 is above"},
      {"1,  7-5", "range \"7-5\" at offset 4 runs backwards"},
      {"0-3,1-x", "item \"1-x\" at offset 4 is not a CPU number"},
      {"0,x-1", "item \"x-1\" at offset 2 is not a CPU number"},
      {"0,1, 2 3", "item \"2 3\" at offset 5 is not a CPU number"},
      {"5,-1", "item \"-1\" at offset 2 is not a CPU number"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(execaff::quoted(c.in));
    try {
      (void)CpuSet::parse(c.in);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
}

TEST(CpuSetOps, AboveCpu1023) {
  const CpuSet high = CpuSet::parse("1023-1025,4095,65535");
  EXPECT_EQ(high.count(), 5U);
  EXPECT_EQ(high.first(), 1023U);
  EXPECT_EQ(high.last(), 65535U);
  EXPECT_TRUE(high.contains(1024));
  EXPECT_FALSE(high.contains(1026));
  EXPECT_EQ(high.format(), "1023-1025,4095,65535");
  const CpuSet low = CpuSet::parse("0-1023");
  EXPECT_EQ(low.united_with(high).format(), "0-1025,4095,65535");
  EXPECT_EQ(low.intersected_with(high).format(), "1023");
  EXPECT_EQ(high.without(low).format(), "1024-1025,4095,65535");
  EXPECT_TRUE(CpuSet::parse("1024").is_subset_of(high));
  EXPECT_FALSE(high.is_subset_of(low));
}

TEST(CpuSetOps, Algebra) {
  const CpuSet a = CpuSet::parse("0-3");
  const CpuSet b = CpuSet::parse("2-5");
  EXPECT_EQ(a.united_with(b).format(), "0-5");
  EXPECT_EQ(a.intersected_with(b).format(), "2-3");
  EXPECT_EQ(a.without(b).format(), "0-1");
  EXPECT_TRUE(a.intersects(b));
  EXPECT_FALSE(a.intersects(CpuSet::parse("4-7")));
  EXPECT_TRUE(CpuSet().is_subset_of(a));
  EXPECT_TRUE(CpuSet().without(a).empty());
  EXPECT_EQ(CpuSet().first(), std::nullopt);
  EXPECT_EQ(CpuSet().format(), "");
  // Equality ignores how the set was built (no trailing zero words).
  EXPECT_EQ(CpuSet::parse("1,2000").without(CpuSet::of({2000})), CpuSet::of({1}));
}

TEST(CpuSetOps, FromWordsRejectsIdsAboveTheCap) {
  std::vector<std::uint64_t> words(1025, 0);
  words[1024] = 1;  // CPU 65536
  EXPECT_THROW((void)CpuSet::from_words(words), Error);
  words[1024] = 0;
  words[3] = 0x8000000000000000ULL;  // CPU 255
  EXPECT_EQ(CpuSet::from_words(words).format(), "255");
}
