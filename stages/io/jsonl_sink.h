// io.jsonl_sink: results appended to a JSON Lines file, one record per finished item.
//
// The output is the user's data, so:
// - One writer: the file is locked (flock, exclusive) from the sink's construction to its
//   destruction; a second run on the same file is refused, naming the process holding it.
// - Whole records only: each record is written with one write() on an O_APPEND descriptor and
//   fsync'd before the next (unless fsync: false), so a kill loses at most the record being
//   written. A failed write (disk full, I/O error, file size limit) cuts the file back to the
//   end of the last complete record and fails every later write: the file stays valid JSONL.
// - With resume: true the file is read first: ids already present are skipped by the runner,
//   and a torn last line (a record cut short by a kill) is cut off. A torn line anywhere else
//   means the file is not ours to repair: that is an error, and nothing is changed.
// - An existing non-empty output is never overwritten unless overwrite: true.
#pragma once

#include <set>
#include <stdexcept>
#include <string>

#include "graph/registry.h"
#include "graph/stage.h"

namespace vsynth::stages::io {

// The output could not be opened, locked, read back or written: an I/O failure (`vsynth run`
// exits 3). A plain std::runtime_error from the sink is about what was asked (an existing
// output without --resume, a directory): exit 2.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SinkOptions {
  std::string path;
  bool fsync = true;
  bool resume = false;
  bool overwrite = false;
};

class JsonlSink : public graph::Sink {
 public:
  // Throws OutputError or std::runtime_error (see above) naming the file and the problem.
  explicit JsonlSink(SinkOptions options);
  ~JsonlSink() override;
  JsonlSink(const JsonlSink&) = delete;
  JsonlSink& operator=(const JsonlSink&) = delete;

  // Throws OutputError when the record could not be written whole (the file is cut back).
  void write(const graph::Item& item) override;
  bool contains(std::string_view task_id) const override;
  std::size_t already_done() const override { return done_.size(); }
  void flush() override;
  // Bytes of a torn last record removed when resuming (0 when the file ended cleanly).
  std::size_t repaired_bytes() const { return repaired_; }

 private:
  void open_locked();
  void load_existing();
  void append(const std::string& line);
  [[noreturn]] void cut_back(const char* what, int err);

  SinkOptions opt_;
  int fd_ = -1;
  bool regular_ = true;    // a regular file (not /dev/null, a pipe): locked and repairable
  uint64_t good_end_ = 0;  // bytes: end of the last complete record
  std::string failure_;    // set by a failed write: later writes fail with it
  std::set<std::string, std::less<>> done_;
  std::size_t repaired_ = 0;
};

graph::Contract jsonl_sink_contract();

}  // namespace vsynth::stages::io
