#include "kernels/sampler/stop.h"

#include <algorithm>

namespace vsynth::kernels {

std::size_t incomplete_utf8_tail(std::string_view text) {
  // Look back over at most 3 continuation bytes for the lead byte of the last sequence.
  const std::size_t n = text.size();
  for (std::size_t back = 1; back <= 4 && back <= n; ++back) {
    const auto c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    std::size_t need = 0;
    if ((c & 0x80) == 0)
      need = 1;
    else if ((c & 0xE0) == 0xC0)
      need = 2;
    else if ((c & 0xF0) == 0xE0)
      need = 3;
    else if ((c & 0xF8) == 0xF0)
      need = 4;
    else
      return 0;  // invalid lead byte
    return need > back ? back : 0;
  }
  return 0;  // only continuation bytes: invalid, nothing to wait for
}

StopStrings::StopStrings(std::vector<std::string> stops) {
  for (std::string& s : stops) {
    if (s.empty()) continue;
    max_len_ = std::max(max_len_, s.size());
    stops_.push_back(std::move(s));
  }
}

StopStrings::Match StopStrings::find(std::string_view text, std::size_t old_size) const {
  Match best;
  if (stops_.empty()) return best;
  old_size = std::min(old_size, text.size());
  // A new match must end after old_size, so it starts after old_size - max_len.
  const std::size_t from = old_size >= max_len_ ? old_size - max_len_ + 1 : 0;
  for (std::size_t i = 0; i < stops_.size(); ++i) {
    const std::size_t p = text.find(stops_[i], from);
    if (p == std::string_view::npos) continue;
    if (!best.found() || p < best.pos ||
        (p == best.pos && stops_[i].size() > stops_[best.which].size())) {
      best.pos = p;
      best.which = i;
    }
  }
  return best;
}

std::size_t StopStrings::partial_suffix(std::string_view text) const {
  std::size_t best = 0;
  for (const std::string& s : stops_) {
    const std::size_t longest = std::min(s.size() - 1, text.size());
    for (std::size_t len = longest; len > best; --len) {
      if (text.substr(text.size() - len) == std::string_view(s).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace vsynth::kernels
