#include "tests/bench/completion_replay.h"

#include <algorithm>
#include <stdexcept>

#include "base/mix.h"

namespace vsynth::bench {

namespace {

// (start, end) byte offsets of each line, '\n' excluded; a final line without '\n' counts.
std::vector<std::pair<std::size_t, std::size_t>> line_spans(std::string_view text) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t nl = text.find('\n', at);
    const std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    spans.emplace_back(at, end);
    at = end + 1;
  }
  return spans;
}

std::size_t indent_of(std::string_view line) {
  const std::size_t i = line.find_first_not_of(" \t");
  return i == std::string_view::npos ? line.size() : i;
}

std::string_view trim_right(std::string_view s) {
  const std::size_t e = s.find_last_not_of(" \t\r");
  return e == std::string_view::npos ? std::string_view() : s.substr(0, e + 1);
}

// Occurrences of a triple quote (""" or ''') in the line: an odd count toggles a block.
int triple_quotes(std::string_view line) {
  int n = 0;
  for (std::string_view q : {std::string_view("\"\"\""), std::string_view("'''")}) {
    for (std::size_t at = line.find(q); at != std::string_view::npos; at = line.find(q, at + 3)) {
      ++n;
    }
  }
  return n;
}

}  // namespace

double edit_similarity(std::string_view a, std::string_view b) {
  if (a.empty() && b.empty()) return 1.0;
  // One row of the Levenshtein table at a time: row[j] = distance(a[0, i), b[0, j)).
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];  // distance(a[0, i - 1), b[0, j - 1))
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  const double longest = static_cast<double>(std::max(a.size(), b.size()));
  return 1.0 - static_cast<double>(row[b.size()]) / longest;
}

std::string first_line(std::string_view text) {
  const std::size_t nl = text.find('\n');
  return std::string(trim_right(nl == std::string_view::npos ? text : text.substr(0, nl)));
}

std::vector<uint32_t> statement_lines(std::string_view text, std::string_view comment,
                                      uint32_t min_chars) {
  std::vector<uint32_t> out;
  bool in_block = false;  // inside a triple-quoted string
  const auto spans = line_spans(text);
  for (std::size_t n = 0; n < spans.size(); ++n) {
    const std::string_view line = text.substr(spans[n].first, spans[n].second - spans[n].first);
    const bool toggles = triple_quotes(line) % 2 == 1;
    const bool was_in_block = in_block;
    if (toggles) in_block = !in_block;
    if (was_in_block || toggles) continue;
    const std::string_view body = trim_right(line.substr(indent_of(line)));
    if (body.size() < min_chars) continue;
    if (!comment.empty() && body.starts_with(comment)) continue;
    if (body.starts_with("/*") || body.starts_with("*") || body.starts_with("*/")) continue;
    if (body.front() == '"' || body.front() == '\'') continue;
    if (body.find_first_not_of(")]}];, ") == std::string_view::npos) continue;
    out.push_back(static_cast<uint32_t>(n));
  }
  return out;
}

std::vector<uint32_t> pick_lines(const std::vector<uint32_t>& lines, uint32_t k, uint64_t seed) {
  std::vector<uint32_t> pool = lines;
  uint64_t state = seed;
  // Partial Fisher-Yates: the first k slots get k distinct lines.
  const std::size_t take = std::min<std::size_t>(k, pool.size());
  for (std::size_t i = 0; i < take; ++i) {
    const std::size_t j =
        i + static_cast<std::size_t>(base::splitmix64_next(state) % (pool.size() - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(take);
  std::sort(pool.begin(), pool.end());
  return pool;
}

ReplayRequest make_request(std::string_view text, uint32_t line, uint32_t typed) {
  const auto spans = line_spans(text);
  if (line >= spans.size()) {
    throw std::out_of_range("replay: line " + std::to_string(line) + " is past the file's " +
                            std::to_string(spans.size()) + " lines");
  }
  const auto [start, end] = spans[line];
  const std::string_view row = text.substr(start, end - start);
  const std::size_t indent = indent_of(row);
  if (row.size() - indent < typed) {
    throw std::out_of_range("replay: line " + std::to_string(line) + " has " +
                            std::to_string(row.size() - indent) + " characters after its " +
                            "indentation, fewer than the " + std::to_string(typed) + " typed");
  }
  ReplayRequest r;
  r.line = line;
  r.typed = typed;
  r.column = static_cast<uint32_t>(indent + typed);
  r.cursor = static_cast<uint32_t>(start + r.column);
  r.target = std::string(trim_right(row.substr(r.column)));
  r.lines_in_file = static_cast<uint32_t>(spans.size());
  // Before the cursor, then the rest of the file after the cursor's line (from its '\n').
  r.visible = std::string(text.substr(0, r.cursor));
  r.visible += text.substr(end);
  return r;
}

Window line_window(std::string_view visible, uint32_t cursor, uint32_t radius) {
  if (cursor > visible.size()) throw std::out_of_range("replay: cursor past the end of the text");
  // Back `radius` line starts from the cursor's line start.
  std::size_t begin = visible.rfind('\n', cursor == 0 ? 0 : cursor - 1);
  begin = (cursor == 0 || begin == std::string_view::npos) ? 0 : begin + 1;
  for (uint32_t n = 0; n < radius && begin > 0; ++n) {
    // visible[begin - 1] ends the line above; the '\n' before that one starts it.
    const std::size_t prev = begin < 2 ? std::string_view::npos : visible.rfind('\n', begin - 2);
    begin = prev == std::string_view::npos ? 0 : prev + 1;
  }
  // Forward: the cursor's line ends at the next '\n'; then `radius` more lines.
  std::size_t end = visible.find('\n', cursor);
  for (uint32_t n = 0; n < radius && end != std::string_view::npos; ++n) {
    end = visible.find('\n', end + 1);
  }
  if (end == std::string_view::npos) end = visible.size();
  Window w;
  w.prefix = std::string(visible.substr(begin, cursor - begin));
  w.suffix = std::string(visible.substr(cursor, end - cursor));
  return w;
}

}  // namespace vsynth::bench
