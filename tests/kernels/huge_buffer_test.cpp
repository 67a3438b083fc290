// HugeBuffer (kernels/cpu/huge_buffer.h): 2 MiB aligned zeroed anonymous memory with the
// huge-page advice, its moves, and the VSYNTH_HUGE_PAGES parser.
#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cpu/huge_buffer.h"

using namespace vsynth::kernels;

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Whether the kernel takes MADV_HUGEPAGE here (THP built in and not "never").
bool thp_usable() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(f, line) && line.find("[never]") == std::string::npos;
}

}  // namespace

TEST_CASE("huge buffer: zeroed, writable, 2 MiB aligned, advised where THP is usable",
          "[cpu][huge]") {
  for (const size_t bytes : {size_t{1}, size_t{4096}, 3 * kMiB + 123, 8 * kMiB}) {
    INFO("bytes " << bytes);
    HugeBuffer b = HugeBuffer::allocate(bytes);
    REQUIRE(b.data() != nullptr);
    CHECK(b.size() == bytes);
    CHECK(reinterpret_cast<uintptr_t>(b.data()) % (2 * kMiB) == 0);
    CHECK(b.data()[0] == std::byte{0});
    CHECK(b.data()[bytes - 1] == std::byte{0});
    CHECK(b.data()[bytes / 2] == std::byte{0});
    b.data()[bytes - 1] = std::byte{7};
    CHECK(b.data()[bytes - 1] == std::byte{7});
    // Below one huge page there is nothing to advise.
    if (bytes >= 2 * kMiB && thp_usable()) CHECK(b.advised());
    if (bytes < 2 * kMiB) CHECK_FALSE(b.advised());
  }
  CHECK_FALSE(HugeBuffer::allocate(4 * kMiB, false).advised());
  const HugeBuffer none = HugeBuffer::allocate(0);
  CHECK(none.data() == nullptr);
  CHECK(none.size() == 0);
}

TEST_CASE("huge buffer: a move hands over the memory and empties the source", "[cpu][huge]") {
  HugeBuffer a = HugeBuffer::allocate(3 * kMiB);
  a.data()[5] = std::byte{9};
  std::byte* p = a.data();
  HugeBuffer b(std::move(a));
  CHECK(a.data() == nullptr);
  CHECK(a.size() == 0);
  CHECK(b.data() == p);
  CHECK(b.data()[5] == std::byte{9});
  HugeBuffer c = HugeBuffer::allocate(kMiB);
  c = std::move(b);  // c's own memory is unmapped, b's taken
  CHECK(c.data() == p);
  CHECK(c.size() == 3 * kMiB);
  CHECK(b.data() == nullptr);
}

TEST_CASE("huge buffer: VSYNTH_HUGE_PAGES takes 1, 0 or nothing", "[cpu][huge]") {
  CHECK(huge_pages_wanted(""));
  CHECK(huge_pages_wanted("1"));
  CHECK_FALSE(huge_pages_wanted("0"));
  for (const char* bad : {"yes", "true", "2", " 1"}) {
    INFO(bad);
    CHECK_THROWS_WITH(huge_pages_wanted(bad),
                      Catch::Contains("VSYNTH_HUGE_PAGES='" + std::string(bad) + "'") &&
                          Catch::Contains("use 1"));
  }
}
