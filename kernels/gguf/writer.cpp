#include "kernels/gguf/writer.h"

#include <unistd.h>

#include <atomic>

#include <fstream>
#include <stdexcept>
#include <utility>

namespace vsynth::kernels {

namespace {
uint64_t align_up(uint64_t n, uint64_t align) {
  return (n + align - 1) / align * align;
}

class Out {
 public:
  template <GgufScalar T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof v);
  }
  void put_string(std::string_view s) {
    put(uint64_t{s.size()});
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes.insert(bytes.end(), p, p + s.size());
  }
  void put_bytes(std::span<const std::byte> b) { bytes.insert(bytes.end(), b.begin(), b.end()); }
  void pad_to(uint64_t align) { bytes.resize(align_up(bytes.size(), align), std::byte{0}); }
  uint64_t pos() const { return bytes.size(); }

  std::vector<std::byte> bytes;
};
}  // namespace

// ---------------------------------------------------------------- GgufMetaValue

GgufMetaValue GgufMetaValue::string(std::string_view s) {
  GgufMetaValue m(GgufType::String);
  m.put_string(s);
  return m;
}

void GgufMetaValue::put_string(std::string_view s) {
  put(uint64_t{s.size()});
  append_bytes(s.data(), s.size());
}

GgufMetaValue GgufMetaValue::array_of_arrays(std::span<const GgufMetaValue> elems) {
  GgufMetaValue m(GgufType::Array);
  m.put(static_cast<uint32_t>(GgufType::Array));
  m.put(uint64_t{elems.size()});
  for (const GgufMetaValue& e : elems) {
    if (e.type() != GgufType::Array) {
      throw std::invalid_argument("GgufMetaValue::array_of_arrays: element is " +
                                  std::string(gguf_type_name(e.type())) + ", not an array");
    }
    m.append(e.bytes());  // an element is the array's payload: element type, count, elements
  }
  return m;
}

GgufMetaValue GgufMetaValue::empty_array(GgufType elem) {
  GgufMetaValue m(GgufType::Array);
  m.put(static_cast<uint32_t>(elem));
  m.put(uint64_t{0});
  return m;
}

// ---------------------------------------------------------------- GgufWriter

void GgufWriter::add_value(std::string key, GgufMetaValue v) {
  kvs_.push_back({std::move(key), std::move(v)});
}

void GgufWriter::add_tensor(std::string name, DType type, std::vector<uint64_t> ne,
                            std::span<const std::byte> data) {
  const auto info = dtype_info(type);
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument("GgufWriter::add_tensor('" + name + "'): " + why);
  };
  if (!info) bad("unknown DType");
  if (ne.empty() || ne.size() > 4) bad("needs 1 to 4 dimensions");
  for (uint64_t d : ne) {
    if (d == 0) bad("a dimension is 0");
  }
  if (ne[0] % info->block_elems != 0) {
    bad("ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the block size " +
        std::to_string(info->block_elems));
  }
  uint64_t bytes = ne[0] / info->block_elems;
  bool overflow = __builtin_mul_overflow(bytes, uint64_t{info->block_bytes}, &bytes);
  for (std::size_t d = 1; d < ne.size(); ++d) {
    overflow = overflow || __builtin_mul_overflow(bytes, ne[d], &bytes);
  }
  if (overflow) bad("byte size overflows");
  if (bytes != data.size()) {
    bad("geometry needs " + std::to_string(bytes) + " bytes, data has " +
        std::to_string(data.size()));
  }
  add_raw_tensor(std::move(name), static_cast<uint32_t>(type), std::move(ne), data);
}

void GgufWriter::add_raw_tensor(std::string name, uint32_t type_id, std::vector<uint64_t> ne,
                                std::span<const std::byte> data) {
  tensors_.push_back({std::move(name), type_id, std::move(ne), {data.begin(), data.end()}});
}

GgufImage GgufWriter::build() const {
  if (alignment_ == 0) throw std::invalid_argument("GgufWriter: alignment 0");
  std::vector<const Kv*> kvs;
  bool has_alignment_key = false;
  for (const Kv& kv : kvs_) has_alignment_key = has_alignment_key || kv.key == "general.alignment";
  const Kv alignment_kv{"general.alignment", GgufMetaValue::scalar(alignment_)};
  if (alignment_ != 32 && !has_alignment_key) kvs.push_back(&alignment_kv);
  for (const Kv& kv : kvs_) kvs.push_back(&kv);

  GgufImage img;
  GgufLayout& lay = img.layout;
  Out out;
  out.put_bytes(std::as_bytes(std::span("GGUF", 4)));
  out.put(version_);
  out.put(uint64_t{tensors_.size()});
  out.put(uint64_t{kvs.size()});

  for (const Kv* kv : kvs) {
    GgufLayout::Kv k{};
    k.key_offset = out.pos();
    out.put_string(kv->key);
    k.type_offset = out.pos();
    out.put(static_cast<uint32_t>(kv->value.type()));
    k.value_offset = out.pos();
    out.put_bytes(kv->value.bytes());
    lay.kvs.push_back(k);
  }

  uint64_t rel = 0;  // next data offset, relative to the data section
  for (const Tensor& t : tensors_) {
    GgufLayout::Tensor l{};
    l.info_offset = out.pos();
    out.put_string(t.name);
    l.n_dims_offset = out.pos();
    out.put(static_cast<uint32_t>(t.ne.size()));
    l.dims_offset = out.pos();
    for (uint64_t d : t.ne) out.put(d);
    l.type_offset = out.pos();
    out.put(t.type_id);
    l.offset_field = out.pos();
    out.put(rel);
    l.data_offset = rel;  // made absolute below
    l.data_bytes = t.data.size();
    rel = align_up(rel + t.data.size(), alignment_);
    lay.tensors.push_back(l);
  }

  if (!tensors_.empty()) out.pad_to(alignment_);
  lay.data_section = out.pos();
  lay.data_end = lay.data_section;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    lay.tensors[i].data_offset += lay.data_section;
    out.put_bytes(tensors_[i].data);
    lay.data_end = out.pos();
    out.pad_to(alignment_);  // after the last tensor too, as llama.cpp's writers do
  }
  img.bytes = std::move(out.bytes);
  return img;
}

void GgufWriter::write(const std::filesystem::path& path) const {
  // Written to a sibling temporary file and renamed over `path`: a process that has the old
  // file mapped keeps reading the old bytes (truncating in place would turn its pages into
  // SIGBUS or silently changed weights), and a crash mid-write never leaves a torn model.
  const GgufImage img = build();
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(static_cast<long>(::getpid())) + "-" +
         std::to_string(counter.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(img.bytes.data()),
            static_cast<std::streamsize>(img.bytes.size()));
    f.close();
    if (!f) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      throw std::runtime_error("GgufWriter: cannot write " + path.string() +
                               " (writing its temporary file " + tmp.string() + " failed)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw std::runtime_error("GgufWriter: cannot write " + path.string() + ": " + ec.message());
  }
}

}  // namespace vsynth::kernels
