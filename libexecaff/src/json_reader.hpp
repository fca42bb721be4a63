// SPDX-License-Identifier: LGPL-2.1-or-later
// The one JSON reader: yajl's event parser driving handlers that keep what
// they need and skip the rest, so that every document is read once, into a
// typed struct, and a member nobody reads costs nothing but lexing.
//
// One policy for every document (process files, config.json, runtime state,
// the node config): RFC 8259 with yajl's defaults — no comments (runc, Go's
// encoding/json, refuses them in the files it reads after us), strings of
// valid UTF-8, one value and nothing after it — and yajl's white space
// (RFC 8259's four plus \v and \f).  Numbers are handed over as written, so
// one that fits no C type (an rlimit of 2^64) is no error where nobody reads
// it.  Nesting costs no recursion: skipped values are counted, not walked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"

namespace execaff::json {

enum class Kind : std::uint8_t { null, boolean, number, string, object, array };

// A scalar as yajl hands it over: a string's bytes (escapes decoded), a
// number as written, "true" or "false", "null".
struct Scalar {
  Kind kind = Kind::null;
  std::string_view text;
};

class Reader;

// The events of one value.  For a scalar the reader calls on_scalar; for an
// object or an array on_object / on_array, whose result (usually `this`,
// nullptr to skip the contents) then gets on_member for each member (its
// result reads the member's value, nullptr skips it) or on_element for each
// element, on_member_end after each member's value, and on_end.
//
// The defaults refuse what a handler does not accept, with the path and
// what was found: `process.args[2]: expected a string, got a number 5`.  A
// handler constructed with a problem slot keeps its first problem there
// (the source in front) instead of refusing the document: for values only
// some callers need, whose errors must not stop the others.
class Handler {
 public:
  explicit Handler(std::string_view expected = "an object",
                   std::optional<Error>* problem = nullptr) noexcept
      : expected_(expected), problem_(problem) {}
  virtual ~Handler() = default;
  Handler(const Handler&) = delete;
  Handler& operator=(const Handler&) = delete;

  virtual void on_scalar(Reader& reader, const Scalar& value);
  virtual Handler* on_object(Reader& reader);
  virtual Handler* on_array(Reader& reader);
  virtual Handler* on_member(Reader& reader, std::string_view key);
  virtual Handler* on_element(Reader& reader);
  virtual void on_member_end(Reader& reader);
  virtual void on_end(Reader& reader);

  // Where this value keeps its problems; nullptr: it refuses the document.
  [[nodiscard]] std::optional<Error>* problem_slot() const noexcept { return problem_; }

 protected:
  // For a handler whose slot lives in what it reads: set once that exists.
  void keep_problems_in(std::optional<Error>* problem) noexcept { problem_ = problem; }
  // Throws `error`, or keeps it in the problem slot.
  void report(const Reader& reader, const Error& error) const;
  // report() of "expected <expected>, got <what>".
  void refuse(const Reader& reader, Kind got, std::string_view text = {}) const;

 private:
  std::string_view expected_;
  std::optional<Error>* problem_;
};

class Reader {
 public:
  // The path of the value being read: `process.execCPUAffinity.initial`,
  // `linux.seccomp.syscalls[3]`; "" for the top level of a document whose
  // top level has no name.
  [[nodiscard]] std::string path() const;
  // Error(EINVAL, "<path>: <reason>") (just the reason at an unnamed top).
  [[nodiscard]] Error error(std::string_view reason) const;
  // Error(EINVAL) "<path>: expected <expected>, got <kind and value>".
  [[nodiscard]] Error type_error(std::string_view expected, Kind got,
                                 std::string_view text = {}) const;
  // The document, and how far yajl has read it: just past the token of the
  // current event (the '{' of on_object, a string's closing quote, ...).
  [[nodiscard]] std::string_view text() const noexcept { return text_; }
  [[nodiscard]] std::size_t offset() const noexcept;
  [[nodiscard]] std::string_view source() const noexcept { return source_; }

 private:
  friend void read_value(std::string_view, Handler&, std::string_view, std::string_view);
  friend struct Events;
  Reader(std::string_view text, std::string_view source, std::string_view root_name);

  // How a value is named in a path: a member's key or an element's index.
  struct Component {
    bool present = false;
    bool is_index = false;
    std::size_t index = 0;
    std::string_view key;   // into the document, when the key had no escapes
    std::string owned_key;  // else a copy: yajl reuses its decoding buffer
    [[nodiscard]] std::string_view name() const noexcept {
      return owned_key.empty() ? key : std::string_view(owned_key);
    }
  };
  struct Frame {
    Handler* handler;  // gets the members or elements, and on_end
    bool array = false;
    std::size_t next_index = 0;
    Component component;
  };
  void name_member(std::string_view key);
  void name_element(Frame& frame);
  // The handler of a value that starts now (an element's from on_element).
  [[nodiscard]] Handler* starting_value();
  // A value is complete: its parent object hears on_member_end.
  void value_done();
  void append_component(std::string& path, const Component& component) const;

  std::string_view text_;
  std::string_view source_;
  std::string_view root_name_;
  void* handle_ = nullptr;
  std::vector<Frame> frames_;
  Handler* pending_ = nullptr;  // reads the value about to start; nullptr skips it
  Component pending_component_;
  std::size_t skipped_depth_ = 0;
};

// Reads `text`, one whole document, into `root`.  `source` names it in
// every message (`process file "/tmp/p.json"`); `root_name` is the top
// level's name in paths ("process" for a process file).  Throws Error
// (EINVAL): `<source>: malformed JSON near byte offset N: <yajl's reason>`,
// `<source>: malformed JSON: the document is empty`, or what a handler
// refused, `<source>: <path>: <reason>`.  The first problem in the text wins.
void read(std::string_view text, Handler& root, std::string_view source,
          std::string_view root_name = {});

// Reading a few members of a large document without lexing the rest.
// The members on `paths` (keys from the top level down) are matched by
// their raw key bytes, and every other value is passed over by its
// structure alone: strings closed, brackets balanced and matched, only
// white space after the document.  Neither the UTF-8 of skipped strings
// nor the grammar of skipped numbers is checked.  For documents a runtime
// writes and the shim needs two members of (runc's state.json: 6 KiB and
// more, lexed whole by yajl in 190 000 instructions); the values found are
// then read with read_value(), by the one reader.  A complete skim is
// counted as a skim of `source` (read_tally.hpp).
struct Skimmed {
  // False when the skim met what it does not judge: a key written with an
  // escape, a key on a path met twice, a structural error, a document that
  // is not an object.  The caller then reads the document whole, whose
  // errors name what is wrong.
  bool complete = false;
  // Per path, the value's bytes; nullopt when the member is absent (or a
  // member on its way is not an object).
  std::vector<std::optional<std::string_view>> values;
};
[[nodiscard]] Skimmed skim(std::string_view text,
                           const std::vector<std::vector<std::string_view>>& paths,
                           std::string_view source);

// read() of a value skim() found: `root_name` is its path in the document
// (`config.labels`); not counted as a parse.
void read_value(std::string_view value, Handler& root, std::string_view source,
                std::string_view root_name);

// White space as yajl's lexer sees it: RFC 8259's four, plus \v and \f.
[[nodiscard]] constexpr bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// A member name as messages show it: bare when plain printable ASCII
// (`annotations.exec-cpu-affinity.execaff.io`), quoted otherwise.
[[nodiscard]] std::string path_component(std::string_view key);
// A value in a message, cut short past 64 bytes (never inside a UTF-8
// sequence), quoted.
[[nodiscard]] std::string shown_string(std::string_view value);

// The number `text` (as written in the document) as an unsigned 64-bit
// integer: decimal digits only.  nullopt for a sign, a fraction, an
// exponent or a value past 2^64-1.
[[nodiscard]] std::optional<std::uint64_t> unsigned_number(std::string_view text) noexcept;

}  // namespace execaff::json
