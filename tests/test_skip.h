// Skipping a test case so that ctest reports it as skipped, never as passed, and the default
// model the model-backed tests need (implemented in tests/catch_main.cpp, linked by every test).
//
// A test case skips when what it checks is absent from this machine: no CUDA device, a CPU
// without the kernel path under test, or the default model when VSYNTH_ALLOW_MISSING_MODEL=1.
// The process then exits with VSYNTH_TEST_SKIP_CODE (77, every test's SKIP_RETURN_CODE in
// tests/CMakeLists.txt) when every test case it ran skipped and none failed: that is each ctest
// test, which runs one TEST_CASE. A binary run by hand over several cases runs the others and
// lists the skipped ones last.
#pragma once

#include <filesystem>
#include <string>

namespace vsynth::test {

// Records that the running test case is skipped and why (printed now and in the run's summary)
// with one passing assertion, so that `-w NoAssertions` does not turn the early return into a
// failure. The caller returns right after: use VSYNTH_SKIP.
void skip(const std::string& why);

// The model the model-backed tests run (Gemma 3 270M Q4_K_M, whose llama.cpp golden data sit in
// tests/data/golden): $VSYNTH_TEST_MODEL when set and non-empty, else
// <source>/models/gemma-3-270m-q4_k_m.gguf, where scripts/setup-model.sh puts it.
std::filesystem::path default_model();

// True when default_model() exists. When it does not, the test case fails naming the path,
// unless VSYNTH_ALLOW_MISSING_MODEL=1 is set, which makes it a skip (and returns false):
//   if (!vsynth::test::have_default_model()) return;
bool have_default_model();

// The same for the default retrieval encoder, all-MiniLM-L6-v2 (config.json, model.safetensors,
// tokenizer.json): $VSYNTH_TEST_ENCODER when set and non-empty, else
// <source>/models/all-MiniLM-L6-v2, where scripts/setup-embedder.sh puts it.
// have_default_encoder() fails the test case when it is absent, unless
// VSYNTH_ALLOW_MISSING_MODEL=1 (then a skip).
std::filesystem::path default_encoder();
bool have_default_encoder();

}  // namespace vsynth::test

// Skips the running test case (see skip()) and returns from it.
#define VSYNTH_SKIP(why)       \
  do {                         \
    ::vsynth::test::skip(why); \
    return;                    \
  } while (false)
