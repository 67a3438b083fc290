// libFuzzer entry point for the GGUF reader: any bytes must either parse or throw GgufError;
// a crash, a sanitizer report, another exception type or a huge allocation is a bug. After a
// successful parse every value and every tensor byte range is touched so that a view pointing
// outside the input would be caught.
#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/gguf/reader.h"

using namespace vsynth::kernels;

namespace {

volatile uint64_t g_sink = 0;  // keeps the reads below from being optimised away

void touch(std::string_view s) {
  if (!s.empty()) g_sink = g_sink + static_cast<unsigned char>(s.front() ^ s.back());
}

template <GgufScalar T>
void touch_array(const GgufValue& v) {
  for (T x : v.to_vector<T>()) g_sink = g_sink + static_cast<uint64_t>(x != T{});
}

void touch(const GgufValue& v) {
  switch (v.type()) {
    case GgufType::U8:
      g_sink = g_sink + v.as<uint8_t>();
      break;
    case GgufType::I8:
      g_sink = g_sink + static_cast<uint64_t>(v.as<int8_t>());
      break;
    case GgufType::U16:
      g_sink = g_sink + v.as<uint16_t>();
      break;
    case GgufType::I16:
      g_sink = g_sink + static_cast<uint64_t>(v.as<int16_t>());
      break;
    case GgufType::U32:
      g_sink = g_sink + v.as<uint32_t>();
      break;
    case GgufType::I32:
      g_sink = g_sink + static_cast<uint64_t>(v.as<int32_t>());
      break;
    case GgufType::F32:
      g_sink = g_sink + (v.as<float>() > 0);
      break;
    case GgufType::Bool:
      g_sink = g_sink + v.as<bool>();
      break;
    case GgufType::U64:
      g_sink = g_sink + v.as<uint64_t>();
      break;
    case GgufType::I64:
      g_sink = g_sink + static_cast<uint64_t>(v.as<int64_t>());
      break;
    case GgufType::F64:
      g_sink = g_sink + (v.as<double>() > 0);
      break;
    case GgufType::String:
      touch(v.as_string());
      break;
    case GgufType::Array:
      switch (v.element_type()) {
        case GgufType::U8:
          touch_array<uint8_t>(v);
          break;
        case GgufType::I8:
          touch_array<int8_t>(v);
          break;
        case GgufType::U16:
          touch_array<uint16_t>(v);
          break;
        case GgufType::I16:
          touch_array<int16_t>(v);
          break;
        case GgufType::U32:
          touch_array<uint32_t>(v);
          break;
        case GgufType::I32:
          touch_array<int32_t>(v);
          break;
        case GgufType::F32:
          touch_array<float>(v);
          break;
        case GgufType::Bool:
          touch_array<bool>(v);
          break;
        case GgufType::U64:
          touch_array<uint64_t>(v);
          break;
        case GgufType::I64:
          touch_array<int64_t>(v);
          break;
        case GgufType::F64:
          touch_array<double>(v);
          break;
        case GgufType::String:
          for (std::string_view s : v.strings()) touch(s);
          break;
        case GgufType::Array:
          for (const GgufValue& child : v.arrays()) touch(child);
          break;
      }
      break;
  }
  // A mismatched accessor must throw GgufError, never misread.
  try {
    if (v.type() == GgufType::String) {
      (void)v.as<uint32_t>();
    } else {
      (void)v.as_string();
    }
    __builtin_trap();
  } catch (const GgufError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const GgufFile f = GgufFile::open_from_memory(bytes, "fuzz-input");
    for (const GgufKV& kv : f.metadata()) {
      touch(kv.key);
      touch(kv.value);
      if (f.find(kv.key) != &kv.value) __builtin_trap();
    }
    for (const GgufTensor& t : f.tensors()) {
      if (t.data.size() != t.n_bytes || t.data.empty()) __builtin_trap();
      if (t.data.data() < bytes.data() || t.data.data() + t.data.size() > bytes.data() + size) {
        __builtin_trap();
      }
      g_sink = g_sink + std::to_integer<unsigned>(t.data.front() ^ t.data.back());
      if (f.find_tensor(t.name) != &t) __builtin_trap();
    }
    if (f.has("general.architecture")) (void)f.arch_key("block_count");
  } catch (const GgufError&) {
    // Rejected cleanly: what the reader must do with bad input.
  }
  return 0;
}
