// The lexical half of the retrieval index: an inverted index term -> postings (chunk, term
// frequency) scored with Okapi BM25 (k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) /
// (df + 0.5)), never negative). Chunks are added and removed one at a time: a removal
// swaps each of its postings with its list's last one (the moved posting's position is
// updated in its chunk's record), so it costs O(terms of the chunk x log), whatever the
// lengths of the lists. Not thread-safe: Index locks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vsynth::stages::retrieval {

// The corpus statistics BM25 scores with: chunks, their total length (terms, repeats counted)
// and each query term's document frequency. Two indexes searched as one corpus (the shared
// repository index and a task's overlay) each score with the sum of both's statistics, so their
// scores are comparable and their hits merge into one list.
struct CorpusStats {
  double chunks = 0, length = 0;
  std::unordered_map<std::string, double> df;  // of the query's terms
  CorpusStats& operator+=(const CorpusStats& o);
};

class LexicalIndex {
 public:
  static constexpr double kK1 = 1.2, kB = 0.75;

  // `terms`: distinct terms with their counts (count_terms). `chunk` must not be present.
  void add(uint32_t chunk, std::span<const std::pair<std::string, uint32_t>> terms);
  void remove(uint32_t chunk);  // no-op for an absent chunk
  bool contains(uint32_t chunk) const;

  // BM25 of every chunk holding at least one of `query_terms` (each distinct term counted
  // once; terms the index lacks add nothing), in no particular order. Scores are sums over
  // the query's terms in sorted order, so they do not depend on insertion order.
  std::vector<std::pair<uint32_t, double>> score(std::span<const std::string> query_terms) const;
  // The same with the statistics `corpus` (which must include this index's own, see stats()).
  std::vector<std::pair<uint32_t, double>> score(std::span<const std::string> query_terms,
                                                 const CorpusStats& corpus) const;
  // This index's statistics for `query_terms`, the chunks in `without` left out.
  CorpusStats stats(std::span<const std::string> query_terms,
                    std::span<const uint32_t> without = {}) const;

  // The chunk's distinct terms with their counts, sorted by term (what add got).
  std::vector<std::pair<std::string, uint32_t>> terms_of(uint32_t chunk) const;

  std::size_t chunk_count() const { return live_; }
  uint32_t document_frequency(std::string_view term) const;
  double average_length() const {
    return live_ ? static_cast<double>(total_length_) / static_cast<double>(live_) : 0.0;
  }

 private:
  struct Posting {
    uint32_t chunk = 0, tf = 0;
  };
  struct Doc {
    bool live = false;
    uint32_t length = 0;  // terms in the chunk, repeats counted
    // (term id, position in that term's postings), sorted by term id
    std::vector<std::pair<uint32_t, uint32_t>> terms;
  };
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::string> names_;              // by term id
  std::vector<std::vector<Posting>> postings_;  // by term id
  std::vector<Doc> docs_;                       // by chunk id
  std::size_t live_ = 0;
  uint64_t total_length_ = 0;
};

}  // namespace vsynth::stages::retrieval
