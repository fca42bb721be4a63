// SPDX-License-Identifier: LGPL-2.1-or-later
// What `"native": "detect"` costs an opted-in exec (issue 16 §2): the cold
// probe (the cache has no line for the binary: the ELF note is read and
// `<runtime> --version` runs, the answer is written) against a cached hit
// (open and fstat the binary, check and read the cache file).  Every
// runtime in $EXECAFF_BENCH_RUNTIMES (colon-separated), else the peers of
// contrib/install-peers.sh and Debian's runc and crun that are installed.
// The cache is a private file under /tmp, as /run/execaff/native would be.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "native_cache.hpp"
#include "native_support.hpp"

namespace fs = std::filesystem;
using execaff::shim::detect_native_support;
using execaff::shim::DetectOptions;

namespace {

std::vector<std::string> runtimes() {
  std::vector<std::string> out;
  if (const char* list = std::getenv("EXECAFF_BENCH_RUNTIMES"); list != nullptr && *list) {
    std::string all = list;
    for (std::size_t at = 0; at <= all.size();) {
      const std::size_t colon = all.find(':', at);
      const std::string one =
          all.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
      if (!one.empty()) out.push_back(one);
      if (colon == std::string::npos) break;
      at = colon + 1;
    }
    return out;
  }
  for (const char* p :
       {"/var/tmp/execaff-peers/runc-1.3.6/runc", "/var/tmp/execaff-peers/crun-1.21/crun",
        "/var/tmp/execaff-peers/crun-1.28/crun", "/usr/bin/runc", "/usr/bin/crun"}) {
    if (::access(p, X_OK) == 0) out.push_back(p);
  }
  return out;
}

std::string cache_dir() {
  static const std::string dir = [] {
    std::string pattern = (fs::temp_directory_path() / "execaff-bench-native-XXXXXX").string();
    return std::string(::mkdtemp(pattern.data()));
  }();
  return dir;
}

void cold(benchmark::State& state, const std::string& runtime) {
  const DetectOptions options{cache_dir() + "/cold/native", execaff::shim::kVersionProbeTimeout,
                              ::geteuid()};
  std::string answer;
  for (auto _ : state) {
    state.PauseTiming();
    fs::remove(options.cache_path);
    state.ResumeTiming();
    const auto got = detect_native_support(runtime, options);
    benchmark::DoNotOptimize(got);
    answer = got.evidence;
  }
  state.SetLabel(answer);
}

void cached(benchmark::State& state, const std::string& runtime) {
  const DetectOptions options{cache_dir() + "/warm/native", execaff::shim::kVersionProbeTimeout,
                              ::geteuid()};
  (void)detect_native_support(runtime, options);  // the one probe
  for (auto _ : state) benchmark::DoNotOptimize(detect_native_support(runtime, options));
  state.SetLabel(detect_native_support(runtime, options).evidence);
}

}  // namespace

int main(int argc, char** argv) {
  for (const std::string& rt : runtimes()) {
    benchmark::RegisterBenchmark(("detect/cold/" + rt).c_str(), cold, rt)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("detect/cached/" + rt).c_str(), cached, rt)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  fs::remove_all(cache_dir());
  return 0;
}
