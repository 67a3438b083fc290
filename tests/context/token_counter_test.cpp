// Token counting: the estimate is additive over lines and close to the default model's
// tokenizer on code; a GGUF path that holds no tokenizer is a clear error.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "stages/context/error.h"
#include "stages/context/token_counter.h"
#include "tests/test_skip.h"

using namespace vsynth::stages::context;

TEST_CASE("token estimate: additive over lines, grows with text", "[context][tokens]") {
  EstimateCounter e;
  const std::string a = "def area(self, radius: float) -> float:\n";
  const std::string b = "    return math.pi * radius ** 2\n";
  CHECK(e.count(a + b) == e.count(a) + e.count(b));
  CHECK(e.count("") == 0);
  CHECK(e.count("x") >= 1);
  CHECK(e.count("a_very_long_identifier_name_here") > e.count("name"));
  CHECK(e.describe() == "estimate");
}

TEST_CASE("token estimate: within 20% of the default model's tokenizer on code",
          "[context][tokens]") {
  if (!vsynth::test::have_default_model()) return;
  const std::filesystem::path model = vsynth::test::default_model();
  const auto real = TokenizerCounter::from_gguf(model.string());
  CHECK(real->describe() == "gguf:" + model.string());
  CHECK(TokenizerCounter::from_gguf(model.string()) == real);  // loaded once
  EstimateCounter e;
  const std::filesystem::path dir = std::filesystem::path(VSYNTH_SOURCE_DIR) / "tests/ast/data";
  for (const char* name : {"sample.py", "sample.c", "sample.cpp", "sample.go", "sample.java",
                           "sample.js", "sample.ts", "sample.rs"}) {
    std::ifstream in(dir / name);
    std::stringstream buf;
    buf << in.rdbuf();
    const double r = real->count(buf.str()), est = e.count(buf.str());
    INFO(name << ": real " << r << ", estimate " << est);
    CHECK(est / r > 0.8);
    CHECK(est / r < 1.2);
  }
}

TEST_CASE("token counter: a file without a tokenizer is a clear error", "[context][tokens]") {
  CHECK_THROWS_WITH(TokenizerCounter::from_gguf("/nonexistent/model.gguf"),
                    Catch::Contains("cannot load a tokenizer from GGUF file "
                                    "`/nonexistent/model.gguf`") &&
                        Catch::Contains("tokenizer: estimate"));
}
