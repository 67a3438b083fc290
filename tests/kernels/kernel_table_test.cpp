// The kernel tables by weight type (kernels/quant/kernel_table.h): every type the kernels compute
// with has its traits and a row in every table this build has, and each row holds exactly the
// kernels the type's traits and the table's forms ask for.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_path_internal.h"
#include "kernels/cpu/matvec.h"
#include "kernels/dtype.h"
#include "kernels/quant/kernel_table.h"
#include "kernels/quant/quantize.h"

using namespace vsynth::kernels;

namespace {

// Every table compiled into this build, whether or not this CPU can run it: the rows are
// checked, not run.
std::vector<const detail::KernelTable*> built_tables() {
  std::vector<const detail::KernelTable*> out{&detail::scalar_kernels()};
  for (const detail::KernelTable* t : {detail::avx2_kernels(), detail::avx512vnni_kernels()}) {
    if (t != nullptr) out.push_back(t);
  }
  return out;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

}  // namespace

TEST_CASE("kernel tables: every GGUF type the kernels support has its traits, once",
          "[quant][table]") {
  int supported = 0;
  for (uint32_t id = 0; id < 64; ++id) {
    const auto info = dtype_info(id);
    const int i = info ? detail::kernel_type_index(info->type) : -1;
    INFO("type " << id << (info ? " (" + std::string(info->name) + ")" : std::string()));
    if (!info || !info->supported) {
      CHECK(i == -1);
      continue;
    }
    ++supported;
    CHECK(quant_supported(info->type));
    REQUIRE(i >= 0);
    CHECK(detail::kTypeTraits[i].type == info->type);
    // Block types take quantized activations, plain ones floats.
    CHECK((info->block_elems > 1) == (detail::kTypeTraits[i].act != detail::ActFormat::F32));
    CHECK(detail::act_format(info->type) == detail::kTypeTraits[i].act);
    if (detail::kTypeTraits[i].act == detail::ActFormat::Q8A32) CHECK(info->block_elems == 32);
    if (detail::kTypeTraits[i].act == detail::ActFormat::Q8A256) CHECK(info->block_elems == 256);
  }
  CHECK(supported == detail::kNumKernelTypes);
  for (int i = 0; i < detail::kNumKernelTypes; ++i) {
    for (int j = i + 1; j < detail::kNumKernelTypes; ++j) {
      CHECK(detail::kTypeTraits[i].type != detail::kTypeTraits[j].type);
    }
  }
}

TEST_CASE("kernel tables: every table has each type's row with the kernels it needs, no more",
          "[quant][table]") {
  for (const detail::KernelTable* t : built_tables()) {
    INFO("table " << (t->name ? t->name : "(unnamed)"));
    CHECK(joined(detail::kernel_table_gaps(*t)).empty());
    for (const detail::TypeTraits& tt : detail::kTypeTraits) {
      const detail::TypeKernels& row = detail::type_kernels(*t, tt.type);
      CHECK(row.type == tt.type);
      CHECK(row.dot != nullptr);
    }
  }
}

TEST_CASE("kernel tables: each table has the forms its path is for", "[quant][table]") {
  const detail::Forms none = detail::scalar_kernels().forms;
  CHECK_FALSE((none.il || none.grouped || none.pairs || none.unpacked));
  if (const detail::KernelTable* t = detail::avx2_kernels()) {
    CHECK((t->forms.il && t->forms.grouped));
    CHECK_FALSE((t->forms.pairs || t->forms.unpacked));
  }
  if (const detail::KernelTable* t = detail::avx512vnni_kernels()) {
    CHECK((t->forms.il && t->forms.grouped && t->forms.pairs && t->forms.unpacked));
  }
}

TEST_CASE("kernel tables: the check names what a row lacks or should not hold", "[quant][table]") {
  const detail::KernelTable* simd = detail::avx512vnni_kernels();
  if (simd == nullptr) simd = detail::avx2_kernels();
  detail::KernelTable t = simd != nullptr ? *simd : detail::scalar_kernels();
  const int q4k = detail::kernel_type_index(DType::Q4_K);
  const int f16 = detail::kernel_type_index(DType::F16);
  REQUIRE(q4k >= 0);
  REQUIRE(f16 >= 0);
  t.types[q4k].dot = nullptr;
  t.types[f16].dot_il = t.types[f16].dot;  // floats have no interleaved activations
  const std::string gaps = joined(detail::kernel_table_gaps(t));
  CHECK_THAT(gaps, Catch::Contains("q4_K has no dot\n"));
  CHECK_THAT(gaps, Catch::Contains("f16 has a dot_il"));
  t.types[q4k].type = DType::Q5_K;  // a row out of kTypeTraits' order
  CHECK_FALSE(detail::rows_in_order(t));
  CHECK_THAT(joined(detail::kernel_table_gaps(t)), Catch::Contains("q4_K has no row"));
}

TEST_CASE("kernel tables: a type the kernels do not compute with has no kernels",
          "[quant][table]") {
  for (const detail::KernelTable* t : built_tables()) {
    for (const DType u : {DType::Q4_1, DType::Q2_K, DType::Q8_K, DType::I8, DType::F64}) {
      const detail::TypeKernels& row = detail::type_kernels(*t, u);
      CHECK(row.dot == nullptr);
      CHECK(row.dot_il == nullptr);
      CHECK(row.unpacked.unpack == nullptr);
      CHECK(row.grouped.dot == nullptr);
      CHECK(detail::act_format(u) == detail::ActFormat::F32);
    }
  }
}

TEST_CASE("kernel tables: a weight of a type without kernels is refused, naming those with",
          "[quant][table]") {
  const uint16_t block[10] = {};
  WeightView w;  // by hand: make_weight_view refuses the type itself
  w.type = DType::Q4_1;
  w.rows = 1;
  w.cols = 32;
  w.data = block;
  w.row_bytes = sizeof block;
  CHECK_THROWS_WITH(validate_weight_view(w),
                    Catch::Contains("(supported: f32, f16, bf16, q4_0, q5_0, q8_0, q4_K, q5_K, "
                                    "q6_K)"));
}
