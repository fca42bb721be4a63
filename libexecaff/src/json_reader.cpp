// SPDX-License-Identifier: LGPL-2.1-or-later
#include "json_reader.hpp"

#include <yajl/yajl_parse.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <exception>
#include <memory>
#include <new>
#include <type_traits>

#include "read_tally.hpp"

namespace execaff::json {
namespace {

// Values are shown in messages; a hostile 16 MiB string must not become a
// 16 MiB message.
constexpr std::size_t kMaxShownBytes = 64;

// The "got ..." half of a type error: the kind and, for a scalar, its value.
std::string described(Kind kind, std::string_view text) {
  switch (kind) {
    case Kind::null: return "null";
    case Kind::boolean: return "a boolean " + std::string(text);
    case Kind::number:
      return "a number " + (text.size() <= kMaxShownBytes
                                ? std::string(text)
                                : std::string(text.substr(0, kMaxShownBytes)) + "...");
    case Kind::string: return "a string " + shown_string(text);
    case Kind::object: return "an object";
    case Kind::array: return "an array";
  }
  return "a value";
}

struct YajlFree {
  void operator()(yajl_handle handle) const noexcept { yajl_free(handle); }
};
using YajlHandle = std::unique_ptr<std::remove_pointer_t<yajl_handle>, YajlFree>;

// yajl's reason without its verbose context (yajl_get_error's second
// argument), which quotes the input over several lines.
Error malformed_json(yajl_handle handle, std::size_t offset, std::string_view source) {
  unsigned char* raw = yajl_get_error(handle, 0, nullptr, 0);
  std::string text = raw != nullptr ? reinterpret_cast<const char*>(raw) : "unknown error";
  if (raw != nullptr) yajl_free_error(handle, raw);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return Error(EINVAL, std::string(source) + ": malformed JSON near byte offset " +
                           std::to_string(offset) + ": " + text);
}

std::string_view view(const unsigned char* text, std::size_t length) noexcept {
  return {reinterpret_cast<const char*>(text), length};
}

}  // namespace

// --- Handler --------------------------------------------------------------

void Handler::on_scalar(Reader& reader, const Scalar& value) {
  refuse(reader, value.kind, value.text);
}

Handler* Handler::on_object(Reader& reader) {
  refuse(reader, Kind::object);
  return nullptr;
}

Handler* Handler::on_array(Reader& reader) {
  refuse(reader, Kind::array);
  return nullptr;
}

Handler* Handler::on_member(Reader& /*reader*/, std::string_view /*key*/) {
  return nullptr;
}

Handler* Handler::on_element(Reader& /*reader*/) {
  return nullptr;
}

void Handler::on_member_end(Reader& /*reader*/) {}

void Handler::on_end(Reader& /*reader*/) {}

void Handler::report(const Reader& reader, const Error& error) const {
  if (problem_ == nullptr) throw error;
  if (!*problem_) *problem_ = error.wrap(reader.source());
}

void Handler::refuse(const Reader& reader, Kind got, std::string_view text) const {
  report(reader, reader.type_error(expected_, got, text));
}

// --- Reader ---------------------------------------------------------------

// yajl's callbacks.  An exception must not cross yajl's C frames: it is
// kept and the parse cancelled, then rethrown by read().
struct Events {
  struct Context {
    Reader reader;
    std::exception_ptr failure;
  };

  template <typename Body>
  static int guarded(void* context, Body&& body) noexcept {
    auto* c = static_cast<Context*>(context);
    try {
      body(c->reader);
      return 1;
    } catch (...) {
      c->failure = std::current_exception();
      return 0;
    }
  }

  static void scalar(Reader& r, Kind kind, std::string_view text) {
    if (r.skipped_depth_ > 0) return;
    if (Handler* handler = r.starting_value()) handler->on_scalar(r, Scalar{kind, text});
    r.value_done();
  }

  static void start(Reader& r, bool array) {
    if (r.skipped_depth_ > 0) {
      ++r.skipped_depth_;
      return;
    }
    Handler* handler = r.starting_value();
    Handler* inner = nullptr;
    if (handler != nullptr) inner = array ? handler->on_array(r) : handler->on_object(r);
    if (inner == nullptr) {
      r.skipped_depth_ = 1;
      return;
    }
    r.frames_.push_back(Reader::Frame{inner, array, 0, std::move(r.pending_component_)});
    r.pending_component_ = {};
    r.pending_ = nullptr;
  }

  static void key(Reader& r, std::string_view name) {
    if (r.skipped_depth_ > 0) return;
    r.name_member(name);
    r.pending_ = r.frames_.back().handler->on_member(r, name);
  }

  static void end(Reader& r) {
    if (r.skipped_depth_ > 0) {
      if (--r.skipped_depth_ == 0) r.value_done();
      return;
    }
    r.frames_.back().handler->on_end(r);
    r.frames_.pop_back();
    r.value_done();
  }

  static constexpr yajl_callbacks kCallbacks = {
      [](void* c) { return guarded(c, [](Reader& r) { scalar(r, Kind::null, "null"); }); },
      [](void* c, int b) {
        return guarded(c, [b](Reader& r) { scalar(r, Kind::boolean, b ? "true" : "false"); });
      },
      nullptr,  // integers and doubles arrive as text, below
      nullptr,
      [](void* c, const char* s, std::size_t n) {
        return guarded(c, [=](Reader& r) { scalar(r, Kind::number, std::string_view(s, n)); });
      },
      [](void* c, const unsigned char* s, std::size_t n) {
        return guarded(c, [=](Reader& r) { scalar(r, Kind::string, view(s, n)); });
      },
      [](void* c) { return guarded(c, [](Reader& r) { start(r, false); }); },
      [](void* c, const unsigned char* s, std::size_t n) {
        return guarded(c, [=](Reader& r) { key(r, view(s, n)); });
      },
      [](void* c) { return guarded(c, [](Reader& r) { end(r); }); },
      [](void* c) { return guarded(c, [](Reader& r) { start(r, true); }); },
      [](void* c) { return guarded(c, [](Reader& r) { end(r); }); },
  };
};

Reader::Reader(std::string_view text, std::string_view source, std::string_view root_name)
    : text_(text), source_(source), root_name_(root_name) {
  frames_.reserve(8);
}

std::size_t Reader::offset() const noexcept {
  return yajl_get_bytes_consumed(static_cast<yajl_handle>(handle_));
}

void Reader::name_member(std::string_view key) {
  pending_component_.present = true;
  pending_component_.is_index = false;
  // yajl hands over a key without escapes in place, in the document; one
  // with escapes from a buffer it reuses for the next string.
  if (key.data() >= text_.data() && key.data() + key.size() <= text_.data() + text_.size()) {
    pending_component_.key = key;
    pending_component_.owned_key.clear();
  } else {
    pending_component_.key = {};
    pending_component_.owned_key.assign(key);
  }
}

void Reader::name_element(Frame& frame) {
  pending_component_.present = true;
  pending_component_.is_index = true;
  pending_component_.index = frame.next_index++;
}

Handler* Reader::starting_value() {
  if (!frames_.empty() && frames_.back().array) {
    Frame& frame = frames_.back();
    name_element(frame);
    pending_ = frame.handler->on_element(*this);
  }
  return pending_;
}

void Reader::value_done() {
  pending_component_.present = false;
  pending_ = nullptr;
  if (!frames_.empty() && !frames_.back().array) frames_.back().handler->on_member_end(*this);
}

void Reader::append_component(std::string& path, const Component& component) const {
  if (!component.present) return;
  if (component.is_index) {
    path += "[" + std::to_string(component.index) + "]";
    return;
  }
  if (!path.empty()) path += '.';
  path += path_component(component.name());
}

std::string Reader::path() const {
  std::string path(root_name_);
  for (const Frame& frame : frames_) append_component(path, frame.component);
  append_component(path, pending_component_);
  return path;
}

Error Reader::error(std::string_view reason) const {
  const std::string where = path();
  return Error(EINVAL, where.empty() ? std::string(reason) : where + ": " + std::string(reason));
}

Error Reader::type_error(std::string_view expected, Kind got, std::string_view text) const {
  const std::string where = path();
  if (where.empty()) {
    return Error(EINVAL, "expected " + std::string(expected) + " at the top level, got " +
                             described(got, text));
  }
  return Error(EINVAL,
               where + ": expected " + std::string(expected) + ", got " + described(got, text));
}

void read_value(std::string_view text, Handler& root, std::string_view source,
                std::string_view root_name) {
  if (std::all_of(text.begin(), text.end(), is_space)) {
    // Seed 002's lesson: an empty (not yet written) file is an error worth
    // naming plainly, not yajl's "premature EOF".
    throw Error(EINVAL, std::string(source) + ": malformed JSON: the document is empty");
  }
  Events::Context context{Reader(text, source, root_name), nullptr};
  context.reader.pending_ = &root;
  const YajlHandle handle(yajl_alloc(&Events::kCallbacks, nullptr, &context));
  if (!handle) throw std::bad_alloc();
  context.reader.handle_ = handle.get();
  yajl_status status =
      yajl_parse(handle.get(), reinterpret_cast<const unsigned char*>(text.data()), text.size());
  bool at_end = false;
  if (status == yajl_status_ok) {
    at_end = true;
    status = yajl_complete_parse(handle.get());
  }
  if (status == yajl_status_client_canceled && context.failure) {
    try {
      std::rethrow_exception(context.failure);
    } catch (const Error& e) {
      throw e.wrap(source);
    }
  }
  if (status != yajl_status_ok) {
    // What yajl_complete_parse finds wrong is at the end of the text; during
    // yajl_parse the count of bytes consumed is where it stopped.
    throw malformed_json(handle.get(), at_end ? text.size() : yajl_get_bytes_consumed(handle.get()),
                         source);
  }
}

void read(std::string_view text, Handler& root, std::string_view source,
          std::string_view root_name) {
  tally::json_parsed(source);
  read_value(text, root, source, root_name);
}

std::string shown_string(std::string_view value) {
  if (value.size() <= kMaxShownBytes) return quoted(value);
  std::size_t cut = kMaxShownBytes;
  // Never cut a UTF-8 sequence in half.
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return quoted(value.substr(0, cut)) + "... (" + std::to_string(value.size()) + " bytes)";
}

std::string path_component(std::string_view key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte > 0x20 && byte < 0x7f && c != '"' && c != '\\';
  });
  return plain ? std::string(key) : shown_string(key);
}

std::optional<std::uint64_t> unsigned_number(std::string_view text) noexcept {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace execaff::json
