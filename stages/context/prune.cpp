#include "stages/context/prune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "stages/context/extract.h"
#include "stages/context/knapsack.h"

namespace vsynth::stages::context {

namespace {

// Units farther than this from the cursor get no value for nearness alone (it would be under
// 1/10 of weight_near): they stay out of the knapsack, which keeps it small on long files.
constexpr uint32_t kNearRows = 200;

double decay(int rank) {
  return 1.0 / (1.0 + rank / 8.0);
}

struct ReasonValue {
  double value;
  const char* tag;
  int rank;  // -1: none to show
};

// Every reason a unit has, with its value at the full form.
std::vector<ReasonValue> reason_values(const Unit& u, const PruneWeights& w) {
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
  if (r.hop == 2) v.push_back({0.4 * w.dependency * decay(r.hop_rank), "dep2", r.hop_rank});
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

std::string reason_text(const Unit& u, const PruneWeights& w) {
  const std::vector<ReasonValue> v = reason_values(u, w);
  if (v.empty()) return "";
  return v[0].rank >= 0 ? fmt::format("{}#{}", v[0].tag, v[0].rank) : std::string(v[0].tag);
}

// Marks the focus and every container around it.
std::vector<bool> mandatory_units(const CandidatesFacet& c) {
  std::vector<bool> m(c.units.size(), false);
  for (int32_t p = c.focus; p >= 0; p = c.units[static_cast<std::size_t>(p)].parent) {
    m[static_cast<std::size_t>(p)] = true;
  }
  return m;
}

// Opens the focus into its statements until the mandatory part fits (or nothing opens).
void split_focus(CandidatesFacet& c, const TokenCounter& counter, uint32_t budget,
                 graph::Arena& arena, std::unique_ptr<Renderer>& renderer) {
  // `budget` here is the focus's share of the whole budget.
  for (int guard = 0; guard < 32 && c.file; ++guard) {
    Selection sel(c.units.size(), kNotShown);
    sel[static_cast<std::size_t>(c.focus)] = static_cast<int8_t>(Form::Full);
    // Counted on the text: a model's tokenizer is not exactly additive over pieces.
    if (counter.count(renderer->render(sel).text) <= budget) return;
    const auto old_focus = static_cast<uint32_t>(c.focus);
    const int32_t old_parent = c.units[old_focus].parent;
    const std::size_t before = c.units.size();
    if (!split_unit(*c.file, c.units, old_focus, arena)) return;
    Unit& old = c.units[old_focus];
    old.reasons.focus = false;
    old.reasons.on_path = true;
    int32_t next = -1;
    for (std::size_t i = before; i < c.units.size(); ++i) {
      Unit& u = c.units[i];
      u.reasons.in_focus = true;
      u.reasons.row_distance = c.cursor_row < u.first_row ? u.first_row - c.cursor_row
                               : c.cursor_row > u.end_row ? c.cursor_row - u.end_row
                                                          : 0;
      // A member holding the cursor, or a clause split off after the container (an else
      // branch: extract.h) that holds it.
      const bool member = u.parent == static_cast<int32_t>(old_focus);
      if ((member || u.parent == old_parent) && u.first_row <= c.cursor_row &&
          c.cursor_row <= u.end_row) {
        next = static_cast<int32_t>(i);
      }
    }
    // A member that is itself a container (opening by rows finds whole functions inside an
    // unclosed block): down to its member holding the cursor.
    while (next >= 0 && c.units[static_cast<std::size_t>(next)].container &&
           c.cursor_row > c.units[static_cast<std::size_t>(next)].last_row) {
      int32_t inner = -1;
      for (std::size_t i = before; i < c.units.size(); ++i) {
        const Unit& u = c.units[i];
        if (u.parent == next && u.first_row <= c.cursor_row && c.cursor_row <= u.end_row) {
          inner = static_cast<int32_t>(i);
        }
      }
      if (inner < 0) break;
      c.units[static_cast<std::size_t>(next)].reasons.on_path = true;
      next = inner;
    }
    if (next < 0 && c.cursor_row <= c.units[old_focus].last_row) {
      // The cursor is on the header rows (a signature being typed): the header is the focus,
      // its members are shown by their distance to it.
      Unit& header = c.units[old_focus];
      header.reasons.focus = true;
      header.reasons.on_path = false;
      renderer = std::make_unique<Renderer>(c, counter);
      return;
    }
    if (next < 0) {
      next = add_row_unit(c, c.cursor_row, static_cast<int32_t>(old_focus));
      c.units[static_cast<std::size_t>(next)].reasons.in_focus = true;
      c.units[static_cast<std::size_t>(next)].reasons.row_distance = 0;
    }
    c.focus = next;
    c.units[static_cast<std::size_t>(next)].reasons.focus = true;
    c.units[static_cast<std::size_t>(next)].reasons.in_focus = false;
    renderer = std::make_unique<Renderer>(c, counter);
  }
}

}  // namespace

double unit_value(const Unit& unit, Form form, const PruneWeights& w) {
  if (unit.removed || !unit.has(form)) return 0;
  const std::vector<ReasonValue> v = reason_values(unit, w);
  if (v.empty()) return 0;
  const double base = v[0].value + (v.size() > 1 ? 0.25 * v[1].value : 0.0);
  return base * form_factor(unit, form);
}

PruneResult prune(CandidatesFacet& c, const TokenCounter& counter, const PruneOptions& options,
                  graph::Arena& arena) {
  PruneResult result;
  const uint32_t budget = options.budget_tokens;
  const PruneWeights& w = options.weights;
  auto renderer = std::make_unique<Renderer>(c, counter);
  if (c.focus < 0) return result;
  if (options.split_focus) {
    const auto share = static_cast<uint32_t>(options.focus_share * budget);
    split_focus(c, counter, std::max<uint32_t>(1, share), arena, renderer);
  }
  const Renderer& r = *renderer;
  const std::vector<Unit>& units = c.units;
  const std::size_t n = units.size();
  const std::vector<bool> mandatory = mandatory_units(c);

  Selection sel(n, kNotShown);
  sel[static_cast<std::size_t>(c.focus)] = static_cast<int8_t>(Form::Full);
  const uint64_t base = std::max<uint64_t>(r.cost(sel), counter.count(r.render(sel).text));
  result.over_budget = base > budget;
  const uint32_t left = base >= budget ? 0 : static_cast<uint32_t>(budget - base);

  // --- the knapsack over every unit with a value, each charged an upper bound ---
  std::vector<bool> file_shown(c.files.size(), false);
  file_shown[units[static_cast<std::size_t>(c.focus)].file] = true;
  std::vector<uint32_t> group_unit;
  std::vector<std::vector<Option>> groups;
  std::vector<std::vector<Form>> group_forms;
  for (std::size_t i = 0; i < n; ++i) {
    const Unit& u = units[i];
    if (mandatory[i] || u.removed) continue;
    std::vector<Option> opts;
    std::vector<Form> forms;
    uint32_t overhead = r.marker_cost(u.file);
    if (!file_shown[u.file]) overhead += r.header_cost(u.file) + r.marker_cost(u.file);
    for (int32_t p = u.parent; p >= 0 && !mandatory[static_cast<std::size_t>(p)];
         p = units[static_cast<std::size_t>(p)].parent) {
      const auto pi = static_cast<uint32_t>(p);
      overhead += r.form_cost(pi, Renderer::smallest_form(units[pi])) + r.close_cost(pi) +
                  r.marker_cost(u.file);
    }
    for (Form f : {Form::Name, Form::Signature, Form::Full}) {
      const double v = unit_value(u, f, w);
      if (v <= 0) continue;
      opts.push_back(Option{r.form_cost(static_cast<uint32_t>(i), f) + overhead, v});
      forms.push_back(f);
    }
    if (opts.empty()) continue;
    group_unit.push_back(static_cast<uint32_t>(i));
    groups.push_back(std::move(opts));
    group_forms.push_back(std::move(forms));
  }
  result.considered = static_cast<uint32_t>(groups.size());
  const KnapsackResult ks = solve_knapsack(groups, left);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (ks.choice[g] >= 0) {
      sel[group_unit[g]] =
          static_cast<int8_t>(group_forms[g][static_cast<std::size_t>(ks.choice[g])]);
    }
  }

  // --- the slack the upper bounds left: fill it greedily, best value per token first. Each
  // round ranks the possible upgrades by their knapsack (upper-bound) cost and checks only the
  // best few at their exact cost, so a round costs a handful of renders, not one per unit.
  uint64_t cost = r.cost(sel);
  struct Upgrade {
    std::size_t g;
    Form form;
    double gain, score;
  };
  std::vector<Upgrade> ups;
  for (int round = 0; round < 48 && cost < budget; ++round) {
    ups.clear();
    const uint64_t slack = budget - cost;
    for (std::size_t g = 0; g < groups.size(); ++g) {
      const uint32_t i = group_unit[g];
      const int8_t cur = sel[i];
      const double cur_value =
          cur == kNotShown ? 0 : unit_value(units[i], static_cast<Form>(cur), w);
      const uint32_t cur_tokens = cur == kNotShown ? 0 : r.form_cost(i, static_cast<Form>(cur));
      for (std::size_t k = 0; k < group_forms[g].size(); ++k) {
        const Form f = group_forms[g][k];
        if (static_cast<int8_t>(f) <= cur) continue;
        const double gain = groups[g][k].value - cur_value;
        const uint32_t tokens = r.form_cost(i, f);
        if (gain <= 0 || (tokens > cur_tokens && tokens - cur_tokens > slack)) continue;
        const uint32_t bound = cur == kNotShown ? groups[g][k].cost : tokens - cur_tokens;
        ups.push_back({g, f, gain, gain / std::max<uint32_t>(1, bound)});
      }
    }
    if (ups.empty()) break;
    const std::size_t check = std::min<std::size_t>(ups.size(), 6);
    std::partial_sort(ups.begin(), ups.begin() + static_cast<std::ptrdiff_t>(check), ups.end(),
                      [](const Upgrade& a, const Upgrade& b) { return a.score > b.score; });
    double best_ratio = 0;
    const Upgrade* best = nullptr;
    uint64_t best_cost = 0;
    for (std::size_t k = 0; k < check; ++k) {
      const uint32_t i = group_unit[ups[k].g];
      const int8_t keep = sel[i];
      sel[i] = static_cast<int8_t>(ups[k].form);
      const uint64_t c2 = r.cost(sel);
      sel[i] = keep;
      if (c2 > budget) continue;
      const double ratio = ups[k].gain / static_cast<double>(c2 > cost ? c2 - cost : 1);
      if (ratio > best_ratio) {
        best_ratio = ratio;
        best = &ups[k];
        best_cost = c2;
      }
    }
    if (!best) {
      // The best few did not fit at their exact cost: forbid them and try the next ones.
      bool progressed = false;
      for (std::size_t k = check; k < ups.size() && k < check + 6; ++k) {
        const uint32_t i = group_unit[ups[k].g];
        const int8_t keep = sel[i];
        sel[i] = static_cast<int8_t>(ups[k].form);
        const uint64_t c2 = r.cost(sel);
        if (c2 <= budget) {
          cost = c2;
          progressed = true;
          break;
        }
        sel[i] = keep;
      }
      if (!progressed) break;
      continue;
    }
    sel[group_unit[best->g]] = static_cast<int8_t>(best->form);
    cost = best_cost;
  }

  // --- render, count once, and drop the least valuable units while a real tokenizer's
  // count exceeds the additive one ---
  Renderer::Text text = r.render(sel);
  uint32_t used = counter.count(text.text);
  while (used > budget) {
    std::size_t worst = n;
    double worst_ratio = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (sel[i] == kNotShown || mandatory[i]) continue;
      const auto f = static_cast<Form>(sel[i]);
      const double ratio = unit_value(units[i], f, w) /
                           std::max<uint32_t>(1, r.form_cost(static_cast<uint32_t>(i), f));
      if (worst == n || ratio < worst_ratio) {
        worst = i;
        worst_ratio = ratio;
      }
    }
    if (worst == n) break;
    sel[worst] = kNotShown;
    text = r.render(sel);
    used = counter.count(text.text);
  }

  const Selection shown = r.with_containers(sel);
  for (std::size_t i = 0; i < n; ++i) {
    if (shown[i] == kNotShown) continue;
    const auto f = static_cast<Form>(shown[i]);
    Shown s;
    s.unit = static_cast<uint32_t>(i);
    s.form = f;
    s.tokens = r.form_cost(static_cast<uint32_t>(i), f);
    if (static_cast<int32_t>(i) == c.focus) {
      s.reason = "focus";
    } else if (mandatory[i]) {
      s.reason = "path";
    } else if (sel[i] == kNotShown) {
      s.reason = "container";
    } else {
      s.value = unit_value(units[i], f, w);
      s.reason = reason_text(units[i], w);
    }
    result.shown.push_back(std::move(s));
  }
  result.text = std::move(text.text);
  result.cursor_offset = text.cursor_offset;
  result.markers = text.markers;
  result.used_tokens = used;
  return result;
}

}  // namespace vsynth::stages::context
