// vec.h — the vector type of a kernel unit's ISA level and the few
// operations the hand-blocked kernels (conv.cpp, reduce.cpp) write their tiles in.
// Include only from a unit compiled once per level (after isa_unit.h): the
// width is the level's (16 bytes at the baseline, 32 with AVX2, 64 with
// AVX-512) and everything lives in the level's inline namespace.
//
//   using V = typename Vec<float>::V;   // Vec<float>::W lanes
//   V acc = V{};
//   acc = vfma(splat<V>(x[i]), vload<V>(w), acc);   // acc += x[i] * w[0:W]
//   vstore(out, acc);
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "ember/backend/cpu/isa.h"

#if !defined(EMBER_ISA_VECTOR_BYTES)
#error "vec.h: include isa_unit.h first (a unit compiled once per ISA level)"
#endif

namespace ember::cpu {
inline namespace EMBER_ISA_NS {

template <class A>
struct Vec {
  static constexpr int W = EMBER_ISA_VECTOR_BYTES / static_cast<int>(sizeof(A));
  typedef A V __attribute__((vector_size(EMBER_ISA_VECTOR_BYTES)));
};

// a vector of N lanes of T, whatever the level's width (reduce.cpp's narrow
// and wide row vectors)
template <class T, int N>
struct VecOf {
  typedef T type __attribute__((vector_size(N * sizeof(T))));
};
template <class T, int N>
using VecN = typename VecOf<T, N>::type;

// Transposes the 8 x 8 block v[row][lane] of 32-bit lanes in registers
// (v[i][j] <- v[j][i]); V is any 32-byte vector type of 8 four-byte lanes
// (__m256, or a VecN<float|int32_t, 8>). The shuffles are unpack lo/hi,
// shufps 0x44/0xEE and vperm2f128 where the level has AVX; the baseline
// splits each into two 16-byte halves. fft.cpp, matmul.cpp's packing and
// sort_simd.cpp's in-register sort use it.
template <class V>
inline void transpose8x8(V* v) {
  static_assert(sizeof(V) == 32 && sizeof(v[0][0]) == 4, "transpose8x8: 8 lanes of 4 bytes");
  V t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = __builtin_shufflevector(v[2 * i], v[2 * i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    t[2 * i + 1] = __builtin_shufflevector(v[2 * i], v[2 * i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int h = 0; h < 2; ++h) {
    u[2 * h] = __builtin_shufflevector(t[h], t[2 + h], 0, 1, 8, 9, 4, 5, 12, 13);
    u[2 * h + 1] = __builtin_shufflevector(t[h], t[2 + h], 2, 3, 10, 11, 6, 7, 14, 15);
    u[4 + 2 * h] = __builtin_shufflevector(t[4 + h], t[6 + h], 0, 1, 8, 9, 4, 5, 12, 13);
    u[5 + 2 * h] = __builtin_shufflevector(t[4 + h], t[6 + h], 2, 3, 10, 11, 6, 7, 14, 15);
  }
  for (int i = 0; i < 4; ++i) {
    v[i] = __builtin_shufflevector(u[i], u[4 + i], 0, 1, 2, 3, 8, 9, 10, 11);
    v[i + 4] = __builtin_shufflevector(u[i], u[4 + i], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}

// a * b + c, fused where the level has FMA (the baseline multiplies, then
// adds: -ffp-contract=off keeps the compiler from fusing behind our back)
template <class V>
inline V vfma(V a, V b, V c) {
  using E = std::remove_reference_t<decltype(a[0])>;
#if EMBER_ISA_HAS_AVX512
  if constexpr (sizeof(V) == 64) {
    if constexpr (sizeof(E) == 4) return (V)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
    else return (V)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
  }
#endif
#if EMBER_ISA_HAS_AVX2
  if constexpr (sizeof(V) == 32) {
    if constexpr (sizeof(E) == 4) return (V)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
    else return (V)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
  }
#endif
  (void)sizeof(E);
  return a * b + c;
}

#if EMBER_ISA_HAS_AVX512
// acc + a[2i] b[2i] + a[2i+1] b[2i+1] in each float32 lane i of acc, a and
// b holding 32 bfloat16 values each (VDPBF16PS: the products are exact,
// denormal inputs read as zero, denormal sums flushed to zero). In assembly:
// the AVX-512 units are compiled without the BF16 extension, so call it only
// where avx512_bf16_usable() (conv.cpp's and matmul.cpp's bfloat16 paths).
inline Vec<float>::V vdpbf16(Vec<float>::V acc, Vec<float>::V a, Vec<float>::V b) {
  __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}
// the two bfloat16 values at p (p[0] low, p[1] high) in every 32-bit lane:
// vdpbf16's broadcast operand
inline Vec<float>::V splat_pair(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return (Vec<float>::V)_mm512_set1_epi32(v);
}

// 16 float32 values rounded to bfloat16 as bfloat16_t(float) rounds them
// (to nearest even, a NaN kept quiet), in vector lanes: GCC leaves the
// constructor's loop scalar and branchy (matmul's and conv's bfloat16 outputs)
// (each lane's bfloat16 in its low 16 bits)
inline VecN<uint32_t, 16> bf16_lanes(Vec<float>::V v) {
  using U = VecN<uint32_t, 16>;
  U u;
  std::memcpy(&u, &v, sizeof u);
  const U r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const U nan = (u >> 16) | 0x40u;
  return (u & 0x7fffffffu) > 0x7f800000u ? nan : r;
}
inline VecN<uint16_t, 16> round_bf16(Vec<float>::V v) {
  return __builtin_convertvector(bf16_lanes(v), VecN<uint16_t, 16>);
}

// 32 float32 values (a, then b) rounded to bfloat16 as round_bf16 rounds
// them, in one register: a's 16 words, then b's
inline __m512i round_bf16x2(Vec<float>::V a, Vec<float>::V b) {
  const __m512i even = _mm512_set_epi16(62, 60, 58, 56, 54, 52, 50, 48, 46, 44, 42, 40, 38, 36, 34, 32, 30, 28, 26,
                                        24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  return _mm512_permutex2var_epi16((__m512i)bf16_lanes(a), even, (__m512i)bf16_lanes(b));
}

// round_bf16x2 in one instruction (VCVTNE2PS2BF16: AVX-512 BF16, where
// avx512_bf16_usable()): the same bits for every input but denormals, which
// it reads as zero (so for float32 sums that the tile unit has flushed)
inline __m512i cvt_bf16x2(Vec<float>::V a, Vec<float>::V b) {
  __m512i r;
  __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(b), "v"(a));
  return r;
}

// The first n (1..16) of 16 float32 values rounded to bfloat16 (round_bf16)
// and stored at dst
inline void store_bf16(void* dst, Vec<float>::V v, int64_t n) {
  const __mmask16 m = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
  _mm256_mask_storeu_epi16(dst, m, (__m256i)round_bf16(v));
}

// A 16 x 16 matrix of 32-bit words, one row a register, transposed in place
// (r[j] becomes column j).
inline void transpose16_epi32(__m512i (&r)[16]) {
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // r[4i + c]: 128-bit lane l holds word 4l + c of rows 4i..4i+3
  for (int c = 0; c < 4; ++c) {
    const __m512i v0 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x88), v1 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xDD);
    const __m512i u0 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x88);
    const __m512i u1 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xDD);
    t[c] = _mm512_shuffle_i32x4(v0, u0, 0x88);       // word c
    t[4 + c] = _mm512_shuffle_i32x4(v1, u1, 0x88);   // word 4 + c
    t[8 + c] = _mm512_shuffle_i32x4(v0, u0, 0xDD);   // word 8 + c
    t[12 + c] = _mm512_shuffle_i32x4(v1, u1, 0xDD);  // word 12 + c
  }
  for (int j = 0; j < 16; ++j) r[j] = t[j];
}

// The AMX tile configuration of palette 1 (ldtilecfg): per tile, its rows
// and the bytes of a row (qmm.cpp's and matmul.cpp's tile paths).
struct alignas(64) AmxConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes a row, per tile
  uint8_t rows[16] = {};
};
// The tile configuration cfg loaded on this thread (ldtilecfg). GCC 12's
// _tile_loadconfig declares a read of 8 of its 64 bytes, so the stores of
// the rows and widths could be dropped as dead (a tile instruction then
// faults, #UD): this asm reads the whole configuration.
inline void amx_load(const AmxConfig& cfg) { __asm__ __volatile__("ldtilecfg %0" : : "m"(cfg)); }
// Tiles 0..n-1 configured as `rows` rows x `colsb` bytes.
inline void amx_configure(int n, int rows, int colsb) {
  AmxConfig cfg;
  for (int t = 0; t < n; ++t) cfg.rows[t] = static_cast<uint8_t>(rows), cfg.colsb[t] = static_cast<uint16_t>(colsb);
  amx_load(cfg);
}
#endif

// n float16 values widened to float32, and float32 values rounded to
// float16: F16C's VCVTPH2PS / VCVTPS2PH (to nearest even) at the AVX2 and
// AVX-512 levels, float16_t's own conversions (half_bits.h; the same bits,
// NaNs included) at the baseline and for the tail. The elementwise loops and
// reductions pass float16 through these in pieces on the stack.
inline void widen_f16(const float16_t* x, float* o, int64_t n) {
  int64_t i = 0;
#if EMBER_ISA_HAS_AVX512
  // (the zero-masked forms: GCC 12 warns, once inlined, of the plain
  // forms' undefined pass-through operand)
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(o + i, _mm512_maskz_cvtph_ps(0xffff, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i))));
#elif EMBER_ISA_HAS_AVX2
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + i))));
#endif
  for (; i < n; ++i) o[i] = static_cast<float>(x[i]);
}
inline void narrow_f16(const float* x, float16_t* o, int64_t n) {
  int64_t i = 0;
#if EMBER_ISA_HAS_AVX512
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i),
                        _mm512_maskz_cvtps_ph(0xffff, _mm512_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#elif EMBER_ISA_HAS_AVX2
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(o + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
#endif
  for (; i < n; ++i) o[i] = float16_t(x[i]);
}

// o[0..n) = f(in[0][i], ...) over N float16 operands, each dense (stride
// 1) or one value (stride 0), in float32 pieces on the stack: the F16C
// conversions, and f's float32 loop vectorized as for float32 arrays.
constexpr int64_t kHalfPiece = 256;
template <int N, class O, class F>
inline void f16_run(const std::array<const float16_t*, N>& in, const std::array<int64_t, N>& st, O* o, int64_t n,
                    F&& f) {
  alignas(64) float buf[N][kHalfPiece];
  alignas(64) float r[kHalfPiece];
  for (int k = 0; k < N; ++k) {
    if (st[k] == 0) {
      const float v = static_cast<float>(in[k][0]);
      for (int64_t j = 0; j < kHalfPiece; ++j) buf[k][j] = v;
    }
  }
  auto at = [&](int64_t j) {
    if constexpr (N == 1) return f(buf[0][j]);
    else return f(buf[0][j], buf[1][j]);
  };
  for (int64_t i = 0; i < n; i += kHalfPiece) {
    const int64_t m = std::min(kHalfPiece, n - i);
    for (int k = 0; k < N; ++k)
      if (st[k] != 0) widen_f16(in[k] + i, buf[k], m);
    if constexpr (std::is_same_v<O, float16_t>) {
      for (int64_t j = 0; j < m; ++j) r[j] = at(j);
      narrow_f16(r, o + i, m);
    } else {
      for (int64_t j = 0; j < m; ++j) o[i + j] = static_cast<O>(at(j));
    }
  }
}

// unaligned loads and stores of one vector
template <class V, class A>
inline V vload(const A* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
template <class V, class A>
inline void vstore(A* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}
// x in every lane (x - +0 is x for every x, -0 included, so this is a plain broadcast)
template <class V, class A>
inline V splat(A x) {
  return x - V{};
}

// A store of one whole level-width vector that bypasses the caches (no read
// for ownership): for outputs far larger than the caches, written once, in
// whole cache lines. p aligned to the vector; stream_fence() before the
// data is read by another thread.
constexpr int64_t kStreamBytes = int64_t(16) << 20;  // outputs this large go around the caches
template <class V, class A>
inline void vstream(A* p, V v) {
  static_assert(sizeof(V) == EMBER_ISA_VECTOR_BYTES, "vstream: a level-width vector");
#if !defined(__x86_64__)
  vstore(p, v);
#elif EMBER_ISA_HAS_AVX512
  if constexpr (sizeof(A) == 4) _mm512_stream_ps(reinterpret_cast<float*>(p), (__m512)v);
  else _mm512_stream_pd(reinterpret_cast<double*>(p), (__m512d)v);
#elif EMBER_ISA_HAS_AVX2
  if constexpr (sizeof(A) == 4) _mm256_stream_ps(reinterpret_cast<float*>(p), (__m256)v);
  else _mm256_stream_pd(reinterpret_cast<double*>(p), (__m256d)v);
#else
  if constexpr (sizeof(A) == 4) _mm_stream_ps(reinterpret_cast<float*>(p), (__m128)v);
  else _mm_stream_pd(reinterpret_cast<double*>(p), (__m128d)v);
#endif
}
inline void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// the first `cols` lanes (all of them when cols >= the width); the rest zero
template <class V, class A>
inline V load_cols(const A* src, int64_t cols) {
  constexpr int W = sizeof(V) / sizeof(A);
  if (cols >= W) return vload<V>(src);
  V v = V{};
  for (int64_t i = 0; i < cols; ++i) v[i] = src[i];
  return v;
}
template <class V, class A>
inline void store_cols(A* dst, const V& v, int64_t cols) {
  constexpr int W = sizeof(V) / sizeof(A);
  if (cols >= W) {
    vstore(dst, v);
  } else {
    for (int64_t i = 0; i < cols; ++i) dst[i] = v[i];
  }
}

// sum over k of a[k] b[k] in 16 fixed lanes, then a fixed tree, then the
// tail: the same bits at every level and vector width
template <class C>
inline C lane_dot(const C* a, const C* b, int64_t n) {
  using V16 = VecN<C, 16>;
  V16 acc = V16{};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    V16 x, y;
    std::memcpy(&x, a + k, sizeof x);
    std::memcpy(&y, b + k, sizeof y);
    acc = acc + x * y;
  }
  C l[16];
  std::memcpy(l, &acc, sizeof l);
  for (int w = 8; w >= 1; w /= 2)
    for (int i = 0; i < w; ++i) l[i] = l[i] + l[i + w];
  C r = l[0];
  for (; k < n; ++k) r = r + a[k] * b[k];
  return r;
}

}  // namespace EMBER_ISA_NS
}  // namespace ember::cpu
