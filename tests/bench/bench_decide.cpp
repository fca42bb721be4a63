// SPDX-License-Identifier: LGPL-2.1-or-later
// The full decision as the shim makes it for one opted-in exec: read a
// realistic 4 KiB process file and a CRI-O-sized config.json from disk, read
// the node's facts (a fixture node tree: 4 CPUs, isolated 2-3, cgroup v2),
// decide.  Target (issue 2): well under 100 us.  Also the pieces, and the
// cost for an exec that opts in to nothing.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cpu_set.hpp"
#include "decide.hpp"
#include "file_reader.hpp"
#include "node_facts.hpp"
#include "spec_json.hpp"

namespace fs = std::filesystem;

namespace {

// A process object of about 4 KiB, shaped like CRI-O's exec-process files:
// the container's whole process object with the exec's args.
std::string process_json(bool with_field) {
  std::string env;
  for (int i = 0; i < 56; ++i) {
    env += std::string(i ? "," : "") + "\"KUBERNETES_SERVICE_VAR_" + std::to_string(i) +
           "=value-of-some-length-" + std::to_string(i * 7919) + "\"";
  }
  std::string caps =
      "\"CAP_CHOWN\",\"CAP_DAC_OVERRIDE\",\"CAP_FSETID\",\"CAP_FOWNER\",\"CAP_SETGID\","
      "\"CAP_SETUID\",\"CAP_SETPCAP\",\"CAP_NET_BIND_SERVICE\",\"CAP_KILL\",\"CAP_IPC_LOCK\","
      "\"CAP_SYS_NICE\",\"CAP_NET_RAW\"";
  std::string json =
      "{\"terminal\":false,\"user\":{\"uid\":0,\"gid\":0,\"additionalGids\":[0,1,2]},"
      "\"args\":[\"/bin/sh\",\"-c\",\"cat /proc/self/status\"],\"env\":[" +
      env + "],\"cwd\":\"/\",\"capabilities\":{\"bounding\":[" + caps + "],\"effective\":[" + caps +
      "],\"permitted\":[" + caps +
      "]},\"rlimits\":[{\"type\":\"RLIMIT_NOFILE\",\"hard\":1048576,\"soft\":1048576}],"
      "\"noNewPrivileges\":true,\"apparmorProfile\":\"crio-default\","
      "\"oomScoreAdj\":-997,\"selinuxLabel\":\"system_u:system_r:container_t:s0:c4,c5\"";
  if (with_field) json += ",\"execCPUAffinity\":{\"initial\":\"1\"}";
  return json + "}";
}

std::string config_json(bool opted_in) {
  std::string annotations =
      "\"io.kubernetes.pod.name\":\"dpdk-0\",\"io.kubernetes.pod.namespace\":\"ran\"";
  for (int i = 0; i < 30; ++i) {
    annotations += ",\"io.kubernetes.cri-o.Annotation" + std::to_string(i) +
                   "\":\"a value that CRI-O writes for every container " + std::to_string(i) + "\"";
  }
  if (opted_in) annotations += ",\"exec-cpu-affinity.execaff.io\":\"first\"";
  return "{\"ociVersion\":\"1.0.2-dev\",\"process\":" + process_json(false) +
         ",\"root\":{\"path\":\"/var/lib/containers/storage/overlay/abc/"
         "merged\"},\"hostname\":\"dpdk-0\","
         "\"annotations\":{" +
         annotations +
         "},\"linux\":{\"resources\":{\"cpu\":{\"shares\":2048,\"quota\":-1,\"period\":100000,"
         "\"cpus\":\"1-3\",\"mems\":\"0\"}},\"cgroupsPath\":\"kubepods-pod1.slice:crio:abc\","
         "\"namespaces\":[{\"type\":\"pid\"},{\"type\":\"ipc\"},{\"type\":\"uts\"},{\"type\":"
         "\"mount\"}]}}";
}

struct Files {
  fs::path dir;
  std::string process, process_field, config, config_plain, node_root;
  Files() {
    char pattern[] = "/tmp/execaff-bench-XXXXXX";
    dir = ::mkdtemp(pattern);
    auto write = [&](const char* name, const std::string& text) {
      std::ofstream(dir / name) << text;
      return (dir / name).string();
    };
    process = write("process.json", process_json(false));
    process_field = write("process-field.json", process_json(true));
    config = write("config.json", config_json(true));
    config_plain = write("config-plain.json", config_json(false));
    const char* fixtures = std::getenv("EXECAFF_FIXTURES");
    node_root = std::string(fixtures ? fixtures : "tests/fixtures") + "/nodes/v2-4cpu";
  }
  ~Files() { fs::remove_all(dir); }
};

Files& files() {
  static Files f;
  return f;
}

execaff::DecideRequest request_from_disk(const std::string& config, const std::string& process) {
  execaff::DecideRequest r;
  const std::string config_text = execaff::read_file(config);
  r.process = execaff::parse_process_document(execaff::read_file(process), "process");
  r.config = execaff::parse_config_document(config_text, "config");
  r.container_pid = 3000;  // the container in the fixture tree
  r.caller_cpus = execaff::CpuSet::parse("0");
  return r;
}

void BM_FullDecisionOptedIn(benchmark::State& state) {
  const execaff::NodeFacts node(files().node_root);
  for (auto _ : state) {
    auto d = execaff::decide(node, request_from_disk(files().config, files().process));
    if (!d.pinned) state.SkipWithError("not pinned");
    benchmark::DoNotOptimize(d);
  }
  state.counters["process_bytes"] = static_cast<double>(fs::file_size(files().process));
}
BENCHMARK(BM_FullDecisionOptedIn);

void BM_FullDecisionNotOptedIn(benchmark::State& state) {
  const execaff::NodeFacts node(files().node_root);
  for (auto _ : state) {
    auto d = execaff::decide(node, request_from_disk(files().config_plain, files().process));
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_FullDecisionNotOptedIn);

void BM_ParseProcess4KiB(benchmark::State& state) {
  const std::string json = execaff::read_file(files().process_field);
  for (auto _ : state) benchmark::DoNotOptimize(execaff::parse_process_document(json, "bench"));
}
BENCHMARK(BM_ParseProcess4KiB);

// The rewrite alone, on a file already read and parsed (as the shim does).
void BM_RewriteProcess4KiB(benchmark::State& state) {
  const execaff::ProcessDocument document =
      execaff::parse_process_document(execaff::read_file(files().process_field), "bench");
  const execaff::ExecCpuAffinity a{execaff::CpuSet::parse("0-1"), execaff::CpuSet::parse("1")};
  for (auto _ : state) benchmark::DoNotOptimize(execaff::rewritten_process(document, a));
}
BENCHMARK(BM_RewriteProcess4KiB);

void BM_NodeFacts(benchmark::State& state) {
  const execaff::NodeFacts node(files().node_root);
  for (auto _ : state) {
    benchmark::DoNotOptimize(node.isolated_cpus());
    benchmark::DoNotOptimize(node.cgroup_cpuset_of_pid(3000));
  }
}
BENCHMARK(BM_NodeFacts);

void BM_ParseCpuList(benchmark::State& state) {
  for (auto _ : state)
    benchmark::DoNotOptimize(execaff::CpuSet::parse("0-3,8-11,36-39,44-47,1024"));
}
BENCHMARK(BM_ParseCpuList);

}  // namespace

BENCHMARK_MAIN();
