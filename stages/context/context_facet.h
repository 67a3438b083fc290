// The `context` facet: the code context context.prune chose for one task, ready to put in a
// prompt. The generation stage reads it:
//
//   if (const auto* ctx = item.find<context::ContextFacet>()) {
//     prompt += ctx->prefix();   // everything up to the task's cursor
//     ...                        // (fill-in-the-middle: ctx->suffix() after the hole)
//   }
//
// text() is the whole context: for each file with anything chosen (other files first, the
// cursor's file last) a header line in the language's comment syntax ("# file: a.py",
// "// file: a.rs"), then the chosen units in the file's own order, each whole (full form) or
// summarised (signature / name form), with a marker for every run of rows left out
// ("    # ... 40 lines elided ..."). The enclosing function is always there in full (or, when
// it alone exceeds the budget, its statements nearest the cursor, whole), so the cursor falls
// inside text(): cursor_offset() is its byte offset (-1 only when no task file was anchored).
// All views point into the item's arena and live as long as the item.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "graph/item.h"
#include "stages/context/unit.h"

namespace vsynth::stages::context {

class ContextFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "context";

  struct Selected {
    UnitKind kind = UnitKind::Statement;
    std::string name;
    Form form = Form::Full;
    uint32_t tokens = 0;  // of this form alone
    double value = 0;     // 0 for the focus, its containers and containers shown for members
    std::string reason;   // focus, path, container, class, ref#N, edit#N, dep1#N, dep2#N,
                          // import, near, stmt
    std::string path;
    uint32_t first_line = 0, last_line = 0;  // 1-based, inclusive, in that file
  };

  // The assembled context (see above), in the item's arena.
  std::string_view text() const { return text_; }
  int64_t cursor_offset() const { return cursor_offset_; }
  // text() up to / from the cursor; the whole text / empty when there is no cursor.
  std::string_view prefix() const;
  std::string_view suffix() const;

  uint32_t budget_tokens = 0;
  uint32_t used_tokens = 0;  // tokens of text() by `tokenizer`
  std::string tokenizer;     // "estimate" or "gguf:<path>"
  bool over_budget = false;  // the statement at the cursor alone exceeded the budget
  uint32_t file_rows = 0;    // rows of the cursor's file
  uint32_t shown_rows = 0;   // rows of the cursor's file shown in full form
  uint32_t markers = 0;
  std::vector<Selected> units;

  void set_text(std::string_view arena_text, int64_t cursor_offset) {
    text_ = arena_text;
    cursor_offset_ = cursor_offset;
  }

  // budget_tokens, used_tokens, tokenizer, over_budget, file_rows, shown_rows, markers,
  // cursor_offset, units [{kind, name, form, tokens, value, reason, path, lines: [a, b]}],
  // text.
  nlohmann::json to_json() const override;

 private:
  std::string_view text_;
  int64_t cursor_offset_ = -1;
};

}  // namespace vsynth::stages::context
