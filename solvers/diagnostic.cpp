#include "solvers/diagnostic.h"

#include <algorithm>
#include <cctype>

namespace vsynth::solvers {

SpecError spec_error(std::string_view prefix, std::string_view message, std::string_view text,
                     size_t offset, std::string_view hint) {
  offset = std::min(offset, text.size());
  const size_t nl = text.substr(0, offset).rfind('\n');
  const size_t line_start = nl == std::string_view::npos ? 0 : nl + 1;
  size_t line_end = text.find('\n', line_start);
  if (line_end == std::string_view::npos) line_end = text.size();
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + line_start, '\n'));
  const int column = 1 + static_cast<int>(offset - line_start);
  const bool multiline = text.find('\n') != std::string_view::npos;

  std::string msg(prefix);
  msg += ": ";
  msg += message;
  msg += multiline ? " at line " + std::to_string(line) + ", column " + std::to_string(column)
                   : " at column " + std::to_string(column);
  if (!hint.empty()) {
    msg += "; ";
    msg += hint;
  }
  std::string src(text.substr(line_start, line_end - line_start));
  // Tabs would misplace the caret; show them as single spaces.
  std::replace(src.begin(), src.end(), '\t', ' ');
  msg += "\n  " + src + "\n  " + std::string(offset - line_start, ' ') + "^";
  return SpecError(msg, line, column);
}

std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  auto distance = [](std::string_view a, std::string_view b) {
    // Optimal string alignment distance (Damerau-Levenshtein without repeated edits).
    const size_t n = a.size(), m = b.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i) {
      for (size_t j = 1; j <= m; ++j) {
        const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
    return d[n][m];
  };
  auto lower = [](std::string_view s) {
    std::string r(s);
    for (auto& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
  };
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    size_t d = distance(lower(name), lower(c));
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // A typo: at most 2 edits, and fewer than half the name (so 'x' never "means" 'y').
  const size_t limit = std::min<size_t>(2, std::max<size_t>(name.size(), best.size()) / 2);
  if (best.empty() || best_d > limit) return {};
  return best;
}

}  // namespace vsynth::solvers
