// The retrieval index at scale (docs/performance.md, "Retrieval index"):
//   dense   100k synthetic 384-d unit vectors in clusters (uniform random vectors in 384-d are
//           a pathological ANN case, real embeddings are not uniform): hnswlib build time,
//           query latency p50/p95 of what Index::search_dense does on the graph (ef = 64
//           candidates, exact re-rank, top 10), recall@10 against an exact scan, and the cost
//           of replacing one chunk's vector (markDelete + addPoint on the freed label) in the
//           full graph, which is what an edit holds the exclusive lock for.
//   update  save-to-searchable: a 2,000-line Python file with one function edited, through
//           Index::update_file (parse, chunk, terms, embed the changed chunk, swap), with the
//           tests' hashed bag-of-terms embedder at 384 dims: the real encoder's cost per
//           chunk comes on top (embed calls are printed). Last row: what retrieval.search
//           does for the file being edited (a new overlay from ast.anchor's tree and the last
//           overlay, overlay_cache.h).
//
// Usage: bench_retrieval [--points N] [--queries N] [--edits N] [--json PATH]
//        (defaults 100000, 1000, 200, bench_retrieval.json; --points 0: the update table only)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "stages/ast/language.h"
#include "stages/ast/parsed_file.h"
#include "stages/context/unit_extract.h"
#include "stages/retrieval/dense.h"
#include "stages/retrieval/files.h"
#include "stages/retrieval/index.h"
#include "stages/retrieval/overlay_cache.h"
#include "tests/retrieval/test_embedder.h"

using namespace vsynth::stages::retrieval;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kDim = 384;

double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

struct Percentiles {
  double p50 = 0, p95 = 0, max = 0;
};
Percentiles percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const auto at = [&](double p) {
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * v.size()))];
  };
  return {at(0.50), at(0.95), v.back()};
}

void normalise(std::vector<float>& v) {
  double n = 0;
  for (const float x : v) n += static_cast<double>(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
}

// Points around 1,000 random unit directions: center + an offset of norm 0.7 in a shared
// random 32-d subspace + isotropic noise of norm 0.05, normalised. Sentence embeddings have
// an intrinsic dimension of a few tens. With `isotropic` the offset spans all 384 dimensions
// instead: the neighbours inside a cluster are then uniform random points, a worst case
// real embeddings do not present (reported beside it).
struct Clusters {
  static constexpr int kLatent = 32;
  std::mt19937 rng{42};
  bool isotropic;
  std::vector<std::vector<float>> centers;
  std::vector<float> basis;  // kDim x kLatent
  Clusters(int n, bool iso) : isotropic(iso), basis(static_cast<std::size_t>(kDim) * kLatent) {
    std::normal_distribution<float> g;
    for (int i = 0; i < n; ++i) {
      std::vector<float> c(kDim);
      for (float& x : c) x = g(rng);
      normalise(c);
      centers.push_back(std::move(c));
    }
    for (float& x : basis) x = g(rng);
  }
  std::vector<float> point() {
    std::normal_distribution<float> g;
    const auto& c = centers[std::uniform_int_distribution<std::size_t>(0, centers.size() - 1)(rng)];
    float u[kLatent];
    for (float& x : u) x = g(rng);
    std::vector<float> offset(kDim, 0.0f), noise(kDim);
    for (int d = 0; d < kDim; ++d) {
      for (int l = 0; l < kLatent; ++l)
        offset[d] += basis[static_cast<std::size_t>(d) * kLatent + l] * u[l];
      noise[d] = g(rng);
    }
    normalise(offset);
    normalise(noise);
    std::vector<float> v(c);
    for (int d = 0; d < kDim; ++d) v[d] += 0.7f * offset[d] + 0.05f * noise[d];
    normalise(v);
    return v;
  }
};

std::vector<uint32_t> exact_top(const std::vector<float>& points, std::size_t n,
                                std::span<const float> q, std::size_t k) {
  std::vector<std::pair<double, uint32_t>> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    s[i] = {-dot(q, std::span<const float>(points.data() + i * kDim, kDim)),
            static_cast<uint32_t>(i)};
  }
  std::partial_sort(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(k), s.end());
  std::vector<uint32_t> out;
  for (std::size_t i = 0; i < k; ++i) out.push_back(s[i].second);
  return out;
}

// Index::search_dense's graph path: ef candidates, exact re-rank, top k.
std::vector<uint32_t> search(const DenseIndex& index, const std::vector<float>& points,
                             std::span<const float> q, std::size_t k, std::size_t ef) {
  std::vector<std::pair<double, uint32_t>> s;
  for (const uint32_t id : index.candidates(q, std::max(k, ef))) {
    s.emplace_back(-dot(q, std::span<const float>(points.data() + std::size_t{id} * kDim, kDim)),
                   id);
  }
  const std::size_t n = std::min(k, s.size());
  std::partial_sort(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n), s.end());
  std::vector<uint32_t> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(s[i].second);
  return out;
}

nlohmann::json bench_dense(std::size_t points_n, std::size_t queries, bool isotropic) {
  Clusters clusters(1000, isotropic);
  std::vector<float> points;
  points.reserve(points_n * kDim);
  for (std::size_t i = 0; i < points_n; ++i) {
    const auto p = clusters.point();
    points.insert(points.end(), p.begin(), p.end());
  }
  const DenseOptions options;  // M 16, ef_construction 200, ef_search 64 (Index's defaults)
  DenseIndex index(kDim, options);
  const auto b0 = Clock::now();
  for (std::size_t i = 0; i < points_n; ++i) {
    index.set(static_cast<uint32_t>(i), std::span<const float>(points.data() + i * kDim, kDim));
  }
  const double build_s = ms(b0, Clock::now()) / 1000;

  std::vector<std::vector<float>> qs;
  for (std::size_t i = 0; i < queries; ++i) qs.push_back(clusters.point());
  std::vector<double> lat;
  std::size_t found = 0, wanted = 0;
  const std::size_t recall_queries = std::min<std::size_t>(queries, 200);
  for (std::size_t i = 0; i < queries; ++i) {
    const auto t0 = Clock::now();
    const std::vector<uint32_t> got = search(index, points, qs[i], 10, options.ef_search);
    lat.push_back(ms(t0, Clock::now()));
    if (i < recall_queries) {
      const std::vector<uint32_t> truth = exact_top(points, points_n, qs[i], 10);
      const std::set<uint32_t> t(truth.begin(), truth.end());
      for (const uint32_t id : got) found += t.count(id);
      wanted += truth.size();
    }
  }
  const Percentiles q = percentiles(lat);
  const double recall = static_cast<double>(found) / static_cast<double>(wanted);

  // Replacing a chunk: markDelete one label, addPoint a new vector on it.
  std::vector<double> upd;
  std::mt19937 rng(5);
  for (int i = 0; i < 500; ++i) {
    const auto label = static_cast<uint32_t>(rng() % points_n);
    const auto v = clusters.point();
    const auto t0 = Clock::now();
    index.remove(label);
    index.set(label, v);
    upd.push_back(ms(t0, Clock::now()));
    std::copy(v.begin(), v.end(), points.begin() + static_cast<std::ptrdiff_t>(label) * kDim);
  }
  const Percentiles u = percentiles(upd);
  // Recall again, over the graph with those replacements in it.
  found = wanted = 0;
  for (std::size_t i = 0; i < recall_queries; ++i) {
    const std::vector<uint32_t> got = search(index, points, qs[i], 10, options.ef_search);
    const std::vector<uint32_t> truth = exact_top(points, points_n, qs[i], 10);
    const std::set<uint32_t> t(truth.begin(), truth.end());
    for (const uint32_t id : got) found += t.count(id);
    wanted += truth.size();
  }
  const double recall_after = static_cast<double>(found) / static_cast<double>(wanted);

  std::printf(
      "\ndense: %zu clustered %d-d unit vectors (%s), M %d, ef_construction %d, ef %d, "
      "k 10\n",
      points_n, kDim, isotropic ? "isotropic offsets" : "offsets in a 32-d subspace", options.m,
      options.ef_construction, options.ef_search);
  std::printf(
      "| build s | query p50 ms | query p95 ms | recall@10 | replace p50 ms | replace p95 ms | "
      "recall@10 after | elements |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::printf("| %.1f | %.3f | %.3f | %.4f | %.3f | %.3f | %.4f | %zu |\n", build_s, q.p50, q.p95,
              recall, u.p50, u.p95, recall_after, index.elements());
  return {{"points", points_n},
          {"offsets", isotropic ? "isotropic" : "32-d subspace"},
          {"dim", kDim},
          {"build_s", build_s},
          {"query_p50_ms", q.p50},
          {"query_p95_ms", q.p95},
          {"recall_at_10", recall},
          {"recall_queries", recall_queries},
          {"replace_p50_ms", u.p50},
          {"replace_p95_ms", u.p95},
          {"recall_after_replace", recall_after},
          {"elements", index.elements()}};
}

// A Python module of `lines` lines: functions of ~13 lines with identifiers of their own.
std::string module(int lines, int variant_of = -1, int variant = 0) {
  std::string out = "import os\nimport sys\n\n";
  for (int f = 0; static_cast<int>(std::count(out.begin(), out.end(), '\n')) < lines; ++f) {
    const std::string n = std::to_string(f);
    const std::string v = std::to_string(f == variant_of ? variant : 0);
    out += "def process_record_" + n + "(record, options=None):\n";
    out += "    \"\"\"Normalise record " + n + " and return its summary.\"\"\"\n";
    out += "    values = [field.strip() for field in record.fields_" + n + "]\n";
    out += "    if not values:\n        return None\n";
    out += "    total_" + n + " = sum(len(v) for v in values) + " + v + "\n";
    out += "    for index, value in enumerate(values):\n";
    out += "        if value.startswith('#'):\n            continue\n";
    out += "        options = merge_options(options, value, index)\n";
    out += "    return summarize(values, total_" + n + ", options)\n\n";
  }
  return out;
}

// How the edited text reaches the index.
enum class Mode { Fresh, Parsed, Incremental, Overlay };
const char* mode_name(Mode m) {
  return m == Mode::Fresh    ? "text, fresh parse (default)"
         : m == Mode::Parsed ? "already parsed (ast.anchor's tree)"
         : m == Mode::Overlay
             ? "task overlay: anchor's tree extracted, new graphless index from the last one"
             : "text, reparse_files (incremental parse)";
}

// retrieval.search's path for the file being edited (overlay_cache.h, a miss): the tree
// ast.anchor parsed is extracted (once, for the query too), and a new overlay index of it is
// built with the last overlay as `previous`. Timed: extraction, chunking, terms of new chunks,
// the changed chunk's embedding, the index; then searchable. The parse is ast.anchor's.
nlohmann::json bench_overlay(std::size_t edits) {
  auto embedder = std::make_shared<vsynth::stages::retrieval::test::BagEmbedder>(kDim, "bag-384");
  const IndexOptions options = OverlayCache::overlay_options({});
  const std::string path = "lib/records.py";
  const auto& python = vsynth::stages::ast::Language::named("python");
  auto last = std::make_shared<Index>(embedder, options);
  const UpdateStats first = last->update_file(path, module(2000));
  std::vector<double> total;
  uint64_t embedded = 0;
  const uint64_t calls0 = embedder->calls;
  std::size_t found = 0;
  for (std::size_t e = 0; e < edits; ++e) {
    const std::string text = module(2000, 70, static_cast<int>(e) + 1);
    auto parsed = std::make_shared<const vsynth::stages::ast::ParsedFile>(path, python, text);
    const auto t0 = Clock::now();
    auto units = vsynth::stages::context::extract_file_units(parsed);
    auto next = std::make_shared<Index>(embedder, options);
    const UpdateStats s = next->update_file(units, last.get());
    total.push_back(ms(t0, Clock::now()));
    embedded += s.embedded;
    last = next;
    const auto hits = last->search_lexical("total_70 " + std::to_string(e + 1), 1, {});
    found += !hits.empty() && hits[0].data->name == "process_record_70";
  }
  const Percentiles t = percentiles(total);
  const double per_edit = static_cast<double>(embedded) / static_cast<double>(edits);
  std::printf("| %s | %.2f | %.2f | %.2f | - | %.2f | %llu | %zu/%zu |\n", mode_name(Mode::Overlay),
              t.p50, t.p95, t.max, per_edit,
              static_cast<unsigned long long>(embedder->calls - calls0), found, edits);
  return {{"mode", mode_name(Mode::Overlay)}, {"file_lines", 2000},
          {"file_chunks", first.added},       {"edits", edits},
          {"update_p50_ms", t.p50},           {"update_p95_ms", t.p95},
          {"update_max_ms", t.max},           {"embedded_per_edit", per_edit},
          {"found_after_update", found}};
}

nlohmann::json bench_update(std::size_t edits, Mode mode) {
  auto embedder = std::make_shared<vsynth::stages::retrieval::test::BagEmbedder>(kDim, "bag-384");
  IndexOptions options;
  if (mode == Mode::Incremental) options.reparse_files = 4;
  Index index(embedder, options);
  // The edited file among 20 others of 500 lines.
  for (int f = 0; f < 20; ++f) {
    index.update_file("lib/other_" + std::to_string(f) + ".py", module(500));
  }
  const std::string path = "lib/records.py";
  const UpdateStats first = index.update_file(path, module(2000));
  const std::size_t chunks = index.chunk_count();

  std::vector<double> total, embed;
  uint64_t embedded = 0;
  const uint64_t calls0 = embedder->calls;
  std::size_t found = 0;
  for (std::size_t e = 0; e < edits; ++e) {
    // Function 70 (mid-file) edited, a new text each time.
    const std::string text = module(2000, 70, static_cast<int>(e) + 1);
    std::shared_ptr<const vsynth::stages::ast::ParsedFile> parsed;
    if (mode == Mode::Parsed) {
      parsed = std::make_shared<const vsynth::stages::ast::ParsedFile>(
          path, vsynth::stages::ast::Language::named("python"), text);
    }
    const auto t0 = Clock::now();
    const UpdateStats s = parsed ? index.update_file(parsed) : index.update_file(path, text);
    total.push_back(ms(t0, Clock::now()));
    embed.push_back(s.embed_ms);
    embedded += s.embedded;
    // Searchable now: the edited function's new text is the lexical top hit.
    const auto hits = index.search_lexical("total_70 " + std::to_string(e + 1), 1, {});
    found += !hits.empty() && hits[0].data->name == "process_record_70";
  }
  const Percentiles t = percentiles(total), em = percentiles(embed);
  const double per_edit = static_cast<double>(embedded) / static_cast<double>(edits);
  std::printf("| %s | %.2f | %.2f | %.2f | %.3f | %.2f | %llu | %zu/%zu |\n", mode_name(mode),
              t.p50, t.p95, t.max, em.p50, per_edit,
              static_cast<unsigned long long>(embedder->calls - calls0), found, edits);
  return {{"mode", mode_name(mode)},
          {"file_lines", 2000},
          {"file_chunks", first.added},
          {"index_chunks", chunks},
          {"edits", edits},
          {"update_p50_ms", t.p50},
          {"update_p95_ms", t.p95},
          {"update_max_ms", t.max},
          {"embed_p50_ms", em.p50},
          {"embedded_per_edit", per_edit},
          {"found_after_update", found}};
}

nlohmann::json bench_updates(std::size_t edits) {
  std::printf(
      "\nsave-to-searchable: lib/records.py, 2,000 lines (167 chunks), function 70 edited, "
      "%zu edits, in an index of 21 files; bag-of-terms embedder (%d-d)\n",
      edits, kDim);
  std::printf(
      "| input | update p50 ms | update p95 ms | max ms | embed p50 ms | texts embedded / "
      "edit | embed calls | found after update |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  nlohmann::json out = nlohmann::json::array();
  for (const Mode m : {Mode::Fresh, Mode::Parsed, Mode::Incremental}) {
    out.push_back(bench_update(edits, m));
  }
  out.push_back(bench_overlay(edits));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t points = 100000, queries = 1000, edits = 200;
  std::string json_path = "bench_retrieval.json";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--points") && i + 1 < argc) {
      points = std::stoul(argv[++i]);
    } else if (!std::strcmp(argv[i], "--queries") && i + 1 < argc) {
      queries = std::stoul(argv[++i]);
    } else if (!std::strcmp(argv[i], "--edits") && i + 1 < argc) {
      edits = std::stoul(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      json_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--points N] [--queries N] [--edits N] [--json PATH]\n",
                   argv[0]);
      return 2;
    }
  }
  nlohmann::json out;
  out["update"] = bench_updates(edits);
  if (points > 0) {
    out["dense"] = {bench_dense(points, queries, false), bench_dense(points, queries, true)};
  }
  std::ofstream(json_path) << out.dump(2) << "\n";
  std::printf("wrote %s\n", json_path.c_str());
}
