#include "stages/generation/line_stops.h"

#include <algorithm>

namespace vsynth::stages::generation {

int32_t cursor_line_indent(std::string_view prefix) {
  const std::size_t nl = prefix.rfind('\n');
  const std::size_t start = nl == std::string_view::npos ? 0 : nl + 1;
  int32_t n = 0;
  for (std::size_t i = start; i < prefix.size() && (prefix[i] == ' ' || prefix[i] == '\t'); ++i) {
    ++n;
  }
  return n;
}

std::optional<std::size_t> indent_cut(std::string_view text, int32_t n_indent) {
  if (n_indent <= 0) return std::nullopt;
  for (std::size_t nl = text.find('\n'); nl != std::string_view::npos;
       nl = text.find('\n', nl + 1)) {
    std::size_t pos = nl + 1;
    int32_t indent = 0;
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t')) {
      ++indent;
      ++pos;
    }
    if (pos < text.size() && indent < n_indent) return nl;
  }
  return std::nullopt;
}

std::optional<std::size_t> single_line_cut(std::string_view text) {
  bool seen = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      if (seen) return i;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      seen = true;
    }
  }
  return std::nullopt;
}

kernels::HookVerdict LineStopHook::after_sample(const kernels::DecodeView& view, kernels::TokenId,
                                                std::string_view piece) {
  // A cut inside the last committed piece: that piece was kept, this step ends it.
  if (fired_ != Fired::None) return kernels::HookVerdict::stop(detail());
  if (stops_.max_predict_ms > 0 &&
      Clock::now() - start_ >= std::chrono::milliseconds(stops_.max_predict_ms)) {
    fired_ = Fired::Time;
    // Whole lines when there is one with text; else what there is.
    const std::size_t nl = view.text.rfind('\n');
    const bool whole_line =
        nl != std::string_view::npos &&
        view.text.substr(0, nl).find_first_not_of(" \t\r\n") != std::string_view::npos;
    cut_ = whole_line ? nl : view.text.size();
    return kernels::HookVerdict::stop(detail());
  }
  if (stops_.n_indent <= 0 && !stops_.single_line) return kernels::HookVerdict::accept();
  // The whole text with the new piece (a suggestion is short; a forward pass costs far more).
  std::string all(view.text);
  all += piece;
  std::optional<std::size_t> at = indent_cut(all, stops_.n_indent);
  Fired why = at ? Fired::Indent : Fired::None;
  if (stops_.single_line) {
    if (const auto c = single_line_cut(all); c && (!at || *c < *at)) {
      at = c;
      why = Fired::Line;
    }
  }
  if (!at) return kernels::HookVerdict::accept();
  fired_ = why;
  cut_ = *at;
  // The cut falls before this piece: stop now (the piece is not committed). Inside it: keep
  // the piece and stop at the next step (or when the budget ends first); cut() drops the rest.
  if (cut_ <= view.text.size()) return kernels::HookVerdict::stop(detail());
  return kernels::HookVerdict::accept();
}

std::size_t LineStopHook::cut(std::string_view text) const {
  return fired_ == Fired::None ? text.size() : std::min(cut_, text.size());
}

const char* LineStopHook::finish(Fired f) {
  return f == Fired::Time ? "time" : "stop";
}

std::string LineStopHook::detail() const {
  switch (fired_) {
    case Fired::Indent:
      return "n_indent " + std::to_string(stops_.n_indent);
    case Fired::Line:
      return "single_line";
    case Fired::Time:
      return "max_predict_ms " + std::to_string(stops_.max_predict_ms);
    case Fired::None:
      break;
  }
  return "";
}

}  // namespace vsynth::stages::generation
