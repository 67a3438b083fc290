#include "stages/context/deps.h"

#include <map>
#include <string>
#include <utility>

#include "stages/context/extract.h"
#include "stages/context/normalize.h"
#include "stages/context/references.h"

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
  Expander(CandidatesFacet& c, const ProjectIndex& index, const DepsOptions& o, graph::Arena& a)
      : c_(c), index_(index), o_(o), arena_(a), self_(index.find(c.files[0].path)) {}

  DepsStats run();

 private:
  // Records a definition reached at `hop`; false when it was reached before or the hop is full.
  bool reach(const ProjectIndex::Ref& ref, int hop, int rank, std::string_view via);
  int32_t copy(const ProjectIndex::File& f, uint32_t unit);
  uint32_t file_slot(const ProjectIndex::File& f);
  int32_t in_file_candidate(const Unit& u) const;

  CandidatesFacet& c_;
  const ProjectIndex& index_;
  const DepsOptions& o_;
  graph::Arena& arena_;
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
    for (const ProjectIndex::Ref& ref : index_.resolve(use.name, self_, o_.max_ambiguity)) {
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
  return stats_;
}

}  // namespace

DepsStats expand_dependencies(CandidatesFacet& candidates, const ProjectIndex& index,
                              const DepsOptions& options, graph::Arena& arena) {
  Expander x(candidates, index, options, arena);
  return x.run();
}

}  // namespace vsynth::stages::context
