// SPDX-License-Identifier: LGPL-2.1-or-later
// file_reader: the one way a file is read whole — every byte, only regular
// files, never past the limit, with an error naming the path and the
// reason, and no descriptor left behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "error.hpp"
#include "error_from.hpp"
#include "file_reader.hpp"
#include "read_tally.hpp"

namespace execaff {
namespace {

std::size_t open_fd_count() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count;
}

class ReadFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "execaff-json-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << errno_text(errno);
    dir_ = pattern;
  }
  void TearDown() override {
    if (!dir_.empty()) {
      ::chmod((dir_ + "/secret.json").c_str(), 0600);
      std::filesystem::remove_all(dir_);
    }
  }
  std::string write(const std::string& name, const std::string& content) {
    const std::string path = dir_ + "/" + name;
    std::ofstream out(path, std::ios::binary);
    out << content;
    return path;
  }
  std::string dir_;
};

TEST_F(ReadFile, ReadsEveryByte) {
  const std::string content = std::string("{\"a\":\"\0\"}\n\n", 11);
  EXPECT_EQ(read_file(write("p.json", content)), content);
  EXPECT_EQ(read_file(write("empty.json", "")), "");
  const std::string big(100000, 'x');  // past the first 4 KiB read and its doubling
  EXPECT_EQ(read_file(write("big.json", big)), big);
}

TEST_F(ReadFile, FollowsSymlinks) {
  const std::string target = write("target.json", "{}");
  std::filesystem::create_symlink(target, dir_ + "/link.json");
  EXPECT_EQ(read_file(dir_ + "/link.json"), "{}");
}

TEST_F(ReadFile, MissingFile) {
  const std::string path = dir_ + "/absent.json";
  const Error e = error_from([&] { (void)read_file(path); });
  EXPECT_EQ(e.code(), ENOENT);
  EXPECT_EQ(std::string(e.what()),
            "cannot read " + execaff::quoted(path) + ": " + errno_text(ENOENT));
}

TEST_F(ReadFile, PathThroughAFile) {
  const std::string path = write("file", "x") + "/p.json";
  const Error e = error_from([&] { (void)read_file(path); });
  EXPECT_EQ(e.code(), ENOTDIR);
  EXPECT_EQ(std::string(e.what()),
            "cannot read " + execaff::quoted(path) + ": " + errno_text(ENOTDIR));
}

TEST_F(ReadFile, Directory) {
  const Error e = error_from([&] { (void)read_file(dir_); });
  EXPECT_EQ(e.code(), EISDIR);
  EXPECT_EQ(std::string(e.what()),
            "cannot read " + execaff::quoted(dir_) + ": not a regular file but a directory");
}

TEST_F(ReadFile, FifoIsRefusedWithoutBlocking) {
  const std::string path = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << errno_text(errno);
  const Error e = error_from([&] { (void)read_file(path); });
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_EQ(std::string(e.what()),
            "cannot read " + execaff::quoted(path) + ": not a regular file but a FIFO");
}

TEST_F(ReadFile, CharacterDevice) {
  const Error e = error_from([] { (void)read_file("/dev/null"); });
  EXPECT_EQ(e.code(), EINVAL);
  EXPECT_EQ(std::string(e.what()),
            R"(cannot read "/dev/null": not a regular file but a character device)");
}

TEST_F(ReadFile, PermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads files whatever their mode";
  const std::string path = write("secret.json", "{}");
  ASSERT_EQ(::chmod(path.c_str(), 0), 0);
  const Error e = error_from([&] { (void)read_file(path); });
  EXPECT_EQ(e.code(), EACCES);
  EXPECT_EQ(std::string(e.what()),
            "cannot read " + execaff::quoted(path) + ": " + errno_text(EACCES));
}

TEST_F(ReadFile, SizeLimit) {
  // Sparse files: no disk is spent on them.
  const std::string at_limit = write("limit.json", "");
  ASSERT_EQ(::truncate(at_limit.c_str(), static_cast<off_t>(kMaxDocumentBytes)), 0);
  EXPECT_EQ(read_file(at_limit).size(), kMaxDocumentBytes);

  const std::string over = write("over.json", "");
  ASSERT_EQ(::truncate(over.c_str(), static_cast<off_t>(kMaxDocumentBytes + 1)), 0);
  const Error e = error_from([&] { (void)read_file(over); });
  EXPECT_EQ(e.code(), EFBIG);
  EXPECT_EQ(std::string(e.what()),
            "cannot read " + execaff::quoted(over) + ": " + errno_text(EFBIG) + " (" +
                std::to_string(kMaxDocumentBytes + 1) + " bytes or more, the limit is " +
                std::to_string(kMaxDocumentBytes) + ")");
}

TEST_F(ReadFile, LeaksNoDescriptor) {
  const std::string good = write("good.json", "{}");
  const std::string over = write("over.json", "");
  ASSERT_EQ(::truncate(over.c_str(), static_cast<off_t>(kMaxDocumentBytes + 1)), 0);
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::size_t before = open_fd_count();
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(read_file(good), "{}");
    for (const std::string& bad : {over, fifo, dir_, dir_ + "/absent", std::string("/dev/null")}) {
      EXPECT_THROW((void)read_file(bad), Error);
    }
  }
  EXPECT_EQ(open_fd_count(), before);
}

TEST_F(ReadFile, AnyLimit) {
  const std::string path = write("ten.json", "0123456789");
  EXPECT_EQ(read_file(path, 10), "0123456789");
  const Error e = error_from([&] { (void)read_file(path, 9); });
  EXPECT_EQ(e.code(), EFBIG);
  std::string out = "untouched";
  EXPECT_EQ(try_read_file(path, out, 9), EFBIG);
  EXPECT_EQ(out, "untouched");
}

TEST_F(ReadFile, KernelFilesThatReportNoSize) {
  // procfs says 0 bytes; the content is read to its end all the same.
  std::string status;
  ASSERT_EQ(try_read_file("/proc/self/status", status, kMaxKernelFileBytes), 0);
  EXPECT_NE(status.find("Cpus_allowed_list:"), std::string::npos) << status;
  std::string out;
  EXPECT_EQ(try_read_file(dir_ + "/absent", out, kMaxKernelFileBytes), ENOENT);
  EXPECT_EQ(try_read_file(dir_, out, kMaxKernelFileBytes), EISDIR);
}

TEST_F(ReadFile, TallyCountsEachPathWhenEnabled) {
  const std::string path = write("counted.json", "{}");
  (void)read_file(path);  // before enable(): not counted
  tally::enable();
  (void)read_file(path);
  std::string out;
  (void)try_read_file(path, out, 100);
  (void)try_read_file(dir_ + "/absent", out, 100);
  const tally::Counts expected = {{execaff::quoted(path), 2},
                                  {execaff::quoted(dir_ + "/absent"), 1}};
  EXPECT_EQ(tally::files_read(), expected);
  EXPECT_NE(tally::summary().find(execaff::quoted(path) + " x2"), std::string::npos)
      << tally::summary();
}

}  // namespace
}  // namespace execaff
