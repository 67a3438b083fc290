#include "stages/retrieval/chunker.h"

#include <fmt/format.h>
#include <tree_sitter/api.h>

#include <algorithm>
#include <memory>

#include "stages/ast/error.h"
#include "stages/ast/language.h"
#include "stages/ast/parsed_file.h"
#include "stages/context/unit_extract.h"
#include "stages/retrieval/search.h"
#include "stages/retrieval/usage.h"

namespace vsynth::stages::retrieval {
namespace {

using context::Unit;

constexpr std::size_t kMaxLineBytes = 64 * 1024;
constexpr uint32_t kMaxSignatureRows = 6;

// Length of the valid UTF-8 sequence at text[i], or 0 (overlong forms, surrogates and code
// points over U+10FFFF are invalid).
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  uint32_t cp = 0, min = 0;
  if ((c & 0xe0) == 0xc0)
    n = 2, cp = c & 0x1f, min = 0x80;
  else if ((c & 0xf0) == 0xe0)
    n = 3, cp = c & 0x0f, min = 0x800;
  else if ((c & 0xf8) == 0xf0)
    n = 4, cp = c & 0x07, min = 0x10000;
  else
    return 0;
  if (text.size() - i < n) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Token counts: the embedder's, or bytes / 4 rounded up.
struct Counter {
  const Embedder* embedder;
  uint32_t overhead;  // what an empty text costs ([CLS]/[SEP])
  explicit Counter(const Embedder* e) : embedder(e), overhead(0) { overhead = count({}); }
  uint32_t count(std::string_view text) const {
    return embedder ? embedder->count_tokens(text) : static_cast<uint32_t>((text.size() + 3) / 4);
  }
  // The cost of `text` inside a longer one (the overhead is paid once per piece).
  uint32_t inner(std::string_view text) const {
    const uint32_t c = count(text);
    return c > overhead ? c - overhead : 0;
  }
};

// A unit on its way to chunks: the rows it shows and the signature rows later pieces repeat.
struct Draft {
  const Unit* unit = nullptr;
  std::string name;
  std::string prefix;               // path line + enclosing containers' first rows
  std::vector<uint32_t> rows;       // file rows, ascending
  std::vector<uint32_t> signature;  // a subset of rows (the declaration)
};

bool is_function(facets::UnitKind k) {
  return k == facets::UnitKind::Function || k == facets::UnitKind::Method ||
         k == facets::UnitKind::Constructor;
}

// The body of a definition node: its `body` field, or that of a child up to two levels down
// (decorated_definition, export_statement and template_declaration wrap the definition).
std::optional<TSNode> find_body(TSNode node, int depth = 0) {
  const TSNode body = ts_node_child_by_field_name(node, "body", 4);
  if (!ts_node_is_null(body)) return body;
  if (depth == 2) return std::nullopt;
  const uint32_t n = ts_node_named_child_count(node);
  for (uint32_t i = 0; i < n; ++i) {
    if (auto b = find_body(ts_node_named_child(node, i), depth + 1)) return b;
  }
  return std::nullopt;
}

class Chunker {
 public:
  Chunker(const ast::ParsedFile& file, const std::vector<Unit>& units, std::string_view path,
          const ChunkOptions& options, const Embedder* counter)
      : file_(file), units_(units), path_(path), options_(options), counter_(counter) {}

  std::vector<Chunk> run();

 private:
  std::string_view row(uint32_t r) const { return context::rows_text(file_, r, r); }
  std::string qualified_name(uint32_t index) const;
  std::string prefix(uint32_t index) const;
  uint32_t definition_row(const Unit& u) const {
    return ts_node_start_point(context::unit_node(file_, u)).row;
  }
  // The declaration rows of a function unit: definition row to where its body starts.
  std::vector<uint32_t> signature_rows(const Unit& u) const;
  bool bodiless_member(uint32_t index) const;
  Draft function_draft(uint32_t index) const;
  Draft class_draft(uint32_t index) const;
  void emit(const Draft& d, std::vector<Chunk>& out) const;
  Chunk make(const Draft& d, const std::vector<uint32_t>& rows, std::size_t own_first) const;

  const ast::ParsedFile& file_;
  const std::vector<Unit>& units_;
  std::string_view path_;
  const ChunkOptions& options_;
  Counter counter_;
};

std::string Chunker::qualified_name(uint32_t index) const {
  std::vector<std::string_view> parts;
  for (int32_t i = static_cast<int32_t>(index); i >= 0; i = units_[i].parent) {
    if (!units_[i].name.empty()) parts.push_back(units_[i].name);
  }
  std::string out;
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (!out.empty()) out += '.';
    out += *it;
  }
  return out;
}

std::string Chunker::prefix(uint32_t index) const {
  std::vector<int32_t> chain;
  for (int32_t p = units_[index].parent; p >= 0; p = units_[p].parent) {
    if (!units_[p].name.empty()) chain.push_back(p);
  }
  std::string out(path_);
  out += '\n';
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Unit& c = units_[*it];
    std::string_view r = row(std::clamp(definition_row(c), c.first_row, c.last_row));
    out += r;
    if (r.empty() || r.back() != '\n') out += '\n';
  }
  return out;
}

std::vector<uint32_t> Chunker::signature_rows(const Unit& u) const {
  const uint32_t first = std::clamp(definition_row(u), u.first_row, u.last_row);
  uint32_t last = first;
  if (auto body = find_body(context::unit_node(file_, u))) {
    const uint32_t b = ts_node_start_point(*body).row;
    // An indented body starts on the row after the header; a brace body on the header's own
    // row (or its own row, which is worth repeating with the header).
    last = file_.language().indent_scoped() && b > first ? b - 1 : b;
  }
  last = std::clamp(last, first, std::min(u.last_row, first + kMaxSignatureRows - 1));
  std::vector<uint32_t> out;
  for (uint32_t r = first; r <= last; ++r) out.push_back(r);
  return out;
}

bool Chunker::bodiless_member(uint32_t index) const {
  const Unit& u = units_[index];
  if (!is_function(u.kind) || u.parent < 0) return false;
  if (units_[u.parent].kind != facets::UnitKind::Class) return false;
  return !find_body(context::unit_node(file_, u)).has_value();
}

Draft Chunker::function_draft(uint32_t index) const {
  const Unit& u = units_[index];
  Draft d{&u, qualified_name(index), prefix(index), {}, signature_rows(u)};
  for (uint32_t r = u.first_row; r <= u.last_row; ++r) d.rows.push_back(r);
  return d;
}

Draft Chunker::class_draft(uint32_t index) const {
  const Unit& u = units_[index];
  Draft d{&u, qualified_name(index), prefix(index), {}, {}};
  for (uint32_t r = u.first_row; r <= u.last_row; ++r) d.rows.push_back(r);
  d.signature.push_back(std::clamp(definition_row(u), u.first_row, u.last_row));
  if (!u.container) return d;
  for (uint32_t m = index + 1; m < units_.size(); ++m) {
    const Unit& member = units_[m];
    if (member.parent != static_cast<int32_t>(index)) continue;
    if (member.kind != facets::UnitKind::Field && !bodiless_member(m)) continue;
    for (uint32_t r = member.first_row; r <= member.last_row; ++r) d.rows.push_back(r);
  }
  std::sort(d.rows.begin(), d.rows.end());
  d.rows.erase(std::unique(d.rows.begin(), d.rows.end()), d.rows.end());
  return d;
}

Chunk Chunker::make(const Draft& d, const std::vector<uint32_t>& rows,
                    std::size_t own_first) const {
  Chunk c;
  c.path = std::string(path_);
  c.name = d.name;
  c.kind = d.unit->kind;
  c.first_line = rows[own_first] + 1;
  c.last_line = rows.back() + 1;
  c.unit_first_line = d.rows.front() + 1;
  c.unit_last_line = d.rows.back() + 1;
  c.text = d.prefix;
  for (const uint32_t r : rows) {
    const std::string_view t = row(r);
    c.text += t;
    if (t.empty() || t.back() != '\n') c.text += '\n';
  }
  // The piece's own rows only: a container's row (`class Cart(Base):`) is not what it calls.
  c.calls = called_names(std::string_view(c.text).substr(d.prefix.size()), file_.language().name(),
                         simple_name(d.name));
  c.tokens = std::min(counter_.count(c.text), options_.max_tokens);
  return c;
}

void Chunker::emit(const Draft& d, std::vector<Chunk>& out) const {
  if (d.rows.empty()) return;
  Chunk whole = make(d, d.rows, 0);
  if (counter_.count(whole.text) <= options_.max_tokens) {
    out.push_back(std::move(whole));
    return;
  }
  // Pieces: greedy runs of rows under the budget left by the prefix; every piece after the
  // first starts with the signature rows (dropped when they would take over half of it).
  const uint32_t budget = options_.max_tokens > counter_.count(d.prefix)
                              ? options_.max_tokens - counter_.count(d.prefix)
                              : 1;
  std::vector<uint32_t> signature = d.signature;
  uint32_t signature_cost = 0;
  for (const uint32_t r : signature) signature_cost += counter_.inner(row(r));
  if (signature_cost > budget / 2 && signature.size() > 1) {
    signature.resize(1);
    signature_cost = counter_.inner(row(signature[0]));
  }
  if (signature_cost > budget / 2) signature.clear(), signature_cost = 0;
  const uint32_t signature_end = signature.empty() ? 0 : signature.back();

  const std::size_t first_out = out.size();
  std::vector<uint32_t> piece;
  std::size_t own_first = 0;
  uint32_t cost = 0;
  for (const uint32_t r : d.rows) {
    const uint32_t c = counter_.inner(row(r));
    if (piece.size() > own_first && cost + c > budget) {
      out.push_back(make(d, piece, own_first));
      piece.clear();
      cost = 0;
      if (r > signature_end) {
        piece = signature;
        cost = signature_cost;
      }
      own_first = piece.size();
    }
    piece.push_back(r);
    cost += c;
  }
  if (piece.size() > own_first) out.push_back(make(d, piece, own_first));
  const auto parts = static_cast<uint32_t>(out.size() - first_out);
  for (uint32_t i = 0; i < parts; ++i) {
    out[first_out + i].part = i;
    out[first_out + i].parts = parts;
  }
}

std::vector<Chunk> Chunker::run() {
  std::vector<Chunk> out;
  for (uint32_t i = 0; i < units_.size(); ++i) {
    const Unit& u = units_[i];
    if (u.kind == facets::UnitKind::Class) {
      emit(class_draft(i), out);
    } else if (is_function(u.kind) && !bodiless_member(i)) {
      emit(function_draft(i), out);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Chunk& a, const Chunk& b) { return a.first_line < b.first_line; });
  return out;
}

std::string known_extensions() {
  std::string out;
  for (const ast::Language& l : ast::Language::all()) {
    for (const std::string_view e : l.extensions()) {
      if (!out.empty()) out += ' ';
      out += e;
    }
  }
  return out;
}

}  // namespace

std::string unindexable(std::string_view text) {
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\0') return fmt::format("binary: a NUL byte at line {}, byte {}", line, i);
    if (c == '\n') {
      ++line;
      line_start = ++i;
      continue;
    }
    if (i - line_start >= kMaxLineBytes) {
      return fmt::format("line {} is over {} KiB (generated or minified code)", line,
                         kMaxLineBytes / 1024);
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      return fmt::format("not UTF-8: invalid byte 0x{:02x} at line {}, byte {}",
                         static_cast<unsigned char>(c), line, i);
    }
    i += n;
  }
  return "";
}

FileChunks chunk_parsed(std::shared_ptr<const ast::ParsedFile> file, const ChunkOptions& options,
                        const Embedder* counter) {
  if (std::string why = unindexable(file->source()); !why.empty()) {
    FileChunks out;
    out.language = std::string(file->language().name());
    out.skipped = std::move(why);
    return out;
  }
  return chunk_units(context::extract_file_units(std::move(file)), options, counter);
}

FileChunks chunk_units(std::shared_ptr<const context::FileUnits> units, const ChunkOptions& options,
                       const Embedder* counter) {
  FileChunks out;
  const std::shared_ptr<const ast::ParsedFile>& file = units->file;
  out.language = std::string(file->language().name());
  if (std::string why = unindexable(file->source()); !why.empty()) {
    out.skipped = std::move(why);
    return out;
  }
  for (const Unit& u : units->units) {
    if (u.kind != facets::UnitKind::Import) continue;
    out.imports += u.full;
    if (u.full.empty() || u.full.back() != '\n') out.imports += '\n';
  }
  out.chunks = Chunker(*file, units->units, file->path(), options, counter).run();
  out.parsed = file;
  return out;
}

FileChunks chunk_source(std::string_view path, std::string_view text, const ChunkOptions& options,
                        const Embedder* counter, const ast::ParsedFile* base) {
  FileChunks out;
  const ast::Language* language = ast::Language::find_for_path(path);
  if (language == nullptr) {
    out.skipped = fmt::format("no language for this extension (known: {})", known_extensions());
    return out;
  }
  out.language = std::string(language->name());
  // Checked before parsing: tree-sitter on a 5 MB line or a binary is slow and meaningless.
  if (std::string why = unindexable(text); !why.empty()) {
    out.skipped = std::move(why);
    return out;
  }
  std::shared_ptr<const ast::ParsedFile> parsed;
  try {
    if (base != nullptr && base->path() == path && &base->language() == language) {
      parsed = std::make_shared<const ast::ParsedFile>(*base, std::string(text));
    } else {
      parsed =
          std::make_shared<const ast::ParsedFile>(std::string(path), *language, std::string(text));
    }
  } catch (const ast::AstError& e) {
    out.skipped = fmt::format("parse failed: {}", e.what());
    return out;
  }
  return chunk_parsed(std::move(parsed), options, counter);
}

std::vector<Chunk> chunk_file(std::string_view path, std::string_view text,
                              const ChunkOptions& options, const Embedder* counter,
                              std::string* skipped) {
  FileChunks f = chunk_source(path, text, options, counter);
  if (skipped != nullptr) *skipped = std::move(f.skipped);
  return std::move(f.chunks);
}

}  // namespace vsynth::stages::retrieval
