// Quantized block layouts, byte for byte as GGUF stores them (ggml's block_q*), plus the two
// activation block formats our dot products quantize their input vectors into.
//
// Every scale marked fp16 holds IEEE half bits (see kernels/quant/fp16.h). Blocks have no padding
// (alignment 2 at most), so a row of n elements is n / kElems blocks packed back to back; GGUF
// rows are always 2-byte aligned. The value each element decodes to is written next to each
// struct; kernels/quant/quantize.cpp holds the reference decoders.
//
// These structs hold plain data and no functions on purpose: the AVX2 translation unit includes
// this header, and an inline function compiled there could be picked by the linker for scalar
// code (one-definition rule), which would then fault on a CPU without AVX2.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vsynth::kernels {

inline constexpr int kQK32 = 32;  // elements per block of the *_0 types
inline constexpr int kQKK = 256;  // elements per super-block of the K-quants

// Q4_0, 32 elements: x[i] = d * (q[i] - 8), q in 0..15.
// Byte qs[j] holds element j in its low nibble and element j + 16 in its high nibble.
struct BlockQ4_0 {
  uint16_t d;  // fp16 scale
  uint8_t qs[16];
};

// Q5_0, 32 elements: x[i] = d * (q[i] - 16), q in 0..31. Low 4 bits as in Q4_0 (element j low
// nibble, j + 16 high nibble of qs[j]); the fifth bit of element i is bit i of qh read as a
// little-endian uint32.
struct BlockQ5_0 {
  uint16_t d;  // fp16 scale
  uint8_t qh[4];
  uint8_t qs[16];
};

// Q8_0, 32 elements: x[i] = d * qs[i].
struct BlockQ8_0 {
  uint16_t d;  // fp16 scale
  int8_t qs[32];
};

// Q4_K, 256 elements in 8 sub-blocks of 32: x = d * sc[s] * q - dmin * m[s], q in 0..15,
// sc and m 6-bit. scales[12] packs the 8 (sc, m) pairs: for s < 4, sc = scales[s] & 63 and
// m = scales[s + 4] & 63; for s >= 4, sc = (scales[s + 4] & 15) | (scales[s - 4] >> 6) << 4 and
// m = (scales[s + 4] >> 4) | (scales[s] >> 6) << 4. Each 64-element chunk c uses
// qs[32c .. 32c + 32): low nibbles are sub-block 2c, high nibbles sub-block 2c + 1.
struct BlockQ4_K {
  uint16_t d;     // fp16 super-scale of the 6-bit scales
  uint16_t dmin;  // fp16 super-scale of the 6-bit mins
  uint8_t scales[12];
  uint8_t qs[128];
};

// Q5_K: Q4_K plus a fifth bit, q in 0..31. Element 64c + l (l < 32) takes bit 2c of qh[l];
// element 64c + 32 + l takes bit 2c + 1 of qh[l].
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};

// Q6_K, 256 elements in 16 sub-blocks of 16: x = d * scales[s] * (q - 32), q in 0..63.
// Per 128-element half h (ql += 64h, qh += 32h, scales += 8h), for l in 0..31:
//   element l      = ql[l] & 15       | (qh[l] >> 0 & 3) << 4,  scale index l/16 + 0
//   element l + 32 = ql[l + 32] & 15  | (qh[l] >> 2 & 3) << 4,  scale index l/16 + 2
//   element l + 64 = ql[l] >> 4       | (qh[l] >> 4 & 3) << 4,  scale index l/16 + 4
//   element l + 96 = ql[l + 32] >> 4  | (qh[l] >> 6 & 3) << 4,  scale index l/16 + 6
struct BlockQ6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;  // fp16 super-scale, last in the block
};

static_assert(sizeof(BlockQ4_0) == 18 && alignof(BlockQ4_0) == 2);
static_assert(sizeof(BlockQ5_0) == 22 && alignof(BlockQ5_0) == 2);
static_assert(sizeof(BlockQ8_0) == 34 && alignof(BlockQ8_0) == 2);
static_assert(sizeof(BlockQ4_K) == 144 && alignof(BlockQ4_K) == 2);
static_assert(sizeof(BlockQ5_K) == 176 && alignof(BlockQ5_K) == 2);
static_assert(sizeof(BlockQ6_K) == 210 && alignof(BlockQ6_K) == 2);
static_assert(offsetof(BlockQ6_K, d) == 208);
static_assert(offsetof(BlockQ5_K, qs) == 48);

// ---- Activation blocks (our own formats, never stored in files) ----
//
// A dot product quantizes its float input vector once into one of these, symmetric int8 with a
// float (not fp16) scale so the activation adds as little error as possible:
//   q[i] = round_to_nearest_even(x[i] / d), d = max|x| / 127 over the block, q in -127..127.
// The precomputed sums let weight formats with an offset (q - 8, q - 16, q - 32, or a min)
// apply it once per block instead of per element.

// Paired with the 32-element weight types (Q4_0, Q5_0, Q8_0): a whole row of k elements
// (nb = k / 32 blocks) is laid out as three arrays, not as an array of blocks, so a kernel can
// load 8 consecutive blocks' scales or sums with one vector load:
//   int8_t  qs[nb][32]   at byte 0             (32-byte aligned when the row is)
//   float   d[nb]        at byte 32 * nb       x[32b + i] ~= d[b] * qs[b][i]
//   int32_t sum[nb]      at byte 36 * nb       sum[b] = sum of qs[b][0..32)
// 40 * nb bytes in all (kQ8A32BytesPerBlock per block). The integer sums let weight formats
// with an offset (q - 8 for Q4_0, q - 16 for Q5_0) subtract it exactly, in integers, per block.
inline constexpr size_t kQ8A32BytesPerBlock = 40;

// The interleaved Q8A32 row, prefill's layout for the same codes, scales and sums (matmul
// quantizes every token once, so its layout can suit the multi-token kernels). Blocks form
// groups of kQ8A32ILGroup = 8; the row is padded with zero blocks (codes, scale and sum 0) to
// nbp blocks, a multiple of 8, except that a tail of exactly 4 blocks (k = 640, 896) is kept as
// a half group (nbp = nb). With b = 8g + j and code 4i + e of block b (i in 0..7, e in 0..3):
//   int8_t  qs[32 * nbp]  at byte 0          whole group: byte 256g + 32i + 4j + e
//                                            4-block tail: byte 256g + 32(i % 4) + 16(i / 4) + 4j +
//                                            e
//   float   d[nbp]        at byte 32 * nbp   as in the plain row
//   int32_t sum[nbp]      at byte 36 * nbp   as in the plain row
// 40 * nbp bytes. A 32-byte vector of a group holds four codes of each of its blocks, one block
// per 32-bit lane (the tail: dwords i and i + 4 in the two halves), so the u8 x s8 dot products
// of a group's vectors leave each block's exact integer sum in its own lane, with no horizontal
// reduction per token (the weights are transposed to match once per group, for all tokens;
// kernels_x86_a32.inc).
inline constexpr int kQ8A32ILGroup = 8;

// ---- Grouped Q8_0 and Q5_0 weight rows (our own layouts, made at load, never stored in files) --
//
// kernels/cpu/grouped.h regroups a Q8_0 or Q5_0 matrix for the SIMD tables: each row's nb = k / 32
// blocks are padded with zero blocks (codes, bits and scale 0) to nbp as the interleaved
// activation row above, and each group of 8 blocks j = 0..7 stored as its 8 fp16 scales (16
// bytes) followed by its codes in the interleaved activation order:
//   Q8_0: 256 codes, code 4i + e of block j at byte 32i + 4j + e.
//   Q5_0: 128 bytes of nibbles, byte 32v + 4j + e (v in 0..3) = qs[4v + e] of block j (low
//         nibble: code 4v + e, high nibble: code 16 + 4v + e, as in the plain block), then 32
//         bytes of fifth-bit planes, byte 4j + e bit i = the fifth bit of code 4i + e of block j.
// The 4-block tail group: 4 scales (8 bytes), then
//   Q8_0: 128 codes, code 4i + e of block j at byte 32(i % 4) + 16(i / 4) + 4j + e;
//   Q5_0: 64 bytes of nibbles, byte 16v + 4j + e = qs[4v + e] of block j, then 16 bytes of
//         planes as above (j in 0..3).
// The plain block's bytes per block (34 for Q8_0, 22 for Q5_0) times nbp: the same bytes as the
// plain row when nb is a multiple of 8 or ends in a 4-block tail (every row of the default
// model).

// ---- Unpacked weight rows (matmul's scratch, made per tile, never stored) ----
//
// The VNNI table's prefill of Q4_0 / Q5_0 / Q8_0 unpacks a tile's weight rows once for all its
// tokens (kernel_table.h, Unpacked) and stores them in row pairs (rows 2p and 2p + 1; an odd
// last row pairs with a zero row), for kernels that hold one pair in a 512-bit vector. Each row
// is padded to nbp blocks as the interleaved activation row above; each group of 8 blocks of a
// pair is stored as 8 vectors of 64 bytes, vector i holding the first row's codes 4i..4i+3 of
// its blocks 0-7 (code 4i + e of block j at byte 4j + e) and then the second row's, the codes
// as unsigned bytes (Q4_0 / Q5_0 as they are, Q8_0's biased by 128); then 64 bytes of scales
// (the first row's 8 floats, the second's). The 4-block tail group: 4 vectors of 64 bytes (each
// row's half: dword i of block j at 4j, dword i + 4 at 16 + 4j), then each row's 4 scales
// padded with 4 zeros. Per row that is 36 bytes a block and 160 for a tail group; padding
// blocks have codes and scale 0.
inline constexpr size_t kUnpackedA32BytesPerBlock = 36;
inline constexpr size_t kUnpackedA32TailBytes = 160;

// The same for the K-quants (Q4_K, Q5_K, Q6_K), in row pairs too: per super-block of a pair, 12
// vectors of 64 bytes, each the first row's 32 bytes then the second's: vectors 0-7 the 256
// codes as unsigned bytes in the interleaved Q8A256 activation order below (byte 32v + 4L + e
// of a row: code 32L + 4v + e), vectors 8-11 the scales in the form the kernels' float step
// takes (Q4_K / Q5_K: the sub-block scales as int32, the mins as int16 pairs, [d, d, -dmin,
// -dmin] x 2 as floats, zero; Q6_K: the even and the odd sub-blocks' scales as int32, all 16 as
// int16, d x 8 as floats). 384 bytes per row and super-block.
inline constexpr size_t kUnpackedKBytesPerBlock = 384;

// Paired with the K-quants (Q4_K, Q5_K, Q6_K): one scale per 256 elements (ggml's Q8_K choice,
// so a super-block's integer dot needs a single float multiply), sums per 16 elements (the
// granularity of Q6_K's scales; Q4_K/Q5_K add neighbouring pairs for their 32-element mins).
struct BlockQ8A256 {
  float d;
  int8_t qs[256];
  int16_t bsums[16];  // bsums[s] = sum of qs[16s .. 16s + 16)
};

// The interleaved Q8A256 row, prefill's layout for the K-quants (matmul quantizes every token
// once, so its layout can suit the multi-token kernels): the codes, block sums and scales of
// the nb = k / 256 plain blocks, as three arrays, the codes of each super-block transposed as
// 8 x 8 dwords. With L, v in 0..7 and e in 0..3:
//   int8_t  qs[nb][256]    at byte 0         qs[b][32v + 4L + e] = code 32L + 4v + e of block b
//   int16_t bsums[nb][16]  at byte 256 * nb  BlockQ8A256::bsums of block b (element order)
//   float   d[nb]          at byte 288 * nb  BlockQ8A256::d of block b
// zero-padded to a multiple of kQ8A256ILRowAlign bytes, so in a buffer aligned to that every
// 32-byte vector of codes and sums is aligned (a 32-byte load across a cache line costs nearly
// twice as much: the plain block is 292 bytes). 32-bit lane L of vector v of a super-block then
// holds four codes of the 32-element stretch L (Q4_K/Q5_K sub-block L; Q6_K sub-block 2L for
// v < 4, 2L + 1 for v >= 4), so the u8 x s8 dot products of the 8 vectors leave each
// sub-block's exact integer sum in its own lane, with no horizontal reduction per token (the
// weights are transposed to match once per super-block, for all tokens; kernels_x86_kquants.inc).
inline constexpr size_t kQ8A256ILRowAlign = 64;

static_assert(sizeof(BlockQ8A256) == 292);

}  // namespace vsynth::kernels
