// The BERT sentence encoder (kernels/encoder/bert.h).
//
// "encoder: ..." cases run on a tiny synthetic BertModel the test writes (config.json + a
// safetensors file of pseudo-random weights): the forward against a float64 reference written
// here, batch/order/thread invariance bit for bit (F32 and Q8_0), concurrent calls, and every
// error path (bad ids, config values, missing files, absent or misshapen tensors, pooling).
// "encoder model: ..." cases need all-MiniLM-L6-v2 (tests/test_skip.h, default_encoder()): the
// golden of scripts/golden/make_encoder_golden.py (float64 numpy on 111 snippets; cosine >= 0.999
// for each), batch invariance on real lengths, and Q8_0 against F32 (cosine >= 0.99). The
// figures (min / mean cosine) are printed (WARN) on every run.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "kernels/encoder/bert.h"
#include "kernels/safetensors/reader.h"
#include "tests/kernels/safetensors_test_util.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

// ---- Scaffolding: temp folders, a safetensors writer, a synthetic BertModel ----

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("vsynth-encoder-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;  // F32; an I64 tensor when `i64` is set
  std::vector<int64_t> i64;
};

// Through the safetensors tests' writer (valid files, contiguous ranges, padded header).
void write_safetensors(const fs::path& path, const std::vector<Tensor>& tensors) {
  std::vector<test::StSpec> specs;
  for (const Tensor& t : tensors) {
    specs.push_back({t.name, t.i64.empty() ? "F32" : "I64", t.shape,
                     t.i64.empty() ? test::bytes_of(t.values) : test::bytes_of(t.i64)});
  }
  const std::vector<std::byte> bytes = test::safetensors_bytes(specs);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

struct Spec {
  int vocab = 100, hidden = 64, layers = 2, heads = 4, inter = 128, max_pos = 40, types = 2;
};

json config_json(const Spec& s) {
  return {{"architectures", {"BertModel"}},
          {"model_type", "bert"},
          {"hidden_act", "gelu"},
          {"hidden_size", s.hidden},
          {"intermediate_size", s.inter},
          {"layer_norm_eps", 1e-12},
          {"max_position_embeddings", s.max_pos},
          {"num_attention_heads", s.heads},
          {"num_hidden_layers", s.layers},
          {"position_embedding_type", "absolute"},
          {"type_vocab_size", s.types},
          {"vocab_size", s.vocab}};
}

// Every BertModel tensor, values uniform in [-scale, scale] from a fixed seed (LayerNorm gains
// around 1); linear weights scaled by 1/sqrt(in) so activations stay O(1) through the layers.
std::vector<Tensor> synth_tensors(const Spec& s, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  std::vector<Tensor> ts;
  const auto add = [&](std::string name, std::vector<int64_t> shape, float scale, float center) {
    int64_t n = 1;
    for (const int64_t d : shape) n *= d;
    std::uniform_real_distribution<float> u(center - scale, center + scale);
    Tensor t{std::move(name), std::move(shape), std::vector<float>(size_t(n)), {}};
    for (float& v : t.values) v = u(rng);
    ts.push_back(std::move(t));
  };
  const int64_t h = s.hidden, im = s.inter;
  add("embeddings.word_embeddings.weight", {s.vocab, h}, 1.0f, 0.0f);
  add("embeddings.position_embeddings.weight", {s.max_pos, h}, 0.5f, 0.0f);
  add("embeddings.token_type_embeddings.weight", {s.types, h}, 0.5f, 0.0f);
  add("embeddings.LayerNorm.weight", {h}, 0.2f, 1.0f);
  add("embeddings.LayerNorm.bias", {h}, 0.1f, 0.0f);
  const auto linear = [&](const std::string& p, int64_t out, int64_t in) {
    add(p + ".weight", {out, in}, 1.5f / std::sqrt(float(in)), 0.0f);
    add(p + ".bias", {out}, 0.1f, 0.0f);
  };
  for (int l = 0; l < s.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    linear(p + "attention.self.query", h, h);
    linear(p + "attention.self.key", h, h);
    linear(p + "attention.self.value", h, h);
    linear(p + "attention.output.dense", h, h);
    add(p + "attention.output.LayerNorm.weight", {h}, 0.2f, 1.0f);
    add(p + "attention.output.LayerNorm.bias", {h}, 0.1f, 0.0f);
    linear(p + "intermediate.dense", im, h);
    linear(p + "output.dense", h, im);
    add(p + "output.LayerNorm.weight", {h}, 0.2f, 1.0f);
    add(p + "output.LayerNorm.bias", {h}, 0.1f, 0.0f);
  }
  // As HF exports it: the position ids buffer, I64, which the encoder does not read.
  Tensor pos{"embeddings.position_ids", {1, s.max_pos}, {}, {}};
  for (int i = 0; i < s.max_pos; ++i) pos.i64.push_back(i);
  ts.push_back(std::move(pos));
  return ts;
}

// A model folder: config.json (edited by `edit_config`), model.safetensors (tensors edited by
// `edit_tensors`) and a mean-pooling 1_Pooling/config.json.
struct SynthModel {
  TempDir dir;
  Spec spec;
  std::vector<Tensor> tensors;
  explicit SynthModel(Spec s = {}, const std::function<void(json&)>& edit_config = {},
                      const std::function<void(std::vector<Tensor>&)>& edit_tensors = {})
      : spec(s), tensors(synth_tensors(s)) {
    json cfg = config_json(s);
    if (edit_config) edit_config(cfg);
    std::ofstream(dir.path / "config.json") << cfg.dump(2);
    if (edit_tensors) edit_tensors(tensors);
    write_safetensors(dir.path / "model.safetensors", tensors);
    fs::create_directories(dir.path / "1_Pooling");
    std::ofstream(dir.path / "1_Pooling" / "config.json") << json{
        {"word_embedding_dimension", s.hidden},
        {"pooling_mode_cls_token", false},
        {"pooling_mode_mean_tokens", true},
        {"pooling_mode_max_tokens", false}}.dump();
  }
  const Tensor& find(const std::string& name) const {
    for (const Tensor& t : tensors) {
      if (t.name == name) return t;
    }
    throw std::runtime_error("no tensor " + name);
  }
};

// ---- A float64 reference of the forward pass (the formula in bert.h, written plainly) ----

using Mat = std::vector<std::vector<double>>;  // [tokens][features]

Mat ref_linear(const SynthModel& m, const std::string& p, const Mat& x) {
  const Tensor& w = m.find(p + ".weight");
  const Tensor& b = m.find(p + ".bias");
  const size_t out = size_t(w.shape[0]), in = size_t(w.shape[1]);
  Mat y(x.size(), std::vector<double>(out));
  for (size_t t = 0; t < x.size(); ++t) {
    for (size_t o = 0; o < out; ++o) {
      double acc = b.values[o];
      for (size_t i = 0; i < in; ++i) acc += double(w.values[o * in + i]) * x[t][i];
      y[t][o] = acc;
    }
  }
  return y;
}

void ref_norm(const SynthModel& m, const std::string& p, Mat& x) {
  const Tensor& g = m.find(p + ".weight");
  const Tensor& b = m.find(p + ".bias");
  for (auto& row : x) {
    double mean = 0, var = 0;
    for (const double v : row) mean += v;
    mean /= double(row.size());
    for (const double v : row) var += (v - mean) * (v - mean);
    var /= double(row.size());
    for (size_t c = 0; c < row.size(); ++c) {
      row[c] = (row[c] - mean) / std::sqrt(var + 1e-12) * g.values[c] + b.values[c];
    }
  }
}

std::vector<double> ref_embed(const SynthModel& m, const std::vector<int32_t>& ids) {
  const size_t n = ids.size(), h = size_t(m.spec.hidden), hd = h / size_t(m.spec.heads);
  const auto& word = m.find("embeddings.word_embeddings.weight").values;
  const auto& pos = m.find("embeddings.position_embeddings.weight").values;
  const auto& type = m.find("embeddings.token_type_embeddings.weight").values;
  Mat x(n, std::vector<double>(h));
  for (size_t t = 0; t < n; ++t) {
    for (size_t c = 0; c < h; ++c) {
      x[t][c] = double(word[size_t(ids[t]) * h + c]) + pos[t * h + c] + type[c];
    }
  }
  ref_norm(m, "embeddings.LayerNorm", x);
  for (int l = 0; l < m.spec.layers; ++l) {
    const std::string p = "encoder.layer." + std::to_string(l) + ".";
    const Mat q = ref_linear(m, p + "attention.self.query", x);
    const Mat k = ref_linear(m, p + "attention.self.key", x);
    const Mat v = ref_linear(m, p + "attention.self.value", x);
    Mat ctx(n, std::vector<double>(h, 0.0));
    for (size_t head = 0; head < size_t(m.spec.heads); ++head) {
      for (size_t i = 0; i < n; ++i) {
        std::vector<double> s(n);
        double mx = -1e300, sum = 0;
        for (size_t j = 0; j < n; ++j) {
          for (size_t c = 0; c < hd; ++c) s[j] += q[i][head * hd + c] * k[j][head * hd + c];
          s[j] /= std::sqrt(double(hd));
          mx = std::max(mx, s[j]);
        }
        for (double& e : s) sum += (e = std::exp(e - mx));
        for (size_t j = 0; j < n; ++j) {
          for (size_t c = 0; c < hd; ++c) ctx[i][head * hd + c] += s[j] / sum * v[j][head * hd + c];
        }
      }
    }
    const Mat a = ref_linear(m, p + "attention.output.dense", ctx);
    for (size_t t = 0; t < n; ++t) {
      for (size_t c = 0; c < h; ++c) x[t][c] += a[t][c];
    }
    ref_norm(m, p + "attention.output.LayerNorm", x);
    Mat f = ref_linear(m, p + "intermediate.dense", x);
    for (auto& row : f) {
      for (double& u : row) u = 0.5 * u * (1.0 + std::erf(u / std::sqrt(2.0)));
    }
    const Mat o = ref_linear(m, p + "output.dense", f);
    for (size_t t = 0; t < n; ++t) {
      for (size_t c = 0; c < h; ++c) x[t][c] += o[t][c];
    }
    ref_norm(m, p + "output.LayerNorm", x);
  }
  std::vector<double> e(h, 0.0);
  for (const auto& row : x) {
    for (size_t c = 0; c < h; ++c) e[c] += row[c] / double(n);
  }
  double norm = 0;
  for (const double v : e) norm += v * v;
  for (double& v : e) v /= std::sqrt(norm);
  return e;
}

// ---- Helpers ----

template <class A, class B>
double cosine(const A* a, const B* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) {
    ab += double(a[i]) * double(b[i]);
    aa += double(a[i]) * double(a[i]);
    bb += double(b[i]) * double(b[i]);
  }
  return ab / std::sqrt(aa * bb);
}

double norm(const float* a, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; ++i) s += double(a[i]) * a[i];
  return std::sqrt(s);
}

// The message of the E `f` throws ("" and a failed check when it throws nothing or another type).
template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("threw another type: " << e.what());
    return {};
  }
  FAIL_CHECK("did not throw");
  return {};
}

// Inputs of varied lengths (1 to max_len tokens) from a fixed seed.
std::vector<std::vector<int32_t>> random_inputs(int count, int max_len, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < count; ++i) {
    std::vector<int32_t> ids(size_t(1 + int(rng() % uint32_t(max_len))));
    for (auto& id : ids) id = int32_t(rng() % uint32_t(vocab));
    out.push_back(std::move(ids));
  }
  out.push_back(std::vector<int32_t>(size_t(max_len), 3));  // the longest allowed
  out.push_back({5});                                       // a single token
  return out;
}

// Row i of `all` equals `one` (a batch of one) byte for byte.
bool same_bytes(const std::vector<float>& all, size_t i, const std::vector<float>& one,
                size_t dim) {
  return one.size() == dim && std::memcmp(all.data() + i * dim, one.data(), dim * 4) == 0;
}

// Each input alone, all in one batch, the batch reversed, and another thread count: the same
// bytes for every input.
void check_batch_invariance(const std::shared_ptr<BertEncoder>& enc,
                            const std::shared_ptr<BertEncoder>& other_threads,
                            const std::vector<std::vector<int32_t>>& inputs) {
  const size_t dim = size_t(enc->dim()), n = inputs.size();
  const std::vector<float> all = enc->embed(inputs);
  REQUIRE(all.size() == n * dim);
  std::vector<std::vector<int32_t>> reversed(inputs.rbegin(), inputs.rend());
  const std::vector<float> rev = enc->embed(reversed);
  const std::vector<float> threads = other_threads->embed(inputs);
  size_t alone_same = 0, rev_same = 0, threads_same = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<int32_t>* one = &inputs[i];
    alone_same += same_bytes(all, i, enc->embed(std::span(one, 1)), dim);
    rev_same += std::memcmp(all.data() + i * dim, rev.data() + (n - 1 - i) * dim, dim * 4) == 0;
    threads_same += std::memcmp(all.data() + i * dim, threads.data() + i * dim, dim * 4) == 0;
  }
  CHECK(alone_same == n);
  CHECK(rev_same == n);
  CHECK(threads_same == n);
}

}  // namespace

// ---- Synthetic model ----

TEST_CASE("encoder: the forward pass matches a float64 reference on a synthetic model",
          "[encoder]") {
  const SynthModel m;
  const auto enc = BertEncoder::load(m.dir.path, {.threads = 2});
  CHECK(enc->dim() == 64);
  CHECK(enc->config().layers == 2);
  CHECK(enc->config().max_positions == 40);
  const auto inputs = random_inputs(12, 40, 100, 11);
  const std::vector<float> e = enc->embed(inputs);
  double min_cos = 1.0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<double> ref = ref_embed(m, inputs[i]);
    min_cos = std::min(min_cos, cosine(e.data() + i * 64, ref.data(), 64));
    CHECK(norm(e.data() + i * 64, 64) == Approx(1.0).epsilon(1e-5));
  }
  WARN("synthetic model, F32: min cosine vs float64 reference 1 - " << 1.0 - min_cos);
  CHECK(min_cos >= 0.99999);

  // Q8_0 linear weights: close to the same reference, but not the same bits.
  const auto q8 = BertEncoder::load(m.dir.path, {.threads = 2, .q8_0 = true});
  const std::vector<float> eq = q8->embed(inputs);
  double q8_min = 1.0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    q8_min = std::min(q8_min, cosine(eq.data() + i * 64, ref_embed(m, inputs[i]).data(), 64));
  }
  WARN("synthetic model, Q8_0: min cosine vs float64 reference " << q8_min);
  CHECK(q8_min >= 0.999);
  CHECK(eq != e);
}

TEST_CASE("encoder: an input's embedding does not depend on the batch, its order or the threads",
          "[encoder]") {
  const SynthModel m;
  // 90 inputs of 1..40 tokens: several matmul token groups and tiles, every kernel column count,
  // and more tokens than embed() runs in one pass (1024), so the batch splits where the single
  // calls and the reversed batch do not.
  const auto inputs = random_inputs(88, 40, 100, 5);
  size_t tokens = 0;
  for (const auto& in : inputs) tokens += in.size();
  REQUIRE(tokens > 1024);
  for (const bool q8 : {false, true}) {
    INFO("q8_0 = " << q8);
    check_batch_invariance(BertEncoder::load(m.dir.path, {.threads = 2, .q8_0 = q8}),
                           BertEncoder::load(m.dir.path, {.threads = 1, .q8_0 = q8}), inputs);
  }
}

TEST_CASE("encoder: embed from several threads at once gives every caller its own result",
          "[encoder]") {
  const SynthModel m;
  const auto enc = BertEncoder::load(m.dir.path, {.threads = 2});
  std::vector<std::vector<std::vector<int32_t>>> batches;
  std::vector<std::vector<float>> expected, got(4);
  for (uint32_t k = 0; k < 4; ++k) {
    batches.push_back(random_inputs(6, 40, 100, 100 + k));
    expected.push_back(enc->embed(batches.back()));
  }
  std::vector<std::thread> threads;
  for (size_t k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 3; ++rep) got[k] = enc->embed(batches[k]);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < 4; ++k) CHECK(got[k] == expected[k]);
}

TEST_CASE("encoder: bad token ids are refused naming the input and the position", "[encoder]") {
  const SynthModel m;
  const auto enc = BertEncoder::load(m.dir.path, {.threads = 1});
  const auto bad = [&](std::vector<std::vector<int32_t>> batch) {
    return error_of<EncoderError>([&] { enc->embed(batch); });
  };
  const std::string oov = bad({{1, 2, 3}, {1, 100, 2}});
  CHECK_THAT(oov,
             Contains("input 1") && Contains("token id 100 at position 1") && Contains("[0, 100)"));
  CHECK_THAT(bad({{-1}}), Contains("input 0") && Contains("token id -1 at position 0"));
  CHECK_THAT(bad({{1}, {2}, {}}), Contains("input 2 has 0 token ids") && Contains("1 to 40"));
  CHECK_THAT(bad({std::vector<int32_t>(41, 1)}),
             Contains("input 0 has 41 token ids") && Contains("max_position_embeddings"));
  CHECK(enc->embed(std::vector<std::vector<int32_t>>{}).empty());
}

TEST_CASE("encoder: config.json values out of range are refused naming the file and the field",
          "[encoder]") {
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    std::vector<std::string> message;
  };
  const std::vector<Case> cases = {
      {"hidden_size missing",
       [](json& c) { c.erase("hidden_size"); },
       {"config.json", "'hidden_size' is missing"}},
      {"hidden_size negative",
       [](json& c) { c["hidden_size"] = -64; },
       {"'hidden_size' = -64 is out of range [1, 16384]"}},
      {"layers a string",
       [](json& c) { c["num_hidden_layers"] = "six"; },
       {"'num_hidden_layers' = \"six\" is not an integer"}},
      {"heads not dividing hidden",
       [](json& c) { c["num_attention_heads"] = 5; },
       {"hidden_size 64 is not a multiple of num_attention_heads 5"}},
      {"vocab zero", [](json& c) { c["vocab_size"] = 0; }, {"'vocab_size' = 0 is out of range"}},
      {"eps zero",
       [](json& c) { c["layer_norm_eps"] = 0; },
       {"'layer_norm_eps' = 0 is not a number in (0, 1)"}},
      {"gelu_new",
       [](json& c) { c["hidden_act"] = "gelu_new"; },
       {"'hidden_act' = \"gelu_new\" is not supported", "\"gelu\""}},
      {"relative positions",
       [](json& c) { c["position_embedding_type"] = "relative_key"; },
       {"'position_embedding_type'"}},
      {"not BertModel",
       [](json& c) { c["architectures"] = {"RobertaModel"}; },
       {"'architectures' = [\"RobertaModel\"] does not name \"BertModel\""}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const SynthModel m({}, c.edit);
    const std::string msg = error_of<EncoderError>([&] { BertEncoder::load(m.dir.path); });
    for (const std::string& part : c.message) CHECK_THAT(msg, Contains(part));
  }
  // Not JSON at all.
  const SynthModel m;
  std::ofstream(m.dir.path / "config.json") << "{\"hidden_size\": 64,";
  CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path); }),
             Contains("config.json: not valid JSON"));
}

TEST_CASE("encoder: missing files and bad options are refused naming the path", "[encoder]") {
  const SynthModel m;
  CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path / "nope"); }),
             Contains("nope: not a directory"));
  CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path, {.threads = -1}); }),
             Contains("threads = -1"));
  fs::remove(m.dir.path / "model.safetensors");
  CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path); }),
             Contains("model.safetensors: missing"));
  fs::remove(m.dir.path / "config.json");
  CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path); }),
             Contains("config.json: cannot open"));
}

TEST_CASE("encoder: an absent or misshapen tensor is refused naming it", "[encoder]") {
  {
    // intermediate.dense of layer 1 written [128, 63] (+ the elements it lost) instead of
    // [128, 64]: a valid safetensors file whose tensor has another shape.
    const SynthModel m({}, {}, [](std::vector<Tensor>& ts) {
      for (Tensor& t : ts) {
        if (t.name == "encoder.layer.1.intermediate.dense.weight") {
          t.shape = {128, 63};
          t.values.resize(128 * 63);
        }
      }
    });
    const std::string msg = error_of<SafetensorsError>([&] { BertEncoder::load(m.dir.path); });
    CHECK_THAT(msg, Contains("encoder.layer.1.intermediate.dense.weight") && Contains("63") &&
                        Contains("64"));
  }
  {
    const SynthModel m({}, {}, [](std::vector<Tensor>& ts) {
      std::erase_if(
          ts, [](const Tensor& t) { return t.name == "encoder.layer.0.output.LayerNorm.bias"; });
    });
    CHECK_THAT(error_of<SafetensorsError>([&] { BertEncoder::load(m.dir.path); }),
               Contains("encoder.layer.0.output.LayerNorm.bias"));
  }
  {
    // A truncated file: the reader's error, naming the file.
    const SynthModel m;
    const fs::path st = m.dir.path / "model.safetensors";
    fs::resize_file(st, fs::file_size(st) / 2);
    CHECK_THAT(error_of<SafetensorsError>([&] { BertEncoder::load(m.dir.path); }),
               Contains("model.safetensors"));
  }
  {
    // A NaN in a weight: refused at load (F32 and Q8_0), naming the tensor and the element.
    const SynthModel m({}, {}, [](std::vector<Tensor>& ts) {
      for (Tensor& t : ts) {
        if (t.name == "encoder.layer.1.attention.self.key.weight") t.values[70] = NAN;
      }
    });
    for (const bool q8 : {false, true}) {
      CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path, {.q8_0 = q8}); }),
                 Contains("'encoder.layer.1.attention.self.key.weight' element 70 is NaN"));
    }
  }
  {
    // A config that asks for more layers than the file has.
    const SynthModel m({}, [](json& c) { c["num_hidden_layers"] = 3; });
    CHECK_THAT(error_of<SafetensorsError>([&] { BertEncoder::load(m.dir.path); }),
               Contains("encoder.layer.2."));
  }
  {
    // q8_0 needs widths that are multiples of its 32-element block.
    Spec s;
    s.hidden = 48;
    s.heads = 4;
    s.inter = 96;
    const SynthModel m(s);
    CHECK_NOTHROW(BertEncoder::load(m.dir.path));
    CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path, {.q8_0 = true}); }),
               Contains("multiples of 32") && Contains("48"));
  }
}

TEST_CASE("encoder: a pooling other than mean is refused", "[encoder]") {
  const SynthModel m;
  std::ofstream(m.dir.path / "1_Pooling" / "config.json")
      << R"({"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false})";
  CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path); }),
             Contains("1_Pooling/config.json: pooling_mode_mean_tokens is not true"));
  std::ofstream(m.dir.path / "1_Pooling" / "config.json")
      << R"({"pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true})";
  CHECK_THAT(error_of<EncoderError>([&] { BertEncoder::load(m.dir.path); }),
             Contains("pooling_mode_max_tokens is true"));
  // A folder without a pooling module is taken as mean pooling.
  fs::remove_all(m.dir.path / "1_Pooling");
  CHECK_NOTHROW(BertEncoder::load(m.dir.path));
}

TEST_CASE("encoder: the fingerprint follows the weights and the options, not the threads",
          "[encoder]") {
  const SynthModel a;
  const std::string fa = BertEncoder::load(a.dir.path, {.threads = 1})->fingerprint();
  CHECK(fa.size() == 16);
  CHECK(fa.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(BertEncoder::load(a.dir.path, {.threads = 2})->fingerprint() == fa);
  CHECK(BertEncoder::load(a.dir.path, {.q8_0 = true})->fingerprint() != fa);
  // Another model (one more layer): another header, another fingerprint.
  Spec s;
  s.layers = 3;
  const SynthModel b(s);
  CHECK(BertEncoder::load(b.dir.path)->fingerprint() != fa);
  // The same weights written again in another folder: the same fingerprint.
  const SynthModel c;
  CHECK(BertEncoder::load(c.dir.path)->fingerprint() == fa);
}

// ---- all-MiniLM-L6-v2 ----

namespace {

struct GoldenCase {
  std::string name;
  std::vector<int32_t> ids;
  std::vector<float> embedding;
};

std::vector<GoldenCase> read_golden() {
  std::ifstream in(fs::path(VSYNTH_SOURCE_DIR) / "tests/data/golden/encoder_minilm.json");
  REQUIRE(in);
  const json doc = json::parse(in);
  std::vector<GoldenCase> out;
  for (const json& c : doc.at("cases")) {
    out.push_back({c.at("name").get<std::string>(), c.at("ids").get<std::vector<int32_t>>(),
                   c.at("embedding").get<std::vector<float>>()});
  }
  return out;
}

std::vector<std::vector<int32_t>> ids_of(const std::vector<GoldenCase>& cases) {
  std::vector<std::vector<int32_t>> ids;
  for (const auto& c : cases) ids.push_back(c.ids);
  return ids;
}

}  // namespace

TEST_CASE("encoder model: all-MiniLM-L6-v2 matches the float64 golden (cosine >= 0.999 each)",
          "[encoder][model][slow]") {
  if (!vsynth::test::have_default_encoder()) return;
  const auto golden = read_golden();
  REQUIRE(golden.size() >= 100);
  const auto enc = BertEncoder::load(vsynth::test::default_encoder(), {.threads = 2});
  REQUIRE(enc->dim() == 384);
  const std::vector<float> e = enc->embed(ids_of(golden));
  double min_cos = 1.0, sum = 0.0;
  std::string worst;
  for (size_t i = 0; i < golden.size(); ++i) {
    INFO(golden[i].name);
    REQUIRE(golden[i].embedding.size() == 384);
    const double c = cosine(e.data() + i * 384, golden[i].embedding.data(), 384);
    CHECK(c >= 0.999);
    CHECK(norm(e.data() + i * 384, 384) == Approx(1.0).epsilon(1e-5));
    sum += c;
    if (c < min_cos) {
      min_cos = c;
      worst = golden[i].name;
    }
  }
  WARN("all-MiniLM-L6-v2 F32 vs float64 golden over "
       << golden.size() << " snippets: min cosine 1 - " << 1.0 - min_cos << " (" << worst
       << "), mean 1 - " << 1.0 - sum / double(golden.size()));
}

TEST_CASE("encoder model: q8_0 weights stay within cosine 0.99 of F32", "[encoder][model][slow]") {
  if (!vsynth::test::have_default_encoder()) return;
  const auto golden = read_golden();
  const auto ids = ids_of(golden);
  const auto f32 = BertEncoder::load(vsynth::test::default_encoder(), {.threads = 2});
  const auto q8 = BertEncoder::load(vsynth::test::default_encoder(), {.threads = 2, .q8_0 = true});
  const std::vector<float> a = f32->embed(ids), b = q8->embed(ids);
  double min_f32 = 1.0, sum_f32 = 0.0, min_gold = 1.0;
  for (size_t i = 0; i < golden.size(); ++i) {
    INFO(golden[i].name);
    const double c = cosine(a.data() + i * 384, b.data() + i * 384, 384);
    CHECK(c >= 0.99);
    min_f32 = std::min(min_f32, c);
    sum_f32 += c;
    min_gold = std::min(min_gold, cosine(b.data() + i * 384, golden[i].embedding.data(), 384));
  }
  WARN("all-MiniLM-L6-v2 Q8_0 vs F32 over "
       << golden.size() << " snippets: min cosine " << std::setprecision(6) << min_f32 << ", mean "
       << sum_f32 / double(golden.size()) << "; Q8_0 vs float64 golden: min " << min_gold);
}

TEST_CASE("encoder model: batch invariance on real lengths (F32 and Q8_0, bit for bit)",
          "[encoder][model][slow]") {
  if (!vsynth::test::have_default_encoder()) return;
  // Every fourth golden case and the 512-token ones (3 to 512 tokens), to keep the one-input
  // calls few.
  const auto golden = read_golden();
  std::vector<std::vector<int32_t>> ids;
  for (size_t i = 0; i < golden.size(); ++i) {
    if (i % 4 == 0 || golden[i].ids.size() > 256) ids.push_back(golden[i].ids);
  }
  for (const bool q8 : {false, true}) {
    INFO("q8_0 = " << q8);
    const auto dir = vsynth::test::default_encoder();
    check_batch_invariance(BertEncoder::load(dir, {.threads = 2, .q8_0 = q8}),
                           BertEncoder::load(dir, {.threads = 1, .q8_0 = q8}), ids);
  }
}
