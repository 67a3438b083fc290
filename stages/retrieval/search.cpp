#include "stages/retrieval/search.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>

namespace vsynth::stages::retrieval {

namespace {

// A chunk of one of the two indexes.
struct Seen {
  bool task = false;
  uint32_t chunk = 0;
  Chunk c;
};

// Deterministic order of two chunks of equal score.
bool before(const Chunk& a, const Chunk& b) {
  return std::tie(a.path, a.first_line, a.part) < std::tie(b.path, b.first_line, b.part);
}

class Search {
 public:
  Search(const Index& shared, const Index& overlay, const SearchQuery& q, const SearchOptions& o)
      : shared_(shared), overlay_(overlay), q_(q), o_(o) {}

  // Keeps the hits that are not the focus; returns their ids (best first).
  std::vector<uint32_t> list(const std::vector<Hit>& hits, bool task) {
    std::vector<uint32_t> ids;
    for (const Hit& h : hits) {
      const uint32_t id = h.chunk * 2 + (task ? 1 : 0);
      if (!seen_.count(id)) {
        // The chunk as the search saw it (an update after it may reuse the id).
        Chunk c = h.data ? *h.data : (task ? overlay_.chunk(h.chunk) : shared_.chunk(h.chunk));
        seen_.emplace(id, Seen{task, h.chunk, std::move(c)});
      }
      if (in_focus(seen_.at(id).c)) continue;
      ids.push_back(id);
    }
    return ids;
  }

  // Both indexes' hits merged by score (cosine, or BM25 over one corpus), ties by path and
  // line.
  std::vector<uint32_t> merged(const std::vector<Hit>& a, const std::vector<Hit>& b) {
    std::vector<std::pair<double, uint32_t>> all;
    for (uint32_t id : list(a, false)) all.emplace_back(score_of(a, id / 2), id);
    for (uint32_t id : list(b, true)) all.emplace_back(score_of(b, id / 2), id);
    std::sort(all.begin(), all.end(), [&](const auto& x, const auto& y) {
      if (x.first != y.first) return x.first > y.first;
      return before(seen_.at(x.second).c, seen_.at(y.second).c);
    });
    std::vector<uint32_t> ids;
    for (std::size_t i = 0; i < all.size() && ids.size() < o_.candidates; ++i) {
      ids.push_back(all[i].second);
    }
    return ids;
  }

  // The candidates ranked by import distance of their file (0: the cursor's), then by their
  // fused score in the other lists.
  std::vector<uint32_t> structural(const std::map<uint32_t, double>& other) const {
    std::vector<std::tuple<int, double, uint32_t>> ranked;
    for (const auto& [id, score] : other) {
      const int d = distance(seen_.at(id).c.path);
      if (d >= 0) ranked.emplace_back(d, score, id);
    }
    std::sort(ranked.begin(), ranked.end(), [&](const auto& x, const auto& y) {
      if (std::get<0>(x) != std::get<0>(y)) return std::get<0>(x) < std::get<0>(y);
      if (std::get<1>(x) != std::get<1>(y)) return std::get<1>(x) > std::get<1>(y);
      return before(seen_.at(std::get<2>(x)).c, seen_.at(std::get<2>(y)).c);
    });
    std::vector<uint32_t> ids;
    for (const auto& r : ranked) ids.push_back(std::get<2>(r));
    return ids;
  }

  const Seen& seen(uint32_t id) const { return seen_.at(id); }

 private:
  static double score_of(const std::vector<Hit>& hits, uint32_t chunk) {
    for (const Hit& h : hits) {
      if (h.chunk == chunk) return h.score;
    }
    return 0;
  }
  // A chunk of the cursor's function: in its file, overlapping its rows, and not a container
  // strictly around it (the class the method is in stays searchable).
  bool in_focus(const Chunk& c) const {
    if (q_.focus_first_line == 0 || c.path != q_.cursor_path) return false;
    const bool overlaps = c.first_line <= q_.focus_last_line && c.last_line >= q_.focus_first_line;
    const bool around = c.first_line < q_.focus_first_line && c.last_line > q_.focus_last_line;
    return overlaps && !around;
  }
  // 0: the cursor's file; 1: a file it imports (its stem is a word of an import statement);
  // 2: a file one of those imports (the indexes' file level); -1: none of these.
  int distance(const std::string& path) const {
    if (path == q_.cursor_path) return 0;
    if (imported(path)) return 1;
    if (second_.empty() && !first_done_) collect_second();
    return second_.count(path) ? 2 : -1;
  }
  void collect_second() const {
    first_done_ = true;
    for (const auto& [id, s] : seen_) {
      if (s.c.path == q_.cursor_path || !imported(s.c.path)) continue;
      for (const Index* index : {&shared_, &overlay_}) {
        for (const std::string& p : index->imports(s.c.path)) {
          if (p != q_.cursor_path && !imported(p)) second_.insert(p);
        }
      }
    }
  }
  bool imported(const std::string& path) const {
    std::string stem = path.substr(path.find_last_of('/') + 1);
    stem = stem.substr(0, stem.find('.'));
    if (stem == "__init__" || stem == "index" || stem == "mod") {  // a package: its folder
      const std::size_t slash = path.find_last_of('/');
      if (slash == std::string::npos) return false;
      const std::string dir = path.substr(0, slash);
      stem = dir.substr(dir.find_last_of('/') + 1);
    }
    if (stem.empty()) return false;
    for (const std::string& imp : q_.imports) {
      for (std::size_t at = imp.find(stem); at != std::string::npos; at = imp.find(stem, at + 1)) {
        auto word = [](char ch) {
          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
        };
        const bool left = at == 0 || !word(imp[at - 1]);
        const bool right = at + stem.size() >= imp.size() || !word(imp[at + stem.size()]);
        if (left && right) return true;
      }
    }
    return false;
  }

  const Index& shared_;
  const Index& overlay_;
  const SearchQuery& q_;
  const SearchOptions& o_;
  std::map<uint32_t, Seen> seen_;
  mutable std::set<std::string> second_;  // files at import distance 2
  mutable bool first_done_ = false;
};

// Rows first..last (1-based) of `text`.
std::string lines_of(std::string_view text, uint32_t first, uint32_t last) {
  std::size_t at = 0;
  for (uint32_t row = 1; row < first && at != std::string::npos; ++row) {
    at = text.find('\n', at);
    if (at != std::string::npos) ++at;
  }
  if (at == std::string::npos) return "";
  std::size_t end = at;
  for (uint32_t row = first; row <= last && end != std::string::npos; ++row) {
    end = text.find('\n', end);
    if (end != std::string::npos) ++end;
  }
  return std::string(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
}

struct UnitHit {
  facets::RetrievedFacet::Hit hit;
  bool task = false;
};

}  // namespace

std::string_view simple_name(std::string_view name) {
  const std::size_t p = name.find_last_of(":.");
  return p == std::string_view::npos ? name : name.substr(p + 1);
}

std::string SearchQuery::text() const {
  std::string out = instruction;
  out += '\n';
  for (const std::string& id : identifiers) out += id + ' ';
  out += '\n';
  out += focus_text;
  return out;
}

facets::RetrievedFacet search(
    const Index& shared, const Index& overlay, const std::unordered_set<std::string>& exclude,
    const SearchQuery& q, const SearchOptions& o, const Embedder* embedder,
    const std::function<std::string_view(const std::string&)>& file_text) {
  facets::RetrievedFacet out;
  out.served_by = embedder ? "fusion" : "lexical";
  out.searched_chunks = static_cast<uint32_t>(shared.chunk_count() + overlay.chunk_count());
  out.searched_files = static_cast<uint32_t>(shared.file_count() + overlay.file_count());
  Search s(shared, overlay, q, o);
  const std::string text = q.text();

  // --- the ranked lists ---
  std::vector<RankedList> lists;
  // One corpus: the repository as this task sees it (its own files in place of theirs).
  CorpusStats corpus = shared.lexical_stats(text, exclude);
  corpus += overlay.lexical_stats(text, {});
  const std::vector<uint32_t> lexical =
      s.merged(shared.search_lexical(text, o.candidates, exclude, corpus),
               overlay.search_lexical(text, o.candidates, {}, corpus));
  lists.push_back({lexical, o.weight_lexical});
  std::vector<uint32_t> dense;
  if (embedder) {
    const std::string_view view = text;
    const std::vector<float> v = embedder->embed(std::span<const std::string_view>(&view, 1));
    dense = s.merged(shared.search_dense(v, o.candidates, exclude),
                     overlay.search_dense(v, o.candidates, {}));
    lists.push_back({dense, o.weight_dense});
  }
  std::map<uint32_t, double> other;
  for (const auto& [id, score] : reciprocal_rank_fusion(lists, o.rrf_k)) other[id] = score;
  const std::vector<uint32_t> structure = s.structural(other);
  lists.push_back({structure, o.weight_structural});
  const double best_possible =
      (o.weight_lexical + (embedder ? o.weight_dense : 0) + o.weight_structural) / (o.rrf_k + 1);

  // --- fused, per unit (its best piece), ranks per list ---
  auto rank_in = [](const std::vector<uint32_t>& ids, uint32_t id) -> uint32_t {
    auto it = std::find(ids.begin(), ids.end(), id);
    return it == ids.end() ? 0 : static_cast<uint32_t>(it - ids.begin() + 1);
  };
  auto keep_min = [](uint32_t& r, uint32_t v) {
    if (v && (!r || v < r)) r = v;
  };
  std::map<std::tuple<bool, std::string, std::string, uint32_t>, UnitHit> units;
  for (const auto& [id, raw] : reciprocal_rank_fusion(lists, o.rrf_k)) {
    const Seen& seen = s.seen(id);
    const Chunk& c = seen.c;
    // The whole unit's lines: a piece of a long unit covers only part of it.
    const uint32_t first = c.unit_first_line ? c.unit_first_line : c.first_line;
    const uint32_t last = c.unit_last_line ? c.unit_last_line : c.last_line;
    UnitHit& u = units[{seen.task, c.path, c.name, first}];
    facets::RetrievedFacet::Hit& h = u.hit;
    const double score = raw / best_possible;
    if (h.path.empty() || score > h.score) {
      h.path = c.path;
      h.name = c.name;
      h.kind = c.kind;
      h.score = score;
    }
    h.first_line = first;
    h.last_line = std::max(h.last_line, last);
    u.task = seen.task;
    keep_min(h.lexical_rank, rank_in(lexical, id));
    keep_min(h.dense_rank, rank_in(dense, id));
    keep_min(h.structural_rank, rank_in(structure, id));
  }

  // --- the adaptive threshold ---
  std::set<std::string> visible;
  for (const auto& [key, u] : units) visible.insert(std::string(simple_name(u.hit.name)));
  uint32_t covered = 0, open = 0;
  for (const std::string& id : std::set<std::string>(q.identifiers.begin(), q.identifiers.end())) {
    if (q.in_file_names.count(id)) {
      ++covered;
    } else if (visible.count(id)) {
      ++open;
    }
  }
  const double coverage = covered + open ? double(covered) / (covered + open) : 0.0;
  out.min_score = o.min_score + o.adaptive_raise * coverage;

  // --- best first, thresholded, capped per file, top_k ---
  std::vector<UnitHit> ranked;
  for (auto& [key, u] : units) {
    if (u.hit.score >= out.min_score) ranked.push_back(std::move(u));
  }
  std::sort(ranked.begin(), ranked.end(), [](const UnitHit& a, const UnitHit& b) {
    if (a.hit.score != b.hit.score) return a.hit.score > b.hit.score;
    return std::tie(a.hit.path, a.hit.first_line) < std::tie(b.hit.path, b.hit.first_line);
  });
  std::map<std::string, uint32_t> per_file;
  for (UnitHit& u : ranked) {
    if (out.hits.size() >= o.top_k) break;
    if (++per_file[u.hit.path] > o.per_file_cap) continue;
    if (!q.task_paths.count(u.hit.path) && file_text) {
      if (const std::string_view t = file_text(u.hit.path); !t.empty()) {
        u.hit.text = lines_of(t, u.hit.first_line, u.hit.last_line);
      }
    }
    out.hits.push_back(std::move(u.hit));
  }
  return out;
}

}  // namespace vsynth::stages::retrieval
