// The callers that moved onto base/ (hash.h, mix.h) give the values they gave before: seeds,
// shard numbers, the vocabulary's hash, the sampler's random stream and context's token
// fingerprints. Each value was taken from the code before the move.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "kernels/sampler/rng.h"
#include "kernels/tokenizer/vocab_index.h"
#include "stages/ast/parsed_file.h"
#include "stages/context/normalize.h"
#include "stages/generation/generate_stage.h"
#include "stages/io/shard.h"
#include "stages/validation/spec_test.h"

namespace vs = vsynth::stages;

TEST_CASE("shard_of numbers a key as before", "[base][callers]") {
  CHECK(vs::io::shard_of("src/a.py", 7) == 2);
  CHECK(vs::io::shard_of("task/17", 16) == 2);
  CHECK(vs::io::shard_of("a", 3) == 1);
  CHECK(vs::io::shard_of("a", 1) == 0);
}

TEST_CASE("candidate_seed gives the seeds it gave", "[base][callers]") {
  CHECK(vs::generation::candidate_seed(42, "task/17", 2, 3) == 0x09ffb4378c85b155ULL);
}

TEST_CASE("spec_test_seed gives the seeds it gave", "[base][callers]") {
  const vsynth::graph::Task task{"task/17", {{"decode", {{"seed", 7}}}}};
  CHECK(vs::validation::spec_test_seed(task, 1) == 0xe20761f1c4f12142ULL);
}

TEST_CASE("the vocabulary index hashes bytes as before", "[base][callers]") {
  CHECK(vsynth::kernels::tok::hash_bytes("") == 0xe36f5519ee926a53ULL);
  CHECK(vsynth::kernels::tok::hash_bytes("foobar") == 0x05fa9d4d41792cccULL);
}

TEST_CASE("Rng streams start where they did", "[base][callers]") {
  vsynth::kernels::Rng r(0);
  CHECK(r.next() == 0x99ec5f36cb75f2b4ULL);
  CHECK(r.next() == 0xbf6e1f784956452aULL);
  CHECK(vsynth::kernels::Rng(12345).next() == 0xbe6a36374160d49bULL);
}

TEST_CASE("context's token fingerprints and shingles are as before", "[base][callers]") {
  const auto file = vs::ast::ParsedFile::from_path("a.py", "def f(x):\n    return g(x, 'a', 1)\n");
  const std::vector<uint64_t> tokens = vs::context::normalized_tokens(file, file.root());
  // def f ( x ) : return g ( x , S , N ): each token's FNV-1a from the short offset.
  const std::vector<uint64_t> want_tokens = {
      0x0cadb9512638cd72ULL, 0x44bd8dd473cd9e1fULL, 0x44bd53d473cd3b91ULL, 0x44bda3d473cdc381ULL,
      0x44bd52d473cd39deULL, 0x44bd61d473cd535bULL, 0x7488c53f48adf9a1ULL, 0x44bd8cd473cd9c6cULL,
      0x44bd53d473cd3b91ULL, 0x44bda3d473cdc381ULL, 0x44bd57d473cd425dULL, 0x44bd78d473cd7a70ULL,
      0x44bd57d473cd425dULL, 0x44bd75d473cd7557ULL, 0x44bd52d473cd39deULL};
  CHECK(tokens == want_tokens);
  const std::vector<uint64_t> want_shingles = {
      0x0193b1d903793f9aULL, 0x17514242403ea786ULL, 0x184674301c205622ULL, 0x515f59bc6dba1ea6ULL,
      0x535fb3de39186eafULL, 0xa97da59e14d217abULL, 0xaeea4047fbbc0dc3ULL, 0xbc5e095816cd2741ULL,
      0xcfdd0d1e2a565311ULL, 0xdc27d32a3ef4c213ULL, 0xe46c165673154e8fULL, 0xf89a46fca50b29c8ULL,
      0xf8a67afca5002361ULL};
  CHECK(vs::context::shingles(tokens, 3) == want_shingles);
}
