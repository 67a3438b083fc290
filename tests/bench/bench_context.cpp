// Evaluation kit for code context (stages/context): tasks generated from real repositories,
// our block-level pruning vs a sliding window at equal token budgets.
//
// Task generator: in every source file of at least --min-lines lines, the call, attribute and
// type-use sites whose name has exactly one definition elsewhere in the file (not around the
// site) or, failing that, exactly one in another file of the project (ProjectIndex::resolve);
// the rest of the site's line after the name is removed (what the model has to write; nothing
// else is removed) and the cursor put right after the name. The gold is that definition.
//
// Per task and budget, both methods get the same budget and the same counter:
//   ours     anchor -> candidates -> deps (project index, incremental) -> dedup -> prune
//   window   the cursor's line and +-N lines around it, N as large as fits
// and we report: compression (tokens of the cursor's file / tokens of the context), gold
// recall (ours: the gold unit shown in full or signature form; window: the gold's first line
// inside the window), whole units (the fraction of the blocks a context touches that it shows
// whole or as a complete signature; a window cuts blocks at both ends), and the latency of one
// request (ast.anchor's parse cache + anchor + context stages) over files of
// --lat-min..--lat-max lines: cold (the file not in the cache: a full parse), edited (the
// cache holds the original text, the task's one-line edit is re-parsed incrementally) and
// again (the same text: the cached tree reused), plus the parse steps alone, and where a cold
// request's time goes, phase by phase (parse, anchor, extract, candidates, project index,
// deps, dedup, prune). Before each measured request the project index holds the file as the
// repository has it (so the request re-indexes the cursor's file, as a server's would) and
// the versions the setup superseded have been freed (ast::drain_retired).
//
//   bench_context --repos .cache/bench-repos/src [--budgets 512,1024,2048] [--min-lines 800]
//                 [--sites 8] [--gguf models/gemma-3-270m-q4_k_m.gguf] [--json out.json]
// BENCH_CONTEXT_DEBUG=1 prints, per task at 1024 tokens, whether the gold was a candidate,
// its reasons, forms, values and the focus's size (why a gold was missed); =2 also lists the
// units shown when the gold was not. BENCH_CONTEXT_DUMP=<path>:<gold name> prints that task's
// context text and focus node and writes its source, with a <|> cursor, to
// $TMPDIR/bench_task.<ext> (what tests/context's Fixture reads). BENCH_CONTEXT_PHASES=1
// prints each cold request's phases (ms, in the table's order).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "stages/ast/anchor.h"
#include "stages/ast/anchor_stage.h"
#include "stages/ast/language.h"
#include "stages/ast/parse_cache.h"
#include "stages/ast/reclaim.h"
#include "stages/context/context_units.h"
#include "stages/context/dedup.h"
#include "stages/context/deps.h"
#include "stages/context/project_index.h"
#include "stages/context/prune.h"
#include "stages/context/token_counter.h"
#include "stages/context/ts_util.h"
#include "stages/context/unit_extract.h"

namespace ast = vsynth::stages::ast;
namespace ctx = vsynth::stages::context;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// CPU time of this thread (ms): on a shared, loaded machine wall time also counts the waits
// for a core; both are reported.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
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
};

struct Repo {
  std::string name;
  std::map<std::string, std::string> files;  // relative path -> text
  ctx::ProjectIndex index;
};

// Tasks of one repository (deterministic).
std::vector<Task> make_tasks(Repo& repo, uint32_t min_lines, uint32_t per_file) {
  std::vector<Task> tasks;
  std::mt19937 rng(1234);
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

// Wall time of each phase of a request (ms), in request order: where a cold request's time
// goes. Means add up to the request; percentiles do not.
struct Phases {
  std::vector<std::string> names;
  std::vector<std::vector<double>> ms;  // [phase][request]
  Clock::time_point t = Clock::now();
  void start() { t = Clock::now(); }
  // Charges the time since the last lap (or start) to `name`.
  void lap(const char* name, std::size_t request) {
    const auto now = Clock::now();
    const double v = std::chrono::duration<double, std::milli>(now - t).count();
    t = now;
    std::size_t k = 0;
    while (k < names.size() && names[k] != name) ++k;
    if (k == names.size()) {
      names.emplace_back(name);
      ms.emplace_back();
    }
    if (ms[k].size() <= request) ms[k].resize(request + 1, 0.0);
    ms[k][request] += v;
  }
};

struct Outcome {
  double compression = 0;
  bool recall = false;
  uint32_t touched = 0, whole = 0;  // blocks the context touches / shows whole or as signature
  uint32_t used = 0;
};

// Our pipeline on one task at one budget. `file` is the task's parsed file.
// With `phases`, each step's wall time is charged to it as request `request`.
Outcome run_ours(const Task& t, const std::shared_ptr<const ast::ParsedFile>& file,
                 ctx::ProjectIndex& index, uint32_t budget, const ctx::TokenCounter& counter,
                 uint32_t file_tokens, Phases* phases = nullptr, std::size_t request = 0) {
  auto lap = [&](const char* name) {
    if (phases) phases->lap(name, request);
  };
  ast::AnchorFacet anchor(file, ast::anchor(*file, ast::Cursor::at_byte(t.cursor)));
  lap("anchor");
  vsynth::graph::Arena arena;
  std::shared_ptr<const ctx::FileUnits> units = ctx::extract_file_units(file);
  lap("extract units");
  ctx::ContextUnitsFacet c;
  ctx::build_candidates(c, anchor, std::move(units));
  lap("candidates (reasons)");
  // As context.deps does: the anchor's tree and the candidates' units, nothing done again.
  index.update(t.path, c.extracted);
  lap("project index update");
  ctx::expand_dependencies(c, index, {}, arena);
  lap("deps (two hops)");
  ctx::remove_duplicates(c, {});
  lap("dedup");
  ctx::PruneOptions o;
  o.budget_tokens = budget;
  const ctx::PruneResult r = ctx::prune(c, counter, o, arena);
  lap("prune (split, knapsack, fill, render)");
  Outcome out;
  out.used = r.used_tokens;
  out.compression = r.used_tokens ? static_cast<double>(file_tokens) / r.used_tokens : 0;
  if (std::getenv("BENCH_CONTEXT_DEBUG") && budget == 1024) {
    int gold = -1;
    for (std::size_t i = 0; i < c.units.size(); ++i) {
      const ctx::Unit& u = c.units[i];
      if (c.files[u.file].path == t.gold_path && u.first_row == t.gold_row &&
          simple(u.name) == t.gold_name)
        gold = static_cast<int>(i);
    }
    int shown = -1;
    for (const ctx::Shown& s : r.shown)
      if (static_cast<int>(s.unit) == gold) shown = static_cast<int>(s.form);
    const ctx::Unit& f = c.units[static_cast<std::size_t>(c.focus)];
    std::string gold_info = "-";
    if (gold >= 0) {
      const ctx::Unit& g = c.units[static_cast<std::size_t>(gold)];
      gold_info = fmt::format(
          "kind={} at_cursor={} parent={} tokens(full/sig/name)={}/{}/{} "
          "value(full/sig)={:.0f}/{:.0f}",
          ctx::to_string(g.kind), g.reasons.at_cursor, g.parent, counter.count(g.full),
          g.has(ctx::Form::Signature) ? counter.count(g.signature) : 0, counter.count(g.name_form),
          ctx::unit_value(g, ctx::Form::Full, o.weights),
          ctx::unit_value(g, ctx::Form::Signature, o.weights));
    }
    fmt::print(stderr,
               "DBG {} {} {} cross={} gold_cand={} shown={} ref={} hop={} focus_rows={} "
               "focus_tokens={} removed={} used={} {}\n",
               t.path, t.kind, t.gold_name, t.cross_file, gold, shown,
               gold >= 0 ? c.units[gold].reasons.ref_rank : -9,
               gold >= 0 ? c.units[gold].reasons.hop : -9, f.end_row - f.first_row + 1,
               counter.count(f.full), gold >= 0 ? c.units[gold].removed : false, r.used_tokens,
               gold_info);
    if (const char* dump = std::getenv("BENCH_CONTEXT_DUMP");
        dump && t.path + ":" + t.gold_name == dump) {
      fmt::print(stderr, "---- text ({} tokens)\n{}\n----\n", r.used_tokens, r.text);
      std::ofstream(fs::temp_directory_path() /
                    ("bench_task" + fs::path(t.path).extension().string()))
          << t.source.substr(0, t.cursor) << "<|>" << t.source.substr(t.cursor);
      const TSNode fnode = ctx::unit_node(*file, f);
      char* sexp = ts_node_string(fnode);
      fmt::print(stderr, "---- focus node rows {}..{}: {}\n", f.first_row, f.end_row,
                 std::string(sexp).substr(0, 3000));
      std::free(sexp);
    }
    if (std::getenv("BENCH_CONTEXT_DEBUG")[0] == '2' && shown < 1) {
      for (const ctx::Shown& s : r.shown) {
        const ctx::Unit& u = c.units[s.unit];
        fmt::print(stderr, "    shown {} {} {} form={} tokens={} value={:.1f} reason={}\n",
                   c.files[u.file].path, ctx::to_string(u.kind), u.name, ctx::to_string(s.form),
                   s.tokens, s.value, s.reason);
      }
    }
  }
  for (const ctx::Shown& s : r.shown) {
    const ctx::Unit& u = c.units[s.unit];
    if (u.container && s.reason == "container") continue;
    ++out.touched;
    if (s.form != ctx::Form::Name) ++out.whole;
    if (s.form == ctx::Form::Name) continue;
    if (c.files[u.file].path == t.gold_path && u.first_row == t.gold_row &&
        simple(u.name) == t.gold_name) {
      out.recall = true;
    }
  }
  return out;
}

// The window: the cursor's row and +-n rows, n as large as fits the budget.
Outcome run_window(const Task& t, const ast::ParsedFile& file, const std::vector<ctx::Unit>& units,
                   uint32_t budget, const ctx::TokenCounter& counter, uint32_t file_tokens) {
  const uint32_t row = file.point_at(t.cursor).row;
  const uint32_t rows = file.row_count();
  auto text_of = [&](uint32_t a, uint32_t b) { return std::string(ctx::rows_text(file, a, b)); };
  const std::string header = "# file: " + t.path + "\n";
  uint32_t lo = row, hi = row, used = counter.count(header) + counter.count(text_of(row, row));
  for (;;) {
    bool grew = false;
    if (lo > 0) {
      const uint32_t c = counter.count(text_of(lo - 1, lo - 1));
      if (used + c <= budget) {
        used += c;
        --lo;
        grew = true;
      }
    }
    if (hi + 1 < rows) {
      const uint32_t c = counter.count(text_of(hi + 1, hi + 1));
      if (used + c <= budget) {
        used += c;
        ++hi;
        grew = true;
      }
    }
    if (!grew) break;
  }
  Outcome out;
  out.used = used;
  out.compression = used ? static_cast<double>(file_tokens) / used : 0;
  out.recall = t.gold_path == t.path && t.gold_row >= lo && t.gold_row <= hi;
  for (const ctx::Unit& u : units) {
    if (u.container) continue;
    if (u.end_row < lo || u.first_row > hi) continue;
    ++out.touched;
    if (u.first_row >= lo && u.end_row <= hi) ++out.whole;
  }
  return out;
}

struct Tally {
  uint32_t tasks = 0, recalled = 0, touched = 0, whole = 0;
  double compression = 0;
  void add(const Outcome& o) {
    ++tasks;
    recalled += o.recall;
    touched += o.touched;
    whole += o.whole;
    compression += o.compression;
  }
  double recall() const { return tasks ? static_cast<double>(recalled) / tasks : 0; }
  double whole_frac() const { return touched ? static_cast<double>(whole) / touched : 0; }
  double mean_compression() const { return tasks ? compression / tasks : 0; }
};

}  // namespace

int main(int argc, char** argv) {
  std::string repos_dir = ".cache/bench-repos/src", json_path = "bench_context.json", gguf;
  std::vector<uint32_t> budgets = {512, 1024, 2048};
  uint32_t min_lines = 800, per_file = 8, lat_min = 1500, lat_max = 2600, max_files = 400;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--repos")
      repos_dir = v;
    else if (a == "--json")
      json_path = v;
    else if (a == "--gguf")
      gguf = v;
    else if (a == "--min-lines")
      min_lines = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--sites")
      per_file = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--lat-min")
      lat_min = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--lat-max")
      lat_max = static_cast<uint32_t>(std::stoul(v));
    else if (a == "--budgets") {
      budgets.clear();
      std::stringstream ss(v);
      for (std::string b; std::getline(ss, b, ',');)
        budgets.push_back(static_cast<uint32_t>(std::stoul(b)));
    } else {
      fmt::print(stderr, "bench_context: unknown option {} (see the header of bench_context.cpp)\n",
                 a);
      return 2;
    }
  }
  std::shared_ptr<const ctx::TokenCounter> counter = ctx::estimate_counter();
  if (!gguf.empty()) counter = ctx::TokenizerCounter::from_gguf(gguf);
  if (!fs::is_directory(repos_dir)) {
    fmt::print(stderr, "bench_context: no repositories at {} (run scripts/bench-context.sh)\n",
               repos_dir);
    return 2;
  }

  // --- load and index each repository ---
  std::vector<std::unique_ptr<Repo>> repos;
  for (const auto& entry : fs::directory_iterator(repos_dir)) {
    if (!entry.is_directory()) continue;
    auto repo = std::make_unique<Repo>();
    repo->name = entry.path().filename().string();
    std::vector<fs::path> paths;
    for (const auto& f : fs::recursive_directory_iterator(entry.path())) {
      if (f.is_regular_file() && ast::Language::find_for_path(f.path().string()) &&
          f.file_size() < 512 * 1024) {
        paths.push_back(f.path());
      }
    }
    std::sort(paths.begin(), paths.end());
    if (paths.size() > max_files) paths.resize(max_files);
    const auto t0 = Clock::now();
    for (const fs::path& p : paths) {
      const std::string rel = fs::relative(p, entry.path()).string();
      repo->files[rel] = read_file(p);
      repo->index.update(rel, repo->files[rel]);
    }
    fmt::print("{}: {} files indexed in {:.0f} ms\n", repo->name, repo->files.size(), ms_since(t0));
    repos.push_back(std::move(repo));
  }
  std::sort(repos.begin(), repos.end(),
            [](const auto& a, const auto& b) { return a->name < b->name; });

  nlohmann::json out;
  out["counter"] = counter->describe();
  out["budgets"] = budgets;
  // key: repo or "all", budget, method
  std::map<std::tuple<std::string, uint32_t, std::string>, Tally> tallies;
  std::map<std::string, std::string> repo_lang;
  std::vector<double> lat_cold, lat_incr, lat_reparse, lat_prune;
  std::vector<double> cpu_cold, cpu_incr, cpu_reparse, cpu_prune;
  std::vector<double> lat_parse, cpu_parse, lat_key, cpu_key, lat_hit, cpu_hit;
  uint32_t miss = 0, edits = 0, hits = 0;  // parse cache outcomes seen (a check on the setup)
  uint32_t lat_files_lines = 0, lat_tasks = 0;
  Phases phases;                                               // of the cold requests
  std::map<std::string, std::pair<uint32_t, uint32_t>> kinds;  // kind -> tasks, cross-file

  for (auto& repo : repos) {
    const std::vector<Task> tasks = make_tasks(*repo, min_lines, per_file);
    std::map<std::string, uint32_t> lang_count;
    for (const Task& t : tasks) {
      ++kinds[t.kind].first;
      kinds[t.kind].second += t.cross_file;
      lang_count[std::string(ast::Language::for_path(t.path).name())]++;
      const uint32_t file_tokens = counter->count(repo->files[t.path]);
      // Cold: a full parse, as ast.anchor does it.
      auto t0 = Clock::now();
      auto file =
          std::make_shared<const ast::ParsedFile>(ast::ParsedFile::from_path(t.path, t.source));
      vsynth::graph::Arena arena;
      const std::vector<ctx::Unit> units = ctx::extract_units(*file, 0, arena);
      for (uint32_t budget : budgets) {
        const auto t1 = Clock::now();
        const double c1 = cpu_ms();
        const Outcome ours = run_ours(t, file, repo->index, budget, *counter, file_tokens);
        const double stage_ms = ms_since(t1), stage_cpu = cpu_ms() - c1;
        const Outcome win = run_window(t, *file, units, budget, *counter, file_tokens);
        for (const std::string& key : {repo->name, std::string("all")}) {
          tallies[{key, budget, "ours"}].add(ours);
          tallies[{key, budget, "window"}].add(win);
        }
        const bool lat_file = t.lines >= lat_min && t.lines <= lat_max;
        if (budget == 1024 && lat_file) {
          lat_prune.push_back(stage_ms);
          cpu_prune.push_back(stage_cpu);
        }
      }
      const bool lat_file = t.lines >= lat_min && t.lines <= lat_max;
      if (lat_file) {
        // Requests through ast.anchor's parse cache (stages/ast/parse_cache.h), at 1024 tokens;
        // each includes the cache lookup/parse, the anchor and the context stages (the project
        // index of context.deps is warm: the repository was indexed at start, as a server
        // does; it brings the cursor's file to the task's text incrementally).
        const ast::Language& lang = ast::Language::for_path(t.path);
        // Cold: this file is not in the cache (a fresh one): a full parse. The project index
        // holds the file as the repository has it (the accuracy runs above left the task's
        // text there), so the request re-indexes the cursor's file as a server's would.
        repo->index.update(t.path, repo->files[t.path]);
        // Versions the setup above superseded are freed before the clock starts, so that
        // freeing them (on the reclaimer thread) does not overlap the request measured.
        ast::drain_retired();
        ast::ParseCache cold_cache(std::size_t{64} << 20);
        t0 = Clock::now();
        double c0 = cpu_ms();
        phases.start();
        ast::ParseCache::Result cold = cold_cache.parse(t.path, lang, t.source);
        phases.lap("parse (cache miss)", lat_tasks);
        run_ours(t, cold.file, repo->index, 1024, *counter, file_tokens, &phases, lat_tasks);
        lat_cold.push_back(ms_since(t0));
        if (std::getenv("BENCH_CONTEXT_PHASES")) {
          fmt::print(stderr, "PH {} {} lines={} bytes={} total={:.2f}", t.path, t.gold_name,
                     t.lines, t.source.size(), lat_cold.back());
          for (std::size_t k = 0; k < phases.names.size(); ++k)
            fmt::print(stderr, " {:.2f}",
                       phases.ms[k].size() > lat_tasks ? phases.ms[k][lat_tasks] : 0.0);
          fmt::print(stderr, "\n");
        }
        cpu_cold.push_back(cpu_ms() - c0);
        miss += cold.outcome == ast::ParseCache::Outcome::Miss;
        // Edit: the cache holds the file as an earlier request sent it (the original text);
        // the task's text (the rest of the cursor's line removed) is re-parsed incrementally.
        ast::ParseCache cache(std::size_t{64} << 20);
        cache.parse(t.path, lang, repo->files[t.path]);
        repo->index.update(t.path, repo->files[t.path]);
        ast::drain_retired();
        t0 = Clock::now();
        c0 = cpu_ms();
        ast::ParseCache::Result edited = cache.parse(t.path, lang, t.source);
        lat_reparse.push_back(ms_since(t0));
        cpu_reparse.push_back(cpu_ms() - c0);
        run_ours(t, edited.file, repo->index, 1024, *counter, file_tokens);
        lat_incr.push_back(ms_since(t0));
        cpu_incr.push_back(cpu_ms() - c0);
        edits += edited.outcome == ast::ParseCache::Outcome::Edit;
        // Hit: the same request again (the file unchanged since): the tree is reused.
        t0 = Clock::now();
        c0 = cpu_ms();
        ast::ParseCache::Result again = cache.parse(t.path, lang, t.source);
        run_ours(t, again.file, repo->index, 1024, *counter, file_tokens);
        lat_hit.push_back(ms_since(t0));
        cpu_hit.push_back(cpu_ms() - c0);
        hits += again.outcome == ast::ParseCache::Outcome::Hit;
        // The full parse alone (the task's text), and a keystroke: one character typed at
        // the cursor of the original, well-formed file, re-parsed incrementally.
        t0 = Clock::now();
        c0 = cpu_ms();
        const ast::ParsedFile parsed_task = ast::ParsedFile::from_path(t.path, t.source);
        lat_parse.push_back(ms_since(t0));
        cpu_parse.push_back(cpu_ms() - c0);
        ast::ParsedFile typed = ast::ParsedFile::from_path(t.path, repo->files[t.path]);
        t0 = Clock::now();
        c0 = cpu_ms();
        typed.apply_edit(t.cursor, t.cursor, "x");
        lat_key.push_back(ms_since(t0));
        cpu_key.push_back(cpu_ms() - c0);
        ++lat_tasks;
        lat_files_lines += t.lines;
      }
    }
    std::string langs;
    for (const auto& [l, n] : lang_count) langs += (langs.empty() ? "" : "+") + l;
    repo_lang[repo->name] = langs;
  }

  // --- the table ---
  fmt::print("\nCode context: ours (AST block pruning) vs a sliding window, counter: {}\n",
             counter->describe());
  fmt::print("{:<18} {:<14} {:>6} {:>6} | {:>8} {:>7} {:>7} | {:>8} {:>7} {:>7}\n", "repo",
             "languages", "budget", "tasks", "ours:x", "recall", "whole", "window:x", "recall",
             "whole");
  std::vector<std::string> keys;
  for (const auto& r : repos) keys.push_back(r->name);
  keys.push_back("all");
  for (const std::string& key : keys) {
    for (uint32_t budget : budgets) {
      const Tally& o = tallies[{key, budget, "ours"}];
      const Tally& w = tallies[{key, budget, "window"}];
      fmt::print(
          "{:<18} {:<14} {:>6} {:>6} | {:>7.1f}x {:>7.3f} {:>7.3f} | {:>7.1f}x {:>7.3f} {:>7.3f}\n",
          key, key == "all" ? "" : repo_lang[key], budget, o.tasks, o.mean_compression(),
          o.recall(), o.whole_frac(), w.mean_compression(), w.recall(), w.whole_frac());
      out["table"].push_back({{"repo", key},
                              {"languages", key == "all" ? "" : repo_lang[key]},
                              {"budget", budget},
                              {"tasks", o.tasks},
                              {"ours",
                               {{"compression", o.mean_compression()},
                                {"recall", o.recall()},
                                {"whole", o.whole_frac()}}},
                              {"window",
                               {{"compression", w.mean_compression()},
                                {"recall", w.recall()},
                                {"whole", w.whole_frac()}}}});
    }
  }
  fmt::print("\nsites: ");
  for (const auto& [k, v] : kinds) {
    fmt::print("{} {} ({} cross-file)  ", k, v.first, v.second);
    out["sites"][k] = {{"tasks", v.first}, {"cross_file", v.second}};
  }
  fmt::print(
      "\n\nlatency per request at 1024 tokens, {} tasks on files of {}..{} lines (mean {:.0f}):\n",
      lat_tasks, lat_min, lat_max,
      lat_tasks ? static_cast<double>(lat_files_lines) / lat_tasks : 0.0);
  fmt::print("  {:<50} {:>9} {:>9} | {:>9} {:>9}\n", "", "wall p50", "wall p95", "cpu p50",
             "cpu p95");
  auto row = [&](const char* what, const std::vector<double>& v, const std::vector<double>& c) {
    fmt::print("  {:<50} {:>6.2f} ms {:>6.2f} ms | {:>6.2f} ms {:>6.2f} ms\n", what,
               percentile(v, 0.5), percentile(v, 0.95), percentile(c, 0.5), percentile(c, 0.95));
    out["latency"][what] = {{"wall_p50_ms", percentile(v, 0.5)},
                            {"wall_p95_ms", percentile(v, 0.95)},
                            {"cpu_p50_ms", percentile(c, 0.5)},
                            {"cpu_p95_ms", percentile(c, 0.95)},
                            {"n", v.size()}};
  };
  row("cold (file not cached): full parse + anchor + stages", lat_cold, cpu_cold);
  row("cached, edited: 1-line re-parse + anchor + stages", lat_incr, cpu_incr);
  row("cached, same text: tree reused + anchor + stages", lat_hit, cpu_hit);
  row("full parse alone", lat_parse, cpu_parse);
  row("one-line re-parse alone (cache edit: rest of line cut)", lat_reparse, cpu_reparse);
  row("keystroke re-parse alone (1 char, original file)", lat_key, cpu_key);
  row("context stages alone (candidates..prune)", lat_prune, cpu_prune);
  fmt::print("\n  cold request by phase (wall):  {:>9} {:>9} {:>9} {:>6}\n", "p50", "p95", "mean",
             "share");
  double phase_total = 0;
  for (const auto& v : phases.ms) {
    for (double x : v) phase_total += x;
  }
  for (std::size_t k = 0; k < phases.names.size(); ++k) {
    const std::vector<double>& v = phases.ms[k];
    double sum = 0;
    for (double x : v) sum += x;
    const double mean = v.empty() ? 0 : sum / static_cast<double>(v.size());
    fmt::print("  {:<38} {:>6.2f} ms {:>6.2f} ms {:>6.2f} ms {:>5.1f}%\n", phases.names[k],
               percentile(v, 0.5), percentile(v, 0.95), mean,
               phase_total > 0 ? 100 * sum / phase_total : 0.0);
    out["cold_phases"].push_back({{"phase", phases.names[k]},
                                  {"wall_p50_ms", percentile(v, 0.5)},
                                  {"wall_p95_ms", percentile(v, 0.95)},
                                  {"wall_mean_ms", mean}});
  }
  fmt::print("  parse cache outcomes: cold {} misses, edited {} edits, again {} hits (of {})\n",
             miss, edits, hits, lat_tasks);
  out["parse_cache"] = {{"cold_misses", miss}, {"edits", edits}, {"hits", hits}};
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) == 3) {
    fmt::print("  load average at the end: {:.2f} {:.2f} {:.2f}\n", load[0], load[1], load[2]);
    out["load_average"] = {load[0], load[1], load[2]};
  }
  std::ofstream(json_path) << out.dump(2) << "\n";
  fmt::print("\nwrote {}\n", json_path);
  return 0;
}
