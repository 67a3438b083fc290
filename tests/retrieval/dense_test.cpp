// The hnswlib graph: recall against an exact scan, label reuse after removal, and the check
// of a saved file before hnswlib reads it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <vector>

#include "stages/retrieval/dense.h"
#include "stages/retrieval/files.h"

namespace vsynth::stages::retrieval {
namespace {

constexpr int kDim = 32;

std::vector<float> random_unit(std::mt19937& rng) {
  std::normal_distribution<float> g;
  std::vector<float> v(kDim);
  double n = 0;
  for (float& x : v) {
    x = g(rng);
    n += static_cast<double>(x) * x;
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(n));
  return v;
}

std::set<uint32_t> exact_top(const std::vector<std::vector<float>>& points,
                             const std::vector<bool>& live, std::span<const float> q,
                             std::size_t k) {
  std::vector<std::pair<double, uint32_t>> all;
  for (uint32_t i = 0; i < points.size(); ++i) {
    if (live[i]) all.emplace_back(-dot(q, points[i]), i);
  }
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(k), all.end());
  std::set<uint32_t> out;
  for (std::size_t i = 0; i < k; ++i) out.insert(all[i].second);
  return out;
}

double recall(const DenseIndex& index, const std::vector<std::vector<float>>& points,
              const std::vector<bool>& live, std::mt19937& rng) {
  std::size_t found = 0, wanted = 0;
  for (int q = 0; q < 100; ++q) {
    const std::vector<float> query = random_unit(rng);
    const std::set<uint32_t> truth = exact_top(points, live, query, 10);
    for (const uint32_t id : index.candidates(query, 10)) found += truth.count(id);
    wanted += truth.size();
  }
  return static_cast<double>(found) / static_cast<double>(wanted);
}

TEST_CASE("hnsw finds the exact top 10 of 3000 random unit vectors (recall >= 0.97)",
          "[retrieval]") {
  std::mt19937 rng(7);
  DenseIndex index(kDim, {});
  std::vector<std::vector<float>> points;
  for (uint32_t i = 0; i < 3000; ++i) {
    points.push_back(random_unit(rng));
    index.set(i, points.back());
  }
  std::vector<bool> live(points.size(), true);
  CHECK(index.elements() == 3000);  // grown past its initial capacity of 1024
  const double r = recall(index, points, live, rng);
  INFO("recall@10 " << r);
  CHECK(r >= 0.97);

  // Candidates come best first.
  const std::vector<float> q = random_unit(rng);
  const std::vector<uint32_t> c = index.candidates(q, 10);
  for (std::size_t i = 1; i < c.size(); ++i) {
    CHECK(dot(q, points[c[i - 1]]) >= dot(q, points[c[i]]) - 1e-6);
  }
}

TEST_CASE("removed labels are never returned, and reusing them does not grow the graph",
          "[retrieval]") {
  std::mt19937 rng(11);
  DenseIndex index(kDim, {});
  std::vector<std::vector<float>> points;
  for (uint32_t i = 0; i < 2000; ++i) {
    points.push_back(random_unit(rng));
    index.set(i, points.back());
  }
  std::vector<bool> live(points.size(), true);
  for (uint32_t i = 0; i < 2000; i += 4) {
    index.remove(i);
    live[i] = false;
  }
  CHECK(index.deleted() == 500);
  CHECK_FALSE(index.live(0));
  CHECK(index.live(1));
  for (int q = 0; q < 20; ++q) {
    for (const uint32_t id : index.candidates(random_unit(rng), 20)) CHECK(live[id]);
  }
  CHECK(recall(index, points, live, rng) >= 0.97);
  // The same labels with new vectors: updated in place.
  for (uint32_t i = 0; i < 2000; i += 4) {
    points[i] = random_unit(rng);
    index.set(i, points[i]);
    live[i] = true;
  }
  CHECK(index.elements() == 2000);
  CHECK(index.deleted() == 0);
  CHECK(recall(index, points, live, rng) >= 0.97);
  // Churn: three rounds of every vector replaced under its label; the graph stays as good.
  for (int round = 0; round < 3; ++round) {
    for (uint32_t i = 0; i < 2000; ++i) {
      points[i] = random_unit(rng);
      index.remove(i);
      index.set(i, points[i]);
    }
  }
  CHECK(index.elements() == 2000);
  const double r = recall(index, points, live, rng);
  INFO("recall@10 after 6,000 replacements " << r);
  CHECK(r >= 0.97);
}

TEST_CASE("a saved graph is checked before hnswlib reads it", "[retrieval]") {
  std::mt19937 rng(3);
  DenseIndex index(kDim, {});
  for (uint32_t i = 0; i < 300; ++i) index.set(i, random_unit(rng));
  const auto dir =
      std::filesystem::temp_directory_path() / ("vsynth_dense_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "hnsw.bin";
  index.save(file);
  CHECK(DenseIndex::check_file(file, kDim).empty());
  CHECK(DenseIndex::check_file(file, 64).find("do not fit 64-float vectors") != std::string::npos);

  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto write = [&](const std::string& b) {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(b.data(), static_cast<std::streamsize>(b.size()));
  };
  write(bytes.substr(0, bytes.size() - 10));
  CHECK_FALSE(DenseIndex::check_file(file, kDim).empty());
  write(bytes.substr(0, 40));
  CHECK(DenseIndex::check_file(file, kDim).find("shorter than the header") != std::string::npos);
  // A neighbour id out of range in element 0's level-0 list (after the 96-byte header and
  // the list's own 4-byte count).
  std::string bad = bytes;
  const uint32_t huge = 1u << 30;
  std::memcpy(bad.data() + 96 + 4, &huge, sizeof huge);
  write(bad);
  CHECK(DenseIndex::check_file(file, kDim).find("neighbour") != std::string::npos);
  write(bytes);
  auto loaded = DenseIndex::load(file, kDim, {});
  CHECK(loaded->elements() == 300);
  const std::vector<float> q = random_unit(rng);
  CHECK(loaded->candidates(q, 10) == index.candidates(q, 10));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vsynth::stages::retrieval
