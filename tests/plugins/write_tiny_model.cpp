// Writes the tiny random llama GGUF of tests/generation/gen_test_util.h to argv[1], for
// install_test.sh: generate.llm makes real candidates with it in milliseconds.
#include <cstdio>

#include "tests/generation/gen_test_util.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: write_tiny_model OUT.gguf\n");
    return 2;
  }
  const auto vocab = vsynth::gentest::spm_vocab(
      {"def", "\xE2\x96\x81", "(", ")", ":", "\n", "a", "b", "+", "x", "y", "=", "1", "2"});
  vsynth::gentest::write_tiny_model(argv[1], vocab, 1, 2048);
  return 0;
}
