#include "stages/ast/ts_handles.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "stages/ast/error.h"

namespace vsynth::stages::ast {

ParserPtr make_parser(const TSLanguage* language, std::string_view language_name) {
  ParserPtr parser(ts_parser_new());
  if (!parser) throw AstError("tree-sitter could not allocate a parser");
  if (!ts_parser_set_language(parser.get(), language)) {
    throw AstError(fmt::format(
        "the {} grammar has tree-sitter ABI {} but the linked libtree-sitter loads ABI {}..{}; "
        "rebuild the grammar from an ABI-{} release (scripts/setup-grammars.sh)",
        language_name, ts_language_version(language), TREE_SITTER_MIN_COMPATIBLE_LANGUAGE_VERSION,
        TREE_SITTER_LANGUAGE_VERSION, TREE_SITTER_LANGUAGE_VERSION));
  }
  return parser;
}

namespace {

const char* query_error_kind(TSQueryError error) {
  switch (error) {
    case TSQueryErrorSyntax:
      return "syntax error";
    case TSQueryErrorNodeType:
      return "unknown node type";
    case TSQueryErrorField:
      return "unknown field";
    case TSQueryErrorCapture:
      return "unknown capture";
    case TSQueryErrorStructure:
      return "impossible pattern structure";
    case TSQueryErrorLanguage:
      return "language mismatch";
    case TSQueryErrorNone:
      break;
  }
  return "error";
}

}  // namespace

QueryPtr make_query(const TSLanguage* language, std::string_view language_name,
                    std::string_view source) {
  if (source.size() > UINT32_MAX) {
    throw AstError(fmt::format("{} query is {} bytes; tree-sitter takes at most {}", language_name,
                               source.size(), UINT32_MAX));
  }
  uint32_t error_offset = 0;
  TSQueryError error = TSQueryErrorNone;
  QueryPtr query(ts_query_new(language, source.data(), static_cast<uint32_t>(source.size()),
                              &error_offset, &error));
  if (!query) {
    // Show up to 24 bytes from the offending offset so the message points at the culprit.
    const std::size_t at = std::min<std::size_t>(error_offset, source.size());
    std::string excerpt(source.substr(at, 24));
    std::replace(excerpt.begin(), excerpt.end(), '\n', ' ');
    throw AstError(fmt::format("{} query: {} at byte offset {} (of {}) near `{}`", language_name,
                               query_error_kind(error), error_offset, source.size(), excerpt));
  }
  return query;
}

TreePtr copy_tree(const TSTree* tree) {
  return TreePtr(tree ? ts_tree_copy(tree) : nullptr);
}

}  // namespace vsynth::stages::ast
