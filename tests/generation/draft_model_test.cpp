// Draft-model and self-draft speculation (kernels/sampler/model_drafter.h,
// kernels/model/self_draft.h) through the real engine: greedy output token-identical to plain
// decoding, the sampled distribution unchanged, the draft sequence kept in step across rewinds
// (rolled back where the KV cache allows, started afresh where sliding windows freed the keys),
// draft models with another vocabulary or architecture refused with both named, a corrupt draft
// refused like any GGUF, and a drafter that fails at run time recorded as a fallback.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernels/engine.h"
#include "kernels/gguf/reader.h"
#include "kernels/gguf/writer.h"
#include "kernels/model/self_draft.h"
#include "kernels/sampler/generator.h"
#include "kernels/sampler/model_drafter.h"
#include "tests/generation/gen_test_util.h"
#include "tests/kernels/engine_test_util.h"

using namespace vsynth::kernels;
namespace fs = std::filesystem;

namespace {

fs::path synth_model(const std::string& arch) {
  const auto p =
      fs::path(VSYNTH_SOURCE_DIR) / ".cache/golden-models" / ("model_" + arch + "_synth.gguf");
  if (!fs::exists(p)) FAIL(p.string() << " is absent: run scripts/setup.sh");
  return p;
}

std::shared_ptr<Model> load(const fs::path& p, ModelOptions o = {}) {
  o.threads = 2;
  if (o.context_length == 4096) o.context_length = 1024;
  return Model::load(p, o);
}

// Tiny gemma3 models (sliding window 64) of one random stream: a draft with fewer layers shares
// the target's embeddings and first layers exactly, so it agrees with it often but not always.
fs::path tiny(int layers, int vocab = 64, const std::string& arch = "gemma3") {
  test::TinySpec s;
  s.arch = arch;
  s.layers = layers;
  s.vocab = vocab;
  return test::write_tiny_model(
      s, "draft_" + arch + std::to_string(layers) + "_" + std::to_string(vocab) + ".gguf");
}

// A GGUF value re-encoded for the writer (scalars, strings, arrays of either).
template <class T>
GgufMetaValue meta_of(const GgufValue& v) {
  return v.is_array() ? GgufMetaValue::array(v.to_vector<T>()) : GgufMetaValue::scalar(v.as<T>());
}
GgufMetaValue meta_of(const GgufValue& v) {
  const GgufType t = v.is_array() ? v.element_type() : v.type();
  switch (t) {
    case GgufType::U8:
      return meta_of<uint8_t>(v);
    case GgufType::I8:
      return meta_of<int8_t>(v);
    case GgufType::U16:
      return meta_of<uint16_t>(v);
    case GgufType::I16:
      return meta_of<int16_t>(v);
    case GgufType::U32:
      return meta_of<uint32_t>(v);
    case GgufType::I32:
      return meta_of<int32_t>(v);
    case GgufType::U64:
      return meta_of<uint64_t>(v);
    case GgufType::I64:
      return meta_of<int64_t>(v);
    case GgufType::F32:
      return meta_of<float>(v);
    case GgufType::F64:
      return meta_of<double>(v);
    case GgufType::Bool:
      return meta_of<bool>(v);
    case GgufType::String:
      return v.is_array() ? GgufMetaValue::array(v.strings())
                          : GgufMetaValue::string(v.as_string());
    default:
      break;
  }
  throw std::runtime_error("meta_of: unsupported value type for " + std::string(v.key()));
}

// A copy of the GGUF at `src` keeping only its first `layers` layers: a smaller draft model
// with exactly the target's vocabulary and the same first layers.
fs::path first_layers(const fs::path& src, int layers) {
  const GgufFile f = GgufFile::open(src);
  const std::string arch(f.find("general.architecture")->as_string());
  GgufWriter w;
  for (const GgufKV& kv : f.metadata()) {
    if (kv.key == arch + ".block_count") {
      w.add(std::string(kv.key), static_cast<uint32_t>(layers));
    } else {
      w.add_value(std::string(kv.key), meta_of(kv.value));
    }
  }
  for (const GgufTensor& t : f.tensors()) {
    const std::string name(t.name);
    if (name.starts_with("blk.") && std::stoi(name.substr(4)) >= layers) continue;
    w.add_tensor(name, t.dtype(), {t.dims().begin(), t.dims().end()}, t.data);
  }
  const fs::path out = fs::path(VSYNTH_BINARY_DIR) / "draft_test" /
                       (src.stem().string() + "_" + std::to_string(layers) + "_layers.gguf");
  fs::create_directories(out.parent_path());
  w.write(out);
  return out;
}

// The draft with cost 0: it always drafts (the cost model is not what these tests are about).
std::shared_ptr<const DraftModel> eager(std::shared_ptr<const DraftModel> d) {
  auto e = std::make_shared<DraftModel>(*d);
  e->cost = 0.0;
  return e;
}

Generation run(Model& m, const std::vector<TokenId>& prompt, const GenerateOptions& o) {
  auto seq = m.new_sequence();
  const auto first = seq->prefill(prompt);
  const std::vector<float> logits(first.begin(), first.end());
  return generate(*seq, m.tokenizer(), logits, o);
}

std::vector<TokenId> random_prompt(const Model& m, int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<TokenId> id(4, std::min<TokenId>(m.config().vocab_size - 1, 300));
  std::vector<TokenId> p{m.tokenizer().bos()};
  for (int i = 1; i < n; ++i) p.push_back(id(rng));
  return p;
}

GenerateOptions greedy(int n) {
  GenerateOptions o;
  o.sampler.temperature = 0.0f;
  o.max_new_tokens = n;
  o.stop_at_eog = false;  // random weights emit EOS anywhere; keep the runs long
  return o;
}

struct Counts {
  int32_t drafted = 0, accepted = 0;
};

// Greedy generations of `target` with and without the drafter, token for token.
Counts check_identical(Model& target, DrafterKind kind, std::shared_ptr<const DraftModel> draft,
                       int prompts) {
  Counts c;
  for (int i = 0; i < prompts; ++i) {
    const std::vector<TokenId> prompt = random_prompt(target, 5 + 13 * i, 100 + i);
    const Generation plain = run(target, prompt, greedy(40));
    for (int max_draft : {2, 5}) {
      GenerateOptions o = greedy(40);
      o.speculation = {.drafter = kind, .max_draft = max_draft, .draft = draft};
      const Generation spec = run(target, prompt, o);
      INFO(to_string(kind) << " max_draft " << max_draft << " prompt of " << prompt.size());
      REQUIRE(spec.speculation_fallback.empty());
      REQUIRE(spec.tokens == plain.tokens);
      CHECK(spec.text == plain.text);
      c.drafted += spec.drafted;
      c.accepted += spec.accepted;
    }
  }
  return c;
}

}  // namespace

TEST_CASE("model drafter: greedy output is token-identical to plain decoding",
          "[speculation][draft]") {
  for (const std::string arch : {"llama", "qwen2"}) {
    const fs::path path = synth_model(arch);
    auto target = load(path);
    const fs::path small_path = first_layers(path, 1);
    const auto draft =
        DraftModel::separate(*target, path.string(), load(small_path), small_path.string());
    CHECK(draft->cost > 0.0);
    CHECK(draft->cost < 1.0);  // one layer of two, the same output projection
    const Counts c = check_identical(*target, DrafterKind::Model, eager(draft), 4);
    WARN(arch << "_synth with its first layer as the draft: " << c.accepted << " of " << c.drafted
              << " kept");
    CHECK(c.accepted > 0);
    CHECK(c.accepted < c.drafted);  // both branches of the verification ran
  }
}

TEST_CASE("self drafter: greedy output is token-identical to plain decoding",
          "[speculation][draft]") {
  for (const std::string arch : {"llama", "qwen2"}) {
    auto target = std::shared_ptr<Model>(load(synth_model(arch)));
    for (int32_t vocab : {96, 100000}) {  // restricted output rows; all of them
      const auto draft = DraftModel::self(target, {.layers = 1, .vocab = vocab});
      INFO(arch << " self-draft over " << vocab << " tokens");
      CHECK(draft->model->config().n_layers == 1);
      // Control and unknown tokens are never drafted (the synthetic vocabularies have two).
      const std::size_t rows = frequent_tokens(target->tokenizer(), vocab).size();
      CHECK(rows == std::min<std::size_t>(std::size_t(vocab), 510));
      CHECK(draft->logit_tokens.size() == rows);
      CHECK(draft->cost < 1.0);
      const Counts c = check_identical(*target, DrafterKind::Self, eager(draft), 4);
      WARN(arch << "_synth self-draft (1 layer, " << vocab << " tokens): " << c.accepted << " of "
                << c.drafted << " kept");
      CHECK(c.accepted > 0);
      CHECK(c.accepted < c.drafted);
    }
  }
}

TEST_CASE("self-draft: the output rows are the most frequent tokens and every EOG token",
          "[speculation][draft]") {
  auto target = std::shared_ptr<Model>(load(synth_model("llama")));
  const Tokenizer& tok = target->tokenizer();
  const std::vector<TokenId> rows = frequent_tokens(tok, 40);
  REQUIRE(rows.size() == 40);
  CHECK(std::is_sorted(rows.begin(), rows.end()));
  CHECK(std::find(rows.begin(), rows.end(), tok.eos()) != rows.end());
  // Within one-character pieces and within the others, every ordinary token left out scores no
  // higher than the lowest one kept.
  const auto one_char = [&](TokenId t) {
    const std::string_view p = tok.text(t);
    const auto lead = static_cast<unsigned char>(p[0]);
    return p.size() == (lead < 0x80 ? 1u : lead < 0xE0 ? 2u : lead < 0xF0 ? 3u : 4u);
  };
  float lowest[2] = {1e30f, 1e30f};  // [one character]
  for (TokenId t : rows) {
    if (!tok.is_eog(t)) lowest[one_char(t)] = std::min(lowest[one_char(t)], tok.score(t));
  }
  for (TokenId t = 0; t < static_cast<TokenId>(tok.size()); ++t) {
    if (std::find(rows.begin(), rows.end(), t) != rows.end()) continue;
    if (tok.type(t) == TokenType::Normal) CHECK(tok.score(t) <= lowest[one_char(t)]);
  }
  // The draft's logits are over those rows only, and they are the target's rows' logits when
  // the draft keeps every layer.
  const auto full = DraftModel::self(target, {.layers = target->config().n_layers, .vocab = 40});
  const std::vector<TokenId> prompt = random_prompt(*target, 20, 3);
  auto a = target->new_sequence();
  const std::span<const float> la = a->prefill(prompt);
  auto b = full->model->new_sequence();
  const std::span<const float> lb = b->prefill(prompt);
  REQUIRE(lb.size() == 40);
  for (std::size_t i = 0; i < 40; ++i) {
    CHECK(lb[i] == Approx(la[static_cast<std::size_t>(full->logit_tokens[i])]).margin(1e-4));
  }
  CHECK_THROWS_WITH(DraftModel::self(target, {.layers = 3, .vocab = 40}),
                    Catch::Contains("layers = 3 is outside [1, 2]"));
  CHECK_THROWS_WITH(DraftModel::self(target, {.layers = 1, .vocab = 0}),
                    Catch::Contains("vocab = 0"));
}

TEST_CASE("sampled model-drafter speculation keeps the output distribution",
          "[speculation][draft]") {
  auto target = std::shared_ptr<Model>(load(synth_model("llama")));
  // Every layer, half the vocabulary: the draft's greedy token is the target's where it is
  // among those rows, so under sampling drafts are kept often and rejected often.
  const auto draft = eager(DraftModel::self(target, {.layers = 2, .vocab = 256}));
  const std::vector<TokenId> prompt = random_prompt(*target, 24, 9);
  constexpr int kPositions = 4;
  constexpr int kSeeds = 2000;  // per side
  GenerateOptions base;
  base.max_new_tokens = kPositions;
  base.stop_at_eog = false;
  base.sampler = {.temperature = 0.7f, .top_k = 20, .top_p = 0.9f, .min_p = 0.02f};
  GenerateOptions spec_opt = base;
  spec_opt.speculation = {.drafter = DrafterKind::Self, .max_draft = kPositions, .draft = draft};

  std::vector<std::map<TokenId, int>> plain_counts(kPositions), spec_counts(kPositions);
  int64_t accepted = 0, drafted = 0;
  for (int s = 0; s < kSeeds; ++s) {
    GenerateOptions p = base;
    p.sampler.seed = static_cast<uint64_t>(kSeeds + s);  // disjoint seeds: independent samples
    const Generation gp = run(*target, prompt, p);
    spec_opt.sampler.seed = static_cast<uint64_t>(s);
    const Generation gs = run(*target, prompt, spec_opt);
    REQUIRE(gp.tokens.size() == kPositions);
    REQUIRE(gs.tokens.size() == kPositions);
    for (int i = 0; i < kPositions; ++i) {
      ++plain_counts[i][gp.tokens[i]];
      ++spec_counts[i][gs.tokens[i]];
    }
    accepted += gs.accepted;
    drafted += gs.drafted;
    if (s < 100) {  // same seed, same output
      CHECK(run(*target, prompt, spec_opt).tokens == gs.tokens);
    }
  }
  WARN("self-draft under sampling: kept " << accepted << " of " << drafted);
  CHECK(accepted > 0);
  CHECK(accepted < drafted);
  // As the n-gram test: per (position, token), |f_spec - f_plain| within 5 standard deviations
  // of the difference of two independent frequencies plus 1/N.
  for (int i = 0; i < kPositions; ++i) {
    std::map<TokenId, std::pair<int, int>> cells;
    for (auto [t, c] : plain_counts[i]) cells[t].first = c;
    for (auto [t, c] : spec_counts[i]) cells[t].second = c;
    for (auto [t, c] : cells) {
      const double fp = static_cast<double>(c.first) / kSeeds;
      const double fs = static_cast<double>(c.second) / kSeeds;
      const double pooled = (fp + fs) / 2;
      const double bound = 5.0 * std::sqrt(2.0 * pooled * (1.0 - pooled) / kSeeds) + 1.0 / kSeeds;
      INFO("position " << i << " token " << t << ": plain " << fp << " spec " << fs);
      CHECK(std::fabs(fs - fp) <= bound);
    }
  }
}

TEST_CASE("model drafter: rewinds roll the draft back, or start afresh past the sliding window",
          "[speculation][draft]") {
  auto target = load(tiny(4));
  ModelOptions o;
  o.rollback_window = 4;  // sliding layers (window 64) keep little more than their window
  auto small = load(tiny(1), o);
  const auto draft = eager(DraftModel::separate(*target, "tiny4", small, "tiny1"));
  const std::vector<TokenId> text = random_prompt(*target, 200, 5);
  const std::vector<TokenId> other = random_prompt(*target, 200, 6);
  const auto ctx = [&](std::size_t keep, std::size_t n) {  // text[0, keep) + other[keep, n)
    std::vector<TokenId> c(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(keep));
    c.insert(c.end(), other.begin() + static_cast<std::ptrdiff_t>(keep),
             other.begin() + static_cast<std::ptrdiff_t>(n));
    return c;
  };
  // What a drafter that never saw anything else proposes for `c`.
  const auto fresh = [&](const std::vector<TokenId>& c) {
    ModelDrafter d(draft, 0.9);
    const std::span<const TokenId> s = d.propose(c, 4);
    return std::vector<TokenId>(s.begin(), s.end());
  };
  ModelDrafter d(draft, 0.9);
  // The proposal, and as much of a fresh drafter's (the lengths adapt differently).
  const auto propose = [&](const std::vector<TokenId>& c) {
    const std::span<const TokenId> s = d.propose(c, 4);
    std::vector<TokenId> f = fresh(c);
    REQUIRE(!s.empty());
    f.resize(std::min(f.size(), s.size()));
    return std::pair(std::vector<TokenId>(s.begin(), s.end()), f);
  };
  const auto same = [](const auto& p) { return p.first == p.second; };

  const std::vector<TokenId> a = ctx(190, 190);
  REQUIRE(same(propose(a)));
  CHECK(d.fresh_sequences() == 1);
  d.observe(4, 1);
  // Appended: the one token the target chose after the first kept one.
  const std::vector<TokenId> b = ctx(192, 192);
  CHECK(same(propose(b)));
  CHECK(d.fresh_sequences() == 1);
  // A short rewind (a hook's rollback) stays within the rollback window: rolled back.
  d.rewind(188);
  const std::vector<TokenId> c = ctx(188, 191);
  CHECK(same(propose(c)));
  CHECK(d.fresh_sequences() == 1);
  // Far back, past the keys the sliding layers still hold: a fresh sequence.
  d.rewind(60);
  const std::vector<TokenId> e = ctx(60, 100);
  CHECK(same(propose(e)));
  CHECK(d.fresh_sequences() == 2);
}

TEST_CASE("draft models with another vocabulary or architecture are refused, both named",
          "[speculation][draft]") {
  auto target = load(tiny(4));
  const auto refused = [&](const fs::path& p) -> std::string {
    try {
      DraftModel::separate(*target, "models/target.gguf", load(p), p.filename().string());
    } catch (const EngineError& e) {
      return e.what();
    }
    return "";
  };
  const std::string vocab = refused(tiny(1, 80));
  CHECK_THAT(vocab, Catch::Contains("draft_gemma31_80.gguf (gemma3, vocabulary of 80 tokens)"));
  CHECK_THAT(vocab, Catch::Contains("models/target.gguf (gemma3, vocabulary of 64 tokens)"));
  CHECK_THAT(vocab, Catch::Contains("another vocabulary size"));
  const std::string arch = refused(tiny(1, 64, "llama"));
  CHECK_THAT(arch, Catch::Contains("(llama, vocabulary of 64 tokens)"));
  CHECK_THAT(arch, Catch::Contains("(gemma3, vocabulary of 64 tokens)"));
  CHECK_THAT(arch, Catch::Contains("another architecture"));
  CHECK(refused(tiny(2)).empty());

  // The identity hash sees one changed piece or type.
  const auto v = vsynth::gentest::spm_vocab({"a", "b", "c"});
  auto w = v;
  w.tokens.back() = "d";
  auto t = v;
  t.types.back() = TokenType::UserDefined;
  CHECK(vocab_hash(Tokenizer(v)) == vocab_hash(Tokenizer(v)));
  CHECK(vocab_hash(Tokenizer(v)) != vocab_hash(Tokenizer(w)));
  CHECK(vocab_hash(Tokenizer(v)) != vocab_hash(Tokenizer(t)));
}

TEST_CASE("a corrupt draft GGUF is refused like the main model", "[speculation][draft]") {
  const fs::path good = tiny(1);
  const fs::path bad = good.parent_path() / "draft_truncated.gguf";
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  CHECK_THROWS_AS(load(bad), GgufError);
}

TEST_CASE("a drafter that fails at run time falls back to plain decoding, and says so",
          "[speculation][draft]") {
  auto target = load(tiny(4));
  ModelOptions o;
  o.kv_pool_tokens = 32;  // the draft's KV pool runs out on the first 40-token prompt
  const auto draft = eager(DraftModel::separate(*target, "tiny4", load(tiny(1), o), "tiny1"));
  const std::vector<TokenId> prompt = random_prompt(*target, 40, 4);
  const Generation plain = run(*target, prompt, greedy(20));
  GenerateOptions g = greedy(20);
  g.speculation = {.drafter = DrafterKind::Model, .max_draft = 4, .draft = draft};
  const Generation spec = run(*target, prompt, g);
  CHECK(spec.tokens == plain.tokens);
  CHECK_THAT(spec.speculation_fallback, Catch::Contains("drafter failed"));
  CHECK(spec.drafted == 0);
  CHECK_THROWS_WITH(make_drafter(DrafterKind::Self), Catch::Contains("needs a draft model"));
}
