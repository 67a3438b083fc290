#include "stages/retrieval/files.h"

#include <algorithm>
#include <cmath>

namespace vsynth::stages::retrieval {
namespace {

std::string_view base_name(std::string_view path) {
  const std::size_t slash = path.find_last_of("/\\");
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_word_byte(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

std::string file_stem(std::string_view path) {
  const std::string_view base = base_name(path);
  const std::string_view stem = base.substr(0, base.find('.'));
  if (stem == "__init__" || stem == "mod" || stem == "index" || stem == "lib") {
    const std::string_view dir = path.substr(0, path.size() - base.size());
    if (!dir.empty()) return file_stem(dir.substr(0, dir.size() - 1));
  }
  return std::string(stem);
}

double dot(std::span<const float> a, std::span<const float> b) {
  double s = 0;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

std::vector<float> mean_direction(std::span<const float> rows, int dim) {
  const std::size_t d = static_cast<std::size_t>(dim);
  if (d == 0 || rows.size() < d) return {};
  std::vector<double> sum(d, 0.0);
  for (std::size_t at = 0; at + d <= rows.size(); at += d) {
    for (std::size_t i = 0; i < d; ++i) sum[i] += rows[at + i];
  }
  double norm = 0;
  for (const double v : sum) norm += v * v;
  if (norm <= 0) return {};
  norm = std::sqrt(norm);
  std::vector<float> out(d);
  for (std::size_t i = 0; i < d; ++i) out[i] = static_cast<float>(sum[i] / norm);
  return out;
}

void FileLevel::put(FileEntry entry) {
  erase(entry.path);
  auto& paths = stems_[entry.stem];
  paths.insert(std::upper_bound(paths.begin(), paths.end(), entry.path), entry.path);
  std::string key = entry.path;
  files_.emplace(std::move(key), std::move(entry));
}

void FileLevel::erase(std::string_view path) {
  const auto it = files_.find(path);
  if (it == files_.end()) return;
  const auto s = stems_.find(it->second.stem);
  if (s != stems_.end()) {
    std::erase(s->second, it->second.path);
    if (s->second.empty()) stems_.erase(s);
  }
  files_.erase(it);
}

const FileEntry* FileLevel::find(std::string_view path) const {
  const auto it = files_.find(path);
  return it == files_.end() ? nullptr : &it->second;
}

std::vector<std::string> FileLevel::imports_of(std::string_view path) const {
  std::vector<std::string> out;
  const FileEntry* from = find(path);
  if (from == nullptr || from->imports.empty()) return out;
  // Each word of its import statements that is some indexed file's stem.
  const std::string_view text = from->imports;
  for (std::size_t i = 0; i < text.size();) {
    if (!is_word_byte(text[i])) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && is_word_byte(text[end])) ++end;
    if (const auto it = stems_.find(text.substr(i, end - i)); it != stems_.end()) {
      for (const std::string& p : it->second) {
        if (p != path) out.push_back(p);
      }
    }
    i = end;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<const FileEntry*> FileLevel::nearest(
    std::span<const float> query, std::size_t n,
    const std::unordered_set<std::string>& exclude) const {
  std::vector<std::pair<double, const FileEntry*>> scored;
  for (const auto& [path, f] : files_) {
    if (f.mean.empty() || exclude.count(path) != 0) continue;
    scored.emplace_back(dot(query, f.mean), &f);
  }
  const std::size_t keep = std::min(n, scored.size());
  std::partial_sort(scored.begin(), scored.begin() + static_cast<std::ptrdiff_t>(keep),
                    scored.end(), [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first
                                                : a.second->path < b.second->path;
                    });
  std::vector<const FileEntry*> out;
  for (std::size_t i = 0; i < keep; ++i) out.push_back(scored[i].second);
  return out;
}

}  // namespace vsynth::stages::retrieval
