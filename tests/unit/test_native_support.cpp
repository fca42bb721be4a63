// SPDX-License-Identifier: LGPL-2.1-or-later
// The shim's native-runtime detection (shim/native_support.*, native_cache.*)
// and the CLI form's conversion (shim/cli_process.*): the `--version` lines
// as runtimes print them, the cache's keying and refusals, the probe's
// timeout, and the option spellings the conversion takes or leaves.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_process.hpp"
#include "command_line.hpp"
#include "native_cache.hpp"
#include "native_support.hpp"

using execaff::shim::BinaryIdentity;
using execaff::shim::CliDialect;
using execaff::shim::CliRuntime;
using execaff::shim::CrunEnv;
using execaff::shim::detect_native_support;
using execaff::shim::DetectOptions;
using execaff::shim::native_support_from_version_line;
using execaff::shim::NativeCache;
using execaff::shim::NativeFlavour;
using execaff::shim::NativeSupport;
using execaff::shim::runtime_version_line;

namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// ------------------------------------------------------ the version lines

struct VersionCase {
  const char* line;
  NativeFlavour flavour;
  const char* version;  // when native
};

TEST(NativeVersionLine, AsRuntimesPrintThem) {
  const VersionCase cases[] = {
      {"runc version 1.3.6", NativeFlavour::runc, "1.3.6"},
      {"runc version 1.3.6+ds1", NativeFlavour::runc, "1.3.6+ds1"},  // Debian's build
      {"runc version 1.3.0", NativeFlavour::runc, "1.3.0"},
      {"runc version 1.4.0-rc.2", NativeFlavour::runc, "1.4.0-rc.2"},
      {"runc version 1.10.1\n", NativeFlavour::runc, "1.10.1"},
      {"runc version 2.0.0", NativeFlavour::runc, "2.0.0"},
      {"crun version 1.21", NativeFlavour::crun, "1.21"},
      {"crun version 1.19", NativeFlavour::crun, "1.19"},
      {"crun version 1.28\r\n", NativeFlavour::crun, "1.28"},
      {"crun version 1.19.2-8a1e", NativeFlavour::crun, "1.19.2-8a1e"},  // a git build
      {"crun version 1.100", NativeFlavour::crun, "1.100"},
      // Not native: too old, pre-releases of the first native runc, other
      // runtimes, lines that do not parse.
      {"runc version 1.1.5+ds1", NativeFlavour::none, nullptr},  // Debian 12
      {"runc version 1.2.9", NativeFlavour::none, nullptr},
      {"runc version 1.3.0-rc.1", NativeFlavour::none, nullptr},
      {"crun version 1.8.1", NativeFlavour::none, nullptr},  // Debian 12
      {"crun version 1.18.2", NativeFlavour::none, nullptr},
      {"crun version 1.9", NativeFlavour::none, nullptr},  // 9 < 19, not "1.9" > "1.19"
      {"youki version 0.5.4", NativeFlavour::none, nullptr},
      {"runc version", NativeFlavour::none, nullptr},
      {"runc version v1.3.6", NativeFlavour::none, nullptr},
      {"runc version 1.3.6abc", NativeFlavour::none, nullptr},
      {"runc version 1.3.6.", NativeFlavour::none, nullptr},
      {"runc version 999999.0.0", NativeFlavour::none, nullptr},
      {"RUNC version 1.3.6", NativeFlavour::none, nullptr},
      {" runc version 1.3.6", NativeFlavour::none, nullptr},
      {"", NativeFlavour::none, nullptr},
  };
  for (const VersionCase& c : cases) {
    const NativeSupport got = native_support_from_version_line(c.line);
    EXPECT_EQ(got.flavour, c.flavour) << c.line << " -> " << got.evidence;
    if (c.version != nullptr) {
      EXPECT_EQ(got.version, c.version) << c.line;
    }
    EXPECT_FALSE(got.evidence.empty()) << c.line;
  }
}

TEST(NativeVersionLine, NumericVersion) {
  EXPECT_EQ(execaff::shim::numeric_version("1.3.6+ds1"), (std::array<unsigned, 3>{1, 3, 6}));
  EXPECT_EQ(execaff::shim::numeric_version("1.21"), (std::array<unsigned, 3>{1, 21, 0}));
  EXPECT_FALSE(execaff::shim::numeric_version("x1"));
}

// -------------------------------------------------------------- fixtures

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "execaff-native-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string write_script(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

BinaryIdentity identity_of(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return BinaryIdentity::of(st);
}

// "" when it cannot be read.
std::string read_file(const std::string& path) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buffer, sizeof buffer)) > 0)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}

std::vector<std::string> entries_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  return names;
}

// The cache's owner is root; run unprivileged, the tests use their own uid.
uid_t owner() {
  return ::geteuid();
}

// ----------------------------------------------------------------- probe

TEST(NativeProbe, FirstLineOfVersion) {
  const TempDir dir;
  const std::string rt =
      write_script(dir.path() + "/runc", "echo 'runc version 1.3.6'; echo 'commit: abc'; exit 0");
  EXPECT_EQ(runtime_version_line(rt, milliseconds(5000)), "runc version 1.3.6");
}

TEST(NativeProbe, NonZeroExitIsNoAnswer) {
  const TempDir dir;
  const std::string rt = write_script(dir.path() + "/runc", "echo 'runc version 1.3.6'; exit 3");
  std::string why;
  EXPECT_FALSE(runtime_version_line(rt, milliseconds(5000), &why));
  EXPECT_NE(why.find("exited 3"), std::string::npos) << why;
}

// A caller that ignores SIGCHLD (the disposition survives execve) must not
// cost the probe its exit status — nor find its disposition changed.
TEST(NativeProbe, CallerIgnoringSigchld) {
  const TempDir dir;
  const std::string rt = write_script(dir.path() + "/crun", "echo 'crun version 1.21'");
  struct sigaction ignore {};
  struct sigaction old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGCHLD, &ignore, &old), 0);
  std::string why;
  const auto line = runtime_version_line(rt, milliseconds(5000), &why);
  struct sigaction now {};
  ::sigaction(SIGCHLD, &old, &now);
  EXPECT_EQ(line, "crun version 1.21") << why;
  EXPECT_EQ(now.sa_handler, SIG_IGN);
}

TEST(NativeProbe, MissingBinaryIsNoAnswer) {
  std::string why;
  EXPECT_FALSE(runtime_version_line("/nonexistent/runc", milliseconds(5000), &why));
  EXPECT_NE(why.find("cannot run"), std::string::npos) << why;
}

// A `--version` that hangs is killed at the deadline, with what it forked
// (its own process group), and means "not native".  The stand-in forks a
// sleeper that keeps the pipe open: without the group kill the probe would
// return but leave it behind.
TEST(NativeProbe, HangIsKilledAtTheDeadline) {
  const TempDir dir;
  const std::string marker = dir.path() + "/sleeper.pid";
  const std::string rt = write_script(
      dir.path() + "/runc", "sleep 30 & echo $! > " + marker + "; echo 'runc version 1.3.6'; wait");
  std::string why;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(runtime_version_line(rt, milliseconds(300), &why));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_NE(why.find("did not finish within 300 ms"), std::string::npos) << why;
  // Bounded by the deadline (generous upper limit: a loaded machine).
  EXPECT_LT(took, std::chrono::seconds(20));
  const pid_t sleeper = std::stoi(read_file(marker));
  // Killed with the group: gone, or at most a zombie of its reaper.
  for (int i = 0; i < 200 && ::kill(sleeper, 0) == 0; ++i) {
    const std::string state = read_file("/proc/" + std::to_string(sleeper) + "/stat");
    if (state.find(") Z") != std::string::npos) break;
    ::usleep(10000);
  }
  const std::string state = read_file("/proc/" + std::to_string(sleeper) + "/stat");
  EXPECT_TRUE(state.empty() || state.find(") Z") != std::string::npos) << state;
}

TEST(NativeDetect, HangMeansNotNativeAndIsRetriedLater) {
  const TempDir dir;
  const std::string rt = write_script(dir.path() + "/runc", "exec sleep 30");
  DetectOptions options{dir.path() + "/cache/native", milliseconds(200), owner()};
  const NativeSupport got = detect_native_support(rt, options);
  EXPECT_FALSE(got.native());
  EXPECT_TRUE(got.probe_failed);
  // Cached as a failure for a while: the next exec does not wait again.
  NativeCache cache(options.cache_path, owner());
  const auto cached = cache.lookup(identity_of(rt));
  ASSERT_TRUE(cached);
  EXPECT_TRUE(cached->probe_failed);
  EXPECT_FALSE(cached->native());
  // After kFailedProbeRetrySeconds it is probed again.
  cache.set_now_for_test(::time(nullptr) + execaff::shim::kFailedProbeRetrySeconds + 1);
  EXPECT_FALSE(cache.lookup(identity_of(rt)));
}

// ----------------------------------------------------------------- cache

TEST(NativeCache, ProbesOnceThenAnswersFromTheCache) {
  const TempDir dir;
  const std::string count = dir.path() + "/probes";
  const std::string rt =
      write_script(dir.path() + "/runc", "echo x >> " + count + "; echo 'runc version 1.3.6'");
  const DetectOptions options{dir.path() + "/execaff/native", milliseconds(5000), owner()};
  const NativeSupport first = detect_native_support(rt, options);
  EXPECT_EQ(first.flavour, NativeFlavour::runc);
  EXPECT_EQ(first.version, "1.3.6");
  const NativeSupport second = detect_native_support(rt, options);
  EXPECT_EQ(second.flavour, NativeFlavour::runc);
  EXPECT_EQ(second.version, "1.3.6");
  EXPECT_NE(second.evidence.find("cached"), std::string::npos) << second.evidence;
  EXPECT_EQ(read_file(count), "x\n");  // one probe for two detections
  // The directory is made 0700, the file written without a temp file left.
  struct stat st {};
  ASSERT_EQ(::stat((dir.path() + "/execaff").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(entries_in(dir.path() + "/execaff"), std::vector<std::string>{"native"});
}

// The key is the binary's dev, ino, size, mtime and ctime: a binary
// replaced by rename (new inode), rewritten in place (mtime, size) or only
// touched (ctime) is probed again.
TEST(NativeCache, ReplacedBinaryIsProbedAgain) {
  const TempDir dir;
  const DetectOptions options{dir.path() + "/execaff/native", milliseconds(5000), owner()};
  const std::string rt = dir.path() + "/crun";
  write_script(rt, "echo 'crun version 1.8.1'");
  EXPECT_FALSE(detect_native_support(rt, options).native());

  // Replaced by rename, as a package upgrade does.
  write_script(rt + ".new", "echo 'crun version 1.21'");
  ASSERT_EQ(::rename((rt + ".new").c_str(), rt.c_str()), 0);
  NativeSupport got = detect_native_support(rt, options);
  EXPECT_EQ(got.flavour, NativeFlavour::crun);
  EXPECT_EQ(got.evidence, "\"crun version 1.21\"");  // probed, not cached

  // Rewritten in place: same inode, new size and times.
  std::ofstream(rt, std::ios::trunc) << "#!/bin/sh\necho 'crun version 1.18'\n";
  got = detect_native_support(rt, options);
  EXPECT_FALSE(got.native());
  EXPECT_EQ(got.evidence.find("cached"), std::string::npos) << got.evidence;

  // Only its ctime moves (chmod): probed again too.
  const BinaryIdentity before = identity_of(rt);
  ::usleep(20000);
  ::chmod(rt.c_str(), 0700);
  EXPECT_FALSE(identity_of(rt) == before);
  got = detect_native_support(rt, options);
  EXPECT_EQ(got.evidence.find("cached"), std::string::npos) << got.evidence;
  // ... and answered from the cache once it has not changed.
  got = detect_native_support(rt, options);
  EXPECT_NE(got.evidence.find("cached"), std::string::npos) << got.evidence;

  // Every binary keeps its own line.
  const std::string other = write_script(dir.path() + "/runc", "echo 'runc version 1.3.6'");
  EXPECT_EQ(detect_native_support(other, options).flavour, NativeFlavour::runc);
  EXPECT_NE(detect_native_support(rt, options).evidence.find("cached"), std::string::npos);
  EXPECT_NE(detect_native_support(other, options).evidence.find("cached"), std::string::npos);
}

TEST(NativeCache, MalformedLinesAreIgnored) {
  const TempDir dir;
  const std::string rt = write_script(dir.path() + "/runc", "echo 'runc version 1.3.6'");
  const BinaryIdentity id = identity_of(rt);
  NativeCache cache(dir.path() + "/native", owner());
  ASSERT_TRUE(cache.store(id, native_support_from_version_line("runc version 1.3.6")));
  const std::string good = read_file(dir.path() + "/native");
  // A truncated last line (no newline), garbage, a wrong flavour: skipped;
  // the good line still answers.
  {
    std::ofstream out(dir.path() + "/native", std::ios::trunc);
    out << "garbage\n1 2 3 4.000000000 5.000000000 youki 1.0\n" << good << good.substr(0, 10);
  }
  ::chmod((dir.path() + "/native").c_str(), 0600);
  const auto got = cache.lookup(id);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->flavour, NativeFlavour::runc);
}

// Only a file and a directory that nobody but the owner (root) could have
// written are believed: a forged "native" would run pinned execs unpinned.
TEST(NativeCache, RefusesFilesOthersCouldHaveWritten) {
  const TempDir dir;
  const std::string rt = write_script(dir.path() + "/runc", "echo 'runc version 1.1.5'");
  const BinaryIdentity id = identity_of(rt);
  const std::string path = dir.path() + "/native";
  NativeCache cache(path, owner());
  NativeSupport forged;
  forged.flavour = NativeFlavour::runc;
  forged.version = "1.3.6";
  ASSERT_TRUE(cache.store(id, forged));
  ASSERT_TRUE(cache.lookup(id));

  std::string why;
  ::chmod(path.c_str(), 0620);
  EXPECT_FALSE(cache.lookup(id, &why));
  EXPECT_NE(why.find("group- or other-writable (mode 0620)"), std::string::npos) << why;
  ::chmod(path.c_str(), 0602);
  EXPECT_FALSE(cache.lookup(id, &why));
  ::chmod(path.c_str(), 0644);
  EXPECT_TRUE(cache.lookup(id));

  // A symbolic link to a good file is refused.
  ASSERT_EQ(::rename(path.c_str(), (path + ".real").c_str()), 0);
  ASSERT_EQ(::symlink((path + ".real").c_str(), path.c_str()), 0);
  EXPECT_FALSE(cache.lookup(id, &why));
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  ::unlink(path.c_str());
  ASSERT_EQ(::rename((path + ".real").c_str(), path.c_str()), 0);

  // A directory others may write to is refused, file and all.
  ::chmod(dir.path().c_str(), 0777);
  EXPECT_FALSE(cache.lookup(id, &why));
  EXPECT_NE(why.find("directory"), std::string::npos) << why;
  EXPECT_FALSE(cache.store(id, forged));
  ::chmod(dir.path().c_str(), 0700);

  // A file owned by someone else (needs root to make).
  if (::geteuid() != 0) GTEST_SKIP() << "chown to another user needs root";
  ASSERT_EQ(::chown(path.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(cache.lookup(id, &why));
  EXPECT_NE(why.find("owned by uid 65534, not root"), std::string::npos) << why;
  // ... and replaced, not trusted, by the next fresh answer.
  ASSERT_TRUE(cache.store(id, native_support_from_version_line("runc version 1.1.5")));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  const auto got = cache.lookup(id);
  ASSERT_TRUE(got);
  EXPECT_FALSE(got->native());
}

// A cache directory that cannot be made (read-only /run, a rootless shim)
// means probing every time, never an error.
TEST(NativeCache, UnwritableMeansProbingEachTime) {
  const TempDir dir;
  const std::string count = dir.path() + "/probes";
  const std::string rt =
      write_script(dir.path() + "/runc", "echo x >> " + count + "; echo 'runc version 1.3.6'");
  const DetectOptions options{"/proc/execaff-native-test/native", milliseconds(5000), owner()};
  std::string note;
  EXPECT_EQ(detect_native_support(rt, options, &note).flavour, NativeFlavour::runc);
  EXPECT_EQ(detect_native_support(rt, options).flavour, NativeFlavour::runc);
  EXPECT_EQ(read_file(count), "x\nx\n");
  EXPECT_NE(note.find("cannot be made"), std::string::npos) << note;
}

TEST(NativeCache, KeepsAtMostTheNewestEntries) {
  const TempDir dir;
  NativeCache cache(dir.path() + "/native", owner());
  const NativeSupport answer = native_support_from_version_line("crun version 1.21");
  BinaryIdentity id;
  for (unsigned i = 0; i < execaff::shim::kMaxNativeCacheEntries + 5; ++i) {
    id.ino = i + 1;
    ASSERT_TRUE(cache.store(id, answer));
  }
  const std::string text = read_file(dir.path() + "/native");
  EXPECT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')),
            execaff::shim::kMaxNativeCacheEntries);
  EXPECT_TRUE(cache.lookup(id));  // the newest
  id.ino = 1;
  EXPECT_FALSE(cache.lookup(id));  // the oldest, dropped
}

// lookup parses only the line that starts with its binary's identity: each
// entry is still found among others, and an identity that only shares a
// prefix of digits with one (inode 1 against 12) is no match.
TEST(NativeCache, FindsItsLineAmongOthers) {
  const TempDir dir;
  NativeCache cache(dir.path() + "/native", owner());
  BinaryIdentity id;
  for (unsigned i = 1; i <= 12; ++i) {
    id.ino = i;
    ASSERT_TRUE(cache.store(
        id, native_support_from_version_line("crun version 1." + std::to_string(20 + i))));
  }
  for (unsigned i : {1U, 5U, 12U}) {
    id.ino = i;
    const auto got = cache.lookup(id);
    ASSERT_TRUE(got) << i;
    EXPECT_EQ(got->version, "1." + std::to_string(20 + i)) << i;
  }
  id.ino = 13;
  EXPECT_FALSE(cache.lookup(id));
}

// ------------------------------------------------------------ the CLI form

// `args` read as the newest runc or crun reads them.
execaff::shim::CommandLine line_of(std::vector<std::string> args,
                                   const std::string& runtime = "/usr/sbin/runc") {
  std::vector<char*> raw;
  for (auto& a : args) raw.push_back(a.data());
  return execaff::shim::parse_command_line(static_cast<int>(raw.size()), raw.data(), runtime);
}

std::string runtime_of(CliDialect dialect) {
  return dialect == CliDialect::runc ? "/usr/sbin/runc" : "/usr/bin/crun";
}

TEST(CliProcess, ConvertsThePlainSpellings) {
  for (const CliDialect dialect : {CliDialect::runc, CliDialect::crun}) {
    const auto line = line_of({"shim", "--root", "/r",  "exec",      "--detach", "--pid-file",
                               "/p",   "-e",     "A=1", "--env=B=2", "--cwd",    "/tmp",
                               "-u",   "1000:5", "-t",  "--cap",     "CAP_KILL", "--no-new-privs",
                               "ID",   "sh",     "-c",  "x"},
                              runtime_of(dialect));
    std::string why;
    const auto e = execaff::shim::read_cli_exec(line, {dialect, CrunEnv::replaced}, &why);
    if (dialect == CliDialect::runc) {
      // runc refuses -e beside --env: handed on as it came, for runc to say so.
      EXPECT_FALSE(e);
      EXPECT_NE(why.find("both its forms"), std::string::npos) << why;
      continue;
    }
    ASSERT_TRUE(e) << why;
    EXPECT_EQ(e->kept, (std::vector<std::string>{"--detach", "--pid-file", "/p"}));
    EXPECT_EQ(e->args, (std::vector<std::string>{"sh", "-c", "x"}));
    EXPECT_EQ(e->env, (std::vector<std::string>{"A=1", "B=2"}));
    EXPECT_EQ(e->cwd, "/tmp");
    EXPECT_EQ(e->user, "1000:5");
    EXPECT_TRUE(e->tty);
    EXPECT_TRUE(e->no_new_privs);
    EXPECT_EQ(execaff::shim::cli_as_process_argv(line, *e, "/proc/self/fd/9"),
              (std::vector<std::string>{"shim", "--root", "/r", "exec", "--detach", "--pid-file",
                                        "/p", "--process", "/proc/self/fd/9", "ID"}));
  }
}

TEST(CliProcess, LeavesWhatItDoesNotConvert) {
  const std::vector<std::vector<std::string>> lines = {
      {"shim", "exec", "-eA=1", "ID", "sh"},                 // runc refuses the flag "eA"
      {"shim", "exec", "--tty=false", "ID", "sh"},           // a flag with a value
      {"shim", "exec", "--user", "1000:", "ID", "sh"},       // not UID[:GID]
      {"shim", "exec", "--user", "-1", "ID", "sh"},          //
      {"shim", "exec", "--user", "4294967296", "ID", "sh"},  // wraps in both
      {"shim", "exec", "--det", "ID", "sh"},                 // runc has no abbreviations
      {"shim", "exec", "--frobnicate", "ID", "sh"},  // unknown
      {"shim", "exec", "-g", "5", "ID", "sh"},       // runc gives one -g twice
      {"shim", "exec", "ID"},                        // no program: the runtime's error
  };
  for (const auto& args : lines) {
    std::string why;
    EXPECT_FALSE(
        execaff::shim::read_cli_exec(line_of(args), {CliDialect::runc, CrunEnv::unknown}, &why))
        << args[2];
    EXPECT_FALSE(why.empty());
  }
  // Each runtime's own spellings are converted: Go's -cwd, argp's --e.
  std::string converted;
  const auto go = execaff::shim::read_cli_exec(line_of({"shim", "exec", "-cwd", "/x", "ID", "sh"}),
                                               {CliDialect::runc, CrunEnv::unknown}, &converted);
  ASSERT_TRUE(go) << converted;
  EXPECT_EQ(go->cwd, "/x");
  const auto argp =
      execaff::shim::read_cli_exec(line_of({"shim", "exec", "--e", "A=1", "ID", "sh"}, "/usr/bin/crun"),
                                   {CliDialect::crun, CrunEnv::merged}, &converted);
  ASSERT_TRUE(argp) << converted;
  EXPECT_EQ(argp->env, (std::vector<std::string>{"A=1"}));
  // crun: a cluster and a --tty with a value are left.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"shim", "exec", "-dt", "ID", "sh"},
        std::vector<std::string>{"shim", "exec", "-tX", "ID", "sh"}}) {
    std::string why;
    EXPECT_FALSE(execaff::shim::read_cli_exec(line_of(args, "/usr/bin/crun"),
                                              {CliDialect::crun, CrunEnv::replaced}, &why))
        << args[2];
    EXPECT_FALSE(why.empty());
  }
  // crun whose --env rule is not known: --env is left.
  std::string why;
  EXPECT_FALSE(execaff::shim::read_cli_exec(
      line_of({"shim", "exec", "-e", "A=1", "ID", "sh"}, "/usr/bin/crun"),
      {CliDialect::crun, CrunEnv::unknown}, &why));
}

TEST(CliProcess, RuncStartsFromConfigJsonsProcess) {
  const std::string config = R"({"process":{"args":["sleep"],"env":["PATH=/bin"],"cwd":"/",
    "user":{"uid":0,"gid":0,"additionalGids":[7]},"rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}],
    "capabilities":{"bounding":["CAP_CHOWN"],"effective":["CAP_CHOWN"],"inheritable":[]},
    "execCPUAffinity":{"initial":"0","final":"0"},"oomScoreAdj":-5},"annotations":{}})";
  const auto line =
      line_of({"shim", "exec", "--env", "A=1", "-u", "1000", "--cap", "CAP_KILL", "ID", "true"});
  const CliRuntime runc{CliDialect::runc, CrunEnv::unknown};
  std::string why;
  const auto e = execaff::shim::read_cli_exec(line, runc, &why);
  ASSERT_TRUE(e) << why;
  const execaff::CpuSet one = execaff::CpuSet::parse("1");
  const auto json = execaff::shim::cli_process_json(
      *e, runc, execaff::parse_config_document(config, "config"), {one, one}, &why);
  ASSERT_TRUE(json) << why;
  EXPECT_EQ(*json, R"({"cwd":"/","rlimits":[{"type":"RLIMIT_NOFILE","hard":1024,"soft":1024}],)"
                   R"("oomScoreAdj":-5,"args":["true"],)"
                   R"("capabilities":{"inheritable":[],"bounding":["CAP_CHOWN","CAP_KILL"],)"
                   R"("effective":["CAP_CHOWN","CAP_KILL"],"permitted":["CAP_KILL"],)"
                   R"("ambient":["CAP_KILL"]},"env":["PATH=/bin","A=1"],"terminal":false,)"
                   R"("user":{"gid":0,"additionalGids":[7],"uid":1000},)"
                   R"("execCPUAffinity":{"initial":"1","final":"1"}})");
  // --cap over a config.json without capabilities would crash runc: left.
  EXPECT_FALSE(execaff::shim::cli_process_json(
      *e, runc, execaff::parse_config_document(R"({"process":{"args":["x"]}})", "config"),
      {one, one}, &why));
}

TEST(CliProcess, CrunBuildsFromTheCommandLine) {
  const std::string config = R"({"process":{"args":["sleep"],"env":["PATH=/bin","HOME=/root"]}})";
  const auto line =
      line_of({"shim", "exec", "-e", "A=1", "-u", "1000", "ID", "true"}, "/usr/bin/crun");
  for (const CrunEnv env : {CrunEnv::replaced, CrunEnv::merged}) {
    const CliRuntime crun{CliDialect::crun, env};
    std::string why;
    const auto e = execaff::shim::read_cli_exec(line, crun, &why);
    ASSERT_TRUE(e) << why;
    const auto json =
        execaff::shim::cli_process_json(*e, crun, execaff::parse_config_document(config, "config"),
                                        {std::nullopt, execaff::CpuSet::parse("1")}, &why);
    ASSERT_TRUE(json) << why;
    const std::string envs =
        env == CrunEnv::replaced ? R"(["A=1"])" : R"(["PATH=/bin","HOME=/root","A=1"])";
    EXPECT_EQ(*json, R"({"args":["true"],"cwd":"/","terminal":false,"env":)" + envs +
                         R"(,"user":{"uid":1000,"gid":0},"execCPUAffinity":{"final":"1"}})");
  }
}

}  // namespace
