#include "graph/diagnostics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace vsynth::graph {

std::string Diagnostic::format() const {
  if (mark.line > 0) return fmt::format("{}:{}:{}: error: {}", file, mark.line, mark.col, message);
  return fmt::format("{}: error: {}", file, message);
}

void Diagnostics::error(std::string code, Mark mark, std::string message) {
  list_.push_back({std::move(code), file_, mark, std::move(message)});
}

void Diagnostics::sort() {
  std::stable_sort(list_.begin(), list_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.mark.line, a.mark.col) < std::tie(b.mark.line, b.mark.col);
  });
}

std::string Diagnostics::format() const {
  std::string out;
  for (const auto& d : list_) {
    out += d.format();
    out += '\n';
  }
  return out;
}

namespace {

// Optimal string alignment distance (Damerau-Levenshtein with adjacent transpositions),
// case-insensitive: `budget_tokns` -> `budget_tokens` is 1.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  auto lower = [](char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  };
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& c : candidates) {
    const std::size_t dist = edit_distance(word, c);
    if (dist < best_d) {
      best_d = dist;
      best = c;
    }
  }
  // A typo is at most a third of the word (and at least one edit) away.
  const std::size_t limit = std::max<std::size_t>(1, std::max(word.size(), best.size()) / 3);
  if (best_d == 0 || best_d > limit) return {};
  return best;
}

std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
  std::string s = did_you_mean(word, candidates);
  return s.empty() ? std::string() : fmt::format(" did you mean `{}`?", s);
}

std::string join_names(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace vsynth::graph
