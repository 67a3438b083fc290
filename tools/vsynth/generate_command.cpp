// `vsynth generate`: loads the model, wraps the prompt in the model's chat template when the
// GGUF has one (or with --chat), otherwise (or with --raw) continues it as plain text; streams the
// answer to stdout as tokens decode and prints one statistics line to stderr.
#include "tools/vsynth/generate_command.h"

#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <iostream>

#include "kernels/sampler/generator.h"
#include "stages/generation/model_resource.h"
#include "stages/generation/prompt.h"
#include "tools/vsynth/exit_codes.h"

namespace vsynth::cli {

int cmd_generate(const GenerateArgs& args) {
  namespace gen = stages::generation;
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
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return kExitRuntime;
  }

  try {
    kernels::Model& model = res->model();
    const kernels::Tokenizer& tok = model.tokenizer();
    std::vector<kernels::TokenId> prompt;
    if (args.raw && args.chat) {
      std::cerr << "error: --raw and --chat contradict each other\n";
      return kExitUsage;
    }
    const bool chat = args.chat || (!args.raw && res->chat_tuned());
    if (!chat) {
      prompt = tok.encode(args.prompt, {.add_special = true, .parse_special = false});
    } else {
      prompt =
          gen::render_chat(tok, args.prompt, gen::detect_chat_template(tok, res->chat_template()));
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
          "({:.1f} tok/s); finish: {}]\n",
          res->path().filename().string(), model.backend(), chat ? "chat" : "raw", prompt.size(),
          prefill_ms,
          prefill_ms > 0 ? 1000.0 * static_cast<double>(prompt.size()) / prefill_ms : 0.0,
          g.tokens.size(), g.decode_ms, g.decode_ms > 0 ? 1000.0 * g.steps / g.decode_ms : 0.0,
          kernels::to_string(g.finish));
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::cerr << "\nerror: " << e.what() << "\n";
    return kExitRuntime;
  }
  return kExitOk;
}

}  // namespace vsynth::cli
