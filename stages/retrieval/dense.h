// The dense half of the retrieval index: hnswlib's HierarchicalNSW<float> over
// InnerProductSpace(dim) (distance 1 - dot; unit vectors make it cosine). Labels are the
// index's chunk ids. A removed chunk is markDelete'd; a later set() of the same label (the
// index hands freed ids out again) unmarks the element and updates its vector and links in
// place, as hnswlib 0.6.2's addPoint on an existing label does (hnswalg.h: addPoint ->
// unmarkDeletedInternal + updatePoint), so edits never grow the graph; see
// DenseOptions::repair_neighbours for the one difference.
// The element capacity doubles (resizeIndex) when full.
//
// Approximate: candidates() returns what the graph finds; Index re-ranks them exactly. Not
// thread-safe for a set()/remove() concurrent with anything: Index holds its lock exclusively
// for those and shared for candidates() (hnswlib 0.6 searches may run in parallel; its
// counters are atomics and its visited-list pool has its own mutex).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace vsynth::stages::retrieval {

struct DenseOptions {
  int m = 16;
  int ef_construction = 200;
  int ef_search = 64;
  // A replaced element's old neighbours whose own links are recomputed (hnswlib's
  // updateNeighborProbability): addPoint uses 1.0, which re-links up to ~30 neighbours from
  // their ~1,000 two-hop candidates, many times an insertion's cost. The replaced element
  // itself is always linked afresh, both ways, as an insertion is; stale links into it from
  // neighbours left unrepaired only lengthen a search path (bench_retrieval, dense_test).
  float repair_neighbours = 0.0f;
};

class DenseIndex {
 public:
  DenseIndex(int dim, const DenseOptions& options);
  ~DenseIndex();
  DenseIndex(const DenseIndex&) = delete;
  DenseIndex& operator=(const DenseIndex&) = delete;

  // Adds `label` (dim floats), or replaces its vector when it exists (deleted or not).
  void set(uint32_t label, std::span<const float> vector);
  void remove(uint32_t label);  // markDelete; no-op for an unknown or deleted label

  // Up to k labels near `query`, best first by hnswlib's distance; searched with
  // ef = max(ef_search, k).
  std::vector<uint32_t> candidates(std::span<const float> query, std::size_t k) const;

  std::size_t elements() const;  // graph elements, deleted ones included
  std::size_t deleted() const;
  int dim() const { return dim_; }

  // hnswlib's own file format (saveIndex / loadIndex). load() must only see a file whose
  // checksum the caller verified: hnswlib does not bounds-check a damaged one. Throws
  // std::runtime_error (hnswlib's) on a file it refuses.
  void save(const std::filesystem::path& file) const;
  static std::unique_ptr<DenseIndex> load(const std::filesystem::path& file, int dim,
                                          const DenseOptions& options);
  // What is wrong with `file` as a saved graph of `dim`-float vectors (its header's sizes,
  // every link list's size and every neighbour id checked against hnswlib 0.6.2's layout,
  // so that load() cannot read out of bounds), or "" when nothing is.
  static std::string check_file(const std::filesystem::path& file, int dim);
  // Whether `label` is an element that is not deleted.
  bool live(uint32_t label) const;

 private:
  struct Impl;
  DenseIndex(std::unique_ptr<Impl> impl, int dim, float repair);
  std::unique_ptr<Impl> impl_;
  int dim_;
  float repair_;
};

}  // namespace vsynth::stages::retrieval
