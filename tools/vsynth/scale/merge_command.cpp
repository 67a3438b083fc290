// `vsynth merge OUTPUT`: the parts of a job run as shards (--shard I/N, one process per job
// array index) joined into OUTPUT; under MPI rank 0 does the same at the end of the job.
#include <fmt/format.h>

#include <iostream>

#include "stages/io/jsonl_source.h"
#include "tools/vsynth/commands.h"
#include "tools/vsynth/exit_codes.h"
#include "tools/vsynth/scale/parts.h"

namespace vsynth::cli {

namespace {

// The ids of the tasks in the input, in order (the input is checked as `vsynth run` checks it).
std::vector<std::string> input_ids(const std::string& input) {
  stages::io::JsonlSource source(input);
  std::vector<std::string> ids;
  for (const auto& t : source.assignment()) ids.emplace_back(t.id);
  return ids;
}

int report_missing(const std::vector<std::string>& order, const std::string& output) {
  const auto have = record_ids(output);
  std::vector<std::string_view> missing;
  for (const auto& id : order) {
    if (!have.count(id)) missing.push_back(id);
  }
  if (missing.empty()) return kExitOk;
  std::string shown;
  for (std::size_t i = 0; i < std::min<std::size_t>(missing.size(), 20); ++i) {
    shown += fmt::format("{}{}", i ? ", " : "", missing[i]);
  }
  std::cerr << fmt::format(
      "incomplete: {} of {} task(s) have no record yet: {}{}; rerun their shards with --resume, "
      "then merge again\n",
      missing.size(), order.size(), shown, missing.size() > 20 ? ", ..." : "");
  return kExitIncomplete;
}

}  // namespace

int cmd_merge(const MergeArgs& args) {
  // Phase 1: what to merge, in which order.
  MergeOptions m;
  m.output = args.output;
  m.parts = args.parts;
  if (m.parts.empty()) {
    for (const PartFile& p : find_parts(args.output)) m.parts.push_back(p.path);
  }
  m.keep_existing = !args.overwrite;
  m.remove_parts = !args.keep_parts;
  try {
    if (!args.input.empty()) m.order = input_ids(args.input);
  } catch (const std::exception& e) {
    std::cerr << "error: --input: " << e.what() << "\n";
    return kExitUsage;
  }
  if (m.parts.empty()) {
    std::cerr << fmt::format("error: no parts to merge: no `{}.rank-K` files, and no --parts\n",
                             args.output);
    return kExitUsage;
  }

  // Phase 2: the merge, then what is still missing.
  try {
    const MergeResult r = merge_results(m);
    std::cerr << fmt::format(
        "merged {} part(s) into `{}`: {} records ({} kept from it, {} "
        "duplicates dropped)\n",
        m.parts.size(), args.output, r.records, r.from_existing, r.duplicates);
    return m.order.empty() ? kExitOk : report_missing(m.order, args.output);
  } catch (const MergeIoError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitRuntime;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
}

}  // namespace vsynth::cli
