// Units: the blocks code context is made of. A unit is a whole syntactic block of one file (a
// function, a method, a field, an import, a global, a class header...) that is shown whole in
// one of three forms or not at all:
//   Full       its source rows, verbatim (with the comments and decorators attached above it)
//   Signature  a summary: parameters, types, return type, first doc line, body elided
//   Name       one comment line naming it ("# method Ledger.deposit")
// A container (a class, namespace, impl block, #ifdef, or a function split into statements)
// is a unit whose rows are its header; its members are units whose `parent` is it, and its
// closing rows (`}`) are shown whenever any member is. Rows of sibling units never overlap, so
// any selection renders as the file's own text in the file's own order, with elision markers
// in the gaps.
//
// Texts are string_views into storage that outlives the unit: the parsed file of the task
// (anchor facet), the item's arena, or a project index's per-file arena.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stages/facets/context.h"

namespace vsynth::stages::context {

// The kinds and forms are shared with the `context` facet (stages/facets/context.h).
using facets::Form;
using facets::kForms;
using facets::to_string;
using facets::UnitKind;

// Why a unit is a candidate at all. Stages fill these in; context.prune turns them into values.
// A rank is 0-based (0 = the strongest reason of its kind); -1 = no such reason.
struct Reasons {
  bool focus = false;         // holds the cursor (the enclosing function, or a statement of it)
  bool on_path = false;       // a container enclosing the cursor
  bool class_member = false;  // a field / constructor / type definition of the enclosing class
  bool in_focus = false;      // a statement of the focus, when it had to be opened (prune)
  bool at_cursor = false;     // named by the identifier at the cursor (the word being typed)
  int ref_rank = -1;          // named by an identifier used in the focus; rank of its nearest use
  int edit_rank = -1;         // overlaps an edit; 0 = the most recent one
  int hop = -1;               // dependency distance from the focus (1 or 2; context.deps)
  int hop_rank = -1;          // rank among the units at that hop (nearest reference first)
  int retrieval_rank = -1;    // rank among retrieval.search's hits (the `retrieved` facet)
  uint32_t row_distance = UINT32_MAX;  // rows between the unit and the cursor (cursor file)
};

struct Unit {
  UnitKind kind = UnitKind::Statement;
  std::string_view name;  // "" when anonymous
  uint32_t file = 0;      // index into Candidates::files (0: the cursor's file)
  // Rows of the full form (0-based, inclusive) in its file; a container's are its header rows.
  uint32_t first_row = 0, last_row = 0;
  uint32_t end_row = 0;  // last row of the whole block: members and closing rows included
  // Bytes of the syntactic node(s) in its file (not the attached comments): what dedup
  // fingerprints and what a cursor offset is measured against. start_byte is the first row's.
  uint32_t row_byte = 0;  // byte offset of first_row's first byte
  uint32_t node_start = 0, node_end = 0;
  int32_t parent = -1;                       // container unit index, -1 at file level
  bool container = false;                    // a header: members follow, `close` ends it
  uint32_t close_first = 0, close_last = 0;  // closing rows (when !close.empty())
  uint32_t blank_before = 0;  // blank rows between the previous sibling and this unit
  std::string_view indent;    // leading whitespace of the first row

  // The three forms; an empty signature means the unit has none (the full form is as short).
  std::string_view full;  // whole rows, each ending in '\n'
  std::string_view signature;
  std::string_view name_form;
  std::string_view close;  // containers: the closing rows, ending in '\n'

  Reasons reasons;
  bool removed = false;       // dropped by context.dedup
  int32_t duplicate_of = -1;  // the unit kept instead of it
  // AST-normalised token hashes (normalize.h), what context.dedup compares; empty until
  // computed.
  std::vector<uint64_t> normalized;

  bool has(Form f) const {
    return f == Form::Full        ? !full.empty()
           : f == Form::Signature ? !signature.empty()
                                  : !name_form.empty();
  }
  std::string_view text(Form f) const {
    return f == Form::Full ? full : f == Form::Signature ? signature : name_form;
  }
};

// A file that units come from, as rendering and reporting need it.
struct SourceInfo {
  std::string path;
  std::string language;  // ast language name ("python")
  uint32_t rows = 0;     // rows in the file (for the trailing elision marker)
};

}  // namespace vsynth::stages::context
