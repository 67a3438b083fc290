// context.deps: a project-level dependency graph across files (project_index.h), kept by the
// stage between tasks and updated incrementally, and the definitions within two hops of the
// cursor's function added to the candidates (deps.h).
//
//   stages:
//     deps: { use: context.deps, with: { hops: 2, max_per_hop: 24 } }
//
// Task fields (JSON pointers, each a parameter):
//   /files    other files of the project: [{"path": "src/a.py", "source": "..."}]. A file
//             sent once stays indexed for later tasks of the same project, so a task may list
//             only the files that changed; an unchanged text costs one comparison, a changed
//             one an incremental re-parse. Optional.
//   /project  a name keeping projects apart (default: one project for the whole run).
// Tasks of one run are processed concurrently (one lock per project): a task that relies on
// files another task sends must come in a later run (or every stage up to this one run with
// `concurrency: serial`); sending the files with every task that needs them always works.
// The task's own file (anchor facet) is indexed too, incrementally.
//
// Requires: `anchor`. Provides: `candidates`. Ports: `ok`.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "graph/stage.h"
#include "stages/context/deps.h"
#include "stages/context/project_index.h"

namespace vsynth::stages::context {

class DepsStage : public graph::SyncStage {
 public:
  explicit DepsStage(const graph::StageContext& ctx);
  graph::Port process(graph::Item& item) override;

 private:
  struct Project {
    std::mutex mu;
    ProjectIndex index;
  };
  Project& project(const std::string& name);

  nlohmann::json::json_pointer files_, project_;
  DepsOptions options_;
  uint32_t max_files_;
  graph::Port ok_;
  std::mutex mu_;  // guards projects_ (the map, not the indexes)
  std::map<std::string, std::unique_ptr<Project>> projects_;
};

graph::Contract deps_contract();

}  // namespace vsynth::stages::context
