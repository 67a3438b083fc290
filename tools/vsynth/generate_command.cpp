// `vsynth generate`: loads the model, wraps the prompt in the model's chat template when the
// GGUF has one (or with --chat), otherwise (or with --raw) continues it as plain text; streams the
// answer to stdout as tokens decode and prints one statistics line to stderr.
#include "tools/vsynth/generate_command.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "kernels/sampler/generator.h"
#include "kernels/sampler/model_drafter.h"
#include "stages/generation/model_resource.h"
#include "stages/generation/prompt.h"
#include "tools/vsynth/exit_codes.h"

namespace vsynth::cli {

namespace {

// The prompt text: --prompt as given, or the whole of --prompt-file ("-": stdin; one argument
// cannot pass 128 KiB on Linux). Throws std::runtime_error naming the file.
std::string read_prompt(const GenerateArgs& args) {
  if (args.prompt_file.empty()) return args.prompt;
  if (args.prompt_file == "-") {
    std::string text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    if (std::cin.bad()) throw std::runtime_error("cannot read the prompt from stdin");
    return text;
  }
  std::error_code ec;
  if (std::filesystem::is_directory(args.prompt_file, ec)) {
    throw std::runtime_error(
        fmt::format("--prompt-file `{}` is a directory, not a text file", args.prompt_file));
  }
  std::ifstream in(args.prompt_file, std::ios::binary);
  if (!in) {
    throw std::runtime_error(
        fmt::format("cannot read --prompt-file `{}`: {}", args.prompt_file, std::strerror(errno)));
  }
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad())
    throw std::runtime_error(fmt::format("cannot read --prompt-file `{}`", args.prompt_file));
  return text;
}

// ", draft ngram: 40 of 61 drafted tokens accepted in 22 verify steps" (empty when off).
std::string speculation_summary(const kernels::SpeculationOptions& spec,
                                const kernels::Generation& g) {
  if (!spec.enabled()) return "";
  std::string s =
      fmt::format(", draft {}: {} of {} drafted tokens accepted in {} verify steps",
                  kernels::to_string(spec.drafter), g.accepted, g.drafted, g.verify_steps);
  if (!g.speculation_fallback.empty()) s += " (" + g.speculation_fallback + ")";
  return s;
}

}  // namespace

int cmd_generate(const GenerateArgs& args) {
  namespace gen = stages::generation;
  // Everything the command line can get wrong is checked before the model loads (seconds).
  if (args.raw && args.chat) {
    std::cerr << "error: --raw and --chat contradict each other\n";
    return kExitUsage;
  }
  if ((args.draft == "model") != !args.draft_model.empty()) {
    std::cerr << (args.draft_model.empty()
                      ? "error: --draft model needs --draft-model PATH (a GGUF with the model's "
                        "vocabulary)\n"
                      : "error: --draft-model is used only with --draft model\n");
    return kExitUsage;
  }
  if (!args.prompt_file.empty() && !args.prompt.empty()) {
    std::cerr << "error: --prompt and --prompt-file contradict each other; pass one\n";
    return kExitUsage;
  }
  std::string prompt_text;
  try {
    prompt_text = read_prompt(args);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }
  kernels::GenerateOptions opt;
  opt.max_new_tokens = args.max_new_tokens;
  opt.stop = args.stop;
  kernels::SamplerParams& sp = opt.sampler;
  sp.temperature = args.temperature;
  sp.top_k = args.top_k;
  sp.top_p = args.top_p;
  sp.min_p = args.min_p;
  sp.repeat_penalty = args.repeat_penalty;
  sp.seed = args.seed;
  // main.cpp's option check admits only the names parse_drafter_kind knows.
  opt.speculation.drafter =
      kernels::parse_drafter_kind(args.draft).value_or(kernels::DrafterKind::None);
  opt.speculation.max_draft = args.max_draft;
  try {
    sp.validate();
  } catch (const kernels::SamplerError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitUsage;
  }

  std::shared_ptr<gen::ModelResource> res;
  try {
    gen::ModelSettings ms;
    ms.path = args.model;
    ms.kv_cache = args.kv_cache;
    ms.device = args.device;
    ms.threads = args.threads;
    res = gen::load_model(ms);
    if (opt.speculation.drafter == kernels::DrafterKind::Model) {
      ms.path = args.draft_model;
      const auto draft = gen::load_model(ms);
      opt.speculation.draft = kernels::DraftModel::separate(res->model(), res->path().string(),
                                                            draft->share(), draft->path().string());
    } else if (opt.speculation.drafter == kernels::DrafterKind::Self) {
      opt.speculation.draft = kernels::DraftModel::self(
          res->share(), {.layers = args.self_layers, .vocab = args.self_vocab});
    }
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitRuntime;
  }

  try {
    kernels::Model& model = res->model();
    const kernels::Tokenizer& tok = model.tokenizer();
    std::vector<kernels::TokenId> prompt;
    const bool chat = args.chat || (!args.raw && res->chat_tuned());
    if (!chat) {
      prompt = tok.encode(prompt_text, {.add_special = true, .parse_special = false});
    } else {
      prompt =
          gen::render_chat(tok, prompt_text, gen::detect_chat_template(tok, res->chat_template()));
    }
    const int32_t ctx = model.options().context_length;
    if (ctx > 0 && static_cast<int64_t>(prompt.size()) + 1 > ctx) {
      std::cerr << fmt::format("error: the prompt has {} tokens; the context holds {}\n",
                               prompt.size(), ctx);
      return kExitUsage;
    }
    opt.context_limit = ctx;
    opt.on_text = [](std::string_view s) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
    };

    const auto t0 = std::chrono::steady_clock::now();
    auto seq = model.new_sequence();
    const std::span<const float> logits = seq->prefill(prompt);
    const double prefill_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const kernels::Generation g = kernels::generate(*seq, tok, logits, opt);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!args.quiet) {
      std::cerr << fmt::format(
          "[{} ({}, {}): prompt {} tokens, prefill {:.0f} ms ({:.1f} tok/s); {} tokens in {:.0f} "
          "ms "
          "({:.1f} tok/s){}; finish: {}]\n",
          res->path().filename().string(), model.backend(), chat ? "chat" : "raw", prompt.size(),
          prefill_ms,
          prefill_ms > 0 ? 1000.0 * static_cast<double>(prompt.size()) / prefill_ms : 0.0,
          g.tokens.size(), g.decode_ms, g.decode_ms > 0 ? 1000.0 * g.steps / g.decode_ms : 0.0,
          speculation_summary(opt.speculation, g), kernels::to_string(g.finish));
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "\nerror: " << e.what() << "\n";
    return kExitRuntime;
  }
  return kExitOk;
}

}  // namespace vsynth::cli
