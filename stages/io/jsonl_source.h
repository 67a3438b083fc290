// io.jsonl_source: tasks from a JSON Lines file, one object per line.
//
// The whole file is checked before the run starts: every line that is not UTF-8, not a JSON
// object, has no string id (`id`, else `task_id`), or repeats an id is reported with
// file:line:col at once. Blank lines are skipped.
//
// Size limits (the contract's max_task_bytes, max_file_bytes, max_files) refuse one task, not
// the run: the task is handed to the runner marked refused (Task::refused says which limit,
// the size and how to raise it), so its record is written as failed and the other tasks run.
// A line over max_task_bytes is never held whole (see task_line.h).
//
// Sharding (shard.h): with a shard other than 0/1 every line is still checked (so every
// process of a job refuses the same bad input), but only the shard's own tasks are handed out
// and counted in total(); assignment() says which shard owns each task.
//
// Memory: a regular file is read twice, once to check it and once, task by task, as the
// runner asks for them, so only the tasks in flight are held as JSON; a pipe or other
// unseekable input keeps each task's text from the first pass instead.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/registry.h"
#include "graph/stage.h"
#include "stages/io/shard.h"

namespace vsynth::stages::io {

struct Line;

struct SourceLimits {
  uint64_t task_bytes = 16ull << 20;  // one line of the file
  uint64_t file_bytes = 8ull << 20;   // one file's text: `source_field`, each files[i].source
  uint64_t files = 10000;             // entries of `files_field`
};

struct SourceOptions {
  std::string path;
  SourceLimits limits;
  std::string files_field = "/files";    // JSON pointer: [{"path", "source"}...]
  std::string source_field = "/source";  // JSON pointer: the task's own file text
  Shard shard = {};                      // this process's part of the input
};

// One task of the input and the shard that owns it.
struct TaskOwner {
  std::string_view id;  // valid while the source lives
  uint32_t shard = 0;
};

class JsonlSource : public graph::Source {
 public:
  // Throws std::runtime_error listing every bad line (or naming the unreadable file).
  explicit JsonlSource(SourceOptions options);
  explicit JsonlSource(const std::string& path) : JsonlSource(options_for(path)) {}
  ~JsonlSource() override;
  JsonlSource(const JsonlSource&) = delete;
  JsonlSource& operator=(const JsonlSource&) = delete;

  // Throws std::runtime_error when the file changed under the run since it was checked.
  std::optional<graph::Task> next() override;
  std::optional<std::size_t> total() const override { return own_; }
  // Every task of the input in input order, each with its owning shard (all of them 0 unless
  // sharded).
  std::vector<TaskOwner> assignment() const;
  const Shard& shard() const { return opt_.shard; }

 private:
  static SourceOptions options_for(const std::string& path) {
    SourceOptions o;
    o.path = path;
    return o;
  }
  struct Entry {
    std::string id;
    std::size_t line = 0;  // 1-based
    uint64_t offset = 0, length = 0;
    std::string text;     // unseekable input only: the line itself
    std::string refused;  // non-empty: over a limit, never parsed again
    uint32_t owner = 0;   // the shard that runs it
  };
  void check_all();
  // One line's entry; nullopt for a blank line or a bad one (its message added to `errors`).
  std::optional<Entry> check_line(Line& line, std::size_t lineno,
                                  std::vector<std::string>& errors) const;
  // The refusal message when a parsed task is over the file limits, else empty.
  std::string over_file_limits(const nlohmann::json& task) const;
  std::string read_back(const Entry& e) const;

  SourceOptions opt_;
  nlohmann::json::json_pointer files_ptr_, source_ptr_;
  int fd_ = -1;
  bool seekable_ = false;
  std::vector<Entry> entries_;
  std::size_t next_ = 0;
  std::size_t own_ = 0;  // entries of this shard
};

graph::Contract jsonl_source_contract();

}  // namespace vsynth::stages::io
