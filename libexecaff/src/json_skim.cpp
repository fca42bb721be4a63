// SPDX-License-Identifier: LGPL-2.1-or-later
// json::skim (json_reader.hpp): a few members of a large document found by
// its structure alone, for the one reader to read.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json_reader.hpp"
#include "read_tally.hpp"

namespace execaff::json {

namespace {

// The bytes that end a run the skim passes over: in a string, its quote,
// a backslash or a control character; in a skipped object or array, a
// string's quote or a bracket.  Looked up in a table: a quarter fewer
// instructions than the comparisons (callgrind, runc's state.json).
struct StopBytes {
  bool in_string[256] = {};
  bool in_container[256] = {};
  constexpr StopBytes() {
    for (unsigned c = 0; c < 0x20; ++c) in_string[c] = true;
    in_string[static_cast<unsigned char>('"')] = true;
    in_string[static_cast<unsigned char>('\\')] = true;
    for (const char c : {'"', '{', '}', '[', ']'})
      in_container[static_cast<unsigned char>(c)] = true;
  }
};
constexpr StopBytes kStop;
constexpr const bool* kStringStop = kStop.in_string;
constexpr const bool* kContainerStop = kStop.in_container;

// skim()'s walk: a position in the text and the members wanted.  Every
// function returns false for what the skim does not judge.
class Skimmer {
 public:
  Skimmer(std::string_view text, const std::vector<std::vector<std::string_view>>& paths,
          Skimmed& out) noexcept
      : text_(text), paths_(paths), out_(out) {}

  bool document() {
    if (paths_.empty() || paths_.size() > 32) return false;
    for (const auto& path : paths_) {
      if (path.empty()) return false;
    }
    const std::uint32_t all =
        paths_.size() == 32 ? ~std::uint32_t{0} : (std::uint32_t{1} << paths_.size()) - 1;
    skip_space();
    if (!object(0, all)) return false;
    skip_space();
    return at_ == text_.size();
  }

 private:
  void skip_space() noexcept {
    while (at_ < text_.size() && is_space(text_[at_])) ++at_;
  }
  bool take(char c) noexcept {
    skip_space();
    if (at_ >= text_.size() || text_[at_] != c) return false;
    ++at_;
    return true;
  }

  // From the opening quote to just past the closing one.  A control
  // character in a string is malformed JSON: not ours to judge.
  bool string() noexcept {
    ++at_;
    while (at_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[at_]);
      if (!kStringStop[c]) {
        ++at_;
        continue;
      }
      if (c == '"') {
        ++at_;
        return true;
      }
      if (c < 0x20) return false;
      at_ += c == '\\' ? 2 : 1;
    }
    return false;
  }

  // A member name without escapes, as written.
  bool key(std::string_view& name) noexcept {
    skip_space();
    if (at_ >= text_.size() || text_[at_] != '"') return false;
    const std::size_t start = at_ + 1;
    if (!string()) return false;
    name = text_.substr(start, at_ - 1 - start);
    return name.find('\\') == std::string_view::npos;
  }

  // Any value: a string, an object or array (brackets matched), or a
  // scalar up to the next delimiter.
  bool value() {
    skip_space();
    if (at_ >= text_.size()) return false;
    const char first = text_[at_];
    if (first == '"') return string();
    if (first != '{' && first != '[') {
      const std::size_t start = at_;
      while (at_ < text_.size() && !is_space(text_[at_]) && text_[at_] != ',' &&
             text_[at_] != '}' && text_[at_] != ']') {
        ++at_;
      }
      return at_ > start;
    }
    closers_.clear();
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (!kContainerStop[static_cast<unsigned char>(c)]) {
        ++at_;
        continue;
      }
      if (c == '"') {
        if (!string()) return false;
        continue;
      }
      if (c == '{' || c == '[') {
        closers_.push_back(c == '{' ? '}' : ']');
      } else if (c == '}' || c == ']') {
        if (closers_.empty() || closers_.back() != c) return false;
        closers_.pop_back();
        if (closers_.empty()) {
          ++at_;
          return true;
        }
      }
      ++at_;
    }
    return false;
  }

  // An object whose members at `depth` may be on the paths in `wanted` (a
  // bit per path: skim() takes at most 32).
  bool object(std::size_t depth, std::uint32_t wanted) {
    if (!take('{')) return false;
    if (take('}')) return true;
    std::uint32_t met = 0;
    do {
      std::string_view name;
      if (!key(name) || !take(':')) return false;
      std::uint32_t deeper = 0;
      std::optional<std::size_t> here;
      for (std::size_t i = 0; i < paths_.size(); ++i) {
        const std::uint32_t bit = std::uint32_t{1} << i;
        if ((wanted & bit) == 0 || paths_[i][depth] != name) continue;
        // A member on a path met twice: which one counts is the reader's
        // rule to apply, not the skim's.
        if ((met & bit) != 0) return false;
        met |= bit;
        if (paths_[i].size() == depth + 1) {
          here = i;
        } else {
          deeper |= bit;
        }
      }
      skip_space();
      const std::size_t start = at_;
      if (deeper != 0 && at_ < text_.size() && text_[at_] == '{') {
        if (!object(depth + 1, deeper)) return false;
      } else if (!value()) {
        return false;
      }
      if (here) out_.values[*here] = text_.substr(start, at_ - start);
    } while (take(','));
    return take('}');
  }

  std::string_view text_;
  const std::vector<std::vector<std::string_view>>& paths_;
  Skimmed& out_;
  std::size_t at_ = 0;
  std::string closers_;
};

}  // namespace

Skimmed skim(std::string_view text, const std::vector<std::vector<std::string_view>>& paths,
             std::string_view source) {
  Skimmed out;
  out.values.resize(paths.size());
  out.complete = Skimmer(text, paths, out).document();
  if (out.complete) {
    tally::json_skimmed(source);
  } else {
    out.values.assign(paths.size(), std::nullopt);
  }
  return out;
}

}  // namespace execaff::json
