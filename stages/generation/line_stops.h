// Where an editor's suggestion ends: the line-based stops of generate.llm, on top of the
// decoding loop's stop strings, EOG and token budget. Set per stage (parameters n_indent,
// single_line, max_predict_ms, block_stop) and per task (/decode, task_decode.h).
//
//   n_indent N      llama.cpp's rule (its server, `n_indent`): after the first line of the
//                   suggestion, the first line whose indentation (leading spaces and tabs,
//                   one column each) is below N ends it; an empty line has indentation 0 and
//                   ends it too. The suggestion is cut at the end of the line before (llama.cpp
//                   leaves that line break and the short line's indentation in the text; here
//                   they go, so the suggestion ends where its last line ends). 0: off.
//   single_line     the suggestion ends at the first line break that follows non-blank text
//                   (a suggestion that starts with a line break keeps it).
//   max_predict_ms  after this long generating (the clock starts after the prompt's prefill),
//                   the next step stops the suggestion, cut back to its last line break when a
//                   line with text precedes it, so that the editor gets whole lines (else it
//                   keeps what there is); the finish reason is `time`.
//                   The only stop whose result depends on the machine's speed. 0: no limit.
//   block_stop      (stage only) when the task gives no n_indent: n_indent = the indentation
//                   of the cursor's line, so the suggestion ends with the block the cursor is
//                   in (complete.yaml's default).
//
// The rules run as a decoding hook placed after the stage's own hooks: a stop ends the loop
// before the token that starts the offending line is committed; cut() then says how much of
// the text to keep (the line break and indentation streamed before it are retracted).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/sampler/mask_hook.h"

namespace vsynth::stages::generation {

struct LineStops {
  int32_t n_indent = 0;
  bool single_line = false;
  int64_t max_predict_ms = 0;
  bool any() const { return n_indent > 0 || single_line || max_predict_ms > 0; }
};

// The indentation of the last line of `prefix` (the cursor's line): its leading spaces and
// tabs.
int32_t cursor_line_indent(std::string_view prefix);

// Where `text` (a suggestion, its first line starting at the cursor) must end under n_indent:
// the offset of the line break before the first later line that has a character and an
// indentation below n_indent; nullopt when none (or n_indent <= 0). A line is judged once its
// first character that is not a space or a tab is there.
std::optional<std::size_t> indent_cut(std::string_view text, int32_t n_indent);

// The offset of the first line break that follows a character other than whitespace, or
// nullopt.
std::optional<std::size_t> single_line_cut(std::string_view text);

class LineStopHook final : public kernels::MaskHook {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Fired { None, Indent, Line, Time };

  LineStopHook(LineStops stops, Clock::time_point start) : stops_(stops), start_(start) {}

  kernels::HookVerdict after_sample(const kernels::DecodeView& view, kernels::TokenId token,
                                    std::string_view piece) override;

  // Which rule ended the suggestion (None: none did) and the text's bytes to keep of `text`
  // (the generation's final text).
  Fired fired() const { return fired_; }
  std::size_t cut(std::string_view text) const;
  // "stop" for n_indent and single_line, "time" for max_predict_ms; its detail.
  static const char* finish(Fired f);
  std::string detail() const;

 private:
  LineStops stops_;
  Clock::time_point start_;
  Fired fired_ = Fired::None;
  std::size_t cut_ = std::string::npos;
};

}  // namespace vsynth::stages::generation
