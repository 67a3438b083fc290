#include "stages/context/deps_stage.h"

#include <fmt/format.h>

#include "stages/context/candidates.h"
#include "stages/context/error.h"
#include "stages/context/stage_util.h"

namespace vsynth::stages::context {

DepsStage::DepsStage(const graph::StageContext& ctx)
    : files_(ctx.params.pointer("files_field")),
      project_(ctx.params.pointer("project_field")),
      options_{static_cast<uint32_t>(ctx.params.integer("hops")),
               static_cast<uint32_t>(ctx.params.integer("max_per_hop")),
               static_cast<uint32_t>(ctx.params.integer("max_ambiguity"))},
      max_files_(static_cast<uint32_t>(ctx.params.integer("max_files"))),
      ok_(ctx.port("ok")) {}

DepsStage::Project& DepsStage::project(const std::string& name) {
  std::lock_guard lock(mu_);
  std::unique_ptr<Project>& p = projects_[name];
  if (!p) p = std::make_unique<Project>();
  return *p;
}

graph::Port DepsStage::process(graph::Item& item) {
  CandidatesFacet& c = ensure_candidates(item);
  const nlohmann::json& data = item.task().data;
  std::string name;
  if (const nlohmann::json* p = lookup(data, project_); p && !p->is_null()) {
    if (!p->is_string()) {
      throw ContextError(fmt::format("task `{}`: field {} must be a string (got {})", item.id(),
                                     project_.to_string(), p->type_name()));
    }
    name = p->get<std::string>();
  }
  Project& proj = project(name);
  std::lock_guard lock(proj.mu);
  if (const nlohmann::json* files = lookup(data, files_); files && !files->is_null()) {
    if (!files->is_array()) {
      throw ContextError(
          fmt::format("task `{}`: field {} must be a list of {{\"path\", \"source\"}} (got {})",
                      item.id(), files_.to_string(), files->type_name()));
    }
    for (std::size_t i = 0; i < files->size(); ++i) {
      const nlohmann::json& f = (*files)[i];
      if (!f.is_object() || !f.contains("path") || !f["path"].is_string() ||
          !f.contains("source") || !f["source"].is_string()) {
        throw ContextError(fmt::format(
            "task `{}`: field {}/{} must be {{\"path\": string, \"source\": string}} (got {})",
            item.id(), files_.to_string(), i, f.dump().substr(0, 120)));
      }
      const std::string& path = f["path"].get_ref<const std::string&>();
      if (!proj.index.find(path) && proj.index.size() >= max_files_) {
        throw ContextError(fmt::format(
            "task `{}`: project `{}` already indexes {} files, the stage's max_files; raise it "
            "or split the project (file {}/{}: {})",
            item.id(), name, max_files_, files_.to_string(), i, path));
      }
      proj.index.update(path, f["source"].get_ref<const std::string&>());
    }
  }
  // The anchor's own tree and the candidates' own extraction of it: the cursor's file is
  // neither parsed nor extracted a second time.
  if (c.extracted) {
    proj.index.update(c.files[0].path, c.extracted);
  } else {
    proj.index.update(c.files[0].path, c.file);
  }
  expand_dependencies(c, proj.index, options_, item.arena());
  return ok_;
}

graph::Contract deps_contract() {
  graph::Contract c;
  c.kind = "context.deps";
  c.summary =
      "Keeps a project-wide dependency graph (imports, calls, type uses) up to date "
      "incrementally and adds definitions within two hops of the cursor's function";
  c.concurrency = graph::Concurrency::unlimited();  // one lock per project
  c.requires_facets = {"anchor"};
  c.provides_facets = {"context_units"};
  c.ports = {{"ok", "dependencies added", false}};
  c.params = {
      graph::P::pointer("files_field", "/files",
                        "JSON pointer to the project's other files [{path, source}] (optional)"),
      graph::P::pointer("project_field", "/project",
                        "JSON pointer to a project name keeping indexes apart (optional)"),
      graph::P::integer("hops", 2, 1, 2, "dependency hops from the cursor's function"),
      graph::P::integer("max_per_hop", 24, 1, 1000, "definitions kept per hop, nearest first"),
      graph::P::integer("max_ambiguity", 3, 1, 100,
                        "follow a name not found in the file or its imports only when the "
                        "project defines it at most this many times"),
      graph::P::integer("max_files", 20000, 1, 10000000, "files one project may index"),
  };
  return c;
}

}  // namespace vsynth::stages::context
