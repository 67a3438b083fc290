// `vsynth generate` as a user runs it: deterministic text for a seed with the real model
// (scripts/setup-model.sh fetches it; tests/test_skip.h), clear errors for a missing model or bad
// options.
#include <sys/wait.h>
#include <catch2/catch.hpp>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/test_skip.h"

namespace fs = std::filesystem;

namespace {

const std::string kBinary = std::string(VSYNTH_BINARY_DIR) + "/tools/vsynth/vsynth";

struct Result {
  int code = -1;
  std::string out;  // stdout, or stdout + stderr when asked
};

Result sh(const std::string& args, bool with_stderr = false) {
  const std::string cmd = kBinary + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace

TEST_CASE("vsynth generate writes the same non-empty text for the same seed",
          "[generation][cli][model]") {
  if (!vsynth::test::have_default_model()) return;
  const fs::path model = vsynth::test::default_model();
  const std::string args =
      "generate --prompt 'def add(a, b):' -n 16 --seed 1 --model " + model.string();
  const Result a = sh(args);
  const Result b = sh(args);
  REQUIRE(a.code == 0);
  REQUIRE(b.code == 0);
  CHECK(a.out == b.out);
  CHECK(a.out.find_first_not_of(" \n\t") != std::string::npos);

  const Result raw = sh(args + " --raw --temperature 0", true);
  CHECK(raw.code == 0);
  CHECK(raw.out.find("tok/s") != std::string::npos);  // the statistics line (stderr)
  CHECK(raw.out.find("prompt 8 tokens") != std::string::npos);

  // --draft ngram: the same greedy text, and the statistics line counts the drafts.
  const std::string greedy = "generate --raw --temperature 0 -n 24 --model " + model.string() +
                             " --prompt 'x = [1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3'";
  const Result plain = sh(greedy);
  const Result spec = sh(greedy + " --draft ngram --max-draft 6");
  REQUIRE(plain.code == 0);
  REQUIRE(spec.code == 0);
  CHECK(spec.out == plain.out);
  const Result stats = sh(greedy + " --draft ngram", true);
  CHECK(stats.out.find("draft ngram: ") != std::string::npos);
  CHECK(stats.out.find("verify steps") != std::string::npos);
  // --draft self and --draft model (the model as its own draft): the same greedy text.
  const Result self = sh(greedy + " --draft self --self-layers 4 --self-vocab 16384", true);
  REQUIRE(self.code == 0);
  CHECK(self.out.find("draft self: ") != std::string::npos);
  CHECK(sh(greedy + " --draft self").out == plain.out);
  const Result as_model = sh(greedy + " --draft model --draft-model " + model.string());
  REQUIRE(as_model.code == 0);
  CHECK(as_model.out == plain.out);
}

TEST_CASE("vsynth generate: a missing model or bad option is a clear error", "[generation][cli]") {
  const Result missing = sh("generate --prompt hi --model /nonexistent/m.gguf", true);
  CHECK(missing.code == 3);
  CHECK(missing.out.find("/nonexistent/m.gguf") != std::string::npos);
  const Result bad = sh("generate --prompt hi --top-p 0", true);
  CHECK(bad.code == 2);
  CHECK(bad.out.find("top_p") != std::string::npos);
  const Result no_prompt = sh("generate -n 4", true);
  CHECK(no_prompt.code == 2);
  const Result bad_draft = sh("generate --prompt hi --draft fast", true);
  CHECK(bad_draft.code == 2);
  CHECK(bad_draft.out.find("--draft") != std::string::npos);
  const Result no_draft_model = sh("generate --prompt hi --draft model", true);
  CHECK(no_draft_model.code == 2);
  CHECK(no_draft_model.out.find("--draft-model") != std::string::npos);
  const Result stray = sh("generate --prompt hi --draft ngram --draft-model x.gguf", true);
  CHECK(stray.code == 2);
  CHECK(stray.out.find("only with --draft model") != std::string::npos);
}
