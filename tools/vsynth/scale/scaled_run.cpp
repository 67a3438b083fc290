#include "tools/vsynth/scale/scaled_run.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "tools/vsynth/exit_codes.h"

#ifdef VSYNTH_HAVE_MPI
#include <csignal>
#include <filesystem>

#include "stages/io/jsonl_source.h"
#include "tools/vsynth/progress.h"
#include "tools/vsynth/run_steps.h"
#include "tools/vsynth/scale/job_summary.h"
#include "tools/vsynth/scale/parts.h"
#include "tools/vsynth/scale/relay.h"
#include "tools/vsynth/scale/world.h"
#include "tools/vsynth/scoped_signals.h"
#endif

namespace vsynth::cli {

#ifndef VSYNTH_HAVE_MPI

int run_scaled(graph::Registry&, const RunArgs&, const Launch& launch) {
  if (launch.rank == 0) {
    std::cerr << fmt::format(
        "error: started as one of {} ranks by {}, but this vsynth was built without MPI, so "
        "every rank would run the whole job; rebuild with MPI (Debian libopenmpi-dev), or run "
        "one process per shard with --shard I/{} and join them with vsynth merge\n",
        launch.ranks, launch.launcher, launch.ranks);
  }
  return kExitUsage;
}

#else

namespace {

// Phase helpers run on every rank; their failures are agreed on before anyone goes on.

RunPlan plan_for(const World& world, const RunArgs& args, StepError& failed) {
  RunPlan plan;
  const auto rank = static_cast<uint32_t>(world.rank());
  const auto ranks = static_cast<uint32_t>(world.size());
  if (!args.shard.empty()) {
    failed = {kExitUsage,
              "error: --shard is for runs without MPI; under mpirun each rank takes "
              "its shard itself\n"};
  } else if (args.output.empty()) {
    failed = {kExitUsage,
              "error: an MPI job needs --output: each rank writes OUTPUT.rank-K and "
              "rank 0 merges them into OUTPUT\n"};
  } else if (const std::string e =
                 check_earlier_job(args.output, ranks, args.resume, args.overwrite);
             !e.empty()) {
    failed = {kExitUsage, "error: " + e + "\n"};
  }
  if (failed) return plan;
  plan.output = part_path(args.output, rank);
  plan.shard = fmt::format("{}/{}", rank, ranks);
  try {
    if (args.resume) {
      // Finished anywhere else (the merged output, other ranks' parts, parts of an earlier job
      // with more ranks) counts as done here: each task ends up in the output once.
      plan.done_elsewhere = finished_in_merged_output(args.output);
      for (const PartFile& p : find_parts(args.output)) {
        if (p.rank == rank) continue;
        for (auto& id : record_ids(p.path)) plan.done_elsewhere.insert(id);
      }
    } else if (args.overwrite && rank == 0) {
      // Start over, as asked: an earlier merge and parts of ranks this job does not have go
      // (the sinks empty the others).
      std::filesystem::remove(args.output);
      for (const PartFile& p : find_parts(args.output)) {
        if (p.rank >= ranks) std::filesystem::remove(p.path);
      }
    }
  } catch (const std::exception& e) {
    failed = {kExitUsage, fmt::format("error: {}\n", e.what())};
  }
  return plan;
}

// Every rank's failure, said once by rank 0; the exit code all ranks return (0: none failed).
int agree(const World& world, const StepError& mine) {
  const auto all = world.allgather(mine ? fmt::format("{}\n{}", mine.code, mine.message) : "");
  int code = kExitOk;
  std::string said;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    const auto nl = all[r].find('\n');
    code = std::max(code, std::stoi(all[r].substr(0, nl)));
    said += fmt::format("rank {}: {}", r, all[r].substr(nl + 1));
  }
  if (code != kExitOk && world.rank() == 0) {
    std::cerr << said << fmt::format("the job did not start ({} ranks)\n", world.size());
  }
  return code;
}

// At rank 0: who owns which task (for the stop report and the merge order).
JobLedger ledger_for(const World& world, const RunArgs& args, const RunSetup& setup,
                     const RunPlan& plan, std::vector<std::string>& input_order) {
  JobLedger ledger;
  ledger.tasks.resize(static_cast<std::size_t>(world.size()));
  for (int r = 0; r < world.size(); ++r) {
    ledger.parts.push_back(part_path(args.output, static_cast<uint32_t>(r)));
  }
  ledger.done_before = plan.done_elsewhere;
  if (world.rank() != 0) return ledger;
  const auto* source = dynamic_cast<const stages::io::JsonlSource*>(setup.source.get());
  if (!source) return ledger;
  for (const auto& t : source->assignment()) {
    if (t.shard < ledger.tasks.size()) ledger.tasks[t.shard].emplace_back(t.id);
    input_order.emplace_back(t.id);
  }
  return ledger;
}

// At rank 0, once every rank has finished: the summary, --metrics-json, the merge.
int finish_job(const World& world, const RunArgs& args, const RunSetup& setup,
               const std::vector<RankOutcome>& ranks, std::vector<std::string> input_order,
               ProgressReporter& progress) {
  const graph::RunResult job = job_result(ranks);
  progress.finish(job);
  if (!args.quiet) {
    std::cout << "rank 0's stages:\n"
              << summary_table(setup.pipeline->metrics(), ranks[0].result,
                               setup.pipeline->resource_counters())
              << rank_table(ranks);
  }
  int code = kExitOk;
  if (!args.metrics_json.empty()) {
    std::ofstream out(args.metrics_json);
    out << job_metrics_document(ranks);
    if (!out.flush()) code = kExitRuntime;
  }
  if (!job.fatal.empty() || job.cancelled) {
    std::cerr << (job.fatal.empty() ? "interrupted" : "error: " + job.fatal)
              << fmt::format(
                     "; the parts {}.rank-0..{} are kept: rerun with --resume to "
                     "finish and merge\n",
                     args.output, world.size() - 1);
    return job.fatal.empty() ? kExitInterrupted : kExitRuntime;
  }
  MergeOptions m;
  m.output = args.output;
  for (const PartFile& p : find_parts(args.output)) m.parts.push_back(p.path);
  m.keep_existing = !args.overwrite;
  if (setup.pipeline->spec().ordered) m.order = std::move(input_order);
  try {
    const MergeResult r = merge_results(m);
    if (!args.quiet) {
      std::cerr << fmt::format("merged {} part(s) into `{}`: {} records", m.parts.size(),
                               args.output, r.records)
                << (r.duplicates ? fmt::format(" ({} duplicates dropped)", r.duplicates) : "")
                << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "error: merging the parts: " << e.what() << "\n(the parts are kept; `vsynth merge "
              << args.output << "` retries)\n";
    return kExitRuntime;
  }
  return code;
}

}  // namespace

int run_scaled(graph::Registry& registry, const RunArgs& args, const Launch& launch) {
  // Phase 1: MPI, this rank's plan, and every rank's pipeline built; all agree before running.
  const ScopedSignals interrupts({SIGINT, SIGTERM}, interrupt_handler());
  std::optional<World> world;
  try {
    world.emplace();
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitRuntime;
  }
  StepError failed;
  RunPlan plan = plan_for(*world, args, failed);
  world->barrier();  // no rank writes its part before every rank has read the others
  const auto threads = limit_threads(args.threads ? args.threads : default_threads(launch));
  RunArgs mine = args;
  if (!args.trace.empty()) mine.trace = fmt::format("{}.rank-{}", args.trace, world->rank());
  RunSetup setup;
  if (!failed) failed = load_spec(registry, mine, setup);
  if (!failed) failed = build_endpoints(registry, mine, plan, setup);
  if (!failed) failed = build_pipeline(registry, setup);
  if (const int code = agree(*world, failed)) return code;

  // Phase 2: the run, progress relayed to rank 0.
  std::vector<std::string> input_order;
  ProgressReporter progress(stderr, world->rank() == 0 && !args.quiet);
  std::vector<uint64_t> totals;
  for (const auto& t : world->allgather(std::to_string(setup.source->total().value_or(0)))) {
    totals.push_back(std::stoull(t));
  }
  graph::RunResult result;
  StepError run_failed;
  {
    ProgressRelay relay(*world, progress, totals,
                        ledger_for(*world, args, setup, plan, input_order));
    run_failed = run_graph(
        mine, setup, [&](const graph::RunProgress& p) { relay.update(p); }, result);
    relay.finish(result);
  }
  setup.sink.reset();  // the part's lock goes: rank 0 may merge it

  // Phase 3: summaries to rank 0, which merges; everyone exits with its code.
  RankOutcome outcome{world->rank(), result, run_failed.message, {}};
  if (setup.pipeline) {
    outcome.metrics =
        metrics_document(setup.pipeline->metrics(), setup.pipeline->resource_counters(),
                         std::filesystem::absolute(setup.pipeline->spec().file).string());
  }
  if (run_failed && outcome.result.fatal.empty()) outcome.result.fatal = run_failed.message;
  const auto gathered = world->gather(encode_outcome(outcome));
  int code = kExitOk;
  if (world->rank() == 0) {
    std::vector<RankOutcome> ranks;
    for (const auto& g : gathered) ranks.push_back(decode_outcome(g));
    code = finish_job(*world, args, setup, ranks, std::move(input_order), progress);
  }
  return world->broadcast(code);
}

#endif

}  // namespace vsynth::cli
