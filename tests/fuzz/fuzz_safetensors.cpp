// libFuzzer entry point for the safetensors reader: any bytes must either parse or throw
// SafetensorsError; a crash, a sanitizer report, another exception type (nlohmann's included)
// or a huge allocation is a bug. After a successful parse every tensor's view is checked to lie
// inside the input with exactly elements x element-size bytes, every byte of it is read, and
// find() / require() must agree with tensors().
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/safetensors/reader.h"

using namespace vsynth::kernels;

namespace {

volatile uint64_t g_sink = 0;  // keeps the reads below from being optimised away

void check_tensor(const SafetensorsFile& f, const SafetensorsTensor& t,
                  std::span<const std::byte> input) {
  const auto bytes = static_cast<uint64_t>(t.elements()) * element_size(t.dtype);
  if (t.data.size() != bytes) __builtin_trap();
  if (!t.data.empty() && (t.data.data() < input.data() ||
                          t.data.data() + t.data.size() > input.data() + input.size())) {
    __builtin_trap();
  }
  for (std::byte b : t.data) g_sink = g_sink + std::to_integer<unsigned>(b);
  if (f.find(t.name) != &t) __builtin_trap();
  if (&f.require(t.name, t.dtype, t.shape) != &t) __builtin_trap();
  // Another dtype must be refused with the reader's own error, never misread.
  const StDType other = t.dtype == StDType::F32 ? StDType::I64 : StDType::F32;
  try {
    (void)f.require(t.name, other, t.shape);
    __builtin_trap();
  } catch (const SafetensorsError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    const SafetensorsFile f = SafetensorsFile::parse(bytes, "fuzz-input");
    for (const SafetensorsTensor& t : f.tensors()) check_tensor(f, t, bytes);
    for (const auto& [key, value] : f.metadata()) g_sink = g_sink + key.size() + value.size();
    if (f.find("__metadata__") != nullptr) __builtin_trap();
  } catch (const SafetensorsError&) {
    // Rejected cleanly: what the reader must do with bad input.
  }
  return 0;
}
