// SPDX-License-Identifier: LGPL-2.1-or-later
// Rewriting a process file that has been read once: its layout (where each
// top-level member is, recorded by the reader) says where to cut, yajl's
// generator writes what goes in, and every other byte stays as it was — a
// runtime that reads the file after us sees the caller's members exactly
// as the caller wrote them, unknown ones included.
#include <cerrno>
#include <utility>

#include "json_writer.hpp"
#include "spec_handlers.hpp"
#include "spec_json.hpp"

namespace execaff {
namespace {

constexpr std::string_view kAffinityKey = "execCPUAffinity";

bool is_set(const std::optional<CpuSet>& list) noexcept {
  return list && !list->empty();
}

// Bytes [begin, end) of the text replaced by `with`.
struct Edit {
  std::size_t begin;
  std::size_t end;
  std::string with;
};

std::optional<Edit> affinity_edit(const ProcessDocument& document,
                                  const std::optional<ExecCpuAffinity>& affinity) {
  const ProcessLayout& layout = document.layout;
  const std::string_view text = document.text;
  const bool wanted = affinity && (is_set(affinity->initial) || is_set(affinity->final));
  if (wanted) {
    json::Writer out;
    if (layout.affinity) {
      write_exec_cpu_affinity(out, *affinity);
      const MemberSpan& member = layout.members[*layout.affinity];
      return Edit{member.value_begin, member.value_end, out.take()};
    }
    // Inserted as the first member, followed by the same spacing the
    // document has before its first key, so pretty-printed files stay so.
    out.string(kAffinityKey).then(":");
    write_exec_cpu_affinity(out, *affinity);
    const bool others_follow = text[layout.first] != '}';
    if (others_follow) out.then(",");
    std::string inserted = out.take();
    if (others_follow)
      inserted.append(text.substr(layout.open + 1, layout.first - layout.open - 1));
    return Edit{layout.first, layout.first, std::move(inserted)};
  }
  if (!layout.affinity) return std::nullopt;
  // Exactly one comma goes with the member: the one after it when a member
  // follows (up to that member's key), else the one before it (from the end
  // of the previous value).  The only member takes the braces' inside with it.
  const std::size_t at = *layout.affinity;
  const std::vector<MemberSpan>& members = layout.members;
  if (at + 1 < members.size()) return Edit{members[at].key_begin, members[at + 1].key_begin, {}};
  if (at > 0) return Edit{members[at - 1].value_end, members[at].value_end, {}};
  return Edit{layout.open + 1, layout.close, {}};
}

Edit args_edit(const ProcessDocument& document, const std::vector<std::string>& prefix) {
  const ProcessLayout& layout = document.layout;
  const std::string_view text = document.text;
  if (!layout.args || text[layout.members[*layout.args].value_begin] != '[') {
    throw Error(EINVAL, document.source + ": process.args: expected an array of strings");
  }
  const MemberSpan& args = layout.members[*layout.args];
  json::Writer out;
  for (std::size_t i = 0; i < prefix.size(); ++i) {
    if (i > 0) out.then(",");
    out.string(prefix[i]);
  }
  // An empty array gets no trailing comma.
  std::size_t after = args.value_begin + 1;
  while (after < args.value_end && json::is_space(text[after])) ++after;
  if (text[after] != ']') out.then(",");
  return Edit{args.value_begin + 1, args.value_begin + 1, out.take()};
}

}  // namespace

void write_exec_cpu_affinity(json::Writer& out, const ExecCpuAffinity& affinity) {
  out.open_object();
  if (is_set(affinity.initial)) out.member("initial", affinity.initial->format());
  if (is_set(affinity.final)) out.member("final", affinity.final->format());
  out.close_object();
}

std::string rewritten_process(const ProcessDocument& document,
                              const std::optional<ExecCpuAffinity>& affinity,
                              const std::vector<std::string>& args_prefix) {
  std::vector<Edit> edits;
  if (auto edit = affinity_edit(document, affinity)) edits.push_back(std::move(*edit));
  if (!args_prefix.empty()) edits.push_back(args_edit(document, args_prefix));
  // The two never overlap: they are in different members, or at the first
  // key and inside a value.
  if (edits.size() == 2 && edits[1].begin < edits[0].begin) std::swap(edits[0], edits[1]);
  const std::string_view text = document.text;
  std::string out;
  out.reserve(text.size() + 256);
  std::size_t done = 0;
  for (const Edit& edit : edits) {
    out.append(text.substr(done, edit.begin - done));
    out.append(edit.with);
    done = edit.end;
  }
  out.append(text.substr(done));
  return out;
}

std::string process_json_with_affinity(std::string_view text,
                                       const std::optional<ExecCpuAffinity>& affinity,
                                       std::string_view source) {
  return rewritten_process(spec::read_process_document(text, source, false), affinity);
}

}  // namespace execaff
