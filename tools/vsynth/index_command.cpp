#include "tools/vsynth/index_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <map>

#include "graph/contract.h"
#include "graph/params.h"
#include "stages/ast/language.h"
#include "stages/retrieval/index_resource.h"
#include "tools/vsynth/exit_codes.h"

namespace vsynth::cli {
namespace {

// The resource's parameters as a pipeline with only these keys set would give them: the
// contract's defaults, so the cache key (root + embedder fingerprint) is the one a run with
// the same settings computes.
graph::Params index_params(const IndexArgs& a) {
  std::map<std::string, graph::Value, std::less<>> values;
  for (const graph::ParamSpec& spec : stages::retrieval::index_contract().params) {
    if (spec.default_value) values.emplace(spec.name, *spec.default_value);
  }
  values["root"] = a.root;
  values["languages"] = a.languages;
  values["encoder"] = a.encoder;
  values["cache_dir"] = a.cache_dir;
  values["threads"] = int64_t{a.threads};
  values["q8_0"] = a.q8_0;
  return graph::Params(std::move(values));
}

// Usage errors found before anything is loaded: every one listed.
std::vector<std::string> check_args(const IndexArgs& a) {
  std::vector<std::string> errors;
  if (!std::filesystem::is_directory(a.root)) {
    errors.push_back(fmt::format("ROOT `{}` is not a directory", a.root));
  }
  for (const std::string& lang : a.languages) {
    if (stages::ast::Language::find(lang) == nullptr) {
      std::string known;
      for (const auto& l : stages::ast::Language::all()) known += fmt::format(", {}", l.name());
      errors.push_back(
          fmt::format("--languages: unknown language `{}` (known: {})", lang, known.substr(2)));
    }
  }
  return errors;
}

// A redrawn line on a terminal; one line every 5 s otherwise.
class FileProgress {
 public:
  explicit FileProgress(bool enabled) : enabled_(enabled), tty_(::isatty(::fileno(stderr))) {}
  void operator()(std::size_t done, std::size_t total, const std::string& path) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    const auto gap = tty_ ? std::chrono::milliseconds(100) : std::chrono::seconds(5);
    if (done < total && now - last_ < gap) return;
    last_ = now;
    const int width = 30;
    const int fill = total ? static_cast<int>(width * done / total) : width;
    const std::string bar = std::string(fill, '#') + std::string(width - fill, '.');
    if (tty_) {
      std::fprintf(stderr, "\r\033[K[%s] %zu/%zu files  %s", bar.c_str(), done, total,
                   path.c_str());
      if (done == total) std::fputc('\n', stderr);
    } else {
      std::fprintf(stderr, "index: %zu/%zu files (%s)\n", done, total, path.c_str());
    }
    std::fflush(stderr);
  }

 private:
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace

int cmd_index(const IndexArgs& args) {
  // --- arguments ---
  if (const auto errors = check_args(args); !errors.empty()) {
    for (const std::string& e : errors) std::fprintf(stderr, "error: %s\n", e.c_str());
    return kExitUsage;
  }
  // --- build (or load, re-validate and save back) ---
  stages::retrieval::IndexSettings settings =
      stages::retrieval::index_settings("index", index_params(args));
  FileProgress progress(!args.quiet);
  settings.on_file = [&progress](std::size_t done, std::size_t total, const std::string& path) {
    progress(done, total, path);
  };
  std::unique_ptr<stages::retrieval::IndexResource> resource;
  try {
    resource = std::make_unique<stages::retrieval::IndexResource>(std::move(settings));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return kExitRuntime;
  }
  // --- summary ---
  const auto& s = resource->build_stats();
  std::printf(
      "indexed %s: %u files (%u re-indexed, %u unchanged, %u removed, %u skipped), %zu chunks, "
      "%llu tokens, %.1f s%s\n",
      args.root.c_str(), s.files, s.indexed, s.unchanged, s.removed, s.skipped, s.chunks,
      static_cast<unsigned long long>(s.tokens), s.seconds, s.loaded ? " (from the cache)" : "");
  if (!resource->degraded_reason().empty()) {
    std::printf("lexical only (BM25): %s\n", resource->degraded_reason().c_str());
  }
  if (!resource->cache_path().empty()) std::printf("cache: %s\n", resource->cache_path().c_str());
  return kExitOk;
}

}  // namespace vsynth::cli
