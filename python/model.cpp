// vsynth.Model: one GGUF decoder loaded in this process (the model.gguf resource's loader), its
// tokenizer, plain generation with optional Python hooks, and next-token logits.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kernels/sampler/generator.h"
#include "python/bindings.h"
#include "stages/generation/model_resource.h"
#include "stages/generation/prompt.h"
#include "stages/python/hook_api.h"

namespace vsynth::python {

namespace py = pybind11;
using namespace pybind11::literals;
namespace gen = stages::generation;
using kernels::TokenId;

namespace {

using PromptArg = std::variant<std::string, std::vector<TokenId>>;

class Model {
 public:
  Model(const std::string& path, const std::string& device, int threads,
        const std::string& kv_cache, int32_t context_length) {
    gen::ModelSettings s;
    s.path = path;
    s.device = device;
    s.threads = threads;
    s.kv_cache = kv_cache;
    s.context_length = context_length;
    py::gil_scoped_release nogil;
    res_ = gen::load_model(s);
  }

  const kernels::Tokenizer& tok() const { return res_->model().tokenizer(); }

  std::vector<TokenId> tokenize(const std::string& text, bool add_special,
                                bool parse_special) const {
    return tok().encode(text, {.add_special = add_special, .parse_special = parse_special});
  }

  py::str detokenize(const std::vector<TokenId>& ids, bool render_special) const {
    const std::string s = tok().decode(ids, {.render_special = render_special});
    return py::reinterpret_steal<py::str>(
        PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
  }

  // The prompt's tokens: ids as given, or text rendered the way `vsynth generate` does (the
  // chat template when the GGUF has one or chat=True, else plain text with BOS).
  std::vector<TokenId> prompt_tokens(const PromptArg& prompt, std::optional<bool> chat) const {
    if (const auto* ids = std::get_if<std::vector<TokenId>>(&prompt)) return *ids;
    const std::string& text = std::get<std::string>(prompt);
    if (!chat.value_or(res_->chat_tuned())) {
      return tok().encode(text, {.add_special = true, .parse_special = false});
    }
    return gen::render_chat(tok(), text, gen::detect_chat_template(tok(), res_->chat_template()));
  }

  void check_fits(std::size_t prompt_tokens, int32_t extra) const {
    const int32_t ctx = res_->model().options().context_length;
    if (prompt_tokens == 0) throw py::value_error("the prompt is empty");
    if (ctx > 0 && static_cast<int64_t>(prompt_tokens) + extra > ctx) {
      throw py::value_error(
          fmt::format("the prompt has {} tokens; the context holds {}", prompt_tokens, ctx));
    }
  }

  py::dict generate(const PromptArg& prompt, int32_t max_tokens, float temperature, int32_t top_k,
                    float top_p, float min_p, float repeat_penalty, uint64_t seed,
                    std::vector<std::string> stop, const py::list& hooks,
                    std::optional<bool> chat) {
    // Phase 1: options and prompt, checked with the GIL held (errors are Python exceptions).
    kernels::GenerateOptions opt;
    opt.max_new_tokens = max_tokens;
    opt.stop = std::move(stop);
    opt.sampler = {.temperature = temperature,
                   .top_k = top_k,
                   .top_p = top_p,
                   .min_p = min_p,
                   .repeat_penalty = repeat_penalty,
                   .seed = seed};
    if (max_tokens < 1) throw py::value_error("max_tokens must be >= 1");
    try {
      opt.sampler.validate();
    } catch (const kernels::SamplerError& e) {
      throw py::value_error(e.what());
    }
    const std::vector<TokenId> ids = prompt_tokens(prompt, chat);
    check_fits(ids.size(), 1);
    opt.context_limit = res_->model().options().context_length;
    std::vector<std::unique_ptr<kernels::MaskHook>> owned;
    std::vector<kernels::MaskHook*> hook_ptrs;
    for (py::handle h : hooks) {
      const std::string name = py::str(py::type::of(h).attr("__qualname__"));
      owned.push_back(stages::python::make_python_mask_hook(py::reinterpret_borrow<py::object>(h),
                                                            "`" + name + "`"));
      hook_ptrs.push_back(owned.back().get());
    }

    // Phase 2: the engine, without the GIL (hooks take it back per call).
    kernels::Generation g;
    {
      py::gil_scoped_release nogil;
      auto seq = res_->model().new_sequence();
      const std::span<const float> logits = seq->prefill(ids);
      g = kernels::generate(*seq, tok(), logits, opt, hook_ptrs);
    }
    owned.clear();

    // Phase 3: the result as a dict.
    py::dict d;
    d["text"] = py::reinterpret_steal<py::str>(
        PyUnicode_DecodeUTF8(g.text.data(), static_cast<Py_ssize_t>(g.text.size()), "replace"));
    d["tokens"] = g.tokens;
    d["prompt_tokens"] = ids.size();
    d["finish"] = kernels::to_string(g.finish);
    d["finish_detail"] = g.finish_detail;
    d["logprob_sum"] = g.logprob_sum;
    d["steps"] = g.steps;
    d["rejections"] = g.rejections;
    d["rollbacks"] = g.rollbacks;
    d["decode_ms"] = g.decode_ms;
    return d;
  }

  // Next-token logits after the prompt: numpy float32 [n_vocab] when numpy imports, else a list.
  py::object logits(const PromptArg& prompt, std::optional<bool> chat) const {
    const std::vector<TokenId> ids = prompt_tokens(prompt, chat);
    check_fits(ids.size(), 0);
    std::vector<float> row;
    {
      py::gil_scoped_release nogil;
      auto seq = res_->model().new_sequence();
      const std::span<const float> l = seq->prefill(ids);
      row.assign(l.begin(), l.end());
    }
    py::object numpy;
    try {
      numpy = py::module_::import("numpy");
    } catch (py::error_already_set&) {
      return py::cast(row);
    }
    py::bytes raw(reinterpret_cast<const char*>(row.data()), row.size() * sizeof(float));
    return numpy.attr("frombuffer")(raw, "dtype"_a = "float32").attr("copy")();
  }

  py::dict info() const {
    const kernels::Model& m = res_->model();
    py::dict d;
    d["path"] = res_->path().string();
    d["backend"] = m.backend();
    d["vocab_size"] = tok().size();
    d["context_length"] = m.options().context_length;
    d["chat_template"] = res_->chat_tuned();
    return d;
  }

 private:
  std::shared_ptr<gen::ModelResource> res_;
};

}  // namespace

void bind_model(py::module_& m) {
  py::class_<Model>(m, "Model",
                    "A GGUF decoder (gemma3, llama, qwen2) loaded once; path '' means "
                    "$VSYNTH_MODEL, then models/gemma-3-270m-q4_k_m.gguf.")
      .def(py::init<const std::string&, const std::string&, int, const std::string&, int32_t>(),
           "path"_a = "", "device"_a = "auto", "threads"_a = 0, "kv_cache"_a = "f16",
           "context_length"_a = 4096)
      .def("tokenize", &Model::tokenize, "text"_a, "add_special"_a = true,
           "parse_special"_a = false, "token ids of `text` (BOS added as the vocabulary asks)")
      .def("detokenize", &Model::detokenize, "tokens"_a, "render_special"_a = false,
           "the text of token ids")
      .def("generate", &Model::generate, "prompt"_a, "max_tokens"_a = 256, "temperature"_a = 0.2f,
           "top_k"_a = 40, "top_p"_a = 0.95f, "min_p"_a = 0.05f, "repeat_penalty"_a = 1.0f,
           "seed"_a = 0, "stop"_a = std::vector<std::string>{}, "hooks"_a = py::list(),
           "chat"_a = py::none(),
           "Generates from a prompt (text, or token ids used as given) with the defaults of "
           "`vsynth generate`: same settings and seed, same text. hooks: DecodingHook "
           "instances, run in order at every token. Returns a dict: text, tokens, "
           "prompt_tokens, finish, finish_detail, logprob_sum, steps, rejections, rollbacks, "
           "decode_ms.")
      .def("logits", &Model::logits, "prompt"_a, "chat"_a = false,
           "next-token logits after the prompt (numpy float32 array, or a list without numpy)")
      .def_property_readonly("info", &Model::info);
}

}  // namespace vsynth::python
