// SPDX-License-Identifier: LGPL-2.1-or-later
// apply_affinity for real: child processes pinned by this test, masks read
// back from /proc/<pid>/task/*/status, a real cpuset cgroup for the
// refusal and clipping cases.  Skips (not passes) where the machine lacks
// what a case needs, and says which.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apply.hpp"
#include "cpu_set.hpp"
#include "error.hpp"

using execaff::CpuSet;
using execaff::Error;
namespace fs = std::filesystem;

namespace {

std::string status_field(const std::string& status_path, const std::string& key) {
  std::ifstream in(status_path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + ":", 0) == 0) {
      std::string value = line.substr(key.size() + 1);
      value.erase(0, value.find_first_not_of(" \t"));
      return value;
    }
  }
  return "";
}

// A child that starts `threads` extra threads and then sleeps until killed.
// Returns once every thread exists.
class Child {
 public:
  explicit Child(int threads) {
    int ready[2];
    if (::pipe(ready) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(ready[0]);
      std::vector<std::thread> pool;
      for (int i = 0; i < threads; ++i) pool.emplace_back([] { ::pause(); });
      const char byte = 'r';
      (void)!::write(ready[1], &byte, 1);
      ::pause();
      ::_exit(0);
    }
    ::close(ready[1]);
    char byte;
    (void)!::read(ready[0], &byte, 1);
    ::close(ready[0]);
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }
  void reap() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

std::vector<std::string> thread_masks(pid_t pid) {
  std::vector<std::string> masks;
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    masks.push_back(status_field(entry.path().string() + "/status", "Cpus_allowed_list"));
  }
  return masks;
}

CpuSet online() {
  std::ifstream in("/sys/devices/system/cpu/online");
  std::string text;
  std::getline(in, text);
  return CpuSet::parse(text);
}

#define REQUIRE_TWO_CPUS()                                                          \
  do {                                                                              \
    if (online().count() < 2 || execaff::thread_affinity(0).count() < 2)            \
      GTEST_SKIP() << "needs two CPUs this process may use; the machine has fewer"; \
  } while (0)

}  // namespace

TEST(Apply, ReadsOwnAffinity) {
  const CpuSet mine = execaff::thread_affinity(0);
  EXPECT_FALSE(mine.empty());
  EXPECT_EQ(mine.format(), status_field("/proc/self/status", "Cpus_allowed_list"));
}

TEST(Apply, PinsAChildAndReadsItBack) {
  REQUIRE_TWO_CPUS();
  Child child(0);
  const unsigned last = *online().last();
  const CpuSet one = CpuSet::of({last});
  EXPECT_EQ(execaff::apply_affinity(child.pid(), one, "final"), one);
  EXPECT_EQ(status_field("/proc/" + std::to_string(child.pid()) + "/status", "Cpus_allowed_list"),
            one.format());
  const CpuSet both = CpuSet::of({0, last});
  EXPECT_EQ(execaff::apply_affinity(child.pid(), both, "initial"), both);
}

TEST(Apply, PinsEveryThreadOfAMultiThreadedProcess) {
  REQUIRE_TWO_CPUS();
  Child child(6);
  ASSERT_EQ(thread_masks(child.pid()).size(), 7U);
  const CpuSet zero = CpuSet::of({0});
  (void)execaff::apply_affinity(child.pid(), zero, "initial");
  for (const auto& mask : thread_masks(child.pid())) EXPECT_EQ(mask, "0");
}

TEST(Apply, RefusesCpusThatAreNotOnline) {
  Child child(0);
  const unsigned absent = *online().last() + 1000;
  try {
    (void)execaff::apply_affinity(child.pid(), CpuSet::of({absent}), "final");
    FAIL() << "accepted an offline CPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), EINVAL);
    const std::string message = e.what();
    EXPECT_NE(message.find("final affinity \"" + std::to_string(absent) + "\" for pid " +
                           std::to_string(child.pid()) + " was refused"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("none of them is online"), std::string::npos) << message;
  }
  // Nothing half-applied: the child keeps what it had.
  EXPECT_EQ(status_field("/proc/" + std::to_string(child.pid()) + "/status", "Cpus_allowed_list"),
            execaff::thread_affinity(0).format());
}

TEST(Apply, NamesAProcessThatIsGone) {
  Child child(0);
  const pid_t pid = child.pid();
  child.reap();
  try {
    (void)execaff::apply_affinity(pid, CpuSet::of({0}), "initial");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ESRCH);
    EXPECT_NE(std::string(e.what()).find("the process is gone"), std::string::npos) << e.what();
  }
}

TEST(Apply, EmptySetIsAnError) {
  EXPECT_THROW((void)execaff::apply_affinity(0, CpuSet(), "final"), Error);
}

// A real cpuset cgroup holding only the last CPU: a mask wholly outside it
// is refused with the cgroup named; a mask partly outside is clipped.
class ApplyInCpuset : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a cpuset cgroup";
    REQUIRE_TWO_CPUS();
    for (const char* base : {"/sys/fs/cgroup/cpuset", "/sys/fs/cgroup"}) {
      if (fs::exists(std::string(base) + "/cpuset.cpus") ||
          fs::exists(std::string(base) + "/cpuset.cpus.effective")) {
        base_ = base;
        break;
      }
    }
    if (base_.empty()) GTEST_SKIP() << "no cpuset controller mounted (v1 or v2 root)";
    dir_ = base_ + "/execaff-test-apply-" + std::to_string(::getpid());
    if (::mkdir(dir_.c_str(), 0755) != 0) {
      GTEST_SKIP() << "cannot create " << dir_ << ": " << std::strerror(errno);
    }
    last_ = *online().last();
    write(dir_ + "/cpuset.cpus", std::to_string(last_));
    if (fs::exists(dir_ + "/cpuset.mems")) write(dir_ + "/cpuset.mems", "0");
  }
  void TearDown() override {
    child_.reset();
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  static void write(const std::string& path, const std::string& value) {
    std::ofstream out(path);
    out << value;
    out.close();
    ASSERT_TRUE(out) << "writing " << value << " to " << path;
  }
  void start_child_in_cgroup() {
    child_ = std::make_unique<Child>(0);
    write(dir_ + "/cgroup.procs", std::to_string(child_->pid()));
  }

  std::string base_, dir_;
  unsigned last_ = 0;
  std::unique_ptr<Child> child_;
};

TEST_F(ApplyInCpuset, RefusesAMaskWhollyOutsideTheCpuset) {
  start_child_in_cgroup();
  try {
    (void)execaff::apply_affinity(child_->pid(), CpuSet::of({0}), "final");
    FAIL() << "the kernel accepted CPU 0 outside cpuset " << last_;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("none of them is in the task's cpuset \"" +
                                         std::to_string(last_) + "\""),
              std::string::npos)
        << e.what();
  }
}

TEST_F(ApplyInCpuset, ClipsAMaskPartlyOutsideTheCpuset) {
  start_child_in_cgroup();
  const CpuSet given = execaff::apply_affinity(child_->pid(), CpuSet::of({0, last_}), "initial");
  EXPECT_EQ(given, CpuSet::of({last_}));
}
