// The main() of every test binary: Catch2's session with -w NoAssertions always on, plus the
// skip bookkeeping of tests/test_skip.h (a run whose every test case skipped exits
// VSYNTH_TEST_SKIP_CODE).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <iostream>
#include <set>
#include <utility>
#include <vector>

#include "tests/test_skip.h"

namespace {

struct Skips {
  std::vector<std::pair<std::string, std::string>> list;  // (test case, why), in run order
  std::set<std::string> names;
  std::size_t cases_ended = 0;  // test cases run, skipped or not
};

Skips& skips() {
  static Skips s;
  return s;
}

// Counts the test cases that ran, so that main() tells "all skipped" from "some skipped".
class CaseCounter : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseEnded(const Catch::TestCaseStats& stats) override {
    ++skips().cases_ended;
    TestEventListenerBase::testCaseEnded(stats);
  }
};

bool env_is(const char* name, const std::string& value) {
  const char* v = std::getenv(name);
  return v != nullptr && value == v;
}

}  // namespace

CATCH_REGISTER_LISTENER(CaseCounter)

namespace vsynth::test {

void skip(const std::string& why) {
  const std::string name = Catch::getResultCapture().getCurrentTestName();
  std::cout << "SKIPPED: " << name << ": " << why << std::endl;
  SUCCEED("skipped: " << why);
  if (skips().names.insert(name).second) skips().list.emplace_back(name, why);
}

std::filesystem::path default_model() {
  const char* env = std::getenv("VSYNTH_TEST_MODEL");
  if (env != nullptr && *env != '\0') return env;
  return std::filesystem::path(VSYNTH_SOURCE_DIR) / "models/gemma-3-270m-q4_k_m.gguf";
}

namespace {
// True when `path` exists; otherwise fails the test case naming it and how to get it, or skips
// it under VSYNTH_ALLOW_MISSING_MODEL=1.
bool have_model_file(const std::filesystem::path& path, const char* setup_script,
                     const char* env_name) {
  if (std::filesystem::exists(path)) return true;
  const std::string why = path.string() + " is absent (" + setup_script + " fetches it; " +
                          env_name + " names a copy stored elsewhere)";
  if (env_is("VSYNTH_ALLOW_MISSING_MODEL", "1")) {
    skip(why + "; VSYNTH_ALLOW_MISSING_MODEL=1 makes that a skip");
    return false;
  }
  FAIL(why << "; set VSYNTH_ALLOW_MISSING_MODEL=1 to skip the model-backed tests instead");
  return false;  // not reached: FAIL ends the test case
}
}  // namespace

bool have_default_model() {
  return have_model_file(default_model(), "scripts/setup-model.sh", "VSYNTH_TEST_MODEL");
}

std::filesystem::path default_encoder() {
  const char* env = std::getenv("VSYNTH_TEST_ENCODER");
  if (env != nullptr && *env != '\0') return env;
  return std::filesystem::path(VSYNTH_SOURCE_DIR) / "models/all-MiniLM-L6-v2";
}

bool have_default_encoder() {
  return have_model_file(default_encoder() / "model.safetensors", "scripts/setup-embedder.sh",
                         "VSYNTH_TEST_ENCODER");
}

}  // namespace vsynth::test

int main(int argc, char** argv) {
  Catch::Session session;
  if (const int bad = session.applyCommandLine(argc, argv); bad != 0) return bad;
  // A test case that passes without checking anything is a failure, however the binary is run
  // (Catch2 v2 takes one -w per command line, and ctest passes -w NoTests).
  Catch::ConfigData& config = session.configData();
  config.warnings =
      static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoAssertions);
  const int rc = session.run();
  const Skips& s = skips();
  if (!s.list.empty()) {
    std::cout << s.list.size() << " of " << s.cases_ended << " test case(s) skipped:\n";
    for (const auto& [name, why] : s.list) std::cout << "  " << name << ": " << why << "\n";
    std::cout.flush();
  }
  // Catch returns the number of failed assertions: 77 of them must not read as a skip.
  if (rc != 0) return rc == VSYNTH_TEST_SKIP_CODE ? rc + 1 : rc;
  if (!s.list.empty() && s.list.size() == s.cases_ended) return VSYNTH_TEST_SKIP_CODE;
  return 0;
}
