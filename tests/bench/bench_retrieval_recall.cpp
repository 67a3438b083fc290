// Retrieval recall (issue 10, "Measured"): does retrieval put the gold definition into the
// context at 1024 tokens, next to and instead of context.deps' dependency hops?
//
// Tasks, from the bench_context repositories (scripts/bench-context.sh fetches them):
//   existing        bench_context's generator, unchanged (a call, attribute or type-use site
//                   whose name has one definition; the rest of its line cut, the cursor right
//                   after the name; the gold is that definition)
//   not-yet-named   in a function F that calls a helper H with exactly one definition in the
//                   project (outside F), F is cut at the start of the row holding its first
//                   call to H: the cursor at that row's indentation, the rest of F removed,
//                   the rest of the file kept; H is not named anywhere in F's remaining text.
//                   The gold is H's definition.
// Configurations, all at the same budget, counter and prune:
//   deps            anchor -> candidates -> deps (two hops) -> dedup -> prune (today's path)
//   bm25 / dense /  the cursor file's units + the hits of retrieval.search run with the other
//   usage / local   lists' weights at 0 (SearchOptions: BM25 = 1/0/0/0/0, dense = 0/1/0/0/0,
//                   usage = 0/0/1/0/0, local = 0/0/0/1/0 for lexical/dense/usage/local/
//                   structural), no dependency hops (max_per_hop 0)
//   fusion          the same with the stage's default weights (BM25 + dense + usage + local +
//                   structural)
//   deps+fusion     deps' hops and the fusion hits together (the pipeline with retrieval)
// Hits join the candidates exactly as context.deps adds them (resolve_retrieved, then
// expand_dependencies). Gold recall: the gold unit shown in full or signature form.
// JSON, per task: which configurations recalled the gold, each search's hits, and
// "gold_rank": the gold's rank in a search with no threshold, cap or top_k, fused and per list
// (absent: no list has it among its candidates): whether a miss is the search's or prune's.
// Index: each repository indexed once (retrieval::Index, the real encoder); per task the
// cursor file's current text goes into an overlay index and the shared index excludes that
// path, as retrieval.search does. Query latency: overlay update + query + search, per task.
//
//   bench_retrieval_recall --repos .cache/bench-repos/src [--only click,tiktoken]
//       [--per-file 4] [--max-tasks 200] [--min-lines 800] [--budget 1024]
//       [--model models/all-MiniLM-L6-v2] [--q8 1] [--threads 2] [--max-files 400]
//       [--json bench_retrieval_recall.json] [--index-cache DIR]
// --index-cache: each repository's index is saved under DIR and loaded by the next run (its
// files re-validated by content; "build s" is then the re-validation).
// --ablation 1: also fusion with one mechanism changed at a time, as configurations of their
// own, alone and with deps' hops ("d+" before the name): f-nousage (no usage list), f-usage1
// (usage weight 1 instead of 2), f-nolocal (no local list), f-local2 (local weight 2 instead
// of 1), f-nodense (no dense list), f-nothr (no threshold), f-nocap (no per-file cap); and
// fusion-r80 / d+fusion-r80: the fusion's hits valued by prune at weight_retrieval 80 (a named
// reference's weight) instead of 50. Earlier runs' f-nostruct / f-k10 / f-k20 (no structural list,
// rrf_k 10 / 20) are in docs/performance.md; they changed nothing and were dropped.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include "stages/ast/anchor.h"
#include "stages/ast/anchor_stage.h"
#include "stages/ast/language.h"
#include "stages/context/context_units.h"
#include "stages/context/dedup.h"
#include "stages/context/deps.h"
#include "stages/context/file_cache.h"
#include "stages/context/project_index.h"
#include "stages/context/prune.h"
#include "stages/context/token_counter.h"
#include "stages/context/ts_util.h"
#include "stages/context/unit_extract.h"
#include "stages/retrieval/embedder.h"
#include "stages/retrieval/index.h"
#include "stages/retrieval/overlay_cache.h"
#include "stages/retrieval/search.h"
#include "stages/retrieval/search_stage.h"

namespace ast = vsynth::stages::ast;
namespace ctx = vsynth::stages::context;
namespace ret = vsynth::stages::retrieval;
namespace facets = vsynth::stages::facets;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5));
  return v[i];
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream b;
  b << in.rdbuf();
  return b.str();
}

std::string_view simple(std::string_view name) {
  const std::size_t p = name.find_last_of(":.");
  return p == std::string_view::npos ? name : name.substr(p + 1);
}

struct Site {
  std::string kind;  // call, attribute, type
  uint32_t name_start = 0, name_end = 0;
  std::string name;
};

// Call, attribute and type-use sites of a file: identifiers in those roles.
std::vector<Site> find_sites(const ast::ParsedFile& file) {
  std::vector<Site> sites;
  const ast::Language& lang = file.language();
  std::vector<TSNode> stack;
  ctx::walk(file.root(), [&](TSNode n) {
    if (!lang.is_identifier(n)) return true;
    const TSNode parent = ts_node_parent(n);
    if (ts_node_is_null(parent)) return false;
    const std::string_view pt = ts_node_type(parent);
    const std::string_view t = ts_node_type(n);
    std::string kind;
    auto is_call = [](std::string_view x) {
      return x == "call" || x == "call_expression" || x == "method_invocation";
    };
    auto is_member = [](std::string_view x) {
      return x == "attribute" || x == "member_expression" || x == "field_expression" ||
             x == "selector_expression" || x == "field_access";
    };
    const TSNode fn = ctx::field(parent, "function");
    if (is_call(pt) && ((!ts_node_is_null(fn) && ts_node_eq(fn, n)) ||
                        (pt == "method_invocation" && ts_node_eq(ctx::field(parent, "name"), n)))) {
      kind = "call";
    } else if (is_member(pt)) {
      // The member name, not the object.
      bool member = false;
      for (const char* f : {"attribute", "property", "field"}) {
        const TSNode m = ctx::field(parent, f);
        member |= !ts_node_is_null(m) && ts_node_eq(m, n);
      }
      if (!member) return false;
      const TSNode gp = ts_node_parent(parent);
      kind = !ts_node_is_null(gp) && is_call(ts_node_type(gp)) &&
                     ts_node_eq(ctx::field(gp, "function"), parent)
                 ? "call"
                 : "attribute";
    } else if (t == "type_identifier" || pt == "type" || pt == "generic_type") {
      kind = "type";
    } else {
      return false;
    }
    sites.push_back({kind, ts_node_start_byte(n), ts_node_end_byte(n), std::string(file.text(n))});
    return false;
  });
  return sites;
}

struct Task {
  std::string repo, path, source, kind, gold_name, gold_path;
  uint32_t cursor = 0, gold_row = 0, lines = 0;
  bool cross_file = false;
  std::string family = "existing";  // or "not-yet-named"
};

struct Repo {
  std::string name;
  std::map<std::string, std::string> files;  // relative path -> text
  ctx::ProjectIndex index;                   // context.deps' view (all files, task text swapped in)
  std::unique_ptr<ret::Index> retrieval;     // the shared retrieval index, built once
  uint32_t chunks = 0, skipped = 0;
  double build_s = 0;
};

// Tasks of one repository (deterministic).
std::vector<Task> make_tasks(Repo& repo, uint32_t min_lines, uint32_t per_file) {
  std::vector<Task> tasks;
  std::mt19937 rng(1234);  // bench_context's seed: the same tasks
  // A repository without files that long (tiktoken's Rust) uses those of half the length.
  const bool any_long = std::any_of(repo.files.begin(), repo.files.end(), [&](const auto& f) {
    return std::count(f.second.begin(), f.second.end(), '\n') >= min_lines;
  });
  if (!any_long) min_lines /= 2;
  for (const auto& [path, text] : repo.files) {
    const auto lines = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n'));
    if (lines < min_lines) continue;
    const ast::ParsedFile file = ast::ParsedFile::from_path(path, text);
    vsynth::graph::Arena arena;
    const std::vector<ctx::Unit> units = ctx::extract_units(file, 0, arena);
    const ctx::ProjectIndex::File* self = repo.index.find(path);
    std::vector<Site> sites = find_sites(file);
    std::shuffle(sites.begin(), sites.end(), rng);
    std::set<std::string> used_names;
    uint32_t in_file = 0, cross = 0;
    for (const Site& s : sites) {
      if (in_file + cross >= per_file) break;
      if (used_names.count(s.name)) continue;
      // In-file definitions of the name (any unit kind that defines something).
      std::vector<const ctx::Unit*> defs;
      for (const ctx::Unit& u : units) {
        if (u.kind == ctx::UnitKind::Import || u.kind == ctx::UnitKind::Statement ||
            u.kind == ctx::UnitKind::Namespace || simple(u.name) != s.name) {
          continue;
        }
        defs.push_back(&u);
      }
      Task t;
      t.repo = repo.name;
      t.path = path;
      t.kind = s.kind;
      t.gold_name = s.name;
      t.lines = lines;
      if (defs.size() == 1) {
        const ctx::Unit& d = *defs[0];
        if (s.name_start >= d.row_byte && s.name_start < d.row_byte + d.full.size()) continue;
        if (d.container && s.name_start >= d.row_byte && s.name_start <= d.node_end) continue;
        if (in_file >= (per_file + 1) / 2) continue;  // leave room for cross-file sites
        t.gold_path = path;
        t.gold_row = d.first_row;
        ++in_file;
      } else if (defs.empty()) {
        const auto refs = repo.index.resolve(s.name, self, 1);
        if (refs.size() != 1 || refs[0].file == self) continue;
        t.gold_path = refs[0].file->path;
        t.gold_row = refs[0].file->units[refs[0].unit].first_row;
        t.cross_file = true;
        ++cross;
      } else {
        continue;
      }
      // Remove the rest of the site's line; the cursor goes right after the name.
      const std::size_t eol = text.find('\n', s.name_end);
      const std::size_t cut_end = eol == std::string::npos ? text.size() : eol;
      t.source = text.substr(0, s.name_end) + text.substr(cut_end);
      t.cursor = s.name_end;
      used_names.insert(s.name);
      tasks.push_back(std::move(t));
    }
  }
  return tasks;
}

bool word_char(char ch) {
  return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
}

// `name` occurs in `text` as a whole word.
bool names(std::string_view text, std::string_view name) {
  for (std::size_t at = text.find(name); at != std::string_view::npos;
       at = text.find(name, at + 1)) {
    const bool left = at == 0 || !word_char(text[at - 1]);
    const bool right = at + name.size() >= text.size() || !word_char(text[at + name.size()]);
    if (left && right) return true;
  }
  return false;
}

// The one definition of `name` the project has outside `fn` (in `path` or, when the file has
// none, exactly one in another file), as (path, first row); empty path when there is not one.
std::pair<std::string, uint32_t> sole_definition(Repo& repo, const std::string& path,
                                                 const std::vector<ctx::Unit>& units,
                                                 const ctx::Unit& fn, const std::string& name) {
  std::vector<const ctx::Unit*> defs;
  for (const ctx::Unit& u : units) {
    if (u.kind == ctx::UnitKind::Import || u.kind == ctx::UnitKind::Statement ||
        u.kind == ctx::UnitKind::Namespace || simple(u.name) != name) {
      continue;
    }
    defs.push_back(&u);
  }
  if (defs.size() == 1) {
    const ctx::Unit& d = *defs[0];
    if (d.row_byte >= fn.row_byte && d.row_byte < fn.node_end) return {};  // nested in F
    return {path, d.first_row};
  }
  if (!defs.empty()) return {};
  const ctx::ProjectIndex::File* self = repo.index.find(path);
  const auto refs = repo.index.resolve(name, self, 1);
  if (refs.size() != 1 || refs[0].file == self) return {};
  return {refs[0].file->path, refs[0].file->units[refs[0].unit].first_row};
}

// Not-yet-named tasks of one repository (deterministic; see the header): per file at most
// `per_file` functions, each cut before its first call to a helper defined once elsewhere.
std::vector<Task> make_unnamed_tasks(Repo& repo, uint32_t min_lines, uint32_t per_file) {
  std::vector<Task> tasks;
  std::mt19937 rng(4321);
  const bool any_long = std::any_of(repo.files.begin(), repo.files.end(), [&](const auto& f) {
    return std::count(f.second.begin(), f.second.end(), '\n') >= min_lines;
  });
  if (!any_long) min_lines /= 2;  // as make_tasks does
  for (const auto& [path, text] : repo.files) {
    const auto lines = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n'));
    if (lines < min_lines) continue;
    const ast::ParsedFile file = ast::ParsedFile::from_path(path, text);
    vsynth::graph::Arena arena;
    const std::vector<ctx::Unit> units = ctx::extract_units(file, 0, arena);
    std::vector<Site> calls;
    for (const Site& s : find_sites(file)) {
      if (s.kind == "call") calls.push_back(s);
    }
    std::sort(calls.begin(), calls.end(),
              [](const Site& a, const Site& b) { return a.name_start < b.name_start; });
    std::vector<const ctx::Unit*> fns;
    for (const ctx::Unit& u : units) {
      const bool function = u.kind == ctx::UnitKind::Function || u.kind == ctx::UnitKind::Method ||
                            u.kind == ctx::UnitKind::Constructor;
      if (function && !u.container) fns.push_back(&u);
    }
    std::shuffle(fns.begin(), fns.end(), rng);
    std::set<std::string> used_names;
    uint32_t made = 0;
    for (const ctx::Unit* fn : fns) {
      if (made >= per_file) break;
      std::set<std::string> called;  // names whose first call in F was looked at
      for (const Site& s : calls) {
        if (s.name_start < fn->node_start || s.name_end > fn->node_end) continue;
        if (!called.insert(s.name).second) continue;  // only the first call to a name
        if (used_names.count(s.name) || s.name == simple(fn->name)) continue;
        const auto [gold_path, gold_row] = sole_definition(repo, path, units, *fn, s.name);
        if (gold_path.empty()) continue;
        // The cut: the start of the call's row, at its indentation; F's rows before it stay.
        std::size_t row = text.rfind('\n', s.name_start);
        row = row == std::string::npos ? 0 : row + 1;
        if (row <= fn->row_byte) continue;  // the call is on F's first row
        const std::size_t cursor = text.find_first_not_of(" \t", row);
        const std::string_view kept =
            std::string_view(text).substr(fn->row_byte, cursor - fn->row_byte);
        if (names(kept, s.name)) continue;  // F already names H
        Task t;
        t.repo = repo.name;
        t.path = path;
        t.kind = "call";
        t.family = "not-yet-named";
        t.gold_name = s.name;
        t.gold_path = gold_path;
        t.gold_row = gold_row;
        t.cross_file = gold_path != path;
        t.lines = lines;
        t.source = text.substr(0, cursor) + text.substr(fn->node_end);
        t.cursor = static_cast<uint32_t>(cursor);
        used_names.insert(s.name);
        tasks.push_back(std::move(t));
        ++made;
        break;  // one task per function
      }
    }
  }
  return tasks;
}

struct Config {
  std::string name;
  bool deps = false;                                        // dependency hops
  int retrieval = -1;                                       // index into the searches, -1: none
  double weight_retrieval = ctx::PruneWeights{}.retrieval;  // prune's value of a hit
};

// One configuration's context for one task; true when the gold is shown in full or as a
// signature.
bool gold_recalled(const Task& t, const ast::AnchorFacet& anchor, Repo& repo, const Config& cfg,
                   const facets::RetrievedFacet* hits, ctx::FileUnitsCache& cache,
                   const ctx::TokenCounter& counter, uint32_t budget) {
  vsynth::graph::Arena arena;
  ctx::ContextUnitsFacet c;
  ctx::build_candidates(c, anchor, ctx::extract_file_units(anchor.share_file()));
  repo.index.update(t.path, c.extracted);
  ctx::DepsOptions o;
  if (!cfg.deps) o.max_per_hop = 0;  // no definition is reached by a hop
  if (hits) {
    const ctx::RetrievedUnits units = ctx::resolve_retrieved(*hits, repo.index, cache);
    ctx::expand_dependencies(c, repo.index, o, arena, &units);
  } else {
    ctx::expand_dependencies(c, repo.index, o, arena);
  }
  ctx::remove_duplicates(c, {});
  ctx::PruneOptions po;
  po.budget_tokens = budget;
  po.weights.retrieval = cfg.weight_retrieval;
  const ctx::PruneResult r = ctx::prune(c, counter, po, arena);
  // BENCH_RECALL_SHOW=gold: what each configuration packed for tasks of that gold name.
  if (const char* show = std::getenv("BENCH_RECALL_SHOW"); show && t.gold_name == show) {
    fmt::print(stderr, "--- {} {} gold {}:{} ({} tokens)\n", cfg.name, t.path, t.gold_path,
               t.gold_row, r.used_tokens);
    for (const ctx::Shown& s : r.shown) {
      const ctx::Unit& u = c.units[s.unit];
      fmt::print(stderr, "    {}:{} {} form {} tokens {} value {:.1f} {}\n", c.files[u.file].path,
                 u.first_row, u.name, static_cast<int>(s.form), s.tokens, s.value, s.reason);
    }
  }
  for (const ctx::Shown& s : r.shown) {
    const ctx::Unit& u = c.units[s.unit];
    if (s.form == ctx::Form::Name) continue;
    if (c.files[u.file].path == t.gold_path && u.first_row == t.gold_row &&
        simple(u.name) == t.gold_name) {
      return true;
    }
  }
  return false;
}

// Whether the search's hits name the gold unit (before prune decides what fits).
bool gold_hit(const Task& t, const facets::RetrievedFacet& r) {
  for (const auto& h : r.hits) {
    if (h.path == t.gold_path && ret::simple_name(h.name) == t.gold_name &&
        h.first_line <= t.gold_row + 1 && h.last_line >= t.gold_row + 1) {
      return true;
    }
  }
  return false;
}

// Every k-th task so that at most `cap` remain (deterministic, spread over files and repos).
std::vector<Task> spread(std::vector<Task> tasks, std::size_t cap) {
  if (tasks.size() <= cap || cap == 0) return tasks;
  std::vector<Task> out;
  for (std::size_t i = 0; i < cap; ++i) out.push_back(std::move(tasks[i * tasks.size() / cap]));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string repos_dir = ".cache/bench-repos/src", json_path = "bench_retrieval_recall.json";
  std::string model = "models/all-MiniLM-L6-v2", only;
  uint32_t min_lines = 800, per_file = 4, max_tasks = 200, budget = 1024, max_files = 400;
  bool q8 = true;
  int threads = 2;
  std::string index_cache;  // a directory: each repository's index saved there, loaded next run
  bool ablation = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--repos") {
      repos_dir = v;
    } else if (a == "--json") {
      json_path = v;
    } else if (a == "--model") {
      model = v;
    } else if (a == "--only") {
      only = "," + v + ",";
    } else if (a == "--min-lines") {
      min_lines = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--per-file") {
      per_file = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--max-tasks") {
      max_tasks = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--budget") {
      budget = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--max-files") {
      max_files = static_cast<uint32_t>(std::stoul(v));
    } else if (a == "--q8") {
      q8 = v != "0";
    } else if (a == "--threads") {
      threads = std::stoi(v);
    } else if (a == "--index-cache") {
      index_cache = v;
    } else if (a == "--ablation") {
      ablation = v != "0";
    } else {
      fmt::print(stderr, "bench_retrieval_recall: unknown option {} (see its header)\n", a);
      return 2;
    }
  }
  if (!fs::is_directory(repos_dir)) {
    fmt::print(stderr,
               "bench_retrieval_recall: no repositories at {} (run the download part of "
               "scripts/bench-context.sh)\n",
               repos_dir);
    return 2;
  }
  const std::shared_ptr<const ctx::TokenCounter> counter = ctx::estimate_counter();
  ret::BertEmbedderOptions eo;
  eo.threads = threads;
  eo.q8_0 = q8;
  const std::shared_ptr<const ret::Embedder> embedder = ret::load_bert_embedder(model, eo);
  const ret::IndexOptions index_options;
  nlohmann::json out;
  out["counter"] = counter->describe();
  out["budget"] = budget;
  out["encoder"] = {{"model", model}, {"q8_0", q8}, {"threads", threads}};

  // --- load each repository, as bench_context does, and index it once ---
  std::vector<std::unique_ptr<Repo>> repos;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(repos_dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && (only.empty() || only.find("," + name + ",") != std::string::npos))
      dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  fmt::print("{:<10} {:>6} {:>7} {:>8} {:>9}\n", "repo", "files", "chunks", "skipped", "build s");
  for (const fs::path& dir : dirs) {
    auto repo = std::make_unique<Repo>();
    repo->name = dir.filename().string();
    std::vector<fs::path> paths;
    for (const auto& f : fs::recursive_directory_iterator(dir)) {
      if (f.is_regular_file() && ast::Language::find_for_path(f.path().string()) &&
          f.file_size() < 512 * 1024) {
        paths.push_back(f.path());
      }
    }
    std::sort(paths.begin(), paths.end());
    if (paths.size() > max_files) paths.resize(max_files);
    for (const fs::path& p : paths) {
      const std::string rel = fs::relative(p, dir).string();
      repo->files[rel] = read_file(p);
      repo->index.update(rel, repo->files[rel]);
    }
    const fs::path saved =
        index_cache.empty() ? fs::path() : fs::path(index_cache) / (repo->name + (q8 ? "-q8" : ""));
    if (!saved.empty() && fs::exists(saved / "manifest.json")) {
      try {
        repo->retrieval = ret::Index::load(saved, embedder, index_options);
      } catch (const std::exception& e) {
        fmt::print(stderr, "{}: not loaded ({}); rebuilding\n", saved.string(), e.what());
      }
    }
    if (!repo->retrieval) repo->retrieval = std::make_unique<ret::Index>(embedder, index_options);
    const auto t0 = Clock::now();
    for (const auto& [rel, text] : repo->files) {
      const ret::UpdateStats s = repo->retrieval->update_file(rel, text);
      repo->skipped += !s.skipped.empty();
    }
    repo->build_s = ms_since(t0) / 1e3;
    if (!saved.empty()) repo->retrieval->save(saved);
    repo->chunks = static_cast<uint32_t>(repo->retrieval->chunk_count());
    fmt::print("{:<10} {:>6} {:>7} {:>8} {:>9.1f}\n", repo->name, repo->files.size(), repo->chunks,
               repo->skipped, repo->build_s);
    std::fflush(stdout);
    out["index_build"].push_back({{"repo", repo->name},
                                  {"files", repo->files.size()},
                                  {"chunks", repo->chunks},
                                  {"skipped_files", repo->skipped},
                                  {"seconds", repo->build_s}});
    repos.push_back(std::move(repo));
  }

  // --- tasks: both families, capped at max_tasks / 2 each, spread over the repositories ---
  std::vector<std::pair<Repo*, Task>> tasks;
  for (const std::string family : {"existing", "not-yet-named"}) {
    std::vector<Task> all;
    for (auto& repo : repos) {
      std::vector<Task> ts = family == "existing" ? make_tasks(*repo, min_lines, per_file)
                                                  : make_unnamed_tasks(*repo, min_lines, per_file);
      for (Task& t : ts) all.push_back(std::move(t));
    }
    for (Task& t : spread(std::move(all), max_tasks / 2)) {
      Repo* r = nullptr;
      for (auto& repo : repos) {
        if (repo->name == t.repo) r = repo.get();
      }
      tasks.emplace_back(r, std::move(t));
    }
  }

  // --- the configurations ---
  struct Search {
    std::string name;
    ret::SearchOptions o;  // the stage's defaults, then the configuration's changes
  };
  auto with = [](std::string name, auto&& change) {
    Search s{std::move(name), {}};
    change(s.o);
    return s;
  };
  auto weights = [](double lexical, double dense, double usage, double local, double structural) {
    return [=](ret::SearchOptions& o) {
      o.weight_lexical = lexical;
      o.weight_dense = dense;
      o.weight_usage = usage;
      o.weight_local = local;
      o.weight_structural = structural;
    };
  };
  // Fusion first: its query embedding is the one timed (the others find it in the cache).
  std::vector<Search> searches = {
      with("fusion", [](ret::SearchOptions&) {}), with("bm25", weights(1, 0, 0, 0, 0)),
      with("dense", weights(0, 1, 0, 0, 0)), with("usage", weights(0, 0, 1, 0, 0)),
      with("local", weights(0, 0, 0, 1, 0))};
  std::vector<Config> configs = {{"deps", true, -1},      {"bm25", false, 1},  {"dense", false, 2},
                                 {"usage", false, 3},     {"local", false, 4}, {"fusion", false, 0},
                                 {"deps+fusion", true, 0}};
  const int first_ablation = static_cast<int>(searches.size());
  if (ablation) {  // fusion with one mechanism changed at a time, alone and with deps
    searches.push_back(with("f-nousage", [](ret::SearchOptions& o) { o.weight_usage = 0; }));
    searches.push_back(with("f-usage1", [](ret::SearchOptions& o) { o.weight_usage = 1; }));
    searches.push_back(with("f-nolocal", [](ret::SearchOptions& o) { o.weight_local = 0; }));
    searches.push_back(with("f-local2", [](ret::SearchOptions& o) { o.weight_local = 2; }));
    searches.push_back(with("f-nodense", [](ret::SearchOptions& o) { o.weight_dense = 0; }));
    searches.push_back(with("f-nothr", [](ret::SearchOptions& o) {
      o.min_score = 0;
      o.adaptive_raise = 0;
    }));
    searches.push_back(with("f-nocap", [](ret::SearchOptions& o) { o.per_file_cap = 1000; }));
    for (int k = first_ablation; k < static_cast<int>(searches.size()); ++k) {
      configs.push_back({searches[static_cast<std::size_t>(k)].name, false, k});
    }
    for (int k = first_ablation; k < static_cast<int>(searches.size()); ++k) {
      configs.push_back({"d+" + searches[static_cast<std::size_t>(k)].name, true, k});
    }
    // How prune values hits: context.prune's weight_retrieval at 80 (a named reference's)
    // instead of 50.
    configs.push_back({"fusion-r80", false, 0, 80});
    configs.push_back({"d+fusion-r80", true, 0, 80});
  }
  ctx::FileUnitsCache cache(std::size_t{256} << 20);
  // (family, repo or "all", config) -> tasks, recalled; (family, search) -> gold among hits
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<uint32_t, uint32_t>> tally;
  std::map<std::pair<std::string, std::string>, uint32_t> in_hits;
  std::vector<double> search_ms, stage_ms;  // fusion search alone / overlay + query + search
  std::vector<nlohmann::json> gold_ranks;   // per task: the gold's ranks, unthresholded
  const auto run_t0 = Clock::now();
  for (std::size_t n = 0; n < tasks.size(); ++n) {
    Repo& repo = *tasks[n].first;
    const Task& t = tasks[n].second;
    // Which task a crash or a slow step belongs to.
    if (std::getenv("BENCH_RECALL_TRACE")) {
      fmt::print(stderr, "task {} {} {} {} cursor={}\n", n, t.family, t.path, t.gold_name,
                 t.cursor);
    }
    auto file =
        std::make_shared<const ast::ParsedFile>(ast::ParsedFile::from_path(t.path, t.source));
    const ast::AnchorFacet anchor(file, ast::anchor(*file, ast::Cursor::at_byte(t.cursor)));
    // As retrieval.search: the cursor's file (the task's text) in an overlay of its own.
    auto t0 = Clock::now();
    ret::Index overlay(embedder, ret::OverlayCache::overlay_options(index_options));
    overlay.update_file(file);
    const std::unordered_set<std::string> exclude = {t.path};
    ret::SearchQuery q = ret::anchor_query(anchor);  // the tasks have no instruction
    q.task_paths.insert(anchor.file().path());
    const double overlay_ms = ms_since(t0);
    auto file_text = [&](const std::string& path) -> std::string_view {
      if (path == t.path) return t.source;
      auto it = repo.files.find(path);
      return it == repo.files.end() ? std::string_view() : std::string_view(it->second);
    };
    std::vector<facets::RetrievedFacet> found;
    for (const Search& s : searches) {
      t0 = Clock::now();
      found.push_back(
          ret::search(*repo.retrieval, overlay, exclude, q, s.o, embedder.get(), file_text));
      if (s.name == "fusion") {
        search_ms.push_back(ms_since(t0));
        stage_ms.push_back(overlay_ms + search_ms.back());
      }
      in_hits[{t.family, s.name}] += gold_hit(t, found.back());
    }
    // Where the gold ranks with no threshold, cap or top_k: in the fusion and in each list (0:
    // not among the list's `candidates`); why a miss is the search's or prune's.
    {
      ret::SearchOptions all;
      all.top_k = 4 * all.candidates;
      all.per_file_cap = all.top_k;
      all.min_score = 0;
      all.adaptive_raise = 0;
      const facets::RetrievedFacet every =
          ret::search(*repo.retrieval, overlay, exclude, q, all, embedder.get(), nullptr);
      gold_ranks.push_back({});
      for (std::size_t i = 0; i < every.hits.size(); ++i) {
        const auto& h = every.hits[i];
        if (h.path == t.gold_path && ret::simple_name(h.name) == t.gold_name &&
            h.first_line <= t.gold_row + 1 && h.last_line >= t.gold_row + 1) {
          gold_ranks.back() = {{"fusion", i + 1},       {"lexical", h.lexical_rank},
                               {"dense", h.dense_rank}, {"usage", h.usage_rank},
                               {"local", h.local_rank}, {"structural", h.structural_rank},
                               {"score", h.score}};
          break;
        }
      }
    }
    nlohmann::json record = {{"tasks", t.family},        {"repo", t.repo},
                             {"path", t.path},           {"gold", t.gold_name},
                             {"gold_path", t.gold_path}, {"cross_file", t.cross_file}};
    record["gold_rank"] = gold_ranks.back();
    for (std::size_t k = 0; k < searches.size(); ++k) {
      record["gold_in_hits"][searches[k].name] = gold_hit(t, found[k]);
      // What each search returned, best first: why the gold is or is not among them.
      for (const auto& h : found[k].hits) {
        record["hits"][searches[k].name].push_back(
            fmt::format("{}:{} {} {:.3f} l{} d{} u{} s{}", h.path, h.first_line, h.name, h.score,
                        h.lexical_rank, h.dense_rank, h.usage_rank, h.structural_rank));
      }
    }
    for (const Config& cfg : configs) {
      const facets::RetrievedFacet* hits = cfg.retrieval >= 0 ? &found[cfg.retrieval] : nullptr;
      const bool ok = gold_recalled(t, anchor, repo, cfg, hits, cache, *counter, budget);
      record["recalled"][cfg.name] = ok;
      const std::string split = t.cross_file ? "all, cross-file" : "all, same file";
      for (const std::string& key : {repo.name, std::string("all"), split}) {
        auto& v = tally[{t.family, key, cfg.name}];
        ++v.first;
        v.second += ok;
      }
    }
    out["tasks"].push_back(std::move(record));
    repo.index.update(t.path, repo.files[t.path]);  // the repository's text again
    if ((n + 1) % 20 == 0) {
      fmt::print("  {} / {} tasks, {:.0f} s\n", n + 1, tasks.size(), ms_since(run_t0) / 1e3);
      std::fflush(stdout);
    }
  }

  // --- the table ---
  fmt::print("\nGold recall at {} tokens (counter: {}), encoder {} ({}, {} threads)\n", budget,
             counter->describe(), model, q8 ? "q8_0" : "f32", threads);
  fmt::print("{:<14} {:<16} {:>6} |", "tasks", "repo", "n");
  for (const Config& c : configs) fmt::print(" {:>11}", c.name);
  fmt::print("\n");
  std::vector<std::string> keys;
  for (const auto& r : repos) keys.push_back(r->name);
  keys.push_back("all");
  keys.push_back("all, same file");
  keys.push_back("all, cross-file");
  for (const std::string family : {"existing", "not-yet-named"}) {
    for (const std::string& key : keys) {
      const uint32_t n = tally[{family, key, "deps"}].first;
      if (n == 0) continue;
      fmt::print("{:<14} {:<16} {:>6} |", family, key, n);
      nlohmann::json row = {{"tasks", family}, {"repo", key}, {"n", n}};
      for (const Config& c : configs) {
        const auto& v = tally[{family, key, c.name}];
        const double r = v.first ? static_cast<double>(v.second) / v.first : 0.0;
        fmt::print(" {:>11.3f}", r);
        row["recall"][c.name] = r;
      }
      fmt::print("\n");
      out["table"].push_back(row);
    }
  }
  fmt::print("\ngold among the search's hits (top_k 8, before prune), all repositories:\n");
  for (const std::string family : {"existing", "not-yet-named"}) {
    const uint32_t n = tally[{family, "all", "deps"}].first;
    fmt::print("  {:<14}", family);
    for (const Search& s : searches) {
      const double r = n ? static_cast<double>(in_hits[{family, s.name}]) / n : 0.0;
      fmt::print(" {} {:.3f}", s.name, r);
      out["gold_in_hits"][family][s.name] = r;
    }
    fmt::print("\n");
  }
  fmt::print(
      "\nretrieval.search per task ({} tasks): search p50 {:.1f} ms p95 {:.1f} ms; "
      "overlay + query + search p50 {:.1f} ms p95 {:.1f} ms\n",
      search_ms.size(), percentile(search_ms, 0.5), percentile(search_ms, 0.95),
      percentile(stage_ms, 0.5), percentile(stage_ms, 0.95));
  out["latency_ms"] = {{"search_p50", percentile(search_ms, 0.5)},
                       {"search_p95", percentile(search_ms, 0.95)},
                       {"overlay_query_search_p50", percentile(stage_ms, 0.5)},
                       {"overlay_query_search_p95", percentile(stage_ms, 0.95)},
                       {"n", search_ms.size()}};
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) {
    fmt::print("load average at the end: {:.2f} {:.2f} {:.2f}\n", load[0], load[1], load[2]);
    out["load_average"] = {load[0], load[1], load[2]};
  }
  std::ofstream(json_path) << out.dump(2) << "\n";
  fmt::print("wrote {}\n", json_path);
  return 0;
}
