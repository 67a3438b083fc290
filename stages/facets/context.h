// The `context` facet: the code context context.prune chose for one task, ready to put in a
// prompt. generate.llm reads it (generation/prompt.cpp): when the context holds the cursor,
// prefix() and suffix() replace the text around it; otherwise text() goes above the code.
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

namespace vsynth::stages::facets {

// What a chosen block of code is (context/unit.h explains units) and the form it is shown in.
enum class UnitKind : uint8_t {
  Function,     // a free function (or a function-valued declaration: `const f = () => ...`)
  Method,       // a function member of a class, impl, trait or interface (or a Go method)
  Constructor,  // __init__, constructor, Foo::Foo, Rust/Go `new`/`NewFoo`
  Class,        // class / struct / union / enum / interface / trait / impl: a container header
  Namespace,    // namespace / module / mod / extern "C" / #ifdef: a container header
  Field,        // a member that is not a function (fields, class attributes, enum variants)
  Import,       // import / #include / use
  Global,       // a top-level declaration that is not a function or class
  Statement,    // anything else: top-level code, or a statement of a split function
};
const char* to_string(UnitKind kind);

// Ordered by size: a bigger form shows everything a smaller one does.
enum class Form : uint8_t { Name = 0, Signature = 1, Full = 2 };
inline constexpr std::size_t kForms = 3;
const char* to_string(Form form);

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
                          // retr#N (retrieval.search's hit N), import, near, stmt
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
  std::string tokenizer;     // what counted them: estimate, gguf:<path> or model:<path>
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

}  // namespace vsynth::stages::facets
