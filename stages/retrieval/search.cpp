#include "stages/retrieval/search.h"

#include "stages/ast/language.h"

#include <algorithm>
#include <array>
#include <cmath>
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

// The languages whose code can call each other's definitions (C and C++ share headers; the
// JavaScript dialects share modules); "" for a path no language claims.
std::string_view language_family(std::string_view path) {
  const ast::Language* language = ast::Language::find_for_path(path);
  if (!language) return "";
  const std::string_view name = language->name();
  if (name == "c" || name == "cpp") return "c";
  if (name == "javascript" || name == "typescript" || name == "tsx") return "javascript";
  return name;
}

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
    return best_first(std::move(all));
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

  // The usage list (search.h): definitions of what the focus's co-callers call, by vote.
  std::vector<uint32_t> usage(const std::unordered_set<std::string>& exclude) {
    if (q_.calls.empty()) return {};
    const std::map<std::string, double> votes = usage_votes(co_callers(exclude), exclude);
    return voted_definitions(votes, exclude);
  }

  // The local list (search.h): definitions of what the rest of the cursor's file calls.
  std::vector<uint32_t> local(const std::unordered_set<std::string>& exclude) {
    std::vector<Hit> file = overlay_.file_chunks(q_.cursor_path);
    if (file.empty() && !exclude.count(q_.cursor_path)) file = shared_.file_chunks(q_.cursor_path);
    const std::set<std::string> named = named_by_focus();
    std::map<std::string, double> votes;  // name -> chunks of the file calling it
    for (const Hit& h : file) {
      if (in_focus(*h.data)) continue;
      for (const std::string& n : h.data->calls) {
        if (!named.count(n)) votes[n] += 1;
      }
    }
    return voted_definitions(votes, exclude);
  }

  const Seen& seen(uint32_t id) const { return seen_.at(id); }

 private:
  // The names the focus calls or uses: neither list proposes them again.
  std::set<std::string> named_by_focus() const {
    std::set<std::string> named(q_.calls.begin(), q_.calls.end());
    named.insert(q_.identifiers.begin(), q_.identifiers.end());
    return named;
  }
  // Of the focus's language family (code of another language neither calls like the focus
  // nor defines what it can call); cached per path.
  bool compatible(const std::string& path) {
    auto it = family_.find(path);
    if (it == family_.end()) {
      it = family_.emplace(path, language_family(path) == language_family(q_.cursor_path)).first;
    }
    return it->second;
  }
  // The chunks calling a name the focus calls, the focus itself left out.
  std::vector<std::shared_ptr<const Chunk>> co_callers(
      const std::unordered_set<std::string>& exclude) {
    std::vector<std::shared_ptr<const Chunk>> out;
    for (const Index* index : {&shared_, &overlay_}) {
      const auto& ex = index == &shared_ ? exclude : std::unordered_set<std::string>{};
      for (const Hit& h : index->callers(q_.calls, ex)) {
        if (!in_focus(*h.data) && compatible(h.data->path)) out.push_back(h.data);
      }
    }
    return out;
  }
  // name -> sum over the co-callers calling it of their overlap x the name's IDF (a name few
  // chunks call says more than one every chunk calls), for the names the focus does not name.
  std::map<std::string, double> usage_votes(
      const std::vector<std::shared_ptr<const Chunk>>& callers,
      const std::unordered_set<std::string>& exclude) const {
    // IDF of every name involved, over both indexes as one corpus.
    std::set<std::string> names(q_.calls.begin(), q_.calls.end());
    for (const auto& c : callers) names.insert(c->calls.begin(), c->calls.end());
    const std::vector<std::string> list(names.begin(), names.end());
    const std::vector<uint32_t> df = shared_.caller_counts(list, exclude);
    const std::vector<uint32_t> df_task = overlay_.caller_counts(list, {});
    const double chunks = double(shared_.chunk_count() + overlay_.chunk_count());
    std::map<std::string_view, double> idf;
    for (std::size_t i = 0; i < list.size(); ++i) {
      idf[list[i]] = std::log(1.0 + chunks / std::max(1u, df[i] + df_task[i]));
    }
    // Each co-caller votes with its weighted Jaccard overlap: common / either, in IDF; a vote
    // for a name is that times the name's IDF.
    const std::set<std::string> focus(q_.calls.begin(), q_.calls.end());
    const std::set<std::string> named = named_by_focus();
    std::map<std::string, double> votes;
    for (const auto& c : callers) {
      double common = 0, either = 0;
      for (const std::string& n : c->calls) {
        either += idf[n];
        if (focus.count(n)) common += idf[n];
      }
      for (const std::string& n : focus) {
        if (!std::binary_search(c->calls.begin(), c->calls.end(), n)) either += idf[n];
      }
      if (common <= 0) continue;
      for (const std::string& n : c->calls) {
        if (!named.count(n)) votes[n] += common / either * idf[n];
      }
    }
    return votes;
  }
  // The voted names' definitions (names of more than kUsageMaxDefinitions units left out), best
  // voted first.
  std::vector<uint32_t> voted_definitions(const std::map<std::string, double>& votes,
                                          const std::unordered_set<std::string>& exclude) {
    std::vector<std::string> voted;
    for (const auto& [n, v] : votes) voted.push_back(n);
    std::vector<Hit> defs_shared = shared_.definitions(voted, exclude);
    std::vector<Hit> defs_task = overlay_.definitions(voted, {});
    std::map<std::string, std::set<std::pair<std::string, uint32_t>>> units;  // name -> units
    for (auto* defs : {&defs_shared, &defs_task}) {
      std::erase_if(*defs, [&](const Hit& h) { return !compatible(h.data->path); });
      for (const Hit& h : *defs) {
        const Chunk& c = *h.data;
        units[std::string(simple_name(c.name))].emplace(
            c.path, c.unit_first_line ? c.unit_first_line : c.first_line);
      }
    }
    std::vector<std::pair<double, uint32_t>> ranked;
    for (const auto& [defs, task] : {std::pair{&defs_shared, false}, std::pair{&defs_task, true}}) {
      std::erase_if(*defs, [&](const Hit& h) {
        return units[std::string(simple_name(h.data->name))].size() > kUsageMaxDefinitions;
      });
      for (const uint32_t id : list(*defs, task)) {
        ranked.emplace_back(votes.at(std::string(simple_name(seen_.at(id).c.name))), id);
      }
    }
    return best_first(std::move(ranked));
  }
  // The ids of (score, id) pairs, highest score first (ties by path and line), at most
  // `candidates` of them.
  std::vector<uint32_t> best_first(std::vector<std::pair<double, uint32_t>> scored) const {
    std::sort(scored.begin(), scored.end(), [&](const auto& x, const auto& y) {
      if (x.first != y.first) return x.first > y.first;
      return before(seen_.at(x.second).c, seen_.at(y.second).c);
    });
    std::vector<uint32_t> ids;
    for (std::size_t i = 0; i < scored.size() && ids.size() < o_.candidates; ++i) {
      ids.push_back(scored[i].second);
    }
    return ids;
  }
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
  std::map<std::string, bool, std::less<>> family_;  // path -> of the focus's language family
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
  std::vector<uint32_t> usage;
  if (o.weight_usage > 0) {
    usage = s.usage(exclude);
    lists.push_back({usage, o.weight_usage});
  }
  std::vector<uint32_t> local;
  if (o.weight_local > 0) {
    local = s.local(exclude);
    lists.push_back({local, o.weight_local});
  }
  std::map<uint32_t, double> other;
  for (const auto& [id, score] : reciprocal_rank_fusion(lists, o.rrf_k)) other[id] = score;
  const std::vector<uint32_t> structure = s.structural(other);
  lists.push_back({structure, o.weight_structural});
  const double best_possible = (o.weight_lexical + (embedder ? o.weight_dense : 0) +
                                o.weight_usage + o.weight_local + o.weight_structural) /
                               (o.rrf_k + 1);

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
    keep_min(h.usage_rank, rank_in(usage, id));
    keep_min(h.local_rank, rank_in(local, id));
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
    // The cursor's own file is not capped: its units are prune's candidates anyway (a hit
    // adds no text, it says which of them matter), and the cap is there so that one other
    // file cannot crowd the rest out.
    if (u.hit.path != q.cursor_path && ++per_file[u.hit.path] > o.per_file_cap) continue;
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
