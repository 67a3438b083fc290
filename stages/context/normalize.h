// AST-normalised token streams, the fingerprint context.dedup compares units by.
//
// The leaves of a node in source order, with: comments dropped; every string literal one
// token "S" and every number one token "N"; identifiers and keywords kept as written; and the
// receiver of a method call stripped (`self.items.get(k)`, `this.items.get(k)` and
// `items.get(k)` all become `get ( k )`), so code that differs only in what object it calls
// through still matches. Each token is a 64-bit FNV-1a hash of its text.
#pragma once

#include <tree_sitter/api.h>

#include <cstdint>
#include <vector>

#include "stages/ast/parsed_file.h"

namespace vsynth::stages::context {

std::vector<uint64_t> normalized_tokens(const ast::ParsedFile& file, TSNode node);

// Sorted, distinct hashes of every run of `k` consecutive tokens (the whole stream when it is
// shorter than k but not empty).
std::vector<uint64_t> shingles(const std::vector<uint64_t>& tokens, uint32_t k);

// |a ∩ b| / |a ∪ b| of two sorted, distinct sets; 0 when both are empty.
double jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);

}  // namespace vsynth::stages::context
