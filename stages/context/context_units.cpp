#include "stages/context/context_units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <utility>

#include "stages/context/error.h"
#include "stages/context/references.h"
#include "stages/context/ts_util.h"

namespace vsynth::stages::context {

namespace {

std::string_view simple(std::string_view name) {
  const std::size_t p = name.find_last_of(":.");
  return p == std::string_view::npos ? name : name.substr(p + 1);
}

// Rows of a file as a reader counts them: a final '\n' does not start another row.
uint32_t visible_rows(const ast::ParsedFile& file) {
  const uint32_t rows = file.row_count();
  return rows > 1 && file.row_length(rows - 1) == 0 ? rows - 1 : rows;
}

// Identifier-like words of an import statement ("from a.b import c as d" -> a, b, c, d...).
bool mentions(std::string_view text, std::string_view word) {
  for (std::size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1)) {
    auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    const bool left = p == 0 || !is_word(text[p - 1]);
    const bool right = p + word.size() >= text.size() || !is_word(text[p + word.size()]);
    if (left && right) return true;
  }
  return false;
}

void set_rank(int& slot, int rank) {
  if (slot < 0 || rank < slot) slot = rank;
}

}  // namespace

int32_t add_row_unit(ContextUnitsFacet& c, uint32_t row, int32_t within) {
  const ast::ParsedFile& file = *c.file;
  std::vector<Unit>& units = c.units;
  Unit u;
  u.kind = UnitKind::Statement;
  u.first_row = u.last_row = u.end_row = row;
  u.row_byte = file.byte_at(TSPoint{row, 0});
  u.node_start = u.node_end = c.cursor_byte;
  u.full = rows_text(file, row, row);
  u.blank_before = UINT32_MAX;
  std::size_t k = 0;
  while (k < u.full.size() && (u.full[k] == ' ' || u.full[k] == '\t')) ++k;
  u.indent = u.full.substr(0, k);
  auto inside = [&](int32_t i) {
    for (int32_t p = i; p >= 0; p = units[static_cast<std::size_t>(p)].parent) {
      if (p == within) return true;
    }
    return within < 0;
  };
  for (std::size_t i = 0; i < units.size(); ++i) {
    const Unit& x = units[i];
    if (x.file != 0 || !x.container || x.last_row >= row || row > x.end_row) continue;
    if (!inside(static_cast<int32_t>(i))) continue;
    if (u.parent < 0 || x.first_row >= units[static_cast<std::size_t>(u.parent)].first_row) {
      u.parent = static_cast<int32_t>(i);
    }
  }
  units.push_back(u);
  return static_cast<int32_t>(units.size() - 1);
}

bool unit_named(const Unit& unit, std::string_view name) {
  return !name.empty() && simple(unit.name) == name;
}

void build_candidates(ContextUnitsFacet& out, const ast::AnchorFacet& anchor_facet,
                      graph::Arena& /*arena*/, const ExtractOptions& options) {
  build_candidates(out, anchor_facet, extract_file_units(anchor_facet.share_file(), options));
}

void build_candidates(ContextUnitsFacet& out, const ast::AnchorFacet& anchor_facet,
                      std::shared_ptr<const FileUnits> extracted) {
  const ast::ParsedFile& file = anchor_facet.file();
  const ast::Anchor& a = anchor_facet.anchor();
  if (!extracted || extracted->file.get() != &file) {
    throw ContextError(fmt::format(
        "build_candidates: the units given for {} were extracted from {}, not from the "
        "anchor's parsed file (extract_file_units(anchor.share_file()) makes them)",
        file.path(), extracted ? extracted->file->path() + " (another version)" : "nothing"));
  }
  out.file = anchor_facet.share_file();
  out.files = {SourceInfo{file.path(), std::string(file.language().name()), visible_rows(file)}};
  out.units = extracted->units;
  out.extracted = std::move(extracted);
  out.cursor_byte = a.byte;
  out.cursor_row = a.point.row;
  std::vector<Unit>& units = out.units;
  const uint32_t row = a.point.row;

  // --- focus: the one unit whose own rows hold the cursor's row (rows never overlap) ---
  int32_t focus = -1;
  for (std::size_t i = 0; i < units.size(); ++i) {
    if (units[i].first_row <= row && row <= units[i].last_row) focus = static_cast<int32_t>(i);
  }
  if (focus < 0 && a.function) {
    // Python: a blank line below a function's last statement still belongs to it.
    const uint32_t fn = a.function->span.start_byte;
    for (std::size_t i = 0; i < units.size(); ++i) {
      Unit& u = units[i];
      if (u.container || fn < u.node_start || fn >= u.node_end || u.last_row >= row) continue;
      const bool free_rows = std::none_of(units.begin(), units.end(), [&](const Unit& o) {
        return o.first_row > u.last_row && o.first_row <= row;
      });
      if (!free_rows) continue;
      u.last_row = u.end_row = row;
      u.full = rows_text(file, u.first_row, row);
      focus = static_cast<int32_t>(i);
      for (int32_t p = u.parent; p >= 0; p = units[static_cast<std::size_t>(p)].parent) {
        Unit& c = units[static_cast<std::size_t>(p)];
        if (c.close.empty()) c.end_row = std::max(c.end_row, row);  // Python: no closing rows
      }
    }
  }
  if (focus < 0) focus = add_row_unit(out, row);
  out.focus = focus;
  units[static_cast<std::size_t>(focus)].reasons.focus = true;
  std::vector<bool> on_path(units.size(), false);
  on_path[static_cast<std::size_t>(focus)] = true;
  std::string_view class_name;
  for (int32_t p = units[static_cast<std::size_t>(focus)].parent; p >= 0;
       p = units[static_cast<std::size_t>(p)].parent) {
    Unit& c = units[static_cast<std::size_t>(p)];
    c.reasons.on_path = true;
    on_path[static_cast<std::size_t>(p)] = true;
    if (class_name.empty() && c.kind == UnitKind::Class) class_name = simple(c.name);
  }
  if (class_name.empty() && a.enclosing_class) class_name = simple(a.enclosing_class->name);
  if (class_name.empty()) {
    // An out-of-line C++ method `Widget::run` belongs to Widget.
    const std::string_view n = units[static_cast<std::size_t>(focus)].name;
    const std::size_t p = n.rfind("::");
    if (p != std::string_view::npos) class_name = simple(n.substr(0, p));
  }

  // --- the enclosing class: its fields and constructors, and its type definitions ---
  if (!class_name.empty()) {
    std::vector<bool> is_class(units.size(), false);
    for (std::size_t i = 0; i < units.size(); ++i) {
      Unit& u = units[i];
      const bool same_class = u.kind == UnitKind::Class && unit_named(u, class_name);
      if (same_class || (u.container && u.reasons.on_path && u.kind == UnitKind::Class)) {
        is_class[i] = true;
        if (!u.reasons.on_path) u.reasons.class_member = true;
      }
    }
    for (std::size_t i = 0; i < units.size(); ++i) {
      Unit& u = units[i];
      const bool member = u.parent >= 0 && is_class[static_cast<std::size_t>(u.parent)];
      const bool ctor_kind = u.kind == UnitKind::Constructor;
      if (member && (u.kind == UnitKind::Field || ctor_kind)) u.reasons.class_member = true;
      // Go `NewServer`, C++ `Widget::Widget` outside the class.
      if (ctor_kind && u.parent < 0 &&
          (simple(u.name) == class_name || (simple(u.name).size() == class_name.size() + 3 &&
                                            simple(u.name).substr(3) == class_name))) {
        u.reasons.class_member = true;
      }
    }
  }

  // --- references from the focus, nearest to the cursor first ---
  const Unit& f = units[static_cast<std::size_t>(focus)];
  std::vector<NameUse> uses;
  if (f.node_end > f.node_start) {
    uses = names_used(file, unit_node(file, f), a.byte);
  } else if (a.function) {
    uses = names_used(file, a.function->node, a.byte);
  } else {
    for (const ast::Reference& r : a.identifiers) uses.push_back(NameUse{r.name, r.distance, 1});
  }
  std::unordered_map<std::string_view, std::vector<uint32_t>> by_name;
  for (std::size_t i = 0; i < units.size(); ++i) {
    const Unit& u = units[i];
    if (on_path[i] || u.kind == UnitKind::Import || u.kind == UnitKind::Statement) continue;
    if (!u.name.empty()) by_name[simple(u.name)].push_back(static_cast<uint32_t>(i));
  }
  int rank = 0;
  for (const NameUse& use : uses) {
    auto it = by_name.find(use.name);
    if (it == by_name.end()) continue;
    for (uint32_t i : it->second) {
      set_rank(units[i].reasons.ref_rank, rank);
      if (use.distance == 0) units[i].reasons.at_cursor = true;
    }
    ++rank;
  }
  for (Unit& u : units) {
    if (u.kind != UnitKind::Import) continue;
    for (std::size_t k = 0; k < uses.size(); ++k) {
      if (mentions(u.full, uses[k].name)) {
        set_rank(u.reasons.ref_rank, static_cast<int>(k));
        break;
      }
    }
  }

  for (Unit& u : units) {
    u.reasons.row_distance = row < u.first_row ? u.first_row - row
                             : row > u.end_row ? row - u.end_row
                                               : 0;
  }
}

ContextUnitsFacet& ensure_candidates(graph::Item& item, const ExtractOptions& options) {
  if (ContextUnitsFacet* c = item.find<ContextUnitsFacet>()) return *c;
  const ast::AnchorFacet& anchor = item.get<ast::AnchorFacet>();
  ContextUnitsFacet& c = item.emplace<ContextUnitsFacet>();
  build_candidates(c, anchor, item.arena(), options);
  return c;
}

nlohmann::json ContextUnitsFacet::to_json() const {
  nlohmann::json j;
  j["files"] = files.size();
  j["units"] = units.size();
  j["focus"] = focus >= 0 ? std::string(units[static_cast<std::size_t>(focus)].name) : "";
  j["deps"] = nlohmann::json::array();
  for (const Dependency& d : deps) {
    j["deps"].push_back({{"name", d.name}, {"path", d.path}, {"hop", d.hop}, {"via", d.via}});
  }
  j["duplicates"] = nlohmann::json::array();
  for (const Duplicate& d : duplicates) {
    const Unit& r = units[d.removed];
    const Unit& k = units[d.kept];
    j["duplicates"].push_back({{"removed", std::string(r.name)},
                               {"removed_path", files[r.file].path},
                               {"kept", std::string(k.name)},
                               {"kept_path", files[k.file].path},
                               {"jaccard", d.jaccard}});
  }
  return j;
}

}  // namespace vsynth::stages::context
