#include "stages/context/prune.h"

#include <algorithm>
#include <memory>

#include "stages/context/knapsack.h"
#include "stages/context/unit_extract.h"

namespace vsynth::stages::context {

namespace {

// How many times the focus may be opened, one level each (a function, then the
// block holding the cursor, then the block in that...): real code nests far
// less deep; the bound stops a pathological file (thousands of nested brackets)
// from looping.
constexpr int kMaxFocusSplits = 32;
// Rounds of filling the slack the knapsack's upper bounds leave, one upgrade
// per round: the slack is a few dozen tokens at the default budget, which a
// handful of upgrades fill; the bound keeps a request to ~a hundred cost
// evaluations.
constexpr int kMaxFillRounds = 48;
// Upgrades per round checked at their exact cost (the best by upper-bound value
// per token), and as many more tried when none of those fits: a round costs a
// few evaluations, not one per unit.
constexpr std::size_t kFillChecksPerRound = 6;

// Marks the focus and every container around it.
std::vector<bool> mandatory_units(const ContextUnitsFacet& c) {
  std::vector<bool> m(c.units.size(), false);
  for (int32_t p = c.focus; p >= 0; p = c.units[static_cast<std::size_t>(p)].parent) {
    m[static_cast<std::size_t>(p)] = true;
  }
  return m;
}

// Opens the focus into its statements until the mandatory part fits (or nothing
// opens).
void split_focus(ContextUnitsFacet& c, const TokenCounter& counter, uint32_t budget,
                 graph::Arena& arena, std::unique_ptr<Renderer>& renderer) {
  // `budget` here is the focus's share of the whole budget.
  for (int guard = 0; guard < kMaxFocusSplits && c.file; ++guard) {
    Selection sel(c.units.size(), kNotShown);
    sel[static_cast<std::size_t>(c.focus)] = static_cast<int8_t>(Form::Full);
    // Counted on the text: a model's tokenizer is not exactly additive over
    // pieces.
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
      // A member holding the cursor, or a clause split off after the container
      // (an else branch: unit_extract.h) that holds it.
      const bool member = u.parent == static_cast<int32_t>(old_focus);
      if ((member || u.parent == old_parent) && u.first_row <= c.cursor_row &&
          c.cursor_row <= u.end_row) {
        next = static_cast<int32_t>(i);
      }
    }
    // A member that is itself a container (opening by rows finds whole
    // functions inside an unclosed block): down to its member holding the
    // cursor.
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
      // The cursor is on the header rows (a signature being typed): the header
      // is the focus, its members are shown by their distance to it.
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

// The knapsack's input: one group per unit with a value (not mandatory, not
// removed), one option per form it has, each charged an upper bound of what
// showing it adds.
struct Groups {
  std::vector<uint32_t> unit;
  std::vector<std::vector<Option>> options;
  std::vector<std::vector<Form>> forms;
};

// Each option is charged its form, an elision marker, and the containers
// (smallest form, closing rows, a marker each) and file header it may need: an
// upper bound, so any choice the knapsack makes fits.
Groups knapsack_groups(const ContextUnitsFacet& c, const Renderer& r,
                       const std::vector<bool>& mandatory, const ValueWeights& w) {
  const std::vector<Unit>& units = c.units;
  std::vector<bool> file_shown(c.files.size(), false);
  file_shown[units[static_cast<std::size_t>(c.focus)].file] = true;
  Groups g;
  for (std::size_t i = 0; i < units.size(); ++i) {
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
    g.unit.push_back(static_cast<uint32_t>(i));
    g.options.push_back(std::move(opts));
    g.forms.push_back(std::move(forms));
  }
  return g;
}

// The slack the upper bounds left, filled greedily, best value per token first.
// Each round ranks the possible upgrades by their knapsack (upper-bound) cost
// and checks only the best few at their exact cost. Returns the selection's
// cost.
uint64_t fill_slack(const ContextUnitsFacet& c, const Renderer& r, const Groups& groups,
                    const ValueWeights& w, uint32_t budget, Selection& sel) {
  const std::vector<Unit>& units = c.units;
  uint64_t cost = r.cost(sel);
  struct Upgrade {
    std::size_t g;
    Form form;
    double gain, score;
  };
  std::vector<Upgrade> ups;
  for (int round = 0; round < kMaxFillRounds && cost < budget; ++round) {
    ups.clear();
    const uint64_t slack = budget - cost;
    for (std::size_t g = 0; g < groups.unit.size(); ++g) {
      const uint32_t i = groups.unit[g];
      const int8_t cur = sel[i];
      const double cur_value =
          cur == kNotShown ? 0 : unit_value(units[i], static_cast<Form>(cur), w);
      const uint32_t cur_tokens = cur == kNotShown ? 0 : r.form_cost(i, static_cast<Form>(cur));
      for (std::size_t k = 0; k < groups.forms[g].size(); ++k) {
        const Form f = groups.forms[g][k];
        if (static_cast<int8_t>(f) <= cur) continue;
        const double gain = groups.options[g][k].value - cur_value;
        const uint32_t tokens = r.form_cost(i, f);
        if (gain <= 0 || (tokens > cur_tokens && tokens - cur_tokens > slack)) continue;
        const uint32_t bound = cur == kNotShown ? groups.options[g][k].cost : tokens - cur_tokens;
        ups.push_back({g, f, gain, gain / std::max<uint32_t>(1, bound)});
      }
    }
    if (ups.empty()) break;
    const std::size_t check = std::min(ups.size(), kFillChecksPerRound);
    std::partial_sort(ups.begin(), ups.begin() + static_cast<std::ptrdiff_t>(check), ups.end(),
                      [](const Upgrade& a, const Upgrade& b) { return a.score > b.score; });
    double best_ratio = 0;
    const Upgrade* best = nullptr;
    uint64_t best_cost = 0;
    for (std::size_t k = 0; k < check; ++k) {
      const uint32_t i = groups.unit[ups[k].g];
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
      // The best few did not fit at their exact cost: forbid them and try the
      // next ones.
      bool progressed = false;
      for (std::size_t k = check; k < ups.size() && k < check + kFillChecksPerRound; ++k) {
        const uint32_t i = groups.unit[ups[k].g];
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
    sel[groups.unit[best->g]] = static_cast<int8_t>(best->form);
    cost = best_cost;
  }
  return cost;
}

// Renders and counts the text once; while a real tokenizer's count exceeds the
// budget (it is not exactly additive over pieces), drops the shown unit of
// least value per token.
Renderer::Text render_within(const ContextUnitsFacet& c, const Renderer& r,
                             const TokenCounter& counter, const std::vector<bool>& mandatory,
                             const ValueWeights& w, uint32_t budget, Selection& sel,
                             uint32_t& used) {
  Renderer::Text text = r.render(sel);
  used = counter.count(text.text);
  while (used > budget) {
    std::size_t worst = sel.size();
    double worst_ratio = 0;
    for (std::size_t i = 0; i < sel.size(); ++i) {
      if (sel[i] == kNotShown || mandatory[i]) continue;
      const auto f = static_cast<Form>(sel[i]);
      const double ratio = unit_value(c.units[i], f, w) /
                           std::max<uint32_t>(1, r.form_cost(static_cast<uint32_t>(i), f));
      if (worst == sel.size() || ratio < worst_ratio) {
        worst = i;
        worst_ratio = ratio;
      }
    }
    if (worst == sel.size()) break;
    sel[worst] = kNotShown;
    text = r.render(sel);
    used = counter.count(text.text);
  }
  return text;
}

// What was shown, in candidate order, each with its form, tokens, value and
// reason.
std::vector<Shown> shown_units(const ContextUnitsFacet& c, const Renderer& r,
                               const std::vector<bool>& mandatory, const ValueWeights& w,
                               const Selection& sel) {
  std::vector<Shown> out;
  const Selection shown = r.with_containers(sel);
  for (std::size_t i = 0; i < shown.size(); ++i) {
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
      s.value = unit_value(c.units[i], f, w);
      s.reason = reason_text(c.units[i], w);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

PruneResult prune(ContextUnitsFacet& c, const TokenCounter& counter, const PruneOptions& options,
                  graph::Arena& arena) {
  PruneResult result;
  const uint32_t budget = options.budget_tokens;
  const ValueWeights& w = options.weights;
  auto renderer = std::make_unique<Renderer>(c, counter);
  if (c.focus < 0) return result;

  // 1. The mandatory part: the focus (opened while over its share) inside its
  // containers.
  if (options.split_focus) {
    const auto share = static_cast<uint32_t>(options.focus_share * budget);
    split_focus(c, counter, std::max<uint32_t>(1, share), arena, renderer);
  }
  const Renderer& r = *renderer;
  const std::vector<bool> mandatory = mandatory_units(c);
  Selection sel(c.units.size(), kNotShown);
  sel[static_cast<std::size_t>(c.focus)] = static_cast<int8_t>(Form::Full);
  const uint64_t base = std::max<uint64_t>(r.cost(sel), counter.count(r.render(sel).text));
  result.over_budget = base > budget;
  const uint32_t left = base >= budget ? 0 : static_cast<uint32_t>(budget - base);

  // 2. The knapsack over every unit with a value, each option charged an upper
  // bound.
  const Groups groups = knapsack_groups(c, r, mandatory, w);
  result.considered = static_cast<uint32_t>(groups.unit.size());
  const KnapsackResult ks = solve_knapsack(groups.options, left);
  for (std::size_t g = 0; g < groups.unit.size(); ++g) {
    if (ks.choice[g] >= 0) {
      sel[groups.unit[g]] =
          static_cast<int8_t>(groups.forms[g][static_cast<std::size_t>(ks.choice[g])]);
    }
  }

  // 3. The slack those bounds left, filled at exact costs.
  fill_slack(c, r, groups, w, budget, sel);

  // 4. The text, counted once (and trimmed while a real tokenizer counts more).
  Renderer::Text text = render_within(c, r, counter, mandatory, w, budget, sel, result.used_tokens);
  result.shown = shown_units(c, r, mandatory, w, sel);
  result.text = std::move(text.text);
  result.cursor_offset = text.cursor_offset;
  result.markers = text.markers;
  return result;
}

}  // namespace vsynth::stages::context
