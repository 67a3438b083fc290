// chunk_file (index.h) with what the index needs of the file beside its chunks.
//
// Chunks: one per function, method and constructor unit of context extraction (unit_extract.h),
// and one per class unit made of its header rows, its fields' rows and its bodiless method
// declarations (C++ prototypes, Java/TS interface methods, Rust trait signatures: the class's
// API, too small to stand alone); methods with a body are chunks of their own. Imports,
// globals and top-level statements are not chunked (imports feed the file level instead).
//
// Text of a chunk, what is embedded and term-indexed: the file's path on the first line
// (path words match queries, and two files' identical helpers stay distinct), then the
// first row of each enclosing named container, outermost first ("class Cart:", "impl Cart
// {", "namespace shop {": what the unit is a member of), then the unit's own rows verbatim.
// A unit over max_tokens is split on row boundaries into pieces that each repeat its
// signature rows (the declaration, from the definition's first row to where its body
// starts, at most 6 rows; leading comments and decorators stay in the first piece only).
// Tokens are counted with the embedder's count_tokens, or estimated as bytes / 4 without one.
//
// Skipped, with the reason: an extension no language claims, NUL bytes or invalid UTF-8
// (binary or another encoding), a line over 64 KiB (generated or minified code), a file
// tree-sitter cannot parse.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stages/ast/parsed_file.h"
#include "stages/context/unit_extract.h"
#include "stages/retrieval/index.h"

namespace vsynth::stages::retrieval {

struct FileChunks {
  std::vector<Chunk> chunks;                      // in file order
  std::shared_ptr<const ast::ParsedFile> parsed;  // what they came from (null when skipped)
  std::string language;  // ast language name, "" when skipped before parsing
  std::string imports;   // the import units' text, each ending in '\n'
  std::string skipped;   // the reason there are no chunks, or ""
};

// `base`, when given (same path and language), is the file's previous version: the text is
// parsed incrementally from its tree (ast::ParsedFile's next-version constructor).
FileChunks chunk_source(std::string_view path, std::string_view text, const ChunkOptions& options,
                        const Embedder* counter, const ast::ParsedFile* base = nullptr);
// The chunks of a file already parsed (its path and source are the file's).
FileChunks chunk_parsed(std::shared_ptr<const ast::ParsedFile> file, const ChunkOptions& options,
                        const Embedder* counter);
// The chunks of a file already extracted (unit_extract.h's default options; units->file's path and
// source). The same chunks as chunk_parsed(units->file).
FileChunks chunk_units(std::shared_ptr<const context::FileUnits> units, const ChunkOptions& options,
                       const Embedder* counter);

// Why `text` is not indexable source (binary, not UTF-8, a line over 64 KiB), or "".
std::string unindexable(std::string_view text);

}  // namespace vsynth::stages::retrieval
