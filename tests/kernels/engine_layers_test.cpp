// The engine's folders depend one way: kernels/kv/ may include kernels/model/ (the config, the
// vector math), kernels/model/ never includes kernels/kv/; kernels/engine.cpp joins both.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

TEST_CASE("engine layers: kernels/model includes nothing from kernels/kv", "[engine]") {
  const fs::path model = fs::path(VSYNTH_SOURCE_DIR) / "kernels" / "model";
  REQUIRE(fs::is_directory(model));
  int files = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(model)) {
    if (!e.is_regular_file()) continue;
    ++files;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      INFO(e.path().string() << ":" << n << ": " << line);
      CHECK(line.find("#include \"kernels/kv/") == std::string::npos);
    }
  }
  CHECK(files > 0);
}
