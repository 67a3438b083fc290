// One task's search (retrieval.search): the query, the five ranked lists, their fusion, the
// adaptive threshold and the per-file cap, over the shared repository index and the task's
// own overlay index, into a RetrievedFacet.
//
// Query text: the task's instruction, the identifiers the cursor's function uses (nearest the
// cursor first), then the function's own text (in this order, so that truncation to the
// encoder's 256 tokens cuts the function's far end, never the instruction).
//
// Lists (each of at most `candidates` chunks; the cursor's own function, and any chunk inside
// it, never appears):
//   lexical     BM25 of the query's terms over one corpus, the repository as the task sees it:
//               the shared index (the task's overlay paths excluded) and the overlay each
//               scored with both's statistics (CorpusStats), merged by score
//   dense       cosine with the query's embedding, both indexes merged by cosine (comparable)
//   usage       call co-occurrence (usage.h): the chunks elsewhere, of the cursor file's
//               language family (C with C++, the JavaScript dialects together), that call
//               names the focus calls ("co-callers") vote, each with its weighted Jaccard overlap
//               (IDF of a name = ln(1 + chunks / chunks calling it)) of called names with the
//               focus, times the voted name's IDF, for the names they call that the focus
//               neither calls nor names; the names' definitions (chunks of that simple name;
//               names with more than kUsageMaxDefinitions defining units are left out, as
//               ambiguous) ranked by summed vote. Empty when the focus calls nothing yet.
//               What it finds is the helper sibling functions call and the cursor's function
//               will: the not-yet-named case the other lists miss.
//   local       what the rest of the cursor's file calls: each name its other chunks call
//               (the focus's chunks left out, names the focus calls or names left out) gets a
//               vote per chunk calling it; the names' definitions ranked by votes, as the
//               usage list's (same language family, ambiguity rule). The file's own habits
//               (a test file's other tests connect, open a cursor, build an FFI) when the focus
//               calls nothing yet and the usage list is empty.
//   structural  the chunks the other lists found, ranked by how close their file is to the
//               cursor's: the same file first, then files the cursor's file imports (a file
//               whose stem appears as a word in its import statements); others are not in it
// Fusion: reciprocal-rank fusion (index.h), score = sum weight / (rrf_k + rank), divided by its
// largest possible value (every list in use at rank 1), so scores are in (0, 1]. Pieces of one
// unit count as the unit (its best piece). Ties: path, then line, so a result never depends on
// the order chunks were indexed in.
//
// Adaptive threshold: coverage = of the identifiers the cursor's function uses that name a
// definition the search can see (in the cursor's file or among the candidates), the share the
// cursor's file defines itself; a hit needs score >= min_score + adaptive_raise x coverage.
// With the defaults (weights 1, usage 2, raise 0.3) a function whose file already defines
// everything it uses only gets hits that two lists agree on or the usage list's first ranks
// (a text list alone scores at most 1/6, the usage list 1/3, against a threshold of 0.35).
//
// Per-file cap: at most per_file_cap hits of any one file but the cursor's own (whose units
// prune has as candidates anyway; a hit there adds no text, it only values them).
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "stages/facets/retrieved.h"
#include "stages/retrieval/embedder.h"
#include "stages/retrieval/index.h"

namespace vsynth::stages::retrieval {

struct SearchOptions {
  uint32_t top_k = 8;
  uint32_t per_file_cap = 3;
  uint32_t candidates = 50;  // chunks per list
  double min_score = 0.05;
  double adaptive_raise = 0.3;
  double weight_lexical = 1, weight_dense = 1, weight_structural = 1;
  double weight_usage = 2;  // 0: no usage list (not computed)
  double weight_local = 1;  // 0: no local list (not computed)
  double rrf_k = 60;
};

struct SearchQuery {
  std::string cursor_path;
  std::string focus_text;  // the cursor's outermost function, else the rows around it
  uint32_t focus_first_line = 0, focus_last_line = 0;  // 1-based; 0: no focus
  std::vector<std::string> identifiers;                // nearest the cursor first
  std::vector<std::string> calls;    // names the focus calls (usage.h's called_names), sorted
  std::vector<std::string> imports;  // import statements of the cursor's file
  std::string instruction;
  std::set<std::string> in_file_names;  // simple names of the cursor file's definitions
  std::set<std::string> task_paths;     // the task's own files (no text in their hits)

  std::string text() const;  // as the header says
};

// `overlay` holds the task's files that differ from `shared` (paths in `exclude`); `embedder`
// null: no dense list (served_by "lexical"). `file_text` gives the text the search saw for a
// path (the task's version of a task file, else the repository's), or null: the text of hits
// outside the task's files comes from it. A hit on a piece of a long unit is the whole unit
// (Chunk::unit_first_line..unit_last_line).
facets::RetrievedFacet search(const Index& shared, const Index& overlay,
                              const std::unordered_set<std::string>& exclude,
                              const SearchQuery& query, const SearchOptions& options,
                              const Embedder* embedder,
                              const std::function<std::string_view(const std::string&)>& file_text);

// A name defined by more units than this is ambiguous: the usage list leaves it out.
inline constexpr std::size_t kUsageMaxDefinitions = 3;

// The simple name of a qualified one ("Cart.receipt" -> "receipt", "a::b" -> "b").
std::string_view simple_name(std::string_view name);

}  // namespace vsynth::stages::retrieval
