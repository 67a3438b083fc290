// `vsynth index ROOT`: builds (or brings up to date) the retrieval index of a repository ahead
// of a run, in the same cache a pipeline's retrieval.index with the same settings loads.
#pragma once

#include <string>
#include <vector>

namespace vsynth::cli {

struct IndexArgs {
  std::string root;
  std::vector<std::string> languages;  // empty: every language
  std::string encoder;                 // empty: as retrieval.index resolves it
  std::string cache_dir;               // empty: retrieval.index's default
  int threads = 0;
  bool q8_0 = false;
  bool quiet = false;
};

int cmd_index(const IndexArgs& args);

}  // namespace vsynth::cli
