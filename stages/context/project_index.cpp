#include "stages/context/project_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "stages/ast/language.h"
#include "stages/ast/reclaim.h"
#include "stages/context/error.h"
#include "stages/context/extract.h"
#include "stages/context/references.h"

namespace vsynth::stages::context {

namespace {

std::string_view simple(std::string_view name) {
  const std::size_t p = name.find_last_of(":.");
  return p == std::string_view::npos ? name : name.substr(p + 1);
}

std::string stem_of(std::string_view path) {
  std::size_t slash = path.find_last_of('/');
  std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  const std::size_t dot = base.find('.');
  return std::string(dot == std::string_view::npos ? base : base.substr(0, dot));
}

bool mentions_word(std::string_view text, std::string_view word) {
  if (word.empty()) return false;
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
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
        "project index: update of {} got no extracted units (pass CandidatesFacet::extracted, "
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
  f->parsed = std::move(parsed);
  File& ref = *f;
  files_[path] = std::move(f);
  index(ref, std::move(units));
  return true;
}

void ProjectIndex::remove(const std::string& path) {
  auto it = files_.find(path);
  if (it == files_.end()) return;
  unindex(*it->second);
  ast::retire(std::move(it->second->parsed));
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
    for (const Ref& r : all) {
      if (mentions_word(from->imports, r.file->stem)) out.push_back(r);
    }
    if (!out.empty()) return out;
  }
  if (all.size() <= max_ambiguity) out = all;
  return out;
}

std::vector<std::string_view> ProjectIndex::names_used_by(const File& file, uint32_t unit) const {
  const Unit& u = file.units[unit];
  if (u.container) return {};  // a class's members are units of their own
  return names_in(*file.parsed, unit_node(*file.parsed, u));
}

}  // namespace vsynth::stages::context
