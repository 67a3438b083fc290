// A benchmark's JSON file: written with its folder made first, so that a long run never ends
// with its figures lost to a missing directory.
#pragma once

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>

namespace vsynth::bench {

// Writes `out` (indented) to `path`, creating the folders above it; prints "wrote PATH", or the
// error naming the path and why. True on success.
inline bool write_json(const std::string& path, const nlohmann::json& out) {
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "error: cannot write %s%s%s\n", path.c_str(), ec ? ": " : "",
                 ec ? ec.message().c_str() : "");
    return false;
  }
  const std::string text = out.dump(2) + "\n";
  const bool ok = std::fputs(text.c_str(), f) >= 0;
  if (std::fclose(f) != 0 || !ok) {
    std::fprintf(stderr, "error: writing %s failed\n", path.c_str());
    return false;
  }
  std::printf("wrote %s\n", path.c_str());
  return true;
}

}  // namespace vsynth::bench
