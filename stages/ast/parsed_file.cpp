#include "stages/ast/parsed_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "stages/ast/error.h"

namespace vsynth::stages::ast {

ParsedFile::ParsedFile(std::string path, const Language& language, std::string source)
    : path_(std::move(path)),
      language_(&language),
      source_(std::move(source)),
      parser_(make_parser(language.ts(), language.name())) {
  if (source_.size() > UINT32_MAX) {
    throw AstError(fmt::format("{}: {} bytes is over tree-sitter's limit of {} bytes", path_,
                               source_.size(), UINT32_MAX));
  }
  index_rows();
  parse(nullptr);
}

ParsedFile::ParsedFile(const ParsedFile& base, std::string source, TextEdit* edit_out)
    : path_(base.path_),
      language_(base.language_),
      source_(std::move(source)),
      parser_(make_parser(language_->ts(), language_->name())) {
  if (source_.size() > UINT32_MAX) {
    throw AstError(fmt::format("{}: {} bytes is over tree-sitter's limit of {} bytes", path_,
                               source_.size(), UINT32_MAX));
  }
  index_rows();
  const TextEdit d = diff_texts(base.source(), source_);
  if (edit_out) *edit_out = d;
  TSInputEdit edit{};
  edit.start_byte = d.start;
  edit.old_end_byte = d.old_end;
  edit.new_end_byte = d.new_end;
  edit.start_point = base.point_at(d.start);
  edit.old_end_point = base.point_at(d.old_end);
  edit.new_end_point = point_at(d.new_end);
  // The copy shares base's subtrees by reference count; ts_tree_edit copies the ones on the
  // edited path before changing them, so base's tree stays as it was.
  TreePtr old_tree = copy_tree(base.tree());
  ts_tree_edit(old_tree.get(), &edit);
  parse(old_tree.get());
}

TextEdit diff_texts(std::string_view old_text, std::string_view new_text) {
  const std::size_t limit = std::min(old_text.size(), new_text.size());
  std::size_t prefix = 0;
  while (prefix < limit && old_text[prefix] == new_text[prefix]) ++prefix;
  std::size_t suffix = 0;
  while (suffix < limit - prefix &&
         old_text[old_text.size() - 1 - suffix] == new_text[new_text.size() - 1 - suffix]) {
    ++suffix;
  }
  return TextEdit{static_cast<uint32_t>(prefix), static_cast<uint32_t>(old_text.size() - suffix),
                  static_cast<uint32_t>(new_text.size() - suffix)};
}

ParsedFile ParsedFile::from_path(std::string path, std::string source) {
  const Language& language = Language::for_path(path);
  return ParsedFile(std::move(path), language, std::move(source));
}

void ParsedFile::index_rows() {
  row_starts_.clear();
  row_starts_.push_back(0);
  // memchr: a vectorised scan (on a 95 KB file 0.02 ms against 0.08 ms for a byte loop, and
  // every parse and re-parse indexes the whole text).
  const char* const begin = source_.data();
  const char* const end = begin + source_.size();
  for (const char* p = begin; p < end;) {
    const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
    if (!nl) break;
    p = static_cast<const char*>(nl) + 1;
    row_starts_.push_back(static_cast<uint32_t>(p - begin));
  }
}

void ParsedFile::parse(const TSTree* old_tree) {
  TSTree* tree = ts_parser_parse_string(parser_.get(), old_tree, source_.data(),
                                        static_cast<uint32_t>(source_.size()));
  if (!tree) {
    throw AstError(fmt::format("{}: tree-sitter returned no tree for {} bytes of {}", path_,
                               source_.size(), language_->name()));
  }
  tree_.reset(tree);
}

std::string_view ParsedFile::text(TSNode node) const {
  if (ts_node_is_null(node)) return {};
  const uint32_t start = std::min<uint32_t>(ts_node_start_byte(node), source_.size());
  const uint32_t end = std::clamp<uint32_t>(ts_node_end_byte(node), start, source_.size());
  return std::string_view(source_).substr(start, end - start);
}

bool ParsedFile::has_errors() const {
  return ast::has_errors(tree_.get());
}

uint32_t ParsedFile::row_length(uint32_t row) const {
  const uint32_t start = row_starts_[row];
  const uint32_t end = row + 1 < row_starts_.size() ? row_starts_[row + 1] - 1
                                                    : static_cast<uint32_t>(source_.size());
  return end - start;
}

TSPoint ParsedFile::point_at(uint32_t byte) const {
  // The last row starting at or before `byte`.
  const auto it = std::upper_bound(row_starts_.begin(), row_starts_.end(), byte);
  const auto row = static_cast<uint32_t>(it - row_starts_.begin() - 1);
  return TSPoint{row, byte - row_starts_[row]};
}

uint32_t ParsedFile::byte_at(TSPoint point) const {
  if (point.row >= row_count()) {
    throw AstError(fmt::format("{}: row {} is past the end: the file has {} rows (valid 0..{})",
                               path_, point.row, row_count(), row_count() - 1));
  }
  const uint32_t len = row_length(point.row);
  if (point.column > len) {
    throw AstError(fmt::format(
        "{}: column {} is past the end of row {}, which has {} bytes (valid columns 0..{})", path_,
        point.column, point.row, len, len));
  }
  return row_starts_[point.row] + point.column;
}

namespace {

// Where the text ends when it starts at `start`: rows advance per '\n'; the column is the
// start column plus the text's length when it has no '\n', else the bytes after the last one.
TSPoint end_point(TSPoint start, std::string_view text) {
  const std::size_t last_nl = text.rfind('\n');
  if (last_nl == std::string_view::npos) {
    return TSPoint{start.row, start.column + static_cast<uint32_t>(text.size())};
  }
  const auto rows = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n'));
  return TSPoint{start.row + rows, static_cast<uint32_t>(text.size() - last_nl - 1)};
}

}  // namespace

std::vector<TSRange> ParsedFile::apply_edit(uint32_t start_byte, uint32_t old_end_byte,
                                            std::string_view new_text) {
  const std::size_t size = source_.size();
  if (start_byte > old_end_byte || old_end_byte > size) {
    throw AstError(fmt::format(
        "{}: edit range [{}, {}) is not inside the source: need start <= end <= {} (the file "
        "has {} bytes)",
        path_, start_byte, old_end_byte, size, size));
  }
  if (size - (old_end_byte - start_byte) + new_text.size() > UINT32_MAX) {
    throw AstError(
        fmt::format("{}: the edit would grow the file past tree-sitter's limit of {} "
                    "bytes",
                    path_, UINT32_MAX));
  }
  TSInputEdit edit{};
  edit.start_byte = start_byte;
  edit.old_end_byte = old_end_byte;
  edit.new_end_byte = start_byte + static_cast<uint32_t>(new_text.size());
  edit.start_point = point_at(start_byte);
  edit.old_end_point = point_at(old_end_byte);
  edit.new_end_point = end_point(edit.start_point, new_text);

  // Edit a copy so the untouched old tree can be diffed against the new one.
  TreePtr old_tree = copy_tree(tree_.get());
  ts_tree_edit(old_tree.get(), &edit);
  source_.replace(start_byte, old_end_byte - start_byte, new_text);
  index_rows();
  parse(old_tree.get());

  uint32_t count = 0;
  TSRange* ranges = ts_tree_get_changed_ranges(old_tree.get(), tree_.get(), &count);
  std::vector<TSRange> changed(ranges, ranges + count);
  std::free(ranges);  // tree-sitter allocates it with its default allocator (malloc)
  return changed;
}

bool has_errors(const TSTree* tree) {
  if (!tree) return false;
  return ts_node_has_error(ts_tree_root_node(tree));
}

}  // namespace vsynth::stages::ast
