#include "stages/retrieval/dense.h"

// hnswlib.h defines non-inline functions (cpuid helpers): this is the one translation unit
// that includes it.
#include <hnswlib/hnswlib.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

namespace vsynth::stages::retrieval {

namespace {
constexpr std::size_t kInitialCapacity = 1024;  // elements; doubled when full

// A little-endian reader over a whole file's bytes that never reads past the end.
struct Reader {
  std::string_view bytes;
  std::size_t at = 0;
  template <typename T>
  bool read(T& out) {
    if (bytes.size() - at < sizeof(T)) return false;
    std::memcpy(&out, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return true;
  }
};

// Neighbour lists: a 32-bit header whose low 16 bits are the count, then `capacity` ids.
std::string check_links(std::string_view list, std::size_t capacity, std::size_t elements,
                        std::size_t element, int level) {
  uint32_t header = 0;
  std::memcpy(&header, list.data(), sizeof header);
  const std::size_t count = header & 0xffffu;
  if (count > capacity) {
    return fmt::format("element {} level {}: {} neighbours, at most {}", element, level, count,
                       capacity);
  }
  for (std::size_t i = 0; i < count; ++i) {
    uint32_t id = 0;
    std::memcpy(&id, list.data() + 4 + 4 * i, sizeof id);
    if (id >= elements) {
      return fmt::format("element {} level {}: neighbour {} of {} elements", element, level, id,
                         elements);
    }
  }
  return "";
}
}  // namespace

std::string DenseIndex::check_file(const std::filesystem::path& file, int dim) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return "cannot open it";
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Reader r{bytes};
  // The header saveIndex writes, field by field.
  uint64_t offset_level0 = 0, max_elements = 0, count = 0, per_element = 0, label_offset = 0,
           offset_data = 0, max_m = 0, max_m0 = 0, m = 0, ef_construction = 0;
  int32_t max_level = 0;
  uint32_t entry = 0;
  double mult = 0;
  if (!(r.read(offset_level0) && r.read(max_elements) && r.read(count) && r.read(per_element) &&
        r.read(label_offset) && r.read(offset_data) && r.read(max_level) && r.read(entry) &&
        r.read(max_m) && r.read(max_m0) && r.read(m) && r.read(mult) && r.read(ef_construction))) {
    return fmt::format("{} bytes, shorter than the header", bytes.size());
  }
  const uint64_t links0 = max_m0 * 4 + 4, data = static_cast<uint64_t>(dim) * 4;
  if (offset_level0 != 0 || max_m0 == 0 || max_m0 > 20000 || max_m == 0 || max_m > max_m0 ||
      offset_data != links0 || label_offset != links0 + data || per_element != links0 + data + 8) {
    return fmt::format(
        "header sizes (maxM {}, maxM0 {}, {} bytes per element) do not fit "
        "{}-float vectors",
        max_m, max_m0, per_element, dim);
  }
  if (count > max_elements || max_elements > UINT32_MAX || (count > 0 && entry >= count) ||
      max_level < -1 || max_level > 64) {
    return fmt::format(
        "header counts (elements {}, capacity {}, entry point {}, top level {}) "
        "are inconsistent",
        count, max_elements, entry, max_level);
  }
  if ((bytes.size() - r.at) / per_element < count) {
    return fmt::format("{} elements of {} bytes do not fit in {} bytes", count, per_element,
                       bytes.size());
  }
  const std::string_view level0(bytes.data() + r.at, count * per_element);
  r.at += count * per_element;
  for (std::size_t i = 0; i < count; ++i) {
    std::string e = check_links(level0.substr(i * per_element, links0), max_m0, count, i, 0);
    if (!e.empty()) return e;
  }
  const uint64_t links = max_m * 4 + 4;
  for (std::size_t i = 0; i < count; ++i) {
    uint32_t size = 0;
    if (!r.read(size)) return fmt::format("element {}: its upper-level links are missing", i);
    if (size % links != 0 || size / links > static_cast<uint64_t>(std::max(max_level, 0)) ||
        bytes.size() - r.at < size) {
      return fmt::format("element {}: {} bytes of upper-level links", i, size);
    }
    if (i == entry && size / links != static_cast<uint64_t>(std::max(max_level, 0))) {
      return fmt::format("entry point {} has {} upper levels, the graph {}", i, size / links,
                         max_level);
    }
    for (uint32_t level = 0; level < size / links; ++level) {
      std::string e = check_links(std::string_view(bytes).substr(r.at + level * links, links),
                                  max_m, count, i, static_cast<int>(level) + 1);
      if (!e.empty()) return e;
    }
    r.at += size;
  }
  if (r.at != bytes.size()) {
    return fmt::format("{} bytes after the last element", bytes.size() - r.at);
  }
  return "";
}

struct DenseIndex::Impl {
  explicit Impl(int dim) : space(static_cast<std::size_t>(dim)) {}
  hnswlib::InnerProductSpace space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
};

DenseIndex::DenseIndex(int dim, const DenseOptions& options)
    : impl_(std::make_unique<Impl>(dim)), dim_(dim), repair_(options.repair_neighbours) {
  impl_->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(
      &impl_->space, kInitialCapacity, static_cast<std::size_t>(options.m),
      static_cast<std::size_t>(options.ef_construction));
  // ef is graph state, set once here: searches never change it (they run concurrently), a
  // larger k raises it inside searchKnn (max(ef_, k)).
  impl_->graph->setEf(static_cast<std::size_t>(std::max(options.ef_search, 1)));
}

DenseIndex::DenseIndex(std::unique_ptr<Impl> impl, int dim, float repair)
    : impl_(std::move(impl)), dim_(dim), repair_(repair) {}

DenseIndex::~DenseIndex() = default;

void DenseIndex::set(uint32_t label, std::span<const float> vector) {
  hnswlib::HierarchicalNSW<float>& g = *impl_->graph;
  if (const auto it = g.label_lookup_.find(label); it != g.label_lookup_.end()) {
    // addPoint's path for an existing label, with our repair probability.
    if (g.isMarkedDeleted(it->second)) g.unmarkDeletedInternal(it->second);
    g.updatePoint(vector.data(), it->second, repair_);
    return;
  }
  if (g.cur_element_count >= g.max_elements_) g.resizeIndex(2 * g.max_elements_);
  g.addPoint(vector.data(), label);
}

void DenseIndex::remove(uint32_t label) {
  hnswlib::HierarchicalNSW<float>& g = *impl_->graph;
  const auto it = g.label_lookup_.find(label);
  if (it == g.label_lookup_.end() || g.isMarkedDeleted(it->second)) return;
  g.markDelete(label);
}

bool DenseIndex::live(uint32_t label) const {
  const hnswlib::HierarchicalNSW<float>& g = *impl_->graph;
  const auto it = g.label_lookup_.find(label);
  return it != g.label_lookup_.end() && !g.isMarkedDeleted(it->second);
}

std::vector<uint32_t> DenseIndex::candidates(std::span<const float> query, std::size_t k) const {
  std::vector<uint32_t> out;
  if (k == 0 || impl_->graph->cur_element_count == 0) return out;
  auto found = impl_->graph->searchKnn(query.data(), k);  // max-heap by distance
  out.resize(found.size());
  for (std::size_t i = out.size(); i-- > 0;) {
    out[i] = static_cast<uint32_t>(found.top().second);
    found.pop();
  }
  return out;
}

std::size_t DenseIndex::elements() const {
  return impl_->graph->cur_element_count;
}
std::size_t DenseIndex::deleted() const {
  return impl_->graph->num_deleted_;
}

void DenseIndex::save(const std::filesystem::path& file) const {
  impl_->graph->saveIndex(file.string());
}

std::unique_ptr<DenseIndex> DenseIndex::load(const std::filesystem::path& file, int dim,
                                             const DenseOptions& options) {
  auto impl = std::make_unique<Impl>(dim);
  // The loading constructor leaves members loadIndex does not set uninitialised, and the
  // destructor frees them: start from a valid empty graph state instead, and when loadIndex
  // throws part-way, leave a state the destructor can free.
  impl->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(&impl->space);
  hnswlib::HierarchicalNSW<float>& g = *impl->graph;
  g.data_level0_memory_ = nullptr;
  g.linkLists_ = nullptr;
  g.visited_list_pool_ = nullptr;
  g.cur_element_count = 0;
  g.num_deleted_ = 0;
  try {
    g.loadIndex(file.string(), &impl->space);
  } catch (...) {
    if (g.element_levels_.size() < g.cur_element_count || g.linkLists_ == nullptr) {
      g.cur_element_count = 0;
    }
    throw;
  }
  g.setEf(static_cast<std::size_t>(std::max(options.ef_search, 1)));
  return std::unique_ptr<DenseIndex>(
      new DenseIndex(std::move(impl), dim, options.repair_neighbours));
}

}  // namespace vsynth::stages::retrieval
