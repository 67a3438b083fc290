// The files of a scaled-out job: each rank (or --shard index) K writes `OUTPUT.rank-K`, a
// results file like any other (locked, fsync'd, resumable); the merge joins the parts and any
// earlier merged output into OUTPUT, each task once.
#pragma once

#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vsynth::cli {

// Reading or writing a file failed, or a part is still being written (exit 3; other errors
// are about what the files hold: exit 2).
class MergeIoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string part_path(const std::string& output, uint32_t rank);

struct PartFile {
  std::string path;
  uint32_t rank = 0;
};
// The parts of `output` on disk (`output.rank-K` for any K), by rank.
std::vector<PartFile> find_parts(const std::string& output);

// The ids of the records in a results file (none when it does not exist). A torn last line (a
// record being written, or cut short by a kill) is left out; any other line that is not a
// result record is an error naming file and line.
std::set<std::string, std::less<>> record_ids(const std::string& path);

// Ids already in the merged output (a resumed job skips them); empty when there is none.
std::set<std::string, std::less<>> finished_in_merged_output(const std::string& output);

// Refuses (the message; empty when fine) to start a job over an earlier job's files without
// --resume or --overwrite: a non-empty merged output, or parts of ranks >= `ranks`.
std::string check_earlier_job(const std::string& output, uint32_t ranks, bool resume,
                              bool overwrite);

struct MergeOptions {
  std::string output;
  std::vector<std::string> parts;
  bool keep_existing = true;       // merge the existing output in (false: --overwrite)
  std::vector<std::string> order;  // task ids in input order; empty: output, then part order
  bool remove_parts = true;        // once the merged file is safely on disk
};

struct MergeResult {
  uint64_t records = 0;     // in the merged output
  uint64_t duplicates = 0;  // records of an id already taken (first part, then output, wins)
  uint64_t from_existing = 0;
};

// Writes the merged file next to `output`, fsyncs it and renames it over `output`, so the
// output is at every moment the old file or the whole new one; then removes the parts.
// Throws std::runtime_error naming the file and line of anything it cannot merge (nothing is
// changed then).
MergeResult merge_results(const MergeOptions& options);

}  // namespace vsynth::cli
