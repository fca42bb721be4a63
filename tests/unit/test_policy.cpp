// SPDX-License-Identifier: LGPL-2.1-or-later
// One case per row of spec/decision-table.md, by its id.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>

#include "cpu_set.hpp"
#include "error.hpp"
#include "policy.hpp"

using execaff::CpuSet;
using execaff::DecisionSource;
using execaff::ExecCpuAffinity;
using execaff::PolicyInput;

namespace {

std::optional<CpuSet> list(const char* text) {
  if (text == nullptr) return std::nullopt;
  return CpuSet::parse(text);
}

ExecCpuAffinity field(const char* initial, const char* final) {
  return ExecCpuAffinity{list(initial), list(final)};
}

struct Row {
  const char* id;
  std::map<std::string, std::string> annotations;
  std::optional<std::string> handler_default;
  std::optional<ExecCpuAffinity> process_field;
  std::optional<ExecCpuAffinity> config_field;
  const char* cpuset = "1-3";
  const char* caller = "0";
  // The caller's cpuset (what sched_setaffinity accepts); nullptr: unknown.
  const char* caller_cpuset = nullptr;
  const char* isolated = "2-3";
  const char* housekeeping = nullptr;
  // Expected: an error containing `error`, or these sets and source.
  const char* error = nullptr;
  const char* initial = nullptr;
  const char* final = nullptr;
  DecisionSource source = DecisionSource::none;
};

const std::string kA = execaff::kAnnotation;
const std::string kO = execaff::kOpenShiftAnnotation;

PolicyInput input_for(const Row& row) {
  PolicyInput in;
  in.annotations = row.annotations;
  in.handler_default = row.handler_default;
  in.process_field = row.process_field;
  in.config_field = row.config_field;
  in.container_cpuset = CpuSet::parse(row.cpuset);
  in.container_cpuset_from = "test cgroup";
  in.caller_cpus = CpuSet::parse(row.caller);
  in.isolated_cpus = CpuSet::parse(row.isolated);
  if (row.caller_cpuset != nullptr) {
    const CpuSet cpuset = CpuSet::parse(row.caller_cpuset);
    in.caller_cpuset_source = [cpuset]() { return cpuset; };
  }
  if (row.housekeeping != nullptr) in.housekeeping_configured = CpuSet::parse(row.housekeeping);
  // SMT siblings (0,2) and (1,3); beyond CPU 3, a CPU alone.
  in.thread_siblings = [](unsigned cpu) {
    if (cpu < 4) return CpuSet::of({cpu % 2, cpu % 2 + 2});
    return CpuSet::of({cpu});
  };
  return in;
}

class DecisionTable : public ::testing::TestWithParam<Row> {};

TEST_P(DecisionTable, Row) {
  const Row& row = GetParam();
  const PolicyInput in = input_for(row);
  if (row.error != nullptr) {
    try {
      (void)execaff::decide_policy(in);
      FAIL() << row.id << ": expected an error containing " << row.error;
    } catch (const execaff::Error& e) {
      EXPECT_NE(std::string(e.what()).find(row.error), std::string::npos) << e.what();
      EXPECT_EQ(e.code(), EINVAL);
    }
    return;
  }
  const execaff::Decision d = execaff::decide_policy(in);
  EXPECT_EQ(d.source, row.source) << d.reason;
  EXPECT_EQ(d.pinned, row.source != DecisionSource::none) << d.reason;
  EXPECT_EQ(d.initial, list(row.initial)) << (d.initial ? d.initial->format() : "unset");
  EXPECT_EQ(d.final, list(row.final)) << (d.final ? d.final->format() : "unset");
  EXPECT_FALSE(d.reason.empty());
  // The policy only ever adds to the caller's housekeeping CPUs the final
  // ones, and final always lies in the cpuset.
  if (d.final) {
    EXPECT_TRUE(d.final->is_subset_of(in.container_cpuset));
  }
  if (d.source == DecisionSource::annotation || d.source == DecisionSource::handler_default) {
    ASSERT_TRUE(d.housekeeping.has_value());
    EXPECT_EQ(*d.initial, d.housekeeping->united_with(*d.final));
    EXPECT_TRUE(d.housekeeping->is_subset_of(in.caller_cpus));
    EXPECT_FALSE(d.housekeeping->intersects(in.isolated_cpus));
  }
  // A field is repaired exactly when the decision does not hand it on as
  // written; the shim then gives a runtime that reads it the decision.
  const auto& field = d.source == DecisionSource::process  ? row.process_field
                      : d.source == DecisionSource::config ? row.config_field
                                                           : std::nullopt;
  EXPECT_EQ(d.repaired, field && (field->initial != d.initial || field->final != d.final))
      << d.reason;
  EXPECT_EQ(execaff::wants_pinning(in), d.pinned);
}

const Row kRows[] = {
    {.id = "R1"},
    {.id = "R2", .handler_default = "disable"},
    {.id = "R3", .annotations = {{kA, "disable"}}, .handler_default = "first"},
    {.id = "R4", .annotations = {{kO, "disable"}}, .handler_default = "first"},
    {.id = "R5",
     .annotations = {{kA, "disable"}},
     .process_field = field(nullptr, "2"),
     .final = "2",
     .source = DecisionSource::process},
    {.id = "R6",
     .annotations = {{kA, "first"}},
     .initial = "0-1",
     .final = "1",
     .source = DecisionSource::annotation},
    {.id = "R7",
     .annotations = {{kA, "first-core"}},
     .initial = "0-1,3",
     .final = "1,3",
     .source = DecisionSource::annotation},
    {.id = "R8",
     .annotations = {{kA, "first-core"}},
     .cpuset = "1-2",
     .initial = "0-1",
     .final = "1",
     .source = DecisionSource::annotation},
    {.id = "R9",
     .annotations = {{kA, "2"}},
     .initial = "0,2",
     .final = "2",
     .source = DecisionSource::annotation},
    {.id = "R10",
     .annotations = {{kA, "5"}},
     .error = "final affinity \"5\" is not within the container's cpuset \"1-3\""},
    {.id = "R11",
     .annotations = {{kA, "firstt"}},
     .error = "expected \"first\", \"first-core\", \"disable\" or a CPU list"},
    {.id = "R12",
     .annotations = {{kA, ""}},
     .error = "expected \"first\", \"first-core\", \"disable\" or a CPU list"},
    {.id = "R13",
     .annotations = {{kA, "first"}},
     .process_field = field("1", nullptr),
     .initial = "0-1",
     .final = "1",
     .source = DecisionSource::annotation},
    {.id = "R14",
     .handler_default = "first",
     .initial = "0-1",
     .final = "1",
     .source = DecisionSource::handler_default},
    {.id = "R15",
     .annotations = {{kA, "first-core"}},
     .handler_default = "first",
     .initial = "0-1,3",
     .final = "1,3",
     .source = DecisionSource::annotation},
    {.id = "R16",
     .annotations = {{kA, "first"}},
     .caller = "2-3",
     .error = "no housekeeping CPU is available to the caller"},
    {.id = "R17",
     .annotations = {{kA, "first"}},
     .caller = "0-3",
     .isolated = "",
     .housekeeping = "0",
     .initial = "0-1",
     .final = "1",
     .source = DecisionSource::annotation},
    {.id = "R18",
     .annotations = {{kA, "first"}},
     .caller = "2-3",
     .housekeeping = "0",
     .error = "no housekeeping CPU"},
    {.id = "R19",
     .process_field = field("0", "1"),
     .initial = "0",
     .final = "1",
     .source = DecisionSource::process},
    {.id = "R20",
     .process_field = field(nullptr, "2"),
     .final = "2",
     .source = DecisionSource::process},
    {.id = "R21",
     .process_field = field("1", nullptr),
     .initial = "0-1",
     .final = "1",
     .source = DecisionSource::process},
    {.id = "R22",
     .process_field = field("1", nullptr),
     .caller = "0-3",
     .initial = "1",
     .source = DecisionSource::process},
    {.id = "R23",
     .process_field = field(nullptr, "0"),
     .error = "final affinity \"0\" is not within the container's cpuset \"1-3\""},
    {.id = "R24",
     .config_field = field("0", "2"),
     .initial = "0",
     .final = "2",
     .source = DecisionSource::config},
    {.id = "R25",
     .process_field = field(nullptr, "3"),
     .config_field = field(nullptr, "2"),
     .final = "3",
     .source = DecisionSource::process},
    {.id = "R26", .annotations = {{kO, "enable"}}},
    {.id = "R27",
     .annotations = {{kA, "first"}},
     .cpuset = "1024-1027",
     .caller = "0-1",
     .initial = "0-1,1024",
     .final = "1024",
     .source = DecisionSource::annotation},
    {.id = "R28",
     .annotations = {{kA, "first"}},
     .caller = "0-3",
     .isolated = "",
     .initial = "0-3",
     .final = "1",
     .source = DecisionSource::annotation},
    {.id = "R29",
     .process_field = field("1", nullptr),
     .caller_cpuset = "0-3",
     .initial = "1",
     .source = DecisionSource::process},
    {.id = "R30",
     .process_field = field("999", nullptr),
     .caller_cpuset = "0-3",
     .initial = "0",
     .source = DecisionSource::process},
    {.id = "R31",
     .process_field = field("1", "2"),
     .caller_cpuset = "0",
     .initial = "0-1",
     .final = "2",
     .source = DecisionSource::process},
    {.id = "R32",
     .process_field = field("1", nullptr),
     .caller = "2-3",
     .caller_cpuset = "2-3",
     .error = "no housekeeping CPU is available to widen it"},
};

INSTANTIATE_TEST_SUITE_P(Spec, DecisionTable, ::testing::ValuesIn(kRows),
                         [](const ::testing::TestParamInfo<Row>& param) {
                           return std::string(param.param.id);
                         });

TEST(DecisionTableDoc, EveryRowIsInTheSpec) {
  // The table in spec/ and this test must not drift: every id here is a row
  // there and the other way round.
  const char* root = std::getenv("EXECAFF_SOURCE_ROOT");
  ASSERT_NE(root, nullptr);
  FILE* f = std::fopen((std::string(root) + "/spec/decision-table.md").c_str(), "r");
  ASSERT_NE(f, nullptr);
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  std::fclose(f);
  std::size_t rows_in_doc = 0;
  for (std::size_t at = 0; (at = text.find("\n| R", at)) != std::string::npos; ++at) ++rows_in_doc;
  EXPECT_EQ(rows_in_doc, std::size(kRows));
  for (const Row& row : kRows) {
    EXPECT_NE(text.find(std::string("\n| ") + row.id + " |"), std::string::npos) << row.id;
  }
}

TEST(Policy, UnpinnedDecisionNeedsNoCpuSets) {
  PolicyInput in;  // no cpusets at all: decide() does not read them for R1
  const auto d = execaff::decide_policy(in);
  EXPECT_FALSE(d.pinned);
  EXPECT_FALSE(execaff::wants_pinning(in));
}

}  // namespace
