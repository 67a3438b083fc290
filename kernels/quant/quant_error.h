// The exception the quantized kernels throw for bad arguments (unsupported type, a length that
// is not a multiple of the block size, a misaligned pointer, an out-of-range row id...).
#pragma once

#include <stdexcept>
#include <string>

namespace vsynth::kernels {

class QuantError : public std::invalid_argument {
 public:
  explicit QuantError(const std::string& what) : std::invalid_argument(what) {}
};

}  // namespace vsynth::kernels
