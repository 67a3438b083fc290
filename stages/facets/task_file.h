// The task's own files as the context stages see them: which file the cursor is in (the
// `task_file` facet ast.anchor adds) and the project's other files the task carries
// (task_files: the /files list, chunks of one path joined).
//
// A task from an editor may name no file (llama.vim and llama.vscode never do): its prefix +
// suffix is still the cursor's file. ast.anchor then takes its language from the task's
// /language, else from the file names in /files, else from the text (stages/ast/
// language_guess.h), and calls it `untitled.<extension>`. When none of these gives a language
// the file is an anonymous buffer: no `anchor` facet, and the context stages pass the item on
// untouched (anonymous_buffer()); generate.llm then prompts with the task's own prefix and
// suffix.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/item.h"

namespace vsynth::stages::facets {

class TaskFileFacet : public graph::Facet {
 public:
  static constexpr std::string_view kName = "task_file";

  std::string path;      // the task's /path, or `untitled.<ext>` when it named none
  std::string language;  // empty for an anonymous buffer
  // How the language was chosen: path (the file name's extension), task (/language), files
  // (the file names in /files), text (detected from the text), none (anonymous buffer).
  std::string language_from;
  bool named = true;  // the task named its file (/path)

  bool anonymous() const { return language.empty(); }
  // {path, named, language, language_from}
  nlohmann::json to_json() const override;
};

// The item's cursor file is an anonymous buffer (ast.anchor found no language): context stages
// pass it on with what they have.
bool anonymous_buffer(const graph::Item& item);

struct TaskFileText {
  std::string path;
  std::string_view source;  // the task's text, or the joined chunks in the item's arena
};

// The task's /files (at `field`: [{path, source}]), in order of each path's first appearance.
// Editors send chunks of files (llama.vim's input_extra ring, Tabby's snippets) and several
// chunks may share a path: their texts are joined in the order sent, each on its own lines,
// a chunk identical to an earlier one of its path dropped. Absent or null: none. Throws
// std::invalid_argument naming the task and the entry when the list or an entry has the wrong
// shape, or when it holds more than `max_paths` distinct paths.
std::vector<TaskFileText> task_files(graph::Item& item, const nlohmann::json::json_pointer& field,
                                     std::size_t max_paths = static_cast<std::size_t>(-1));

// The same as owned strings, for a reader that holds the item const (prompt assembly).
std::vector<std::pair<std::string, std::string>> task_file_texts(
    const graph::Item& item, const nlohmann::json::json_pointer& field);

}  // namespace vsynth::stages::facets
