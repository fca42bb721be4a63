// SPDX-License-Identifier: LGPL-2.1-or-later
// Reading process files and config.json with yajl's event parser, and
// splicing a new execCPUAffinity into a process file.
//
// Events rather than yajl_tree: we want a handful of values out of a document
// that may be large, so a tree would be wasted work (a 4 KiB process file is
// read on every exec).  The event parser also lets us keep yajl's defaults
// that yajl_tree_parse overrides — comments are refused, as they are by runc
// (Go's encoding/json), which reads the same file after us — report a byte
// offset, and take numbers that fit neither a double nor a long long as text
// instead of failing on them (a process file's rlimits may be 2^64-1).
#include "spec_json.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "error.hpp"
#include "file_descriptor.hpp"

namespace execaff {
namespace {

constexpr std::string_view kAffinityKey = "execCPUAffinity";

// Values are shown in messages; a hostile 16 MiB string must not become a
// 16 MiB message.
constexpr std::size_t kMaxShownBytes = 64;

std::string shown_string(std::string_view value) {
  if (value.size() <= kMaxShownBytes) return quoted(value);
  std::size_t cut = kMaxShownBytes;
  // Never cut a UTF-8 sequence in half.
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return quoted(value.substr(0, cut)) + "... (" + std::to_string(value.size()) + " bytes)";
}

// A member name in a message's JSON path: bare when it is plain printable
// ASCII ("annotations.exec-cpu-affinity.execaff.io"), quoted otherwise, so a
// key holding a newline or a quote shows as what it is.
std::string path_component(std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte > 0x20 && byte < 0x7f && c != '"' && c != '\\';
  });
  return plain ? std::string(key) : shown_string(key);
}

enum class JsonType { null, boolean, number, string, object, array };

// The "got ..." half of a type error: the kind and, for a scalar, its value.
std::string described(JsonType type, std::string_view text) {
  switch (type) {
    case JsonType::null: return "null";
    case JsonType::boolean: return "a boolean " + std::string(text);
    case JsonType::number:
      return "a number " + (text.size() <= kMaxShownBytes
                                ? std::string(text)
                                : std::string(text.substr(0, kMaxShownBytes)) + "...");
    case JsonType::string: return "a string " + shown_string(text);
    case JsonType::object: return "an object";
    case JsonType::array: return "an array";
  }
  return "a value";
}

// The members we read.  Everything else is `ignored` and skipped by depth.
enum class Node : std::uint8_t {
  ignored,
  process_root,  // a process file's top level (the process object)
  config_root,   // config.json's top level
  rewrite_root,  // a process file about to be rewritten: only its shape matters
  process,       // config.json: process
  affinity,      // process.execCPUAffinity
  initial_list,  // process.execCPUAffinity.initial
  final_list,    // process.execCPUAffinity.final
  annotations,
  annotation_value,
  linux_section,  // linux
  resources,      // linux.resources
  cpu,            // linux.resources.cpu
  cpus,           // linux.resources.cpu.cpus
  cgroups_path,   // linux.cgroupsPath
};

Node member_node(Node parent, std::string_view key) {
  switch (parent) {
    case Node::process_root:
    case Node::process: return key == kAffinityKey ? Node::affinity : Node::ignored;
    case Node::config_root:
      if (key == "process") return Node::process;
      if (key == "annotations") return Node::annotations;
      if (key == "linux") return Node::linux_section;
      return Node::ignored;
    case Node::affinity:
      // Other members are ignored, not refused: runtime-spec config.md
      // "Extensibility" says runtimes MUST ignore unknown properties, and a
      // later spec version may add members here.
      if (key == "initial") return Node::initial_list;
      if (key == "final") return Node::final_list;
      return Node::ignored;
    case Node::annotations: return Node::annotation_value;
    case Node::linux_section:
      if (key == "resources") return Node::resources;
      if (key == "cgroupsPath") return Node::cgroups_path;
      return Node::ignored;
    case Node::resources: return key == "cpu" ? Node::cpu : Node::ignored;
    case Node::cpu: return key == "cpus" ? Node::cpus : Node::ignored;
    default: return Node::ignored;
  }
}

// Both documents name the affinity "process.execCPUAffinity": a process file
// is the process object itself.
std::string_view path_of(Node node) {
  switch (node) {
    case Node::process_root:
    case Node::rewrite_root:
    case Node::process: return "process";
    case Node::affinity: return "process.execCPUAffinity";
    case Node::initial_list: return "process.execCPUAffinity.initial";
    case Node::final_list: return "process.execCPUAffinity.final";
    case Node::annotations: return "annotations";
    case Node::linux_section: return "linux";
    case Node::resources: return "linux.resources";
    case Node::cpu: return "linux.resources.cpu";
    case Node::cpus: return "linux.resources.cpu.cpus";
    case Node::cgroups_path: return "linux.cgroupsPath";
    default: return "";
  }
}

bool holds_object(Node node) {
  switch (node) {
    case Node::process_root:
    case Node::config_root:
    case Node::rewrite_root:
    case Node::process:
    case Node::affinity:
    case Node::annotations:
    case Node::linux_section:
    case Node::resources:
    case Node::cpu: return true;
    default: return false;
  }
}

std::string duplicated_key_message(std::string_view path) {
  // Refused rather than resolved: runc (Go's encoding/json) lets a later copy
  // override an earlier one, while crun (libocispec over yajl_tree_get) reads
  // the first, so the document means different things to different runtimes.
  return std::string(path) + ": the key appears more than once; runtimes disagree on which wins";
}

// Receives yajl's events and keeps what ConfigDocument / ProcessDocument
// need.  Handlers throw Error(EINVAL, "<path>: <reason>"); the C callbacks
// below turn that into a cancelled parse.
class DocumentReader {
 public:
  explicit DocumentReader(Node root) noexcept : pending_(root) {}

  void on_scalar(JsonType type, std::string_view text) {
    if (skipped_depth_ > 0) return;
    switch (pending_) {
      case Node::ignored: return;
      case Node::initial_list:
      case Node::final_list:
      case Node::cpus:
        // config.md (execCPUAffinity): an omitted or empty list means "leave
        // affinity alone".  null reads as omitted, as it does for runc (Go's
        // encoding/json decodes null as no value).
        if (type == JsonType::null || (type == JsonType::string && text.empty())) return;
        if (type != JsonType::string) throw type_error("a string", type, text);
        list_of(pending_) = parsed_list(text);
        return;
      case Node::cgroups_path:
        if (type == JsonType::null) return;
        if (type != JsonType::string) throw type_error("a string", type, text);
        cgroups_path.assign(text);
        return;
      case Node::annotation_value:
        if (type != JsonType::string) throw type_error("a string", type, text);
        if (!annotations.try_emplace(pending_key_, text).second) {
          throw Error(EINVAL, duplicated_key_message(annotation_path()));
        }
        return;
      default:
        // An object member given as null is absent (Go's encoding/json, in
        // runc, makes it a nil pointer); a document that is null is not one.
        if (type == JsonType::null && pending_ != Node::process_root &&
            pending_ != Node::config_root && pending_ != Node::rewrite_root) {
          return;
        }
        throw type_error("an object", type, text);
    }
  }

  void on_start(JsonType type) {
    if (skipped_depth_ > 0 || pending_ == Node::ignored) {
      ++skipped_depth_;
      return;
    }
    if (type != JsonType::object || !holds_object(pending_)) {
      throw type_error(holds_object(pending_) ? "an object" : "a string", type, {});
    }
    if (depth_ == frames_.size()) throw std::logic_error("spec_json: schema deeper than frames_");
    frames_[depth_++] = Frame{pending_, 0};
    if (pending_ == Node::affinity) affinity_present = true;
  }

  void on_key(std::string_view key) {
    if (skipped_depth_ > 0) return;
    Frame& frame = frames_[depth_ - 1];
    pending_ = member_node(frame.node, key);
    if (pending_ == Node::annotation_value) {
      pending_key_.assign(key);
    } else if (pending_ != Node::ignored) {
      const auto bit = std::uint32_t{1} << static_cast<unsigned>(pending_);
      if ((frame.seen & bit) != 0) throw Error(EINVAL, duplicated_key_message(path_of(pending_)));
      frame.seen |= bit;
    }
  }

  void on_end() noexcept {
    if (skipped_depth_ > 0) {
      --skipped_depth_;
    } else {
      --depth_;
    }
  }

  std::exception_ptr failure;

  bool affinity_present = false;
  ExecCpuAffinity affinity;
  std::map<std::string, std::string> annotations;
  std::optional<CpuSet> cpuset;
  std::string cgroups_path;

 private:
  struct Frame {
    Node node;
    std::uint32_t seen;  // bit per Node: members already met, to refuse duplicates
  };

  std::optional<CpuSet>& list_of(Node node) {
    if (node == Node::initial_list) return affinity.initial;
    if (node == Node::final_list) return affinity.final;
    return cpuset;
  }

  [[nodiscard]] std::string current_path() const {
    if (pending_ == Node::annotation_value) return annotation_path();
    return std::string(path_of(pending_));
  }

  [[nodiscard]] std::string annotation_path() const {
    return "annotations." + path_component(pending_key_);
  }

  [[nodiscard]] Error type_error(std::string_view expected, JsonType got,
                                 std::string_view text) const {
    if (pending_ == Node::config_root) {
      return Error(EINVAL, "expected an object at the top level, got " + described(got, text));
    }
    return Error(EINVAL, current_path() + ": expected " + std::string(expected) + ", got " +
                             described(got, text));
  }

  // EINVAL even for an id above CpuSet::kMaxCpu (ERANGE from the parser):
  // for the caller it is one more way for the document to be invalid.
  [[nodiscard]] CpuSet parsed_list(std::string_view text) const {
    try {
      return CpuSet::parse(text);
    } catch (const Error& e) {
      throw Error(EINVAL, current_path() + ": " + e.what());
    }
  }

  // The deepest object we descend into is linux.resources.cpu, under the
  // top level: four frames.  Everything deeper is skipped by counting.
  std::array<Frame, 4> frames_{};
  std::size_t depth_ = 0;
  std::size_t skipped_depth_ = 0;
  Node pending_;  // what the next value is
  std::string pending_key_;
};

// yajl is C: nothing may unwind through it.  Each callback runs its handler
// here, keeps the exception, and cancels the parse by returning 0.
template <typename Handler>
int guarded(void* context, Handler&& handler) noexcept {
  auto& reader = *static_cast<DocumentReader*>(context);
  try {
    std::forward<Handler>(handler)(reader);
    return 1;
  } catch (...) {
    reader.failure = std::current_exception();
    return 0;
  }
}

std::string_view as_view(const unsigned char* text, std::size_t length) noexcept {
  return {reinterpret_cast<const char*>(text), length};
}

constexpr yajl_callbacks kCallbacks = {
    [](void* c) { return guarded(c, [](auto& r) { r.on_scalar(JsonType::null, {}); }); },
    [](void* c, int value) {
      return guarded(
          c, [value](auto& r) { r.on_scalar(JsonType::boolean, value != 0 ? "true" : "false"); });
    },
    nullptr,  // yajl_integer and yajl_double are unused once yajl_number is set
    nullptr,
    [](void* c, const char* text, std::size_t length) {
      return guarded(c, [=](auto& r) { r.on_scalar(JsonType::number, {text, length}); });
    },
    [](void* c, const unsigned char* text, std::size_t length) {
      return guarded(c, [=](auto& r) { r.on_scalar(JsonType::string, as_view(text, length)); });
    },
    [](void* c) { return guarded(c, [](auto& r) { r.on_start(JsonType::object); }); },
    [](void* c, const unsigned char* key, std::size_t length) {
      return guarded(c, [=](auto& r) { r.on_key(as_view(key, length)); });
    },
    [](void* c) { return guarded(c, [](auto& r) { r.on_end(); }); },
    [](void* c) { return guarded(c, [](auto& r) { r.on_start(JsonType::array); }); },
    [](void* c) { return guarded(c, [](auto& r) { r.on_end(); }); },
};

struct YajlFree {
  void operator()(yajl_handle handle) const noexcept { yajl_free(handle); }
};
using YajlHandle = std::unique_ptr<std::remove_pointer_t<yajl_handle>, YajlFree>;

Error malformed_json(yajl_handle handle, std::size_t offset, std::string_view source) {
  // Not verbose: the verbose form adds the text around the error and a
  // "(right here) ------^" line, which would be unreadable in one log line.
  unsigned char* raw = yajl_get_error(handle, 0, nullptr, 0);
  std::string text = raw != nullptr ? reinterpret_cast<const char*>(raw) : "unknown error";
  if (raw != nullptr) yajl_free_error(handle, raw);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return Error(EINVAL, std::string(source) + ": malformed JSON near byte offset " +
                           std::to_string(offset) + ": " + text);
}

// Space as yajl's lexer sees it: RFC 8259's four, plus \v and \f, which
// yajl accepts too.  The cursor below must skip exactly what yajl skipped.
bool is_json_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Runs yajl over the whole of `json`, feeding `reader`.  yajl's defaults
// stay: no comments, no trailing garbage, one top-level value, strings must
// be valid UTF-8.
void read_json(std::string_view json, DocumentReader& reader, std::string_view source) {
  if (std::all_of(json.begin(), json.end(), is_json_space)) {
    // Seed 002's lesson: an empty (not yet written) file is an error worth
    // naming plainly, not yajl's "premature EOF".
    throw Error(EINVAL, std::string(source) + ": malformed JSON: the document is empty");
  }
  const YajlHandle handle(yajl_alloc(&kCallbacks, nullptr, &reader));
  if (!handle) throw std::bad_alloc();
  yajl_status status =
      yajl_parse(handle.get(), reinterpret_cast<const unsigned char*>(json.data()), json.size());
  bool at_end = false;
  if (status == yajl_status_ok) {
    at_end = true;
    status = yajl_complete_parse(handle.get());
  }
  if (status == yajl_status_client_canceled && reader.failure) {
    try {
      std::rethrow_exception(reader.failure);
    } catch (const Error& e) {
      throw e.wrap(source);
    }
  }
  if (status != yajl_status_ok) {
    // What yajl_complete_parse finds wrong is at the end of the text; during
    // yajl_parse the count of bytes consumed is where it stopped.
    throw malformed_json(handle.get(), at_end ? json.size() : yajl_get_bytes_consumed(handle.get()),
                         source);
  }
}

std::optional<ExecCpuAffinity> affinity_of(DocumentReader& reader) {
  if (!reader.affinity_present || reader.affinity.empty()) return std::nullopt;
  return std::move(reader.affinity);
}

// --- Rewriting ------------------------------------------------------------

// Moves through JSON text that yajl has already accepted, so it assumes
// well-formed input and reports nothing; what it adds over yajl is byte
// positions.  Never recursive, so nesting depth costs nothing.
class Cursor {
 public:
  explicit Cursor(std::string_view text) noexcept : text_(text) {}

  [[nodiscard]] std::size_t position() const noexcept { return pos_; }
  [[nodiscard]] char peek() const noexcept { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void advance() noexcept { ++pos_; }
  void skip_space() noexcept {
    while (pos_ < text_.size() && is_json_space(text_[pos_])) ++pos_;
  }

  // At a '"': moves past the closing quote and returns the string as written
  // (quotes included).
  std::string_view skip_string() noexcept {
    const std::size_t begin = pos_++;
    while (pos_ < text_.size()) {
      const char c = text_[pos_++];
      if (c == '"') break;
      // The escaped byte is never the closing quote; the rest of a \uXXXX
      // escape is hex digits, which need no care.
      if (c == '\\') ++pos_;
    }
    return text_.substr(begin, pos_ - begin);
  }

  // Moves past one value of any kind.
  void skip_value() noexcept {
    const char first = peek();
    if (first == '"') {
      skip_string();
    } else if (first == '{' || first == '[') {
      std::size_t depth = 0;
      while (pos_ < text_.size()) {
        const char c = text_[pos_];
        if (c == '"') {
          skip_string();
          continue;
        }
        ++pos_;
        if (c == '{' || c == '[') {
          ++depth;
        } else if ((c == '}' || c == ']') && --depth == 0) {
          break;
        }
      }
    } else {
      // A number, true, false or null runs to the next delimiter.
      while (pos_ < text_.size() && !is_json_space(text_[pos_]) && text_[pos_] != ',' &&
             text_[pos_] != '}' && text_[pos_] != ']') {
        ++pos_;
      }
    }
  }

 private:
  std::string_view text_;
  std::size_t pos_ = 0;
};

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whether a JSON string token (quotes included, escapes valid) decodes to
// `name`, which is ASCII.  Keys may be written with escapes —
// "exec\u0043PUAffinity" is the same key to yajl and to every runtime — so
// the token is decoded, not compared.  An escape of anything outside ASCII
// (surrogates included) cannot match an ASCII name.
bool string_token_equals(std::string_view token, std::string_view name) noexcept {
  std::size_t i = 1;  // past the opening quote
  const std::size_t end = token.size() - 1;
  for (const char expected : name) {
    if (i >= end) return false;
    char c = token[i++];
    if (c == '\\') {
      const char escape = token[i++];
      switch (escape) {
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
          int code = 0;
          for (int k = 0; k < 4; ++k) code = code * 16 + hex_value(token[i++]);
          if (code >= 0x80) return false;
          c = static_cast<char>(code);
          break;
        }
        default: c = escape; break;  // \" \\ \/
      }
    }
    if (c != expected) return false;
  }
  return i == end;
}

// Where a top-level member is, and what surrounds it.
struct TopLevelMember {
  std::size_t open = 0;   // the top-level '{'
  std::size_t first = 0;  // the first byte after it that is not space: a key or '}'
  std::size_t close = 0;  // the top-level '}'
  bool found = false;
  std::size_t key_begin = 0;
  std::size_t value_begin = 0;
  std::size_t value_end = 0;
  std::optional<std::size_t> previous_value_end;  // of the member before it
  std::optional<std::size_t> next_key_begin;      // of the member after it
};

TopLevelMember find_top_level_member(std::string_view json, std::string_view key,
                                     std::string_view source) {
  TopLevelMember member;
  Cursor cursor(json);
  cursor.skip_space();
  member.open = cursor.position();
  cursor.advance();
  cursor.skip_space();
  member.first = cursor.position();
  std::optional<std::size_t> previous_value_end;
  bool want_next_key = false;
  while (cursor.peek() == '"') {
    const std::size_t key_begin = cursor.position();
    const bool is_wanted = string_token_equals(cursor.skip_string(), key);
    if (want_next_key) {
      member.next_key_begin = key_begin;
      want_next_key = false;
    }
    cursor.skip_space();
    cursor.advance();  // ':'
    cursor.skip_space();
    const std::size_t value_begin = cursor.position();
    cursor.skip_value();
    if (is_wanted) {
      if (member.found) {
        throw Error(EINVAL, std::string(source) + ": " +
                                duplicated_key_message("process." + std::string(key)));
      }
      member.found = true;
      member.key_begin = key_begin;
      member.value_begin = value_begin;
      member.value_end = cursor.position();
      member.previous_value_end = previous_value_end;
      want_next_key = true;
    }
    previous_value_end = cursor.position();
    cursor.skip_space();
    if (cursor.peek() != ',') break;
    cursor.advance();
    cursor.skip_space();
  }
  member.close = cursor.position();
  return member;
}

bool is_set(const std::optional<CpuSet>& list) noexcept {
  return list && !list->empty();
}

// The compact value written for `affinity`, members in the spec's order.
std::string affinity_json(const ExecCpuAffinity& affinity) {
  std::string out = "{";
  if (is_set(affinity.initial)) out += "\"initial\":\"" + affinity.initial->format() + '"';
  if (is_set(affinity.final)) {
    if (out.size() > 1) out += ',';
    out += "\"final\":\"" + affinity.final->format() + '"';
  }
  out += '}';
  return out;
}

std::string spliced(std::string_view json, std::size_t begin, std::size_t end,
                    std::string_view replacement) {
  std::string out;
  out.reserve(json.size() - (end - begin) + replacement.size());
  out.append(json.substr(0, begin));
  out.append(replacement);
  out.append(json.substr(end));
  return out;
}

// --- Files ----------------------------------------------------------------

std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "of an unknown type";
}

[[noreturn]] void fail_reading(const std::string& path, int code, const std::string& why) {
  throw Error(code, "cannot read " + execaff::quoted(path) + ": " + why);
}

[[noreturn]] void fail_too_large(const std::string& path, std::size_t size) {
  fail_reading(path, EFBIG,
               errno_text(EFBIG) + " (" + std::to_string(size) + " bytes or more, the limit is " +
                   std::to_string(kMaxDocumentBytes) + ")");
}

}  // namespace

ProcessDocument parse_process_document(std::string_view json, std::string_view source) {
  DocumentReader reader(Node::process_root);
  read_json(json, reader, source);
  return ProcessDocument{affinity_of(reader)};
}

ConfigDocument parse_config_document(std::string_view json, std::string_view source) {
  DocumentReader reader(Node::config_root);
  read_json(json, reader, source);
  ConfigDocument document;
  document.affinity = affinity_of(reader);
  document.annotations = std::move(reader.annotations);
  document.cpuset = std::move(reader.cpuset);
  document.cgroups_path = std::move(reader.cgroups_path);
  return document;
}

std::string read_document_file(const std::string& path) {
  // O_NONBLOCK: a FIFO at the path would otherwise block open() until some
  // writer came; fstat below then refuses it.  It changes nothing for the
  // regular files we read.  O_NOCTTY: a terminal must not become ours.
  const int raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (raw_fd < 0) {
    const int code = errno;
    fail_reading(path, code, errno_text(code));
  }
  const FileDescriptor fd(raw_fd);
  return read_opened_document(fd.get(), path);
}

std::string read_opened_document(int fd, const std::string& path) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    const int code = errno;
    fail_reading(path, code, errno_text(code));
  }
  if (!S_ISREG(status.st_mode)) {
    fail_reading(path, S_ISDIR(status.st_mode) ? EISDIR : EINVAL,
                 "not a regular file but " + file_kind(status.st_mode));
  }
  const auto size = static_cast<std::size_t>(status.st_size);
  if (size > kMaxDocumentBytes) fail_too_large(path, size);

  // Read to the end rather than trust st_size: a file being written while we
  // read (seed 002) may have grown.  One byte past the expected size shows
  // growth without a second pass.
  std::string content(size + 1, '\0');
  std::size_t filled = 0;
  for (;;) {
    if (filled == content.size()) {
      if (filled > kMaxDocumentBytes) fail_too_large(path, filled);
      content.resize(std::min(content.size() * 2, kMaxDocumentBytes + 1));
    }
    const ssize_t got = ::read(fd, content.data() + filled, content.size() - filled);
    if (got < 0) {
      const int code = errno;
      if (code == EINTR) continue;
      fail_reading(path, code, errno_text(code));
    }
    if (got == 0) break;
    filled += static_cast<std::size_t>(got);
  }
  if (filled > kMaxDocumentBytes) fail_too_large(path, filled);
  content.resize(filled);
  return content;
}

std::string process_json_with_affinity(std::string_view json,
                                       const std::optional<ExecCpuAffinity>& affinity,
                                       std::string_view source) {
  // yajl first: the cursor below trusts the text to be well-formed JSON
  // whose top level is an object.  The old value is not checked: it is
  // being replaced or removed.
  DocumentReader reader(Node::rewrite_root);
  read_json(json, reader, source);
  const TopLevelMember member = find_top_level_member(json, kAffinityKey, source);

  const bool wanted = affinity && (is_set(affinity->initial) || is_set(affinity->final));
  if (wanted) {
    const std::string value = affinity_json(*affinity);
    if (member.found) return spliced(json, member.value_begin, member.value_end, value);
    // Inserted as the first member, followed by the same spacing the
    // document has before its first key, so pretty-printed files stay so.
    std::string inserted = "\"" + std::string(kAffinityKey) + "\":" + value;
    if (json[member.first] != '}') {
      inserted += ',';
      inserted.append(json.substr(member.open + 1, member.first - member.open - 1));
    }
    return spliced(json, member.first, member.first, inserted);
  }

  if (!member.found) return std::string(json);
  // Exactly one comma goes with the member: the one after it when a member
  // follows (up to that member's key), else the one before it (from the end
  // of the previous value).  The only member takes the braces' inside with it.
  if (member.next_key_begin) return spliced(json, member.key_begin, *member.next_key_begin, {});
  if (member.previous_value_end) {
    return spliced(json, *member.previous_value_end, member.value_end, {});
  }
  return spliced(json, member.open + 1, member.close, {});
}

std::string process_json_with_args_prefix(std::string_view json,
                                          const std::vector<std::string>& prefix,
                                          std::string_view source) {
  DocumentReader reader(Node::rewrite_root);
  read_json(json, reader, source);
  const TopLevelMember member = find_top_level_member(json, "args", source);
  if (!member.found || json[member.value_begin] != '[') {
    throw Error(EINVAL, std::string(source) + ": args: expected an array of strings");
  }
  std::string inserted;
  for (const std::string& arg : prefix) {
    if (!inserted.empty()) inserted += ',';
    inserted += json_string(arg);
  }
  // An empty array gets no trailing comma.
  std::size_t after = member.value_begin + 1;
  while (after < member.value_end && is_json_space(json[after])) ++after;
  if (json[after] != ']' && !inserted.empty()) inserted += ',';
  return spliced(json, member.value_begin + 1, member.value_begin + 1, inserted);
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + '"';
}

}  // namespace execaff
