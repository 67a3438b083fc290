#include "stages/context/deps.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "stages/context/normalize.h"
#include "stages/context/references.h"
#include "stages/context/ts_util.h"
#include "stages/context/unit_extract.h"

namespace vsynth::stages::context {

namespace {

std::string_view simple(std::string_view name) {
  const std::size_t p = name.find_last_of(":.");
  return p == std::string_view::npos ? name : name.substr(p + 1);
}

struct Reached {
  const ProjectIndex::File* file = nullptr;
  uint32_t unit = 0;
  int hop = 0;
  int rank = 0;
  bool at_cursor = false;
  std::string via;
  int32_t candidate = -1;  // in-file: the candidate unit
};

class Expander {
 public:
  Expander(ContextUnitsFacet& c, const ProjectIndex& index, const DepsOptions& o, graph::Arena& a,
           const RetrievedUnits* retrieved)
      : c_(c),
        index_(index),
        o_(o),
        arena_(a),
        retrieved_(retrieved),
        self_(index.find(c.files[0].path)) {}

  DepsStats run();

 private:
  // Marks the retrieval hits' units (copying those of other files in) with their rank.
  void add_retrieved();
  // A unit of an outside file sits `offset` rows lower in the real file.
  void shift_rows(int32_t unit, uint32_t offset);
  // Records a definition reached at `hop`; false when it was reached before or the hop is full.
  bool reach(const ProjectIndex::Ref& ref, int hop, int rank, std::string_view via);
  int32_t copy(const ProjectIndex::File& f, uint32_t unit);
  uint32_t file_slot(const ProjectIndex::File& f);
  int32_t in_file_candidate(const Unit& u) const;
  // Python `self.a.b.fetch(`: the definition of `name` reached through an attribute chain
  // rooted at `self` in the focus (nearest the cursor first): the type of each link is what
  // the class that owns it assigns to it (`self.a = Alpha(...)`, `self.a: Alpha = ...`, a
  // class-level `a: Alpha`), resolved from that class's file; `name` is then a member of the
  // last class. Empty when the focus has no such chain or a link's type is not found.
  std::vector<ProjectIndex::Ref> chained(std::string_view name) const;
  // The class a member `attr` of class `cls` holds (see chained()).
  std::optional<ProjectIndex::Ref> attribute_type(const ProjectIndex::Ref& cls,
                                                  std::string_view attr) const;

  ContextUnitsFacet& c_;
  const ProjectIndex& index_;
  const DepsOptions& o_;
  graph::Arena& arena_;
  const RetrievedUnits* retrieved_;
  const ProjectIndex::File* self_;
  std::vector<Reached> reached_;
  std::map<std::pair<const void*, uint32_t>, std::size_t> seen_;
  std::map<std::pair<const void*, uint32_t>, int32_t> copied_;
  std::map<const void*, uint32_t> file_slots_;
  uint32_t per_hop_[3] = {0, 0, 0};
  DepsStats stats_;
};

int32_t Expander::in_file_candidate(const Unit& u) const {
  for (std::size_t i = 0; i < c_.units.size(); ++i) {
    const Unit& x = c_.units[i];
    if (x.file == 0 && x.first_row == u.first_row && x.name == u.name)
      return static_cast<int32_t>(i);
  }
  return -1;
}

bool Expander::reach(const ProjectIndex::Ref& ref, int hop, int rank, std::string_view via) {
  const auto key = std::make_pair(static_cast<const void*>(ref.file), ref.unit);
  if (seen_.count(key)) return false;
  if (per_hop_[hop] >= o_.max_per_hop) return false;
  const Unit& u = ref.file->units[ref.unit];
  Reached r{ref.file, ref.unit, hop, rank, false, std::string(via), -1};
  if (ref.file == self_) {
    r.candidate = in_file_candidate(u);
    if (r.candidate < 0 || r.candidate == c_.focus) return false;
  }
  seen_[key] = reached_.size();
  reached_.push_back(std::move(r));
  ++per_hop_[hop];
  return true;
}

uint32_t Expander::file_slot(const ProjectIndex::File& f) {
  auto it = file_slots_.find(&f);
  if (it != file_slots_.end()) return it->second;
  const auto slot = static_cast<uint32_t>(c_.files.size());
  c_.files.push_back(SourceInfo{f.path, std::string(f.parsed->language().name()), f.rows});
  file_slots_[&f] = slot;
  return slot;
}

int32_t Expander::copy(const ProjectIndex::File& f, uint32_t unit) {
  const auto key = std::make_pair(static_cast<const void*>(&f), unit);
  if (auto it = copied_.find(key); it != copied_.end()) return it->second;
  const Unit& src = f.units[unit];
  const int32_t parent = src.parent >= 0 ? copy(f, static_cast<uint32_t>(src.parent)) : -1;
  Unit u = src;
  u.file = file_slot(f);
  u.parent = parent;
  u.reasons = Reasons{};
  u.name = arena_.store(src.name);
  u.full = arena_.store(src.full);
  u.signature = arena_.store(src.signature);
  u.name_form = arena_.store(src.name_form);
  u.close = arena_.store(src.close);
  u.indent = arena_.store(src.indent);
  if (!u.container) u.normalized = normalized_tokens(*f.parsed, unit_node(*f.parsed, src));
  const auto index = static_cast<int32_t>(c_.units.size());
  c_.units.push_back(std::move(u));
  copied_[key] = index;
  ++stats_.copied;
  return index;
}

std::optional<ProjectIndex::Ref> Expander::attribute_type(const ProjectIndex::Ref& cls,
                                                          std::string_view attr) const {
  const ast::ParsedFile& file = *cls.file->parsed;
  std::string_view type_name;
  walk(unit_node(file, cls.file->units[cls.unit]), [&](TSNode n) {
    if (!type_name.empty()) return false;
    if (type_of(n) != "assignment") return true;
    const TSNode left = field(n, "left");
    const bool self_attr = type_of(left) == "attribute" &&
                           file.text(field(left, "object")) == "self" &&
                           file.text(field(left, "attribute")) == attr;
    const bool class_attr = type_of(left) == "identifier" && file.text(left) == attr;
    if (!self_attr && !class_attr) return true;
    TSNode t = field(n, "type");
    if (ts_node_is_null(t)) {
      const TSNode right = field(n, "right");
      if (type_of(right) == "call") t = field(right, "function");
    }
    if (!ts_node_is_null(t) && type_of(t) == "type" && ts_node_named_child_count(t) == 1) {
      t = ts_node_named_child(t, 0);
    }
    if (type_of(t) == "attribute") t = field(t, "attribute");  // mod.Alpha()
    if (type_of(t) == "identifier") type_name = file.text(t);
    return false;
  });
  if (type_name.empty()) return std::nullopt;
  for (const ProjectIndex::Ref& r : index_.resolve(type_name, cls.file, o_.max_ambiguity)) {
    if (r.file->units[r.unit].kind == UnitKind::Class) return r;
  }
  return std::nullopt;
}

std::vector<ProjectIndex::Ref> Expander::chained(std::string_view name) const {
  if (c_.file->language().name() != "python") return {};
  const Unit& focus = c_.units[static_cast<std::size_t>(c_.focus)];
  // The links of every chain self.l1...ln.name in the focus, nearest the cursor first.
  std::vector<std::pair<uint32_t, std::vector<std::string_view>>> chains;
  walk(unit_node(*c_.file, focus), [&](TSNode n) {
    if (type_of(n) != "attribute" || c_.file->text(field(n, "attribute")) != name) return true;
    std::vector<std::string_view> links;
    TSNode obj = field(n, "object");
    while (type_of(obj) == "attribute") {
      links.insert(links.begin(), c_.file->text(field(obj, "attribute")));
      obj = field(obj, "object");
    }
    if (!links.empty() && type_of(obj) == "identifier" && c_.file->text(obj) == "self") {
      const uint32_t s = ts_node_start_byte(n), e = ts_node_end_byte(n);
      const uint32_t at = c_.cursor_byte;
      chains.emplace_back(at < s ? s - at : at > e ? at - e : 0, std::move(links));
    }
    return true;
  });
  std::stable_sort(chains.begin(), chains.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (chains.empty() || !self_) return {};
  // The class around the focus, as the index holds the cursor's file: the innermost one.
  std::optional<ProjectIndex::Ref> owner;
  for (uint32_t i = 0; i < self_->units.size(); ++i) {
    const Unit& u = self_->units[i];
    if (u.kind == UnitKind::Class && u.container && u.first_row <= focus.first_row &&
        focus.first_row <= u.end_row) {
      owner = ProjectIndex::Ref{self_, i};
    }
  }
  if (!owner) return {};
  for (const auto& [distance, links] : chains) {
    std::optional<ProjectIndex::Ref> cls = owner;
    for (std::string_view link : links) {
      if (cls) cls = attribute_type(*cls, link);
    }
    if (!cls) continue;
    for (uint32_t i = 0; i < cls->file->units.size(); ++i) {
      const Unit& u = cls->file->units[i];
      if (u.parent == static_cast<int32_t>(cls->unit) && simple(u.name) == name) {
        return {ProjectIndex::Ref{cls->file, i}};
      }
    }
  }
  return {};
}

DepsStats Expander::run() {
  if (!self_ || c_.focus < 0 || !c_.file) return stats_;
  const Unit& focus = c_.units[static_cast<std::size_t>(c_.focus)];
  std::vector<NameUse> uses;
  if (focus.node_end > focus.node_start) {
    uses = names_used(*c_.file, unit_node(*c_.file, focus), c_.cursor_byte);
  }
  const std::string_view own = simple(focus.name);

  // Hop 1: what the focus names.
  int rank = 0;
  for (const NameUse& use : uses) {
    if (use.name == own) continue;
    bool any = false;
    std::vector<ProjectIndex::Ref> refs = chained(use.name);
    if (refs.empty()) refs = index_.resolve(use.name, self_, o_.max_ambiguity);
    for (const ProjectIndex::Ref& ref : refs) {
      if (reach(ref, 1, rank, "")) {
        any = true;
        reached_.back().at_cursor = use.distance == 0;
      }
    }
    if (any) ++rank;
  }
  // Hop 2: what those name, from their own files.
  if (o_.hops >= 2) {
    const std::size_t hop1 = reached_.size();
    for (std::size_t k = 0; k < hop1; ++k) {
      const Reached r = reached_[k];
      const Unit& u = r.file->units[r.unit];
      std::vector<std::string_view> names;
      if (r.candidate >= 0) {
        const Unit& cu = c_.units[static_cast<std::size_t>(r.candidate)];
        if (!cu.container) names = names_in(*c_.file, unit_node(*c_.file, cu));
      } else {
        names = index_.names_used_by(*r.file, r.unit);
      }
      const std::string_view from_name = simple(u.name);
      for (std::string_view name : names) {
        if (name == from_name || name == own) continue;
        for (const ProjectIndex::Ref& ref : index_.resolve(name, r.file, o_.max_ambiguity)) {
          reach(ref, 2, r.rank, from_name);
        }
      }
    }
  }

  for (const Reached& r : reached_) {
    const Unit& u = r.file->units[r.unit];
    int32_t target = r.candidate;
    if (target < 0) target = copy(*r.file, r.unit);
    Reasons& reasons = c_.units[static_cast<std::size_t>(target)].reasons;
    if (reasons.hop < 0 || r.hop < reasons.hop) {
      reasons.hop = r.hop;
      reasons.hop_rank = r.rank;
    }
    reasons.at_cursor |= r.at_cursor;
    (r.hop == 1 ? stats_.hop1 : stats_.hop2) += 1;
    c_.deps.push_back({std::string(u.name), r.file->path, r.hop, r.via});
  }
  add_retrieved();
  return stats_;
}

void Expander::shift_rows(int32_t unit, uint32_t offset) {
  for (int32_t i = unit; i >= 0; i = c_.units[static_cast<std::size_t>(i)].parent) {
    Unit& u = c_.units[static_cast<std::size_t>(i)];
    u.first_row += offset;
    u.last_row += offset;
    u.end_row += offset;
    if (!u.close.empty()) {
      u.close_first += offset;
      u.close_last += offset;
    }
  }
}

void Expander::add_retrieved() {
  if (!retrieved_) return;
  for (const RetrievedUnits::Entry& e : retrieved_->entries) {
    int32_t target = -1;
    if (e.ref.file == self_) {
      target = in_file_candidate(e.ref.file->units[e.ref.unit]);
      if (target < 0 || target == c_.focus) continue;
    } else {
      const bool fresh =
          !copied_.count(std::make_pair(static_cast<const void*>(e.ref.file), e.ref.unit));
      target = copy(*e.ref.file, e.ref.unit);
      if (fresh && e.row_offset > 0) shift_rows(target, e.row_offset);
    }
    int& rank = c_.units[static_cast<std::size_t>(target)].reasons.retrieval_rank;
    if (rank < 0 || e.rank < rank) rank = e.rank;
    ++stats_.retrieved;
  }
}

}  // namespace

DepsStats expand_dependencies(ContextUnitsFacet& candidates, const ProjectIndex& index,
                              const DepsOptions& options, graph::Arena& arena,
                              const RetrievedUnits* retrieved) {
  Expander x(candidates, index, options, arena, retrieved);
  return x.run();
}

namespace {

// The unit of `file` a hit names: among the definitions named like it, the one whose rows
// overlap the hit's lines most; nullopt when none overlaps.
std::optional<uint32_t> hit_unit(const ProjectIndex::File& file,
                                 const facets::RetrievedFacet::Hit& hit, uint32_t row_offset) {
  const int64_t first = static_cast<int64_t>(hit.first_line) - 1 - row_offset;
  const int64_t last = static_cast<int64_t>(hit.last_line) - 1 - row_offset;
  std::optional<uint32_t> best;
  int64_t best_overlap = 0;
  for (uint32_t i = 0; i < file.units.size(); ++i) {
    const Unit& u = file.units[i];
    if (!is_definition(u.kind) || simple(u.name) != simple(hit.name)) continue;
    const int64_t overlap =
        std::min<int64_t>(last, u.end_row) - std::max<int64_t>(first, u.first_row) + 1;
    if (overlap > best_overlap) {
      best_overlap = overlap;
      best = i;
    }
  }
  return best;
}

// `text` with the first row's indentation taken off every row that starts with it (a method
// cut out of its class parses as a top-level function).
std::string dedent(std::string_view text) {
  const std::size_t indent = text.find_first_not_of(" \t");
  if (indent == 0 || indent == std::string_view::npos) return std::string(text);
  const std::string_view prefix = text.substr(0, indent);
  std::string out;
  out.reserve(text.size());
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    end = end == std::string_view::npos ? text.size() : end + 1;
    std::string_view row = text.substr(at, end - at);
    if (row.substr(0, prefix.size()) == prefix) row.remove_prefix(prefix.size());
    out.append(row);
    at = end;
  }
  return out;
}

// A file entry for a hit outside the task's files: its text alone, extracted.
std::unique_ptr<ProjectIndex::File> outside_file(const facets::RetrievedFacet::Hit& hit,
                                                 FileUnitsCache& cache) {
  std::shared_ptr<const FileUnits> units = cache.get(hit.path, dedent(hit.text));
  if (!units) return nullptr;
  auto f = std::make_unique<ProjectIndex::File>();
  f->path = hit.path;
  f->parsed = units->file;
  f->units = units->units;
  f->extracted = std::move(units);
  const uint32_t rows = f->parsed->row_count();
  const bool trailing = rows > 1 && f->parsed->row_length(rows - 1) == 0;
  f->rows = hit.first_line - 1 + (trailing ? rows - 1 : rows);
  return f;
}

}  // namespace

RetrievedUnits resolve_retrieved(const facets::RetrievedFacet& retrieved, const ProjectIndex& index,
                                 FileUnitsCache& cache) {
  RetrievedUnits out;
  for (std::size_t rank = 0; rank < retrieved.hits.size(); ++rank) {
    const facets::RetrievedFacet::Hit& hit = retrieved.hits[rank];
    const ProjectIndex::File* file = index.find(hit.path);
    uint32_t offset = 0;
    if (!file && !hit.text.empty() && hit.first_line >= 1) {
      if (auto f = outside_file(hit, cache)) {
        offset = hit.first_line - 1;
        file = f.get();
        out.outside.push_back(std::move(f));
      }
    }
    const std::optional<uint32_t> unit =
        file ? hit_unit(*file, hit, offset) : std::optional<uint32_t>{};
    if (!unit) {
      ++out.unresolved;
      continue;
    }
    out.entries.push_back({ProjectIndex::Ref{file, *unit}, static_cast<int>(rank), offset});
  }
  return out;
}

}  // namespace vsynth::stages::context
