#include "stages/context/project_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "stages/ast/language.h"
#include "stages/ast/reclaim.h"
#include "stages/context/error.h"
#include "stages/context/references.h"
#include "stages/context/unit_extract.h"

namespace vsynth::stages::context {

namespace {

std::string_view simple(std::string_view name) {
  const std::size_t p = name.find_last_of(":.");
  return p == std::string_view::npos ? name : name.substr(p + 1);
}

bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The name other files import it by: the file name without extension, or for a Python
// package's __init__.py the package's (its directory's) name.
std::string stem_of(std::string_view path) {
  std::string_view base = base_name(path);
  const std::size_t dot = base.find('.');
  base = dot == std::string_view::npos ? base : base.substr(0, dot);
  if (base == "__init__" && path.size() > base_name(path).size()) {
    return stem_of(path.substr(0, path.size() - base_name(path).size() - 1));
  }
  return std::string(base);
}

// Test code (a tests/ or test/ directory, test_*.py, *_test.go, conftest.py...): no other code
// imports it, so its module globals and helpers are never what non-test code means by a name.
bool is_test_path(std::string_view path) {
  for (std::size_t p = 0; p < path.size();) {
    const std::size_t slash = path.find('/', p);
    const std::string_view part =
        path.substr(p, slash == std::string_view::npos ? std::string_view::npos : slash - p);
    if (slash == std::string_view::npos) {
      const std::string_view stem = part.substr(0, part.find('.'));
      return stem.rfind("test_", 0) == 0 || stem == "conftest" ||
             (stem.size() > 5 && stem.substr(stem.size() - 5) == "_test");
    }
    if (part == "test" || part == "tests") return true;
    p = slash + 1;
  }
  return false;
}

bool mentions_word(std::string_view text, std::string_view word) {
  if (word.empty()) return false;
  for (std::size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1)) {
    const bool left = p == 0 || !is_word(text[p - 1]);
    const bool right = p + word.size() >= text.size() || !is_word(text[p + word.size()]);
    if (left && right) return true;
  }
  return false;
}

uint32_t visible_rows(const ast::ParsedFile& file) {
  const uint32_t rows = file.row_count();
  return rows > 1 && file.row_length(rows - 1) == 0 ? rows - 1 : rows;
}

}  // namespace

bool is_definition(UnitKind kind) {
  switch (kind) {
    case UnitKind::Function:
    case UnitKind::Method:
    case UnitKind::Constructor:
    case UnitKind::Class:
    case UnitKind::Global:
      return true;
    default:
      return false;
  }
}

const ProjectIndex::File* ProjectIndex::find(std::string_view path) const {
  auto it = files_.find(std::string(path));
  return it == files_.end() ? nullptr : it->second.get();
}

bool ProjectIndex::update(const std::string& path, std::string_view source) {
  auto it = files_.find(path);
  if (it != files_.end()) {
    File& f = *it->second;
    if (f.parsed->source() == source) return false;
    // The next version, re-parsed from the previous tree over the changed span only.
    auto next = std::make_shared<const ast::ParsedFile>(*f.parsed, std::string(source));
    unindex(f);
    ast::retire(std::exchange(f.parsed, std::move(next)));  // freed off the request path
    ++reparses_;
    index(f, nullptr);
    return true;
  }
  const ast::Language* lang = ast::Language::find_for_path(path);
  if (!lang) return false;
  ++parses_;
  return adopt(path, std::make_shared<const ast::ParsedFile>(path, *lang, std::string(source)),
               nullptr);
}

bool ProjectIndex::update(const std::string& path, std::shared_ptr<const ast::ParsedFile> parsed) {
  return replace(path, std::move(parsed), nullptr);
}

bool ProjectIndex::update(const std::string& path, std::shared_ptr<const FileUnits> units) {
  if (!units || !units->file) {
    throw ContextError(fmt::format(
        "project index: update of {} got no extracted units (pass ContextUnitsFacet::extracted, "
        "or the parsed file itself)",
        path));
  }
  std::shared_ptr<const ast::ParsedFile> parsed = units->file;
  return replace(path, std::move(parsed), std::move(units));
}

bool ProjectIndex::replace(const std::string& path, std::shared_ptr<const ast::ParsedFile> parsed,
                           std::shared_ptr<const FileUnits> units) {
  auto it = files_.find(path);
  if (it != files_.end()) {
    File& f = *it->second;
    if (f.parsed == parsed || f.parsed->source() == parsed->source()) return false;
    unindex(f);
    ast::retire(std::exchange(f.parsed, std::move(parsed)));  // freed off the request path
    index(f, std::move(units));
    return true;
  }
  return adopt(path, std::move(parsed), std::move(units));
}

bool ProjectIndex::adopt(const std::string& path, std::shared_ptr<const ast::ParsedFile> parsed,
                         std::shared_ptr<const FileUnits> units) {
  auto f = std::make_unique<File>();
  f->path = path;
  f->stem = stem_of(path);
  f->test = is_test_path(path);
  f->parsed = std::move(parsed);
  File& ref = *f;
  stems_[ref.stem].push_back(&ref);
  files_[path] = std::move(f);
  index(ref, std::move(units));
  return true;
}

void ProjectIndex::remove(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return;
  unindex(*it->second);
  ast::retire(std::move(it->second->parsed));
  auto& same = stems_[it->second->stem];
  same.erase(std::find(same.begin(), same.end(), it->second.get()));
  if (same.empty()) stems_.erase(it->second->stem);
  files_.erase(it);
}

void ProjectIndex::unindex(File& f) {
  for (const Unit& u : f.units) {
    if (!is_definition(u.kind) || u.name.empty()) continue;
    auto it = names_.find(std::string(simple(u.name)));
    if (it == names_.end()) continue;
    auto& refs = it->second;
    refs.erase(std::remove_if(refs.begin(), refs.end(), [&](const Ref& r) { return r.file == &f; }),
               refs.end());
    if (refs.empty()) names_.erase(it);
  }
  f.units = {};
  // The old extraction holds the old version's file: dropped with it, off the request path.
  ast::retire(std::move(f.extracted));
}

void ProjectIndex::index(File& f, std::shared_ptr<const FileUnits> units) {
  if (!units || units->file != f.parsed || !(units->options == ExtractOptions{})) {
    units = extract_file_units(f.parsed);
  }
  f.extracted = std::move(units);
  f.units = f.extracted->units;
  f.rows = visible_rows(*f.parsed);
  f.imports.clear();
  for (uint32_t i = 0; i < f.units.size(); ++i) {
    const Unit& u = f.units[i];
    if (u.kind == UnitKind::Import) {
      f.imports += u.full;
      continue;
    }
    if (!is_definition(u.kind) || u.name.empty()) continue;
    auto& refs = names_[std::string(simple(u.name))];
    // One entry per name per file: a C prototype and its definition are one, and the
    // definition (which has a body, hence a signature form) wins.
    auto mine = std::find_if(refs.begin(), refs.end(), [&](const Ref& r) { return r.file == &f; });
    if (mine == refs.end()) {
      refs.push_back(Ref{&f, i});
    } else if (f.units[mine->unit].signature.empty() && !u.signature.empty()) {
      mine->unit = i;
    }
  }
}

void ProjectIndex::resolve_imported(std::string_view name, const File& from,
                                    const std::vector<Ref>& all, int depth,
                                    std::vector<const File*>& visited,
                                    std::vector<Ref>& out) const {
  visited.push_back(&from);
  for (const Ref& r : all) {
    if (mentions_word(from.imports, r.file->stem)) out.push_back(r);
  }
  if (!out.empty() || depth == 0) return;
  // The files `from` imports: those whose stem is a word of its import statements, in the
  // order of those words.
  std::vector<const File*> imported;
  const std::string_view text = from.imports;
  for (std::size_t p = 0; p < text.size();) {
    if (!is_word(text[p])) {
      ++p;
      continue;
    }
    std::size_t e = p;
    while (e < text.size() && is_word(text[e])) ++e;
    if (auto it = stems_.find(std::string(text.substr(p, e - p))); it != stems_.end()) {
      for (const File* f : it->second) {
        if (f != &from && std::find(imported.begin(), imported.end(), f) == imported.end()) {
          imported.push_back(f);
        }
      }
    }
    p = e;
  }
  // Re-exports: an imported file that imports the name itself (a package's __init__.py with
  // `from ._impl import build`) leads on to where it comes from.
  for (const File* f : imported) {
    if (std::find(visited.begin(), visited.end(), f) != visited.end()) continue;
    if (!mentions_word(f->imports, name)) continue;
    resolve_imported(name, *f, all, depth - 1, visited, out);
    if (!out.empty()) return;
  }
}

std::vector<ProjectIndex::Ref> ProjectIndex::resolve(std::string_view name, const File* from,
                                                     uint32_t max_ambiguity) const {
  std::vector<Ref> out;
  auto it = names_.find(std::string(name));
  if (it == names_.end()) return out;
  const std::vector<Ref>& all = it->second;
  for (const Ref& r : all) {
    if (r.file == from) out.push_back(r);
  }
  if (!out.empty()) return out;
  if (from) {
    std::vector<const File*> visited;
    resolve_imported(name, *from, all, kMaxReexportHops, visited, out);
    if (!out.empty()) return out;
  }
  // By name alone: test files only from test files.
  const bool from_test = from && from->test;
  for (const Ref& r : all) {
    if (!r.file->test || from_test) out.push_back(r);
  }
  if (out.size() > max_ambiguity) out.clear();
  return out;
}

std::vector<std::string_view> ProjectIndex::names_used_by(const File& file, uint32_t unit) const {
  const Unit& u = file.units[unit];
  if (u.container) return {};  // a class's members are units of their own
  return names_in(*file.parsed, unit_node(*file.parsed, u));
}

}  // namespace vsynth::stages::context
