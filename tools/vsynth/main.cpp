// vsynth: run, validate and inspect generate-then-verify pipelines.
#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <iostream>

#include "graph/version.h"
#include "stages/io/shard.h"
#include "stages/register_all.h"
#include "tools/vsynth/commands.h"
#include "tools/vsynth/exit_codes.h"
#include "tools/vsynth/generate_command.h"
#include "tools/vsynth/index_command.h"
#include "tools/vsynth/report/report_command.h"
#include "tools/vsynth/serve/serve_command.h"

int main(int argc, char** argv) {
  using namespace vsynth;
  CLI::App app{"vsynth: generate-then-verify code synthesis pipelines"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("vsynth ") + VSYNTH_VERSION_STRING);
  app.footer(
      "Exit codes: 0 success; 2 bad command line, pipeline or input; 3 runtime failure (resource, "
      "I/O); 130 interrupted. `vsynth <command> --help` lists each command's.");

  cli::RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "Run a pipeline over a JSONL file of tasks");
  run_cmd->add_option("pipeline", run.pipeline, "pipeline YAML")->required();
  run_cmd->add_option("-i,--input", run.input, "tasks, one JSON object per line");
  run_cmd->add_option("-o,--output", run.output, "results file (JSON Lines, appended)");
  run_cmd->add_flag("--resume", run.resume, "continue an existing output, skipping finished ids");
  run_cmd->add_flag("--overwrite", run.overwrite, "replace an existing output");
  run_cmd->add_option("--trace", run.trace, "write a Chrome-trace/Perfetto JSON of every span");
  run_cmd->add_option(
      "--metrics-json", run.metrics_json,
      "write per-stage and per-resource metrics as JSON ({stages: [...], resources: [...]})");
  run_cmd->add_flag("-q,--quiet", run.quiet, "no progress output");
  constexpr int64_t kTiB = int64_t{1} << 40;
  run_cmd
      ->add_option("--max-task-bytes", run.max_task_bytes,
                   "refuse (fail) a task whose line is longer (default 16 MiB)")
      ->check(CLI::Range(int64_t{1}, kTiB));
  run_cmd
      ->add_option("--max-file-bytes", run.max_file_bytes,
                   "refuse a task holding a longer file text (default 8 MiB)")
      ->check(CLI::Range(int64_t{1}, kTiB));
  run_cmd
      ->add_option("--max-files", run.max_files,
                   "refuse a task holding more project files (default 10000)")
      ->check(CLI::Range(int64_t{0}, kTiB));
  run_cmd
      ->add_option("--shard", run.shard,
                   "I/N: run only shard I of N (tasks by file hash) into OUTPUT.rank-I, for job "
                   "arrays without MPI; join the parts with `vsynth merge OUTPUT`")
      ->check([](const std::string& s) {
        std::string error;
        return stages::io::parse_shard(s, error) ? std::string() : error;
      });
  run_cmd
      ->add_option("--shard-by", run.shard_by,
                   "what picks a task's shard (MPI or --shard): file (its `path`, default: one "
                   "file's tasks share a process and its caches) or id")
      ->check(CLI::IsMember({"file", "id"}));
  run_cmd
      ->add_option("--threads", run.threads,
                   "threads this process may use (default: every core; under MPI the cores "
                   "shared among the machine's ranks)")
      ->check(CLI::Range(1, 4096));
  run_cmd->footer(
      "Under mpirun (mpirun -np N vsynth run ...) each rank runs the tasks whose key hashes to "
      "it into OUTPUT.rank-K and rank 0 merges the parts into OUTPUT at the end; --resume "
      "after a failed job runs only what is missing (docs/scale-out.md). "
      "Exit codes: 0 ran to the end (every task has a record, whatever its verdict; a task over "
      "a size limit has a failed one); 2 bad command line, pipeline or input (--input and "
      "--output the same file, --output a directory or an existing file without --resume or "
      "--overwrite); 3 runtime failure (a resource failed to load; I/O failed: --output "
      "unwritable or in use by another run, a write failed and the file was cut back to its "
      "last whole record; fail_fast); 130 interrupted by Ctrl-C or SIGTERM (results finished "
      "before it written, tasks in flight left unfinished; rerun with --resume).");

  cli::MergeArgs merge;
  auto* merge_cmd = app.add_subcommand(
      "merge", "Join the parts of a sharded job (OUTPUT.rank-K) into OUTPUT, each task once");
  merge_cmd->add_option("output", merge.output, "the job's --output")->required();
  merge_cmd->add_option("--parts", merge.parts, "the parts (default: OUTPUT.rank-* on disk)");
  merge_cmd->add_option("-i,--input", merge.input,
                        "the job's tasks: write in their order and name any without a record");
  merge_cmd->add_flag("--overwrite", merge.overwrite,
                      "drop the records OUTPUT already holds (default: keep those the parts do "
                      "not replace)");
  merge_cmd->add_flag("--keep-parts", merge.keep_parts, "leave the parts on disk after merging");
  merge_cmd->footer(
      "A record in a part replaces one of the same id in OUTPUT; between parts the lowest rank "
      "wins. OUTPUT is replaced in one rename, so it is whole at every moment. Exit codes: 0 "
      "merged (every task has a record when --input is given); 2 bad command line, a part or "
      "OUTPUT is not a results file; 3 I/O failed, or a part is still being written; 4 merged, "
      "but tasks of --input have no record (listed).");

  std::vector<std::string> validate_files;
  auto* validate_cmd =
      app.add_subcommand("validate", "Check pipeline files against every contract");
  validate_cmd->add_option("pipelines", validate_files, "pipeline YAML files")->required();
  validate_cmd->footer(
      "Exit codes: 0 every file is valid; 2 a file has errors (each listed with file:line:col) or "
      "the command line is bad.");

  std::string only;
  auto* stages_cmd = app.add_subcommand("stages", "Describe every stage and resource kind");
  stages_cmd->add_option("kind", only, "describe only this kind");
  stages_cmd->footer("Exit codes: 0 printed; 2 no such kind (the message suggests one).");

  std::string dot_file;
  auto* dot_cmd = app.add_subcommand("dot", "Print a pipeline as a Graphviz graph");
  dot_cmd->add_option("pipeline", dot_file, "pipeline YAML")->required();
  dot_cmd->footer("Exit codes: 0 printed; 2 the pipeline has errors (listed as by validate).");

  cli::ReportArgs rep;
  auto* report_cmd = app.add_subcommand(
      "report", "Write a run's results (and trace, metrics) as one self-contained HTML page");
  report_cmd->add_option("results", rep.results, "results file of `vsynth run --output`")
      ->required();
  report_cmd->add_option("-o,--output", rep.output, "the HTML page to write")->required();
  report_cmd->add_option("--trace", rep.trace,
                         "the run's `vsynth run --trace` file: where time went, per stage and "
                         "for the slowest items");
  report_cmd->add_option("--metrics", rep.metrics,
                         "the run's `vsynth run --metrics-json` file: per-stage metrics and "
                         "engine counters");
  report_cmd->add_option("--pipeline", rep.pipeline,
                         "pipeline YAML to draw (default: the one --metrics or --trace names)");
  report_cmd
      ->add_option("--max-tasks", rep.max_tasks,
                   "rows in the task table: failures first, then passes (default 500)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  report_cmd
      ->add_option("--max-field-bytes", rep.max_field_bytes,
                   "bytes kept of each text (code, messages) in a table row (default 4096)")
      ->check(CLI::Range(std::size_t{64}, std::size_t{1} << 24));
  report_cmd->add_flag("-q,--quiet", rep.quiet, "no summary line on stdout");
  report_cmd->footer(
      "The page needs nothing at view time: Vega (Debian libjs-vega) and the pipeline graph "
      "(Graphviz `dot`) are inlined when it is written. The results file is read in one pass in "
      "bounded memory, whatever its size; lines that are not result records are skipped and "
      "named. Exit codes: 0 written (warnings on stderr: skipped lines, a trace from another "
      "run, a graph or charts left out); 2 bad command line, or an input that is not what it "
      "should be (no result record in RESULTS, a --trace or --metrics file not from vsynth run, "
      "-o naming an input); 3 the page could not be written.");

  cli::GenerateArgs gen;
  auto* gen_cmd = app.add_subcommand("generate", "Stream a model's answer to one prompt");
  auto* prompt_opt =
      gen_cmd->add_option("-p,--prompt", gen.prompt, "the prompt (a chat message unless --raw)");
  gen_cmd
      ->add_option("-f,--prompt-file", gen.prompt_file,
                   "read the prompt from this file (`-`: stdin), for prompts of any length")
      ->excludes(prompt_opt);
  gen_cmd->add_option("-n,--max-new-tokens", gen.max_new_tokens, "tokens to generate at most")
      ->check(CLI::Range(1, 1 << 20));
  gen_cmd->add_option("--seed", gen.seed, "sampling seed (same seed, same text)");
  gen_cmd->add_option("--temperature", gen.temperature, "0: greedy");
  gen_cmd->add_option("--top-k", gen.top_k, "0: off");
  gen_cmd->add_option("--top-p", gen.top_p, "1: off");
  gen_cmd->add_option("--min-p", gen.min_p, "0: off");
  gen_cmd->add_option("--repeat-penalty", gen.repeat_penalty, "1: off");
  gen_cmd->add_option("--stop", gen.stop, "stop string (repeatable)");
  gen_cmd
      ->add_option("--draft", gen.draft,
                   "speculative decoding (same text; faster where the guesses are kept): ngram "
                   "(prompt lookup: drafts what followed the last tokens' earlier occurrence), "
                   "model (greedy drafts of --draft-model), self (the model's own first "
                   "--self-layers layers over its --self-vocab most frequent tokens) or none")
      ->check(CLI::IsMember({"none", "ngram", "model", "self"}));
  gen_cmd->add_option("--draft-model", gen.draft_model,
                      "GGUF of the draft model for --draft model (the same vocabulary)");
  gen_cmd
      ->add_option("--self-layers", gen.self_layers, "--draft self: layers the draft runs; 0: all")
      ->check(CLI::NonNegativeNumber);
  gen_cmd
      ->add_option("--self-vocab", gen.self_vocab, "--draft self: most frequent tokens it scores")
      ->check(CLI::PositiveNumber);
  gen_cmd->add_option("--max-draft", gen.max_draft, "tokens drafted per verification at most")
      ->check(CLI::Range(1, 16));
  gen_cmd->add_option("-m,--model", gen.model, "GGUF file (default: $VSYNTH_MODEL, then models/)");
  gen_cmd->add_option("--kv-cache", gen.kv_cache, "f16 or int8")
      ->check(CLI::IsMember({"f16", "int8"}));
  gen_cmd
      ->add_option("--device", gen.device,
                   "auto (a GPU when built with CUDA and present), cpu, cuda")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  gen_cmd->add_option("-t,--threads", gen.threads, "compute threads (0: every core)")
      ->check(CLI::Range(0, 4096));
  auto* raw_flag =
      gen_cmd->add_flag("--raw", gen.raw, "continue the prompt as plain text (no chat template)");
  gen_cmd->add_flag("--chat", gen.chat, "use the chat template even if the GGUF has none")
      ->excludes(raw_flag);
  gen_cmd->add_flag("-q,--quiet", gen.quiet, "no statistics line on stderr");
  gen_cmd->footer(
      "Exit codes: 0 generated (the answer on stdout, one statistics line on stderr); 2 bad "
      "command line (checked before the model loads: --raw with --chat, --prompt with "
      "--prompt-file, an unreadable --prompt-file), or a prompt longer than the model's "
      "context; 3 the model failed to load or to run.");

  cli::IndexArgs idx;
  auto* index_cmd = app.add_subcommand(
      "index", "Build or update a repository's retrieval index ahead of a run (retrieval.index)");
  index_cmd->add_option("root", idx.root, "repository directory")->required();
  index_cmd->add_option("--languages", idx.languages, "only these languages (default: all)")
      ->delimiter(',');
  index_cmd->add_option("--encoder", idx.encoder,
                        "encoder directory (default: $VSYNTH_ENCODER, then "
                        "models/all-MiniLM-L6-v2)");
  index_cmd->add_option("--cache-dir", idx.cache_dir,
                        "where indexes are kept (default: $XDG_CACHE_HOME/vsynth/index, else "
                        "~/.cache/vsynth/index)");
  index_cmd->add_option("-t,--threads", idx.threads, "encoder threads (0: every core)")
      ->check(CLI::Range(0, 4096));
  index_cmd->add_flag("--q8-0", idx.q8_0, "encoder linear weights quantized to Q8_0 at load");
  index_cmd->add_flag("-q,--quiet", idx.quiet, "no progress output");
  index_cmd->footer(
      "A pipeline whose retrieval.index has the same root, encoder, languages, q8_0 and "
      "cache_dir (the other parameters at their defaults) then starts from this index. Exit "
      "codes: 0 built (the summary on stdout; files skipped are named on stderr); 2 bad command "
      "line (ROOT not a directory, an unknown language); 3 the index could not be built.");

  // The commands that load pipelines take plugins (graph/plugin.h), as VSYNTH_PLUGIN_PATH does.
  std::vector<std::string> plugins;
  for (auto* cmd : {run_cmd, validate_cmd, stages_cmd, dot_cmd})
    cli::add_plugin_option(*cmd, plugins);

  cli::ServeArgs srv;
  auto* serve_cmd = app.add_subcommand(
      "serve", "Serve pipelines over HTTP (OpenAI, llama.cpp and vsynth endpoints)");
  serve_cmd->add_option("pipeline", srv.pipeline, "the default pipeline YAML");
  serve_cmd->add_option("--pipeline", srv.pipelines,
                        "NAME=FILE: one more pipeline, chosen by a request's `model` (repeatable)");
  serve_cmd->add_option("--host", srv.host,
                        "address to bind (default 127.0.0.1: this machine only)");
  serve_cmd->add_option("--port", srv.port, "port (default 8080; 0: any free one, printed)")
      ->check(CLI::Range(0, 65535));
  serve_cmd->add_option("--config", srv.config,
                        "serve YAML: API keys -> tenants, priorities, queues, caps "
                        "(examples/serve/serve.yaml)");
  serve_cmd->add_flag("-q,--quiet", srv.quiet, "no access log on stderr");
  serve_cmd->footer(
      "Endpoints: POST /v1/completions, /v1/chat/completions, /infill, /completion, /v1/tasks; "
      "GET /v1/models, /health, /metrics (docs/serving.md). Exit codes: 0 stopped by SIGINT or "
      "SIGTERM; 2 bad command line, pipeline or config; 3 a model failed to load or the address "
      "could not be bound.");
  cli::add_plugin_option(*serve_cmd, plugins);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : cli::kExitUsage;
  }

  if (*gen_cmd) {
    if (gen_cmd->count("--prompt") == 0 && gen_cmd->count("--prompt-file") == 0) {
      std::cerr << "error: no prompt: pass --prompt TEXT or --prompt-file PATH (`-`: stdin)\n"
                << "Run with --help for more information.\n";
      return cli::kExitUsage;
    }
    return cli::cmd_generate(gen);
  }
  if (*index_cmd) return cli::cmd_index(idx);
  if (*merge_cmd) return cli::cmd_merge(merge);
  graph::Registry registry;
  stages::register_all(registry);
  if (!cli::load_plugins(registry, plugins)) return cli::kExitUsage;
  if (*run_cmd) return cli::cmd_run(registry, run);
  if (*serve_cmd) return cli::cmd_serve(registry, srv);
  if (*validate_cmd) return cli::cmd_validate(registry, validate_files);
  if (*stages_cmd) return cli::cmd_stages(registry, only);
  if (*dot_cmd) return cli::cmd_dot(registry, dot_file);
  if (*report_cmd) return cli::cmd_report(registry, rep);
  return cli::kExitUsage;
}
