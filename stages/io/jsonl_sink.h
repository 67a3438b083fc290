// io.jsonl_sink: results appended to a JSON Lines file, one record per finished item.
//
// Each record is written with one write() on an O_APPEND descriptor and fsync'd before the
// next (unless fsync: false), so a run killed at any point loses at most the record being
// written. With resume: true the file is read first: ids already present are skipped by the
// runner, and a torn last line (a record cut short by a kill) is cut off. A torn line anywhere
// else means the file is not ours to repair: that is an error, and nothing is changed.
// An existing non-empty output is never overwritten unless overwrite: true.
#pragma once

#include <set>
#include <string>

#include "graph/registry.h"
#include "graph/stage.h"

namespace vsynth::stages::io {

struct SinkOptions {
  std::string path;
  bool fsync = true;
  bool resume = false;
  bool overwrite = false;
};

class JsonlSink : public graph::Sink {
 public:
  // Throws std::runtime_error naming the file and the problem.
  explicit JsonlSink(SinkOptions options);
  ~JsonlSink() override;

  void write(const graph::Item& item) override;
  bool contains(std::string_view task_id) const override;
  std::size_t already_done() const override { return done_.size(); }
  void flush() override;
  // Bytes of a torn last record removed when resuming (0 when the file ended cleanly).
  std::size_t repaired_bytes() const { return repaired_; }

 private:
  void load_existing();
  void append(const std::string& line);

  SinkOptions opt_;
  int fd_ = -1;
  std::set<std::string, std::less<>> done_;
  std::size_t repaired_ = 0;
};

graph::Contract jsonl_sink_contract();

}  // namespace vsynth::stages::io
