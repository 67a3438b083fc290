// Block structure of one parsed file: its units (see unit.h) in row order, containers before
// their members, each with its three forms.
//
// What becomes a unit, for every language in stages/ast's tables: the definitions its
// Language rules name (functions, classes, namespaces, imports), wrapped or not (Python
// decorators, `export`, C++ `template <...>`, `typedef struct {...} t;`, Go `type X struct`),
// top-level declarations (globals, C prototypes and macros, type aliases), class members
// (fields, methods, constructors), preprocessor conditionals and `extern "C"` blocks (as
// containers), and any other top-level statement. Comments, Rust attributes and C++ access
// labels directly above a unit (no blank row between) belong to it. Two nodes sharing a row
// are one unit (rows never split). A class whose first member sits on its header row, or whose
// closing brace sits on its last member's row, is one atomic unit rather than a container; so
// is a definition whose body the parser found only after a syntax error inside its header.
//
// Texts: views into file.source() (full forms, closing rows, names) and strings stored in
// `arena` (signature and name forms); the result is valid while both live and the file is not
// edited.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "graph/arena.h"
#include "stages/ast/parsed_file.h"
#include "stages/context/unit.h"

namespace vsynth::stages::context {

struct ExtractOptions {
  bool doc_line = true;  // signature forms carry the first line of the doc comment / docstring
  bool operator==(const ExtractOptions&) const = default;
};

std::vector<Unit> extract_units(const ast::ParsedFile& file, uint32_t file_index,
                                graph::Arena& arena, const ExtractOptions& options = {});

// One version of a file with its units (file index 0), as extract_units makes them; immutable
// once made. A request extracts the cursor's file once: its candidates copy these units (and
// add their reasons) and the project index adopts the same object (ProjectIndex::update), so
// a first-seen file is not walked twice. Self-contained: it keeps the file its units view and
// the arena holding their signature and name forms.
struct FileUnits {
  std::shared_ptr<const ast::ParsedFile> file;
  ExtractOptions options;
  graph::Arena arena;
  std::vector<Unit> units;
};

// Extracts `file` (not null) into a new FileUnits.
std::shared_ptr<const FileUnits> extract_file_units(std::shared_ptr<const ast::ParsedFile> file,
                                                    const ExtractOptions& options = {});

// Turns unit `index` into a container whose members are appended to `units` with
// parent = index. By its block body when it has one (a function's statements, an if's
// consequence); clauses after that body (else, elif, except, catch, finally) become statement
// units of their own after the container, with its parent, instead of closing rows. Otherwise
// (no body, members sharing the header's or the closing brace's row, or a body the parser
// found only after a syntax error, as when the line being typed leaves a bracket open) by
// rows: every named descendant that starts on a row of its own, below the header, is a member
// (children sharing an already covered row are opened in turn). Returns false, changing
// nothing, when neither finds a member below the first row.
bool split_unit(const ast::ParsedFile& file, std::vector<Unit>& units, uint32_t index,
                graph::Arena& arena, const ExtractOptions& options = {});

// The syntactic node a unit was made from (its node_start..node_end range).
TSNode unit_node(const ast::ParsedFile& file, const Unit& unit);

// Rows [first, last] of `source` as one view ending in '\n' (or at the end of the source).
std::string_view rows_text(const ast::ParsedFile& file, uint32_t first, uint32_t last);

// The last row a node covers: a node ending at column 0 ended with the row above.
uint32_t last_row_of(TSNode node);

}  // namespace vsynth::stages::context
