// Helpers shared by the safetensors tests and the fuzz seed writer: an in-memory writer (valid
// files, contiguous offsets, header padded with spaces as the reference writer does), a raw
// builder for hand-written headers, and "parse this and give me the error text".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/safetensors/reader.h"

namespace vsynth::kernels::test {

struct StSpec {
  std::string name;
  std::string dtype;  // as written in the header ("F32", ...)
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;  // the tensor's data, exactly elements x element size
};

// The values' bytes as the file stores them (little-endian, this machine's order).
template <class T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A JSON string literal for `s` (quotes, backslashes and control bytes escaped).
inline std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// u64 N, then `header` (N bytes), then `data`.
inline std::vector<std::byte> raw_safetensors(std::string_view header,
                                              std::span<const std::byte> data = {}) {
  std::vector<std::byte> out(8 + header.size() + data.size());
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}
// The same with `data_bytes` zero bytes of data.
inline std::vector<std::byte> raw_safetensors(std::string_view header, std::size_t data_bytes) {
  return raw_safetensors(header, std::vector<std::byte>(data_bytes));
}

// A valid file: the tensors in order, each range right after the one before, the header padded
// with trailing spaces to a multiple of `align` bytes (8 in the reference writer).
inline std::vector<std::byte> safetensors_bytes(const std::vector<StSpec>& tensors,
                                                const std::map<std::string, std::string>& meta = {},
                                                std::size_t align = 8) {
  std::string header = "{";
  if (!meta.empty()) {
    header += "\"__metadata__\":{";
    for (const auto& [k, v] : meta) {
      if (header.back() != '{') header += ',';
      header += json_quote(k) + ":" + json_quote(v);
    }
    header += "}";
  }
  std::vector<std::byte> data;
  for (const StSpec& t : tensors) {
    if (header.size() > 1) header += ',';
    header += json_quote(t.name) + ":{\"dtype\":" + json_quote(t.dtype) + ",\"shape\":[";
    for (std::size_t i = 0; i < t.shape.size(); ++i) {
      header += (i ? "," : "") + std::to_string(t.shape[i]);
    }
    const std::size_t begin = data.size();
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
    header +=
        "],\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(data.size()) + "]}";
  }
  header += "}";
  while (align > 1 && header.size() % align != 0) header += ' ';
  return raw_safetensors(header, data);
}

// Parses a copy of `bytes` held in an exactly-sized heap buffer (so a sanitizer build sees any
// read past the end) as "bad.safetensors" and returns the SafetensorsError text, or
// "<no error>". Other exception types propagate and fail the test.
inline std::string st_error_of(std::span<const std::byte> bytes) {
  const std::vector<std::byte> copy(bytes.begin(), bytes.end());  // capacity == size
  try {
    (void)SafetensorsFile::parse(copy, "bad.safetensors");
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace vsynth::kernels::test
