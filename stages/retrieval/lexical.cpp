#include "stages/retrieval/lexical.h"

#include <algorithm>
#include <cmath>

namespace vsynth::stages::retrieval {

void LexicalIndex::add(uint32_t chunk, std::span<const std::pair<std::string, uint32_t>> terms) {
  if (chunk >= docs_.size()) docs_.resize(chunk + 1);
  Doc& doc = docs_[chunk];
  doc = Doc{};
  doc.live = true;
  for (const auto& [text, tf] : terms) {
    auto [it, fresh] = ids_.try_emplace(text, static_cast<uint32_t>(names_.size()));
    if (fresh) {
      names_.push_back(text);
      postings_.emplace_back();
    }
    std::vector<Posting>& list = postings_[it->second];
    doc.terms.emplace_back(it->second, static_cast<uint32_t>(list.size()));
    list.push_back({chunk, tf});
    doc.length += tf;
  }
  std::sort(doc.terms.begin(), doc.terms.end());
  ++live_;
  total_length_ += doc.length;
}

void LexicalIndex::remove(uint32_t chunk) {
  if (!contains(chunk)) return;
  Doc& doc = docs_[chunk];
  for (const auto& [term, pos] : doc.terms) {
    std::vector<Posting>& list = postings_[term];
    const Posting moved = list.back();
    list[pos] = moved;
    list.pop_back();
    if (moved.chunk == chunk) continue;  // it was the last one: nothing moved
    // The moved posting's owner records its new position.
    auto& owner = docs_[moved.chunk].terms;
    auto at = std::lower_bound(owner.begin(), owner.end(), std::make_pair(term, uint32_t{0}),
                               [](const auto& a, const auto& b) { return a.first < b.first; });
    at->second = pos;
  }
  total_length_ -= doc.length;
  --live_;
  doc = Doc{};
}

bool LexicalIndex::contains(uint32_t chunk) const {
  return chunk < docs_.size() && docs_[chunk].live;
}

uint32_t LexicalIndex::document_frequency(std::string_view term) const {
  const auto it = ids_.find(std::string(term));
  return it == ids_.end() ? 0 : static_cast<uint32_t>(postings_[it->second].size());
}

CorpusStats& CorpusStats::operator+=(const CorpusStats& o) {
  chunks += o.chunks;
  length += o.length;
  for (const auto& [term, n] : o.df) df[term] += n;
  return *this;
}

CorpusStats LexicalIndex::stats(std::span<const std::string> query_terms,
                                std::span<const uint32_t> without) const {
  CorpusStats s;
  s.chunks = static_cast<double>(live_);
  s.length = static_cast<double>(total_length_);
  std::vector<uint32_t> ids;  // term ids of the query's terms, by position in query_terms
  for (const std::string& term : query_terms) {
    const auto it = ids_.find(term);
    s.df[term] = it == ids_.end() ? 0.0 : static_cast<double>(postings_[it->second].size());
    ids.push_back(it == ids_.end() ? UINT32_MAX : it->second);
  }
  for (const uint32_t chunk : without) {
    if (!contains(chunk)) continue;
    const Doc& doc = docs_[chunk];
    s.chunks -= 1;
    s.length -= doc.length;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const bool has = std::binary_search(
          doc.terms.begin(), doc.terms.end(), std::make_pair(ids[i], uint32_t{0}),
          [](const auto& a, const auto& b) { return a.first < b.first; });
      if (has) s.df[query_terms[i]] -= 1;
    }
  }
  return s;
}

std::vector<std::pair<uint32_t, double>> LexicalIndex::score(
    std::span<const std::string> query_terms) const {
  return score(query_terms, stats(query_terms));
}

std::vector<std::pair<uint32_t, double>> LexicalIndex::score(
    std::span<const std::string> query_terms, const CorpusStats& corpus) const {
  std::vector<std::pair<uint32_t, double>> out;
  if (live_ == 0 || corpus.chunks <= 0) return out;
  std::vector<std::string_view> query(query_terms.begin(), query_terms.end());
  std::sort(query.begin(), query.end());
  query.erase(std::unique(query.begin(), query.end()), query.end());

  const double n = corpus.chunks;
  const double avgdl = corpus.length / corpus.chunks;
  std::vector<double> scores(docs_.size(), 0.0);
  std::vector<uint32_t> touched;
  for (const std::string_view term : query) {
    const auto it = ids_.find(std::string(term));
    if (it == ids_.end() || postings_[it->second].empty()) continue;
    const std::vector<Posting>& list = postings_[it->second];
    const auto known = corpus.df.find(std::string(term));
    const double df = known == corpus.df.end() ? static_cast<double>(list.size()) : known->second;
    const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    for (const Posting& p : list) {
      const double tf = p.tf;
      const double norm = kK1 * (1.0 - kB + kB * docs_[p.chunk].length / avgdl);
      if (scores[p.chunk] == 0.0) touched.push_back(p.chunk);
      scores[p.chunk] += idf * tf * (kK1 + 1.0) / (tf + norm);
    }
  }
  out.reserve(touched.size());
  for (const uint32_t c : touched) out.emplace_back(c, scores[c]);
  return out;
}

std::vector<std::pair<std::string, uint32_t>> LexicalIndex::terms_of(uint32_t chunk) const {
  std::vector<std::pair<std::string, uint32_t>> out;
  if (!contains(chunk)) return out;
  for (const auto& [term, pos] : docs_[chunk].terms) {
    out.emplace_back(names_[term], postings_[term][pos].tf);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace vsynth::stages::retrieval
