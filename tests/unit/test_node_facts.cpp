// SPDX-License-Identifier: LGPL-2.1-or-later
// NodeFacts and procfs.hpp's ProcessCgroups against the node trees in
// tests/fixtures/nodes (see the README there), against small trees written
// per test for odd command lines and mount tables, and against this
// machine's own root.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cpu_set.hpp"
#include "error.hpp"
#include "node_facts.hpp"
#include "procfs.hpp"

using execaff::CgroupCpuset;
using execaff::CpuSet;
using execaff::Error;
using execaff::NodeFacts;

namespace {

namespace fs = std::filesystem;

// $EXECAFF_FIXTURES (set by meson test), else tests/fixtures found from the
// working directory upwards, so the binary also runs by hand.
std::string fixtures_dir() {
  if (const char* dir = std::getenv("EXECAFF_FIXTURES"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  for (fs::path dir = fs::current_path();; dir = dir.parent_path()) {
    if (fs::is_directory(dir / "tests/fixtures/nodes")) return (dir / "tests/fixtures").string();
    if (dir == dir.parent_path()) break;
  }
  ADD_FAILURE() << "set EXECAFF_FIXTURES or run from inside the source tree";
  return "tests/fixtures";
}

std::string node_root(const std::string& name) {
  return fixtures_dir() + "/nodes/" + name;
}

NodeFacts node(const std::string& name) {
  return NodeFacts(node_root(name));
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Runs `body`, expecting an Error with `code` whose message holds every
// string of `parts`.
template <typename Body>
void expect_error(Body body, int code, const std::vector<std::string>& parts) {
  try {
    body();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
          << "\"" << part << "\" not in: " << e.what();
    }
  }
}

// A node root in a fresh temporary directory, removed at the end.
class TempNode {
 public:
  TempNode() {
    std::string pattern = (fs::temp_directory_path() / "execaff-node-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    root_ = pattern;
  }
  TempNode(const TempNode&) = delete;
  TempNode& operator=(const TempNode&) = delete;
  ~TempNode() {
    std::error_code ignored;
    fs::remove_all(root_, ignored);
  }

  void write(const std::string& path, const std::string& text) const {
    const fs::path full = fs::path(root_) / fs::path(path).relative_path();
    fs::create_directories(full.parent_path());
    std::ofstream(full) << text;
  }
  [[nodiscard]] const std::string& root() const { return root_; }
  [[nodiscard]] NodeFacts facts() const { return NodeFacts(root_); }

 private:
  std::string root_;
};

std::size_t open_fd_count() {
  std::size_t count = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] != '.') ++count;
  }
  ::closedir(dir);
  return count;
}

constexpr const char* kDocker = "3f1c9a7e52b04d6c8e21f0a9b7d3c5e8a1f2b4c6d8e0a2c4e6f8a0b2c4d6e8f0";

// ---- hybrid-v1 --------------------------------------------------------------

TEST(HybridV1, OnlineAndPossible) {
  EXPECT_EQ(node("hybrid-v1").online_cpus().format(), "0-1");
  EXPECT_EQ(node("hybrid-v1").possible_cpus().format(), "0-1");
}

TEST(HybridV1, NothingIsolatedAndInitArgumentsIgnored) {
  // isolated is empty, nohz_full absent; the cmdline's nohz_full=1 and
  // isolcpus=1 come after "--" and are init's.
  const auto isolated = node("hybrid-v1").isolated_cpus();
  EXPECT_TRUE(isolated.cpus.empty()) << isolated.cpus.format();
  EXPECT_EQ(isolated.sources, "");
}

TEST(HybridV1, ThreadSiblingsWithoutSmt) {
  EXPECT_EQ(node("hybrid-v1").thread_siblings(0), CpuSet::of({0}));
  EXPECT_EQ(node("hybrid-v1").thread_siblings(1), CpuSet::of({1}));
  // No topology directory for a CPU the node does not have.
  EXPECT_EQ(node("hybrid-v1").thread_siblings(5), CpuSet::of({5}));
}

TEST(HybridV1, ContainerCpusetFromTheV1Hierarchy) {
  const auto cpuset = node("hybrid-v1").cgroup_cpuset_of_pid(4242);
  ASSERT_TRUE(cpuset.has_value());
  EXPECT_EQ(cpuset->cpus, CpuSet::of({1}));
  EXPECT_EQ(cpuset->file, node_root("hybrid-v1") + "/sys/fs/cgroup/cpuset/docker/" + kDocker +
                              "/cpuset.effective_cpus");
}

TEST(HybridV1, RootCgroupIsTheMountPointItself) {
  const auto cpuset = node("hybrid-v1").cgroup_cpuset_of_pid(1);
  ASSERT_TRUE(cpuset.has_value());
  EXPECT_EQ(cpuset->cpus.format(), "0-1");
  EXPECT_EQ(cpuset->file, node_root("hybrid-v1") + "/sys/fs/cgroup/cpuset/cpuset.effective_cpus");
}

TEST(HybridV1, GoneProcessIsEsrch) {
  expect_error([] { (void)node("hybrid-v1").cgroup_cpuset_of_pid(99999); }, ESRCH,
               {"container process 99999 is gone", node_root("hybrid-v1") + "/proc/99999/cgroup"});
}

TEST(HybridV1, InvalidPid) {
  expect_error([] { (void)node("hybrid-v1").cgroup_cpuset_of_pid(0); }, EINVAL, {"pid 0"});
  expect_error([] { (void)node("hybrid-v1").cgroup_cpuset_of_pid(-5); }, EINVAL, {"pid -5"});
}

// ---- v2-4cpu ----------------------------------------------------------------

TEST(V2FourCpu, IsolatedFromSysfsOnly) {
  const auto isolated = node("v2-4cpu").isolated_cpus();
  EXPECT_EQ(isolated.cpus.format(), "2-3");
  // Both sysfs files exist, so the command line is not read at all.
  EXPECT_EQ(isolated.sources, "isolated=2-3 nohz_full=2-3");
}

TEST(V2FourCpu, SmtSiblings) {
  const NodeFacts facts = node("v2-4cpu");
  EXPECT_EQ(facts.online_cpus().format(), "0-3");
  EXPECT_EQ(facts.thread_siblings(0), CpuSet::of({0, 2}));
  EXPECT_EQ(facts.thread_siblings(2), CpuSet::of({0, 2}));
  EXPECT_EQ(facts.thread_siblings(1), CpuSet::of({1, 3}));
  EXPECT_EQ(facts.thread_siblings(3), CpuSet::of({1, 3}));
}

TEST(V2FourCpu, KubepodsContainer) {
  const auto cpuset = node("v2-4cpu").cgroup_cpuset_of_pid(3000);
  ASSERT_TRUE(cpuset.has_value());
  EXPECT_EQ(cpuset->cpus.format(), "1-3");
  EXPECT_EQ(cpuset->file,
            node_root("v2-4cpu") +
                "/sys/fs/cgroup/kubepods.slice/"
                "kubepods-pod8f3e1c2a_5b7d_4e19_9a0c_2d4f6b8e1a37.slice/"
                "cri-containerd-9b2d4f6a8c0e1f3a5b7d9e1c3a5f7b9d1e3c5a7f9b1d3e5a7c9f1b3d5e7a9c1f."
                "scope/cpuset.cpus.effective");
  EXPECT_EQ(cpuset->file.find("//"), std::string::npos);
}

TEST(V2FourCpu, NoCpusetControllerInTheCgroupIsNullopt) {
  // systemd did not enable cpuset for system.slice: no cpuset files there.
  EXPECT_FALSE(node("v2-4cpu").cgroup_cpuset_of_pid(777).has_value());
}

// ---- openshift-like ---------------------------------------------------------

TEST(OpenShiftLike, NohzFullFromTheCommandLine) {
  const auto isolated = node("openshift-like").isolated_cpus();
  // isolated exists (empty), so isolcpus= is not used; nohz_full has no
  // sysfs file, so nohz_full= is.  systemd.cpu_affinity= and
  // tuned.non_isolcpus= are not isolation sources.
  EXPECT_EQ(isolated.cpus.format(), "2-5");
  EXPECT_EQ(isolated.sources, "cmdline:nohz_full=2-5");
}

TEST(OpenShiftLike, CrioContainersOnLegacyV1) {
  const NodeFacts facts = node("openshift-like");
  const auto pinned = facts.cgroup_cpuset_of_pid(5120);
  ASSERT_TRUE(pinned.has_value());
  EXPECT_EQ(pinned->cpus.format(), "2-3");
  EXPECT_NE(pinned->file.find("/sys/fs/cgroup/cpuset/kubepods.slice/"), std::string::npos);
  EXPECT_TRUE(pinned->file.ends_with(".scope/cpuset.effective_cpus")) << pinned->file;

  const auto infra = facts.cgroup_cpuset_of_pid(5100);
  ASSERT_TRUE(infra.has_value());
  EXPECT_EQ(infra->cpus.format(), "0-1,6-7");
}

TEST(OpenShiftLike, Topology) {
  const NodeFacts facts = node("openshift-like");
  EXPECT_EQ(facts.online_cpus().format(), "0-7");
  EXPECT_EQ(facts.thread_siblings(4), CpuSet::of({4, 5}));
  EXPECT_EQ(facts.thread_siblings(7), CpuSet::of({6, 7}));
}

// ---- big --------------------------------------------------------------------

TEST(Big, IdsAbove1023) {
  const NodeFacts facts = node("big");
  const CpuSet online = facts.online_cpus();
  EXPECT_EQ(online.count(), 2048U);
  EXPECT_EQ(online.last(), 2047U);
  EXPECT_EQ(facts.possible_cpus(), online);

  const auto isolated = facts.isolated_cpus();
  EXPECT_EQ(isolated.cpus.format(), "1024-2047");
  // nohz_full reads "(null)": counts as empty and is not a source.
  EXPECT_EQ(isolated.sources, "isolated=1024-2047");

  EXPECT_EQ(facts.thread_siblings(2047), CpuSet::of({2046, 2047}));
  EXPECT_EQ(facts.thread_siblings(1024), CpuSet::of({1024, 1025}));
  EXPECT_EQ(facts.thread_siblings(1500), CpuSet::of({1500}));
}

TEST(Big, CgroupCpusetAbove1023) {
  const auto cpuset = node("big").cgroup_cpuset_of_pid(4000);
  ASSERT_TRUE(cpuset.has_value());
  EXPECT_EQ(cpuset->cpus.format(), "1030-1033,2040-2047");
  EXPECT_TRUE(cpuset->cpus.contains(2047));
}

// ---- broken -----------------------------------------------------------------

TEST(Broken, GarbageOnline) {
  expect_error(
      [] { (void)node("broken").online_cpus(); }, EINVAL,
      {node_root("broken") + "/sys/devices/system/cpu/online: invalid CPU list \"abc\": "});
}

TEST(Broken, MissingPossible) {
  expect_error([] { (void)node("broken").possible_cpus(); }, ENOENT,
               {node_root("broken") + "/sys/devices/system/cpu/possible: "});
}

TEST(Broken, MissingIsolationFilesMeanNothingIsolated) {
  const auto isolated = node("broken").isolated_cpus();
  EXPECT_TRUE(isolated.cpus.empty());
  EXPECT_EQ(isolated.sources, "");
}

TEST(Broken, GarbageThreadSiblings) {
  expect_error([] { (void)node("broken").thread_siblings(0); }, EINVAL,
               {node_root("broken") +
                "/sys/devices/system/cpu/cpu0/topology/thread_siblings_list: invalid CPU list "
                "\"0,x\""});
  EXPECT_EQ(node("broken").thread_siblings(1), CpuSet::of({1}));
}

TEST(Broken, MissingMountinfo) {
  expect_error([] { (void)node("broken").cgroup_cpuset_of_pid(1234); }, ENOENT,
               {node_root("broken") + "/proc/self/mountinfo"});
}

TEST(Broken, GarbageCgroupFile) {
  expect_error([] { (void)node("broken").cgroup_cpuset_of_pid(1235); }, EINVAL,
               {node_root("broken") + "/proc/1235/cgroup: line 1 \"garbage\""});
}

// ---- the kernel command line, table-driven -----------------------------------

struct CmdlineCase {
  const char* cmdline;
  const char* isolated;  // expected format(), or nullptr for an error
  const char* sources;
};

TEST(Cmdline, OddCommandLines) {
  const CmdlineCase cases[] = {
      {"ro quiet", "", ""},
      {"isolcpus=2-3", "2-3", "cmdline:isolcpus=2-3"},
      {"isolcpus=domain,managed_irq,2-3", "2-3", "cmdline:isolcpus=2-3"},
      {"isolcpus=nohz,domain,managed_irq,1,3-5", "1,3-5", "cmdline:isolcpus=1,3-5"},
      // Unknown flags are skipped with a notice, as the kernel does.
      {"isolcpus=future_flag,2-3", "2-3", "cmdline:isolcpus=2-3"},
      // A flag with other characters makes the kernel refuse the value; a
      // list starting with a letter is read as such a flag.
      {"isolcpus=bad-flag,2 isolcpus=3", "3", "cmdline:isolcpus=3"},
      {"isolcpus=domain,x-y", "", ""},
      {"isolcpus=domain", "", ""},
      // The first occurrence wins (housekeeping_setup); an empty one does not count.
      {"isolcpus=2-3 isolcpus=4-5", "2-3", "cmdline:isolcpus=2-3"},
      {"isolcpus= isolcpus=4-5", "4-5", "cmdline:isolcpus=4-5"},
      {"nohz_full=6 nohz_full=7", "6", "cmdline:nohz_full=6"},
      {"isolcpus=2-3 nohz_full=4-5", "2-5", "cmdline:isolcpus=2-3 cmdline:nohz_full=4-5"},
      // '-' and '_' are the same in parameter names.
      {"nohz-full=2-3", "2-3", "cmdline:nohz_full=2-3"},
      // Everything after a bare "--" is init's.
      {"ro -- isolcpus=2-3 nohz_full=2-3", "", ""},
      {"foo=-- isolcpus=2", "2", "cmdline:isolcpus=2"},
      {"quiet nohz_full=\"1-2\"", "1-2", "cmdline:nohz_full=1-2"},
      {"\"isolcpus=3\"", "3", "cmdline:isolcpus=3"},
      {"a=\"x y\" isolcpus=5", "5", "cmdline:isolcpus=5"},
      {"root=/dev/sda\tisolcpus=1\n", "1", "cmdline:isolcpus=1"},
      {"  isolcpus=1  ", "1", "cmdline:isolcpus=1"},
      // Not isolation sources, and names that only look alike.
      {"systemd.cpu_affinity=0,1 tuned.non_isolcpus=000000c3", "", ""},
      {"isolcpusx=2 xisolcpus=3 isolcpus nohz_full", "", ""},
      {"rcu_nocbs=1-3 irqaffinity=0", "", ""},
      {"isolcpus=4096-4097", "4096-4097", "cmdline:isolcpus=4096-4097"},
      // Lists we cannot read are errors, not guesses.
      {"isolcpus=domain,2-x", nullptr, nullptr},
      {"nohz_full=2-N", nullptr, nullptr},
      {"nohz_full=5-2", nullptr, nullptr},
  };
  for (const CmdlineCase& c : cases) {
    SCOPED_TRACE(std::string("cmdline ") + execaff::quoted(c.cmdline));
    TempNode tree;
    tree.write("/proc/cmdline", c.cmdline);
    if (c.isolated == nullptr) {
      expect_error([&tree] { (void)tree.facts().isolated_cpus(); }, EINVAL,
                   {tree.root() + "/proc/cmdline: parameter ", "invalid CPU list"});
      continue;
    }
    const auto isolated = tree.facts().isolated_cpus();
    EXPECT_EQ(isolated.cpus.format(), c.isolated);
    EXPECT_EQ(isolated.sources, c.sources);
  }
}

TEST(Cmdline, OnlyForTheSysfsFileThatIsAbsent) {
  TempNode tree;
  tree.write("/proc/cmdline", "isolcpus=2 nohz_full=3\n");
  tree.write("/sys/devices/system/cpu/isolated", "\n");
  tree.write("/sys/devices/system/cpu/nohz_full", "(null)\n");
  EXPECT_TRUE(tree.facts().isolated_cpus().cpus.empty());

  TempNode only_isolated;
  only_isolated.write("/proc/cmdline", "isolcpus=2 nohz_full=3\n");
  only_isolated.write("/sys/devices/system/cpu/isolated", "1\n");
  const auto isolated = only_isolated.facts().isolated_cpus();
  EXPECT_EQ(isolated.cpus.format(), "1,3");
  EXPECT_EQ(isolated.sources, "isolated=1 cmdline:nohz_full=3");
}

TEST(Sysfs, GarbageInIsolationFiles) {
  TempNode tree;
  tree.write("/sys/devices/system/cpu/isolated", "2-\n");
  tree.write("/sys/devices/system/cpu/nohz_full", "\n");
  expect_error([&tree] { (void)tree.facts().isolated_cpus(); }, EINVAL,
               {tree.root() + "/sys/devices/system/cpu/isolated: invalid CPU list \"2-\""});

  TempNode nohz;
  nohz.write("/sys/devices/system/cpu/isolated", "\n");
  nohz.write("/sys/devices/system/cpu/nohz_full", "(nil)\n");
  expect_error([&nohz] { (void)nohz.facts().isolated_cpus(); }, EINVAL,
               {nohz.root() + "/sys/devices/system/cpu/nohz_full: invalid CPU list \"(nil)\""});
}

TEST(Sysfs, EmptyOnlineIsAnError) {
  TempNode tree;
  tree.write("/sys/devices/system/cpu/online", "\n");
  expect_error([&tree] { (void)tree.facts().online_cpus(); }, EINVAL,
               {tree.root() + "/sys/devices/system/cpu/online: names no CPU"});
}

TEST(Sysfs, ReadAgainOnEveryCall) {
  TempNode tree;
  tree.write("/sys/devices/system/cpu/online", "0-3\n");
  const NodeFacts facts = tree.facts();
  EXPECT_EQ(facts.online_cpus().format(), "0-3");
  tree.write("/sys/devices/system/cpu/online", "0-1\n");  // a CPU went offline
  EXPECT_EQ(facts.online_cpus().format(), "0-1");
}

TEST(Sysfs, RootWithTrailingSlashGivesTheSamePaths) {
  const auto plain = node("v2-4cpu").cgroup_cpuset_of_pid(3000);
  const auto slashed = NodeFacts(node_root("v2-4cpu") + "/").cgroup_cpuset_of_pid(3000);
  ASSERT_TRUE(plain && slashed);
  EXPECT_EQ(plain->file, slashed->file);
  expect_error([] { (void)NodeFacts(node_root("broken") + "//").online_cpus(); }, EINVAL,
               {node_root("broken") + "/sys/devices/system/cpu/online: "});
}

// ---- mount tables, table-driven ---------------------------------------------

struct MountCase {
  const char* name;
  std::string mountinfo;
  const char* pid_cgroup;
  std::vector<std::pair<const char*, const char*>> files;  // path, content
  const char* cpus;  // expected format(), "" for nullopt, nullptr for an error
  const char* file;  // expected path under the root, or the error's text
  int code = 0;
};

TEST(Mounts, OddMountTables) {
  const char* v1_host =
      "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n";
  const char* v2_host =
      "30 21 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n";
  const std::vector<MountCase> cases = {
      {"container view: the mount's root is the container's cgroup",
       "1200 1190 0:31 /docker/abc /sys/fs/cgroup/cpuset ro,nosuid - cgroup cgroup rw,cpuset\n",
       "3:cpuset:/docker/abc\n",
       {{"/sys/fs/cgroup/cpuset/cpuset.effective_cpus", "2\n"}},
       "2",
       "/sys/fs/cgroup/cpuset/cpuset.effective_cpus"},
      {"below the mount's root",
       "1200 1190 0:31 /docker/abc /sys/fs/cgroup/cpuset ro - cgroup cgroup rw,cpuset\n",
       "3:cpuset:/docker/abc/child\n",
       {{"/sys/fs/cgroup/cpuset/child/cpuset.effective_cpus", "3\n"}},
       "3",
       "/sys/fs/cgroup/cpuset/child/cpuset.effective_cpus"},
      {"outside the mount's root",
       "1200 1190 0:31 /docker/abc /sys/fs/cgroup/cpuset ro - cgroup cgroup rw,cpuset\n",
       "3:cpuset:/docker/other\n",
       {},
       "",
       ""},
      {"a root that is only a string prefix is not an ancestor",
       "1200 1190 0:31 /kube /sys/fs/cgroup/cpuset ro - cgroup cgroup rw,cpuset\n",
       "3:cpuset:/kubepods/x\n",
       {},
       "",
       ""},
      {"octal escapes in mountinfo paths",
       "50 31 0:31 /a\\040b /run/my\\040cgroups\\011v1 rw - cgroup cgroup rw,cpuset\n",
       "3:cpuset:/a b/c\n",
       {{"/run/my cgroups\tv1/c/cpuset.effective_cpus", "0-1\n"}},
       "0-1",
       "/run/my cgroups\tv1/c/cpuset.effective_cpus"},
      {"optional fields before the separator",
       "34 31 0:31 / /sys/fs/cgroup/cpuset rw shared:11 master:3 - cgroup cgroup rw,cpuset\n",
       "3:cpuset:/x\n",
       {{"/sys/fs/cgroup/cpuset/x/cpuset.effective_cpus", "1\n"}},
       "1",
       "/sys/fs/cgroup/cpuset/x/cpuset.effective_cpus"},
      {"co-mounted controllers",
       "34 31 0:31 / /sys/fs/cgroup/cpu,cpuset rw - cgroup cgroup rw,cpu,cpuset\n",
       "2:cpu,cpuset:/x\n",
       {{"/sys/fs/cgroup/cpu,cpuset/x/cpuset.effective_cpus", "1\n"}},
       "1",
       "/sys/fs/cgroup/cpu,cpuset/x/cpuset.effective_cpus"},
      {"a controller whose name only contains cpuset",
       "34 31 0:31 / /sys/fs/cgroup/x rw - cgroup cgroup rw,cpuset_extra\n",
       "3:cpuset:/x\n",
       {},
       "",
       ""},
      {"v1 before Linux 3.17: only cpuset.cpus",
       v1_host,
       "3:cpuset:/old\n",
       {{"/sys/fs/cgroup/cpuset/old/cpuset.cpus", "0,2\n"}},
       "0,2",
       "/sys/fs/cgroup/cpuset/old/cpuset.cpus"},
      {"Android's noprefix mount",
       "20 1 0:14 / /dev/cpuset rw,nosuid,nodev,noexec,relatime - cgroup none "
       "rw,cpuset,noprefix,release_agent=/sbin/cpuset_release_agent\n",
       "3:cpuset:/top-app\n",
       {{"/dev/cpuset/top-app/effective_cpus", "0-7\n"}},
       "0-7",
       "/dev/cpuset/top-app/effective_cpus"},
      {"a cgroup path holding ':'",
       v2_host,
       "0::/a:b\n",
       {{"/sys/fs/cgroup/a:b/cgroup.controllers", "cpuset cpu\n"},
        {"/sys/fs/cgroup/a:b/cpuset.cpus.effective", "3\n"}},
       "3",
       "/sys/fs/cgroup/a:b/cpuset.cpus.effective"},
      {"cgroup2 seen from a container: root not /",
       "900 880 0:26 /kubepods.slice/pod/ctr /sys/fs/cgroup ro - cgroup2 cgroup2 rw\n",
       "0::/kubepods.slice/pod/ctr\n",
       {{"/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n"},
        {"/sys/fs/cgroup/cpuset.cpus.effective", "4-5\n"}},
       "4-5",
       "/sys/fs/cgroup/cpuset.cpus.effective"},
      {"a path outside our cgroup namespace", v2_host, "0::/../../elsewhere\n", {}, "", ""},
      {"a cgroup mount covered by a later mount on the same point",
       "34 31 0:31 / /sys/fs/cgroup/cpuset rw - cgroup cgroup rw,cpuset\n"
       "77 34 0:55 / /sys/fs/cgroup/cpuset rw - tmpfs tmpfs rw\n",
       "3:cpuset:/x\n",
       {{"/sys/fs/cgroup/cpuset/x/cpuset.effective_cpus", "1\n"}},
       "",
       ""},
      {"the covered mount is skipped for a visible one",
       "34 31 0:31 / /old rw - cgroup cgroup rw,cpuset\n"
       "35 31 0:31 / /new rw - cgroup cgroup rw,cpuset\n"
       "77 1 0:55 / /old rw - tmpfs tmpfs rw\n",
       "3:cpuset:/x\n",
       {{"/new/x/cpuset.effective_cpus", "6\n"}},
       "6",
       "/new/x/cpuset.effective_cpus"},
      {"no cgroup mounts at all",
       "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n",
       "3:cpuset:/x\n0::/x\n",
       {},
       "",
       ""},
      {"cpuset on v1 but the pid has no cpuset line; v2 lacks the controller",
       std::string(v1_host) + "41 31 0:38 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n",
       "1:cpu:/x\n0::/x\n",
       {{"/sys/fs/cgroup/unified/x/cgroup.controllers", "\n"}},
       "",
       ""},
      {"v1 cgroup directory gone",
       v1_host,
       "3:cpuset:/gone\n",
       {},
       nullptr,
       "/sys/fs/cgroup/cpuset/gone/cpuset.effective_cpus",
       ENOENT},
      {"v2 cgroup directory gone",
       v2_host,
       "0::/gone\n",
       {},
       nullptr,
       "/sys/fs/cgroup/gone/cgroup.controllers",
       ENOENT},
      {"v2 controller listed but no file",
       v2_host,
       "0::/x\n",
       {{"/sys/fs/cgroup/x/cgroup.controllers", "cpuset\n"}},
       nullptr,
       "/sys/fs/cgroup/x/cpuset.cpus.effective",
       ENOENT},
      {"garbage in the cpuset file",
       v2_host,
       "0::/x\n",
       {{"/sys/fs/cgroup/x/cgroup.controllers", "cpuset\n"},
        {"/sys/fs/cgroup/x/cpuset.cpus.effective", "1-x\n"}},
       nullptr,
       "/sys/fs/cgroup/x/cpuset.cpus.effective: invalid CPU list \"1-x\"",
       EINVAL},
      {"an empty cpuset",
       v1_host,
       "3:cpuset:/x\n",
       {{"/sys/fs/cgroup/cpuset/x/cpuset.effective_cpus", "\n"}},
       nullptr,
       "/sys/fs/cgroup/cpuset/x/cpuset.effective_cpus: the cgroup's cpuset is empty",
       EINVAL},
      {"a mountinfo line without the separator",
       "34 31 0:31 / /sys/fs/cgroup/cpuset rw cgroup cgroup rw,cpuset\n",
       "3:cpuset:/x\n",
       {},
       nullptr,
       "/proc/self/mountinfo: line 1 ",
       EINVAL},
  };
  for (const MountCase& c : cases) {
    SCOPED_TRACE(c.name);
    TempNode tree;
    tree.write("/proc/self/mountinfo", c.mountinfo);
    tree.write("/proc/42/cgroup", c.pid_cgroup);
    for (const auto& [path, text] : c.files) tree.write(path, text);
    if (c.cpus == nullptr) {
      expect_error([&tree] { (void)tree.facts().cgroup_cpuset_of_pid(42); }, c.code,
                   {tree.root() + c.file});
      continue;
    }
    const std::optional<CgroupCpuset> cpuset = tree.facts().cgroup_cpuset_of_pid(42);
    if (*c.cpus == '\0') {
      EXPECT_FALSE(cpuset.has_value()) << cpuset->file;
      continue;
    }
    ASSERT_TRUE(cpuset.has_value());
    EXPECT_EQ(cpuset->cpus.format(), c.cpus);
    EXPECT_EQ(cpuset->file, tree.root() + c.file);
  }
}

// ---- resources --------------------------------------------------------------

// ---- procfs: any controller's cgroup, v1 and v2 ------------------------------

TEST(ProcessCgroups, V1ControllerInAHierarchyOfItsOwn) {
  const execaff::ProcessCgroups cgroups(node_root("hybrid-v1"), 4242);
  const auto cpu = cgroups.controller_cgroup("cpu");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_FALSE(cpu->v2);
  EXPECT_EQ(cpu->file("shares"), std::string("/sys/fs/cgroup/cpu/docker/") + kDocker + "/cpu.shares");
  const auto cpuacct = cgroups.controller_cgroup("cpuacct");
  ASSERT_TRUE(cpuacct.has_value());
  EXPECT_EQ(cpuacct->dir, std::string("/sys/fs/cgroup/cpuacct/docker/") + kDocker);
  // rdma is on no v1 hierarchy here, and the controller-less cgroup2 at
  // /sys/fs/cgroup/unified does not list it.
  EXPECT_FALSE(cgroups.controller_cgroup("rdma").has_value());
}

TEST(ProcessCgroups, V1CoMountedControllers) {
  // OpenShift's "cpu,cpuacct": the line lists both, so does the mount.
  const execaff::ProcessCgroups cgroups(node_root("openshift-like"), 5120);
  const auto cpu = cgroups.controller_cgroup("cpu");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ(cpu->dir.rfind("/sys/fs/cgroup/cpu,cpuacct/kubepods.slice/", 0), 0u) << cpu->dir;
  EXPECT_TRUE(cpu->file("shares").ends_with(".scope/cpu.shares")) << cpu->file("shares");
}

TEST(ProcessCgroups, V2ControllerListedInCgroupControllers) {
  const execaff::ProcessCgroups cgroups(node_root("v2-4cpu"), 3000);
  const auto cpu = cgroups.controller_cgroup("cpu");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_TRUE(cpu->v2);
  EXPECT_TRUE(cpu->file("weight").ends_with(".scope/cpu.weight")) << cpu->file("weight");
  EXPECT_FALSE(cgroups.controller_cgroup("blkio").has_value());  // not a v2 controller
  // system.slice does not enable cpuset for containerd (pid 777).
  EXPECT_FALSE(execaff::ProcessCgroups(node_root("v2-4cpu"), 777).controller_cgroup("cpuset"));
}

TEST(ProcessCgroups, NoprefixAndAMissingV2Cgroup) {
  TempNode node;
  node.write("/proc/self/mountinfo",
             "34 31 0:31 / /dev/cpuctl rw - cgroup cgroup rw,cpu,noprefix\n"
             "30 21 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  node.write("/proc/7/cgroup", "2:cpu:/apps\n0::/gone\n");
  const execaff::ProcessCgroups cgroups(node.root(), 7);
  const auto cpu = cgroups.controller_cgroup("cpu");
  ASSERT_TRUE(cpu.has_value());
  EXPECT_EQ(cpu->file("shares"), "/dev/cpuctl/apps/shares");  // Android's noprefix
  expect_error([&] { (void)cgroups.controller_cgroup("memory"); }, ENOENT,
               {node.root() + "/sys/fs/cgroup/gone/cgroup.controllers", "pid 7 is gone"});
  expect_error([&] { (void)execaff::ProcessCgroups(node.root(), 8); }, ESRCH,
               {"container process 8 is gone"});
}

TEST(Resources, NoDescriptorLeaks) {
  const std::size_t before = open_fd_count();
  for (int round = 0; round < 50; ++round) {
    for (const char* name : {"hybrid-v1", "v2-4cpu", "openshift-like", "big", "broken"}) {
      const NodeFacts facts = node(name);
      try {
        (void)facts.online_cpus();
      } catch (const Error&) {
      }
      (void)facts.isolated_cpus();
      try {
        (void)facts.thread_siblings(0);
      } catch (const Error&) {
      }
      for (const pid_t pid : {1, 777, 1234, 1235, 3000, 4000, 4242, 5120, 99999}) {
        try {
          (void)facts.cgroup_cpuset_of_pid(pid);
        } catch (const Error&) {
        }
      }
    }
  }
  EXPECT_EQ(open_fd_count(), before);
}

// ---- this machine -----------------------------------------------------------

// Whether the real mount table has a cgroup v1 hierarchy with cpuset.
bool real_cpuset_v1_mounted() {
  std::istringstream lines(slurp("/proc/self/mountinfo"));
  for (std::string line; std::getline(lines, line);) {
    const auto separator = line.find(" - cgroup ");
    if (separator == std::string::npos) continue;
    const std::string options = "," + line.substr(line.rfind(' ') + 1) + ",";
    if (options.find(",cpuset,") != std::string::npos) return true;
  }
  return false;
}

TEST(RealRoot, OwnCgroupCpuset) {
  const NodeFacts facts;
  EXPECT_EQ(facts.root(), "/");
  const auto cpuset = facts.cgroup_cpuset_of_pid(::getpid());
  if (!cpuset) {
    ASSERT_FALSE(real_cpuset_v1_mounted()) << "the cpuset v1 hierarchy is mounted";
    GTEST_SKIP() << "no cpuset controller reachable on this machine";
  }
  EXPECT_FALSE(cpuset->cpus.empty());
  EXPECT_TRUE(cpuset->cpus.is_subset_of(facts.possible_cpus())) << cpuset->cpus.format();
  EXPECT_EQ(::access(cpuset->file.c_str(), R_OK), 0) << cpuset->file;
  EXPECT_EQ(cpuset->file.find("//"), std::string::npos) << cpuset->file;
  const std::string text = slurp(cpuset->file);
  EXPECT_EQ(CpuSet::parse(text.substr(0, text.find('\n'))), cpuset->cpus);
}

// The shortcut through /sys/fs/cgroup{,/cpuset} must find what mountinfo
// finds: for this process, and as root for a child in a cpuset cgroup of
// its own (a container's place in the hierarchy).
TEST(RealRoot, UsualMountsAgreeWithMountinfo) {
  const NodeFacts facts;
  const auto usual = facts.cgroup_cpuset_of_pid(::getpid());
  const auto by_mountinfo = facts.cgroup_cpuset_of_pid_by_mountinfo(::getpid());
  ASSERT_EQ(usual.has_value(), by_mountinfo.has_value());
  if (usual) {
    EXPECT_EQ(usual->cpus, by_mountinfo->cpus);
    EXPECT_EQ(usual->file, by_mountinfo->file);
  }

  const std::string parent = "/sys/fs/cgroup/cpuset";
  if (::geteuid() != 0 || ::access((parent + "/cpuset.cpus").c_str(), W_OK) != 0) {
    GTEST_SKIP() << "a cgroup of its own needs root and the cpuset v1 hierarchy at " << parent;
  }
  const std::string dir = parent + "/execaff-test-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir << ": " << std::strerror(errno);
  const unsigned cpu = *facts.online_cpus().first();
  const auto write_file = [](const std::string& path, const std::string& text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    const bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) ==
                                   static_cast<ssize_t>(text.size());
    if (fd >= 0) ::close(fd);
    return ok;
  };
  const pid_t child = ::fork();
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const bool moved = write_file(dir + "/cpuset.cpus", std::to_string(cpu)) &&
                     write_file(dir + "/cpuset.mems", slurp(parent + "/cpuset.mems")) &&
                     write_file(dir + "/cgroup.procs", std::to_string(child));
  std::optional<CgroupCpuset> child_usual, child_by_mountinfo;
  if (moved) {
    child_usual = facts.cgroup_cpuset_of_pid(child);
    child_by_mountinfo = facts.cgroup_cpuset_of_pid_by_mountinfo(child);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::rmdir(dir.c_str());
  ASSERT_TRUE(moved) << "could not move pid " << child << " into " << dir;
  ASSERT_TRUE(child_usual && child_by_mountinfo);
  EXPECT_EQ(child_usual->cpus, CpuSet::of({cpu}));
  EXPECT_EQ(child_usual->cpus, child_by_mountinfo->cpus);
  EXPECT_EQ(child_usual->file, dir + "/cpuset.effective_cpus");
  EXPECT_EQ(child_usual->file, child_by_mountinfo->file);
}

TEST(RealRoot, IsolatedCpus) {
  const NodeFacts facts;
  const auto isolated = facts.isolated_cpus();
  EXPECT_TRUE(isolated.cpus.is_subset_of(facts.possible_cpus())) << isolated.cpus.format();
  EXPECT_EQ(isolated.cpus.empty(), isolated.sources.empty()) << isolated.sources;
  // A machine booted without isolation has nothing isolated.
  const std::string cmdline = slurp("/proc/cmdline");
  const std::string sysfs = slurp("/sys/devices/system/cpu/isolated");
  if (cmdline.find("isolcpus=") == std::string::npos &&
      cmdline.find("nohz_full=") == std::string::npos && (sysfs.empty() || sysfs == "\n")) {
    EXPECT_TRUE(isolated.cpus.empty()) << isolated.sources;
  }
}

TEST(RealRoot, OnlineWithinPossible) {
  const NodeFacts facts;
  const CpuSet online = facts.online_cpus();
  EXPECT_FALSE(online.empty());
  EXPECT_TRUE(online.is_subset_of(facts.possible_cpus()));
  EXPECT_TRUE(facts.thread_siblings(*online.first()).contains(*online.first()));
}

}  // namespace
