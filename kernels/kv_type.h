// KvType: the element type of the KV cache (kernels/kv/kv_cache.h), chosen per model load. At
// the kernels root, beside dtype.h: the model's config (model/) and the cache (kv/) both name
// it, and model/ includes nothing from kv/ (tests/kernels/engine_layers_test.cpp).
#pragma once

namespace vsynth::kernels {

// Element type of the KV cache. Attention always accumulates in fp32.
//   F16:  keys and values stored as IEEE half (2 bytes per element).
//   Int8: keys as int8 with one fp32 scale per channel (kv head x head dim) per block, computed
//         when the block fills (the block being written keeps its keys in fp32 until then);
//         values as int8 with one fp32 scale per token and kv head. About half the bytes of F16.
enum class KvType { F16, Int8 };

}  // namespace vsynth::kernels
