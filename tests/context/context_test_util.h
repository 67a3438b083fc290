// Helpers for tests/context: a source with a `<|>` cursor marker, anchored and turned into
// candidates, and lookups of units and shown units by name.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

#include "graph/arena.h"
#include "stages/ast/anchor.h"
#include "stages/ast/anchor_stage.h"
#include "stages/context/context_units.h"
#include "stages/context/prune.h"

namespace vsynth::stages::context::test {

struct Fixture {
  std::shared_ptr<const ast::ParsedFile> file;
  std::unique_ptr<ast::AnchorFacet> anchor;
  graph::Arena arena;
  ContextUnitsFacet candidates;

  // `source` holds one `<|>` where the cursor goes (removed from the text).
  Fixture(const std::string& path, std::string source) {
    const std::size_t at = source.find("<|>");
    if (at == std::string::npos) throw std::runtime_error("no <|> cursor marker in " + path);
    source.erase(at, 3);
    file = std::make_shared<const ast::ParsedFile>(ast::ParsedFile::from_path(path, source));
    anchor = std::make_unique<ast::AnchorFacet>(
        file, ast::anchor(*file, ast::Cursor::at_byte(static_cast<uint32_t>(at))));
    build_candidates(candidates, *anchor, arena);
  }

  // The first unit with this (simple or qualified) name; throws when there is none.
  const Unit& unit(std::string_view name) const {
    for (const Unit& u : candidates.units) {
      if (u.name == name || unit_named(u, name)) return u;
    }
    throw std::runtime_error("no unit named " + std::string(name));
  }
  int32_t index(std::string_view name) const {
    for (std::size_t i = 0; i < candidates.units.size(); ++i) {
      if (candidates.units[i].name == name) return static_cast<int32_t>(i);
    }
    return -1;
  }
};

// The form a unit was shown in, or -1.
inline int shown_form(const ContextUnitsFacet& c, const PruneResult& r, std::string_view name) {
  for (const Shown& s : r.shown) {
    if (c.units[s.unit].name == name) return static_cast<int>(s.form);
  }
  return -1;
}

}  // namespace vsynth::stages::context::test
