// Golden tests: our tokenizers against ids llama.cpp produced (scripts/golden/regen.sh writes
// tests/data/golden/tokenizer_*.json).
//   tokenizer_gemma3.json     the default model's vocabulary (tests/test_skip.h: needs the model)
//   tokenizer_spm_synth.json  a small synthetic SentencePiece vocabulary ("llama" model)
//   tokenizer_bpe_synth.json  a small synthetic byte-level BPE vocabulary (qwen2 pre-tokenizer)
//   tokenizer_llama3_synth.json  the same BPE vocabulary with the llama3 pre-tokenizer
// The synthetic files carry their GGUF metadata; the test writes the same GGUF in memory and
// loads it through load_vocab, so the adapter is covered too.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/gguf/reader.h"
#include "kernels/gguf/writer.h"
#include "kernels/tokenizer/gguf_vocab.h"
#include "kernels/tokenizer/tokenizer.h"
#include "tests/test_skip.h"

using namespace vsynth::kernels;
using nlohmann::json;

namespace {

const std::filesystem::path kGolden =
    std::filesystem::path(VSYNTH_SOURCE_DIR) / "tests/data/golden";

json read_json(const std::filesystem::path& p) {
  std::ifstream in(p);
  REQUIRE(in.good());
  return json::parse(in);
}

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A case's text: "file" (a corpus file), "text" (valid UTF-8) or "text_hex" (any bytes).
std::string case_text(const json& c) {
  if (c.contains("file")) return read_file(kGolden / c["file"].get<std::string>());
  return c.contains("text_hex") ? from_hex(c["text_hex"].get<std::string>())
                                : c["text"].get<std::string>();
}

// Runs every case; returns the number that match exactly and reports the first mismatches.
struct Result {
  size_t cases = 0;
  size_t encode_exact = 0;
  size_t decode_exact = 0;
  size_t decode_checked = 0;
};

Result run_cases(const Tokenizer& tok, const json& cases) {
  Result r;
  size_t reported = 0;
  for (const auto& c : cases) {
    ++r.cases;
    const std::string text = case_text(c);
    const auto want = c["ids"].get<std::vector<TokenId>>();
    const bool add_bos = c.value("add_bos", true);
    const auto got = tok.encode(text, {add_bos, c.value("parse_special", true)});
    if (got == want) {
      ++r.encode_exact;
    } else if (reported++ < 5) {
      size_t at = 0;
      while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
      std::ostringstream msg;
      msg << "case " << c["name"].get<std::string>() << ": first difference at token " << at
          << " of " << want.size() << " (got " << (at < got.size() ? got[at] : -1) << ", want "
          << (at < want.size() ? want[at] : -1) << ")";
      UNSCOPED_INFO(msg.str());
    }
    // llama_detokenize(ids, remove_special=false, unparse_special=true) of the same ids: stored
    // when it is not simply the BOS text followed by the input.
    {
      ++r.decode_checked;
      std::string expect;
      if (c.contains("detok")) {
        expect = c["detok"].get<std::string>();
      } else if (c.contains("detok_hex")) {
        expect = from_hex(c["detok_hex"].get<std::string>());
      } else {
        if (add_bos && !want.empty() && want.front() == tok.bos())
          expect = tok.piece(tok.bos(), true);
        expect += text;
      }
      const std::string dec = tok.decode(want, {true, false, true});
      if (dec == expect) {
        ++r.decode_exact;
      } else if (reported++ < 5) {
        UNSCOPED_INFO("case " << c["name"].get<std::string>() << ": decode differs");
      }
    }
  }
  return r;
}

// The end-of-generation ids llama.cpp reports (llama_vocab_is_eog over the vocabulary).
void check_eog(const Tokenizer& tok, const json& eog) {
  std::vector<TokenId> ours;
  for (size_t i = 0; i < tok.size(); ++i) {
    if (tok.is_eog(static_cast<TokenId>(i))) ours.push_back(static_cast<TokenId>(i));
  }
  CHECK(ours == eog.get<std::vector<TokenId>>());
}

// Writes the GGUF metadata a synthetic golden file describes, exactly as the generator wrote it.
GgufImage synth_gguf(const json& meta) {
  GgufWriter w;
  for (const auto& [key, val] : meta.items()) {
    const std::string type = val["type"].get<std::string>();
    const json& v = val["value"];
    if (type == "string") {
      w.add(key, v.get<std::string>());
    } else if (type == "u32") {
      w.add(key, v.get<uint32_t>());
    } else if (type == "bool") {
      w.add(key, v.get<bool>());
    } else if (type == "f32") {
      w.add(key, v.get<float>());
    } else if (type == "[string]") {
      w.add_array(key, v.get<std::vector<std::string>>());
    } else if (type == "[f32]") {
      w.add_array(key, v.get<std::vector<float>>());
    } else if (type == "[i32]") {
      w.add_array(key, v.get<std::vector<int32_t>>());
    } else {
      FAIL("unknown metadata type " << type << " for " << key);
    }
  }
  return w.build();
}

void check_synthetic(const std::string& file) {
  const json g = read_json(kGolden / file);
  const GgufImage img = synth_gguf(g["gguf_metadata"]);
  const GgufFile f = GgufFile::open_from_memory(img.bytes, file);
  const Tokenizer tok(load_vocab(f));
  CHECK(tok.size() == g["n_vocab"].get<size_t>());
  check_eog(tok, g["eog_ids"]);
  const Result r = run_cases(tok, g["cases"]);
  WARN(file << ": encode exact " << r.encode_exact << "/" << r.cases << ", decode exact "
            << r.decode_exact << "/" << r.decode_checked);
  CHECK(r.encode_exact == r.cases);
  CHECK(r.decode_exact == r.decode_checked);
}

}  // namespace

TEST_CASE("golden: gemma3 tokenizer matches llama.cpp", "[tokenizer][golden][model]") {
  const json g = read_json(kGolden / "tokenizer_gemma3.json");
  if (!vsynth::test::have_default_model()) return;
  const std::filesystem::path model = vsynth::test::default_model();
  // The golden ids belong to the file the golden data name (a copy elsewhere keeps its name).
  REQUIRE(model.filename() == std::filesystem::path(g["model"].get<std::string>()).filename());
  const GgufFile f = GgufFile::open(model);
  const Tokenizer tok(load_vocab(f));
  CHECK(tok.size() == g["n_vocab"].get<size_t>());
  check_eog(tok, g["eog_ids"]);
  const Result r = run_cases(tok, g["cases"]);
  WARN("gemma3: encode exact " << r.encode_exact << "/" << r.cases << ", decode exact "
                               << r.decode_exact << "/" << r.decode_checked);
  CHECK(r.encode_exact == r.cases);
  CHECK(r.decode_exact == r.decode_checked);
}

TEST_CASE("golden: synthetic SPM vocabulary matches llama.cpp", "[tokenizer][golden]") {
  check_synthetic("tokenizer_spm_synth.json");
}

TEST_CASE("golden: synthetic qwen2 BPE vocabulary matches llama.cpp", "[tokenizer][golden]") {
  check_synthetic("tokenizer_bpe_synth.json");
}

TEST_CASE("golden: synthetic llama3 BPE vocabulary matches llama.cpp", "[tokenizer][golden]") {
  check_synthetic("tokenizer_llama3_synth.json");
}
