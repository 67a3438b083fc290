#include "stages/context/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace vsynth::stages::context {

namespace {

// A rank's share of its reason's weight: halved by rank 8.
double decay(int rank) {
  return 1.0 / (1.0 + rank / 8.0);
}

struct ReasonValue {
  double value;
  const char* tag;
  int rank;  // -1: none to show
};

// Every reason a unit has, with its value at the full form, strongest first.
std::vector<ReasonValue> reason_values(const Unit& u, const ValueWeights& w) {
  const Reasons& r = u.reasons;
  std::vector<ReasonValue> v;
  if (r.in_focus) {
    v.push_back({2 * w.class_member / (1.0 + r.row_distance / 8.0), "stmt", -1});
  }
  if (r.at_cursor && u.kind != UnitKind::Import) v.push_back({w.cursor, "cursor", -1});
  if (r.class_member) v.push_back({w.class_member, "class", -1});
  if (r.ref_rank >= 0) {
    if (u.kind == UnitKind::Import) {
      v.push_back({w.import, "import", r.ref_rank});
    } else {
      v.push_back({w.reference * decay(r.ref_rank), "ref", r.ref_rank});
    }
  }
  if (r.edit_rank >= 0) v.push_back({w.edit * std::pow(0.7, r.edit_rank), "edit", r.edit_rank});
  if (r.hop == 1) v.push_back({w.dependency * decay(r.hop_rank), "dep1", r.hop_rank});
  if (r.hop == 2) {
    v.push_back({kSecondHopShare * w.dependency * decay(r.hop_rank), "dep2", r.hop_rank});
  }
  if (r.retrieval_rank >= 0) {
    v.push_back({w.retrieval * decay(r.retrieval_rank), "retr", r.retrieval_rank});
  }
  if (u.kind == UnitKind::Import && r.ref_rank < 0) v.push_back({0.1 * w.import, "import", -1});
  if (u.file == 0 && u.kind != UnitKind::Import && !u.container && !r.in_focus &&
      r.row_distance <= kNearRows) {
    v.push_back({w.near / (1.0 + r.row_distance / 20.0), "near", -1});
  }
  std::sort(v.begin(), v.end(),
            [](const ReasonValue& a, const ReasonValue& b) { return a.value > b.value; });
  return v;
}

double form_factor(const Unit& u, Form form) {
  switch (form) {
    case Form::Full:
      return 1.0;
    case Form::Signature:
      return u.kind == UnitKind::Import ? 1.05 : 0.7;
    case Form::Name:
      return 0.15;
  }
  return 0;
}

}  // namespace

double unit_value(const Unit& unit, Form form, const ValueWeights& w) {
  if (unit.removed || !unit.has(form)) return 0;
  const std::vector<ReasonValue> v = reason_values(unit, w);
  if (v.empty()) return 0;
  const double base = v[0].value + (v.size() > 1 ? kNextReasonShare * v[1].value : 0.0);
  return base * form_factor(unit, form);
}

std::string reason_text(const Unit& u, const ValueWeights& w) {
  const std::vector<ReasonValue> v = reason_values(u, w);
  if (v.empty()) return "";
  return v[0].rank >= 0 ? fmt::format("{}#{}", v[0].tag, v[0].rank) : std::string(v[0].tag);
}

}  // namespace vsynth::stages::context
