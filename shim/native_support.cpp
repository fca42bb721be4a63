// SPDX-License-Identifier: LGPL-2.1-or-later
#include "native_support.hpp"

#include <elf.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "error.hpp"
#include "file_descriptor.hpp"
#include "native_cache.hpp"

extern char** environ;

namespace execaff::shim {
namespace {

bool read_at(int fd, void* buffer, std::size_t size, off_t offset) {
  return ::pread(fd, buffer, size, offset) == static_cast<ssize_t>(size);
}

std::size_t align4(std::size_t n) {
  return (n + 3) & ~std::size_t{3};
}

bool notes_have_mark(const std::vector<unsigned char>& notes) {
  std::size_t at = 0;
  while (at + sizeof(Elf64_Nhdr) <= notes.size()) {
    Elf64_Nhdr header;
    std::memcpy(&header, notes.data() + at, sizeof header);
    const std::size_t name_at = at + sizeof header;
    const std::size_t desc_at = name_at + align4(header.n_namesz);
    const std::size_t next = desc_at + align4(header.n_descsz);
    if (next > notes.size() || next <= at) return false;
    if (header.n_type == kNoteTypeExecCpuAffinity &&
        header.n_namesz == std::strlen(kNoteName) + 1 &&
        std::memcmp(notes.data() + name_at, kNoteName, header.n_namesz) == 0) {
      return true;
    }
    at = next;
  }
  return false;
}

// "1.3.6", "1.21", "1.3.0-rc.1", "1.19.3-e5f3", "1.4.0+dev": up to three
// numeric components, then nothing, a pre-release ("-...") or build
// metadata ("+...").
struct ParsedVersion {
  unsigned part[3] = {0, 0, 0};
  bool pre_release = false;
};

std::optional<ParsedVersion> parse_version(std::string_view text) {
  ParsedVersion v;
  std::size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t start = at;
    unsigned value = 0;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
      value = value * 10 + static_cast<unsigned>(text[at] - '0');
      if (value > 99999) return std::nullopt;
      ++at;
    }
    if (at == start) return std::nullopt;
    v.part[i] = value;
    if (i < 2 && at < text.size() && text[at] == '.' && at + 1 < text.size() &&
        text[at + 1] >= '0' && text[at + 1] <= '9') {
      ++at;
      continue;
    }
    break;
  }
  if (at == text.size()) return v;
  if (text[at] == '+') return v;
  if (text[at] == '-' && at + 1 < text.size()) {
    v.pre_release = true;
    return v;
  }
  return std::nullopt;
}

bool at_least(const ParsedVersion& v, const unsigned (&since)[3]) {
  for (int i = 0; i < 3; ++i) {
    if (v.part[i] != since[i]) return v.part[i] > since[i];
  }
  return true;
}

bool equals(const ParsedVersion& v, const unsigned (&since)[3]) {
  return v.part[0] == since[0] && v.part[1] == since[1] && v.part[2] == since[2];
}

int pidfd_open(pid_t pid) {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

class ChildSignalDefault {
 public:
  ChildSignalDefault() noexcept {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    changed_ = ::sigaction(SIGCHLD, nullptr, &old_) == 0 && old_.sa_handler == SIG_IGN &&
               ::sigaction(SIGCHLD, &dfl, nullptr) == 0;
  }
  ~ChildSignalDefault() {
    if (changed_) (void)::sigaction(SIGCHLD, &old_, nullptr);
  }
  ChildSignalDefault(const ChildSignalDefault&) = delete;
  ChildSignalDefault& operator=(const ChildSignalDefault&) = delete;

 private:
  struct sigaction old_ {};
  bool changed_ = false;
};

long remaining_ms(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<long>(left.count());
}

}  // namespace

const char* to_string(NativeFlavour flavour) noexcept {
  switch (flavour) {
    case NativeFlavour::none: return "none";
    case NativeFlavour::fork: return "fork";
    case NativeFlavour::runc: return "runc";
    case NativeFlavour::crun: return "crun";
  }
  return "none";
}

std::optional<NativeFlavour> native_flavour_from_string(std::string_view name) {
  for (const NativeFlavour f :
       {NativeFlavour::none, NativeFlavour::fork, NativeFlavour::runc, NativeFlavour::crun}) {
    if (name == to_string(f)) return f;
  }
  return std::nullopt;
}

NativeSupport native_support_from_version_line(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  NativeSupport answer;
  answer.evidence = quoted(line);
  std::string_view name;
  for (const std::string_view candidate : {std::string_view("runc"), std::string_view("crun")}) {
    const std::string prefix = std::string(candidate) + " version ";
    if (line.substr(0, prefix.size()) == prefix) {
      name = candidate;
      line.remove_prefix(prefix.size());
      break;
    }
  }
  if (name.empty()) {
    answer.evidence += ": not runc or crun";
    return answer;
  }
  const auto version = parse_version(line);
  if (!version) {
    answer.evidence += ": no version number";
    return answer;
  }
  const bool runc = name == "runc";
  const auto& since = runc ? kRuncNativeSince : kCrunNativeSince;
  // runc's versions are semver: 1.3.0-rc.1 comes before 1.3.0 (and lacks
  // nothing of it we know of, but its field handling was still changing).
  // crun's git builds append "-<commits>-<hash>" after the tag they follow.
  const bool native =
      at_least(*version, since) && !(runc && version->pre_release && equals(*version, since));
  if (!native) {
    answer.evidence += runc ? ": older than runc 1.3.0" : ": older than crun 1.19";
    return answer;
  }
  answer.flavour = runc ? NativeFlavour::runc : NativeFlavour::crun;
  answer.version = std::string(line.substr(0, line.find_first_of(" \t")));
  return answer;
}

std::optional<std::array<unsigned, 3>> numeric_version(std::string_view version) {
  const auto v = parse_version(version);
  if (!v) return std::nullopt;
  return std::array<unsigned, 3>{v->part[0], v->part[1], v->part[2]};
}

bool runtime_has_native_mark(int fd) noexcept {
  try {
    Elf64_Ehdr ehdr;
    if (!read_at(fd, &ehdr, sizeof ehdr, 0) || std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) != 0 ||
        ehdr.e_ident[EI_CLASS] != ELFCLASS64 || ehdr.e_phentsize != sizeof(Elf64_Phdr) ||
        ehdr.e_phnum >= 256) {
      return false;
    }
    std::vector<Elf64_Phdr> phdrs(ehdr.e_phnum);
    if (!read_at(fd, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr),
                 static_cast<off_t>(ehdr.e_phoff))) {
      return false;
    }
    for (const Elf64_Phdr& ph : phdrs) {
      if (ph.p_type != PT_NOTE || ph.p_filesz > 64 * 1024) continue;
      std::vector<unsigned char> notes(ph.p_filesz);
      if (read_at(fd, notes.data(), notes.size(), static_cast<off_t>(ph.p_offset)) &&
          notes_have_mark(notes)) {
        return true;
      }
    }
  } catch (...) {
  }
  return false;
}

bool runtime_has_native_mark(const std::string& binary) noexcept {
  const FileDescriptor fd(::open(binary.c_str(), O_RDONLY | O_CLOEXEC));
  return fd.get() >= 0 && runtime_has_native_mark(fd.get());
}

std::optional<std::string> runtime_version_line(const std::string& binary,
                                                std::chrono::milliseconds timeout,
                                                std::string* why) noexcept {
  const auto say = [why](std::string text) {
    if (why != nullptr) *why = std::move(text);
  };
  try {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
      say("pipe: " + errno_text(errno));
      return std::nullopt;
    }
    const FileDescriptor read_end(pipe_fds[0]);
    FileDescriptor write_end(pipe_fds[1]);

    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawnattr_init(&attr);
    ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
    ::posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    // None of the caller's fds (--preserve-fds, a console) reaches a probe
    // that might hang on to them.
    ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    // A group of its own, so that a hung probe dies with whatever it forked.
    ::posix_spawnattr_setpgroup(&attr, 0);
    sigset_t none;
    sigemptyset(&none);
    ::posix_spawnattr_setsigmask(&attr, &none);
    ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    const std::string flag = "--version";
    char* const argv[] = {const_cast<char*>(binary.c_str()), const_cast<char*>(flag.c_str()),
                          nullptr};
    // A caller that ignores SIGCHLD would have the probe reaped by the
    // kernel, and its exit status lost: default while it runs, the
    // caller's disposition back before the runtime inherits it.
    const ChildSignalDefault child_signal;
    pid_t pid = -1;
    const int spawned = ::posix_spawn(&pid, binary.c_str(), &actions, &attr, argv, environ);
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attr);
    write_end = FileDescriptor();
    if (spawned != 0) {
      say("cannot run " + quoted(binary + " --version") + ": " + errno_text(spawned));
      return std::nullopt;
    }

    const FileDescriptor exited(pidfd_open(pid));
    std::string out;
    bool eof = false;
    bool reaped = false;
    int status = 0;
    while (!(eof && reaped)) {
      const long left = remaining_ms(deadline);
      if (left == 0) break;
      pollfd fds[2] = {{eof ? -1 : read_end.get(), POLLIN, 0},
                       {reaped || exited.get() < 0 ? -1 : exited.get(), POLLIN, 0}};
      // Without a pidfd (kernels before 5.3) the child is polled for every
      // 10 ms once its output has ended.
      const int wait_ms = exited.get() < 0 && eof ? 10 : static_cast<int>(left);
      const int n = ::poll(fds, 2, wait_ms);
      if (n < 0 && errno != EINTR) break;
      if (!eof && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        char buffer[512];
        const ssize_t got = ::read(read_end.get(), buffer, sizeof buffer);
        if (got > 0 && out.size() < 4096) {
          out.append(buffer, static_cast<std::size_t>(got));
        } else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
          eof = true;
        }
      }
      if (!reaped && (exited.get() < 0 ? eof : (fds[1].revents & POLLIN) != 0)) {
        const pid_t w = ::waitpid(pid, &status, WNOHANG);
        reaped = w == pid;
      }
    }
    if (!reaped) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      say(quoted(binary + " --version") + " did not finish within " +
          std::to_string(timeout.count()) + " ms: killed");
      return std::nullopt;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      say(quoted(binary + " --version") +
          (WIFEXITED(status) ? " exited " + std::to_string(WEXITSTATUS(status))
                             : " was killed by signal " + std::to_string(WTERMSIG(status))));
      return std::nullopt;
    }
    return out.substr(0, out.find('\n'));
  } catch (...) {
    say("out of memory probing " + quoted(binary));
    return std::nullopt;
  }
}

NativeSupport detect_native_support(const std::string& binary, const DetectOptions& options,
                                    std::string* note) noexcept {
  const auto add_note = [note](const std::string& text) {
    if (note == nullptr || text.empty()) return;
    if (!note->empty()) *note += "; ";
    *note += text;
  };
  try {
    // The cached answer (every exec but the first) needs the binary's
    // identity only: one stat, no open.
    struct stat before {};
    if (::stat(binary.c_str(), &before) != 0) return {};
    const NativeCache cache(options.cache_path, options.cache_owner);
    if (!options.cache_path.empty()) {
      std::string refused;
      if (auto cached = cache.lookup(BinaryIdentity::of(before), &refused)) return *cached;
      add_note(refused);
    }

    // An execute-only binary (a rootless shim) cannot be read for its
    // note: it is still asked for its version.  Opened, it is the file
    // read whose identity is stored.
    const FileDescriptor fd(::open(binary.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() >= 0 && ::fstat(fd.get(), &before) != 0) return {};
    const BinaryIdentity identity = BinaryIdentity::of(before);

    NativeSupport answer;
    if (fd.get() >= 0 && runtime_has_native_mark(fd.get())) {
      answer.flavour = NativeFlavour::fork;
      answer.evidence = "ELF note \"execaff\"";
    } else {
      std::string why;
      if (const auto line = runtime_version_line(binary, options.timeout, &why)) {
        answer = native_support_from_version_line(*line);
      } else {
        answer.evidence = why;
        answer.probe_failed = true;
      }
    }
    // Stored only when the binary that answered is still the one named.
    struct stat after {};
    if (!options.cache_path.empty() && ::stat(binary.c_str(), &after) == 0 &&
        BinaryIdentity::of(after) == identity) {
      std::string why;
      if (!cache.store(identity, answer, &why)) add_note(why);
    }
    return answer;
  } catch (...) {
    return {};
  }
}

}  // namespace execaff::shim
