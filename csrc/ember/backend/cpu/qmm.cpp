// The quantized matrix product (QuantizedMatmul's kernel, arguments in
// backend/cpu/qmm.h), compiled once per ISA level.
//
// Paths, first match:
//  - int8 matrix-vector (the int8 setting on, affine 4/8 bits, transpose,
//    M <= 8, K a multiple of 128, finite x): x quantized to int8 per block
//    of 32, integer dot products over each weight row (below);
//  - int8 matrix-matrix (the same but M > 8, any K that the groups of 32,
//    64 or 128 divide): the same arithmetic as register-blocked tiles over a
//    transposed weight panel (below);
//  - float matrix-vector (transpose, M <= 8, codes of 1, 2, 4 or 8 bits):
//    each output row's codes are unpacked in registers, 16 words at a time:
//    lane j of a chunk holds word j, whose `per` codes are the consecutive
//    columns chunk + j*per + i, so x is read through a copy permuted the same
//    way (xp[i*16 + j]); the chunk's lane sums are scaled by their group's
//    scale and the biases enter once per group as bias * sum(x over the
//    group). No dequantized weights are written anywhere.
//  - otherwise: tiles of the weights dequantized into a per-thread float32
//    panel (about 128 KB) and multiplied by sgemm, accumulating over K tiles.
// Work is split over output rows/column blocks (and the batch), handed out
// to the pool's threads one task at a time (float paths: a fixed split).
// The lane arithmetic is multiply then add, never fused, so every level
// computes the same bits.
#include "ember/backend/cpu/isa_unit.h"

#if !defined(EMBER_ISA_SINGLE) && EMBER_ISA_LEVEL == 4
// the 16 lanes of the matrix-vector kernel in one zmm register (before the
// entry point's declaration, which must carry the same target)
#pragma GCC target("prefer-vector-width=512")
#endif
#include "ember/backend/cpu/qmm.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/vec.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

float half_to_float(uint16_t h) {
  float16_t v;
  std::memcpy(&v, &h, 2);
  return static_cast<float>(v);
}

// Bytes of one scale (or bias) of scale_kind.
inline int64_t scale_bytes(int kind) { return kind == 0 ? 4 : kind == 3 ? 1 : 2; }

// GCC 12 warns about the undefined pass-through operand inside its own
// AVX-512 intrinsic headers (a false positive)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Row r's scales (or biases) as float32 (n values); inlined, as the
// matrix-vector kernels call it twice a row.
[[gnu::always_inline]] inline void row_scales(const QmmArgs& a, const void* base, int64_t r, int64_t n, float* dst) {
  if (a.scale_kind == 0) {
    std::memcpy(dst, static_cast<const float*>(base) + r * n, n * sizeof(float));
  } else if (a.scale_kind == 1) {
    const uint16_t* p = static_cast<const uint16_t*>(base) + r * n;
    int64_t i = 0;
#if EMBER_ISA_HAS_AVX512
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i))));
#endif
#if EMBER_ISA_HAS_AVX2  // F16C (exact conversions: the same values as below)
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i))));
#endif
    for (; i < n; ++i) dst[i] = half_to_float(p[i]);
  } else if (a.scale_kind == 2) {
    const uint16_t* p = static_cast<const uint16_t*>(base) + r * n;
    int64_t i = 0;
#if EMBER_ISA_HAS_AVX512
    for (; i + 16 <= n; i += 16) {
      const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
      _mm512_storeu_si512(dst + i, _mm512_slli_epi32(h, 16));
    }
#endif
#if EMBER_ISA_HAS_AVX2
    for (; i + 8 <= n; i += 8) {
      const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), _mm256_slli_epi32(h, 16));
    }
#elif defined(__SSE4_1__)
    for (; i + 4 <= n; i += 4) {
      const __m128i h = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + i)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm_slli_epi32(h, 16));
    }
#endif
    for (; i < n; ++i) {
      uint32_t u = static_cast<uint32_t>(p[i]) << 16;
      std::memcpy(dst + i, &u, 4);
    }
  } else {
    const uint8_t* p = static_cast<const uint8_t*>(base) + r * n;
    const float* t = a.mode == 3 ? fp8_e4m3_values() : e8m0_values();
    for (int64_t i = 0; i < n; ++i) dst[i] = t[p[i]];
  }
}

#pragma GCC diagnostic pop

// The value table of the codes (nullptr: affine, the code itself).
const float* code_table(int mode) {
  if (mode == 1 || mode == 3) return kFp4Values;
  if (mode == 2) return fp8_e4m3_values();
  return nullptr;
}

// Codes c0 .. c0+n-1 of a row whose packed bytes start at `row`.
void unpack_codes(const uint8_t* row, int bits, int64_t c0, int64_t n, uint8_t* dst) {
  const uint32_t mask = (1u << bits) - 1;
  if ((bits & (bits - 1)) == 0) {
    const int per = 32 / bits;
    const uint32_t* w = reinterpret_cast<const uint32_t*>(row);
    for (int64_t i = 0; i < n; ++i) {
      int64_t c = c0 + i;
      dst[i] = static_cast<uint8_t>((w[c / per] >> (bits * (c % per))) & mask);
    }
    return;
  }
  const int per = bits == 6 ? 4 : 8, nbytes = per * bits / 8;
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = c0 + i, u = c / per;
    uint64_t word = 0;
    for (int b = 0; b < nbytes; ++b) word |= static_cast<uint64_t>(row[u * nbytes + b]) << (8 * b);
    dst[i] = static_cast<uint8_t>((word >> (bits * (c % per))) & mask);
  }
}

// Dequantizes rows [r0, r1) x columns [c0, c1) (c0 a multiple of the group
// size) of batch item b into dst (row stride ld).
struct TileScratch {
  std::vector<float> s, bi;
  std::vector<uint8_t> codes;
};

void dequant_tile(const QmmArgs& a, int64_t b, int64_t R, int64_t C, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                  float* dst, int64_t ld, TileScratch& t) {
  const int64_t G = C / a.group_size, wc = C * a.bits / 32;
  const float* table = code_table(a.mode);
  t.s.resize(G);
  t.bi.resize(G);
  t.codes.resize(c1 - c0);
  const bool pow2 = (a.bits & (a.bits - 1)) == 0;
  const int per = 32 / a.bits, gs = a.group_size;
  const uint32_t mask = (1u << a.bits) - 1;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t row = b * R + r;
    row_scales(a, a.scales, row, G, t.s.data());
    if (a.mode == 0) row_scales(a, a.biases, row, G, t.bi.data());
    float* d = dst + (r - r0) * ld;
    if (pow2) {
      // whole groups: every group holds gs / per words
      const uint32_t* wr = a.w + row * wc;
      for (int64_t g = c0 / gs; g * gs < c1; ++g) {
        const float sc = t.s[g], bs = a.mode == 0 ? t.bi[g] : 0.0f;
        float* dg = d + (g * gs - c0);
        const uint32_t* wg = wr + g * gs / per;
        for (int u = 0; u < gs / per; ++u) {
          const uint32_t word = wg[u];
          for (int i = 0; i < per; ++i) {
            const uint32_t q = (word >> (a.bits * i)) & mask;
            dg[u * per + i] = table ? table[q] * sc : static_cast<float>(q) * sc + bs;
          }
        }
      }
      continue;
    }
    unpack_codes(reinterpret_cast<const uint8_t*>(a.w + row * wc), a.bits, c0, c1 - c0, t.codes.data());
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t g = c / gs;
      const uint8_t q = t.codes[c - c0];
      d[c - c0] = table ? table[q] * t.s[g] : static_cast<float>(q) * t.s[g] + t.bi[g];
    }
  }
}

void qmm_panels(const QmmArgs& a) {
  SingleThreadedBlas one_thread;
  const int64_t M = a.M, N = a.N, K = a.K;
  if (a.transpose) {
    // W (N, K): blocks of NB rows, K tiles of KB
    const int64_t NB = 64, KB = 512, nblocks = (N + NB - 1) / NB;
    parallel_for(a.batch * nblocks, 1, [&](int64_t t0, int64_t t1) {
      std::vector<float> panel(NB * KB);
      TileScratch scratch;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / nblocks, n0 = (t % nblocks) * NB, n1 = std::min(N, n0 + NB);
        const float* x = a.x + b * M * K;
        float* out = a.out + b * M * N;
        for (int64_t k0 = 0; k0 < K; k0 += KB) {
          const int64_t k1 = std::min(K, k0 + KB);
          dequant_tile(a, b, N, K, n0, n1, k0, k1, panel.data(), KB, scratch);
          scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, n1 - n0, k1 - k0, 1.0f, x + k0, K,
                            panel.data(), KB, k0 == 0 ? 0.0f : 1.0f, out + n0, N);
        }
      }
    });
  } else {
    // W (K, N): blocks of NB columns, K tiles of KB rows
    const int64_t NB = 256, KB = 128, nblocks = (N + NB - 1) / NB;
    parallel_for(a.batch * nblocks, 1, [&](int64_t t0, int64_t t1) {
      std::vector<float> panel(NB * KB);
      TileScratch scratch;
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t b = t / nblocks, n0 = (t % nblocks) * NB, n1 = std::min(N, n0 + NB);
        const float* x = a.x + b * M * K;
        float* out = a.out + b * M * N;
        for (int64_t k0 = 0; k0 < K; k0 += KB) {
          const int64_t k1 = std::min(K, k0 + KB);
          dequant_tile(a, b, K, N, k0, k1, n0, n1, panel.data(), n1 - n0, scratch);
          scipy_cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, n1 - n0, k1 - k0, 1.0f, x + k0, K,
                            panel.data(), n1 - n0, k0 == 0 ? 0.0f : 1.0f, out + n0, N);
        }
      }
    });
  }
}

constexpr int kMaxVecRows = 8;
constexpr int kL = 16;  // lanes (words per chunk) of the matrix-vector kernel, on every level

// One chunk (kL words) times MR rows of the permuted x: tmp[m][j] = sum_i
// v(code i of word j) * xp[m][i*kL + j] (MR fixed, so tmp stays in registers).
template <int BITS, int VAL, int MR>
inline void chunk_dot(const uint32_t* wv, const float* xc, int64_t Kp, const float* table, float (&tmp)[MR][kL]) {
  constexpr int per = 32 / BITS;
  constexpr uint32_t mask = (1u << BITS) - 1;
  for (int m = 0; m < MR; ++m)
    for (int j = 0; j < kL; ++j) tmp[m][j] = 0.0f;
  uint32_t w[kL];
  for (int j = 0; j < kL; ++j) w[j] = wv[j];
  for (int i = 0; i < per; ++i) {
    float v[kL];
    for (int j = 0; j < kL; ++j) {
      const uint32_t q = (w[j] >> (BITS * i)) & mask;
      v[j] = VAL == 0 ? static_cast<float>(q) : table[q];
    }
    for (int m = 0; m < MR; ++m) {
      const float* xm = xc + m * Kp + i * kL;
      for (int j = 0; j < kL; ++j) tmp[m][j] = tmp[m][j] + v[j] * xm[j];
    }
  }
}

// Output rows [n0, n1) of batch item b for the MR rows m0.. of x, given
// permuted (xp: rows of Kp values) with its group sums (xsum: rows of G).
template <int BITS, int VAL, int MR>  // VAL: 0 affine, 1 fp4, 2 fp8
void qmv_rows(const QmmArgs& a, int64_t b, int64_t n0, int64_t n1, int64_t m0, const float* xp, int64_t Kp,
              const float* xsum) {
  constexpr int per = 32 / BITS, CK = kL * per;
  const int64_t M = a.M, N = a.N, K = a.K, gs = a.group_size, G = K / gs, wc = K * BITS / 32;
  const int64_t chunks = Kp / CK, full = wc / kL;
  int lg = 0;
  while ((int64_t(1) << lg) < gs) ++lg;
  const bool one_scale = gs % CK == 0;  // every chunk lies in one group
  const float* table = code_table(a.mode);
  const float* x0 = xp + m0 * Kp;
  float s[1024], bi[1024];  // G <= 1024 (checked by the caller)
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t row = b * N + n;
    row_scales(a, a.scales, row, G, s);
    if (VAL == 0) row_scales(a, a.biases, row, G, bi);
    const uint32_t* wr = a.w + row * wc;
    float total[MR][kL] = {};
    float tmp[MR][kL];
    for (int64_t c = 0; c < chunks; ++c) {
      const uint32_t* wv = wr + c * kL;
      uint32_t tail[kL];
      if (c >= full) {  // the last, partial chunk: zero words past the row
        for (int j = 0; j < kL; ++j) tail[j] = c * kL + j < wc ? wr[c * kL + j] : 0u;
        wv = tail;
      }
      chunk_dot<BITS, VAL, MR>(wv, x0 + c * CK, Kp, table, tmp);
      if (one_scale) {
        const float sc = s[(c * CK) >> lg];
        for (int m = 0; m < MR; ++m)
          for (int j = 0; j < kL; ++j) total[m][j] = total[m][j] + tmp[m][j] * sc;
      } else {
        float sl[kL];
        for (int j = 0; j < kL; ++j) {
          const int64_t k0 = c * CK + j * per;
          sl[j] = k0 < K ? s[k0 >> lg] : 0.0f;
        }
        for (int m = 0; m < MR; ++m)
          for (int j = 0; j < kL; ++j) total[m][j] = total[m][j] + tmp[m][j] * sl[j];
      }
    }
    for (int m = 0; m < MR; ++m) {
      // a fixed pairwise tree over the lanes
      float h[kL];
      for (int j = 0; j < kL; ++j) h[j] = total[m][j];
      for (int w = kL / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; ++j) h[j] = h[j] + h[j + w];
      float r = h[0];
      if (VAL == 0) {
        const float* xs = xsum + (m0 + m) * G;
        for (int64_t g = 0; g < G; ++g) r = r + bi[g] * xs[g];
      }
      a.out[(b * M + m0 + m) * N + n] = r;
    }
  }
}

#if EMBER_ISA_HAS_AVX512
// GCC 12 warns about the undefined pass-through operand inside its own
// AVX-512 intrinsic headers (a false positive)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// qmv_rows with AVX-512 intrinsics: the same lanes and the same operations
// in the same order (so the same bits), one zmm register per lane vector.
template <int BITS, int VAL, int MR>
void qmv_rows_512(const QmmArgs& a, int64_t b, int64_t n0, int64_t n1, int64_t m0, const float* xp, int64_t Kp,
                  const float* xsum) {
  static_assert(kL == 16, "one zmm register per chunk");
  constexpr int per = 32 / BITS, CK = kL * per;
  const int64_t M = a.M, N = a.N, K = a.K, gs = a.group_size, G = K / gs, wc = K * BITS / 32;
  const int64_t chunks = Kp / CK, full = wc / kL;
  int lg = 0;
  while ((int64_t(1) << lg) < gs) ++lg;
  const bool one_scale = gs % CK == 0;
  const float* table = code_table(a.mode);
  const __m512i mask = _mm512_set1_epi32((1 << BITS) - 1);
  const __m512 fp4 = _mm512_loadu_ps(kFp4Values);
  const __m512i lane_k = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                            _mm512_set1_epi32(per));
  const __m512i lane_g = _mm512_srl_epi32(lane_k, _mm_cvtsi32_si128(lg));
  const float* x0 = xp + m0 * Kp;
  alignas(64) float s[1024 + 16] = {}, bi[1024];  // 16 past the last group: read, never used
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t row = b * N + n;
    row_scales(a, a.scales, row, G, s);
    if (VAL == 0) row_scales(a, a.biases, row, G, bi);
    const uint32_t* wr = a.w + row * wc;
    __m512 total[MR];
    for (int m = 0; m < MR; ++m) total[m] = _mm512_setzero_ps();
    for (int64_t c = 0; c < chunks; ++c) {
      __m512i w;
      if (c < full) {
        w = _mm512_loadu_si512(wr + c * kL);
      } else {
        const __mmask16 live = static_cast<__mmask16>((1u << (wc - c * kL)) - 1);
        w = _mm512_maskz_loadu_epi32(live, wr + c * kL);
      }
      const float* xc = x0 + c * CK;
      __m512 tmp[MR];
      for (int m = 0; m < MR; ++m) tmp[m] = _mm512_setzero_ps();
      for (int i = 0; i < per; ++i) {
        const __m512i q = _mm512_and_si512(_mm512_srli_epi32(w, BITS * i), mask);
        __m512 v;
        if (VAL == 0) v = _mm512_cvtepi32_ps(q);
        else if (VAL == 1) v = _mm512_permutexvar_ps(q, fp4);
        else v = _mm512_i32gather_ps(q, table, 4);
        for (int m = 0; m < MR; ++m)
          tmp[m] = _mm512_add_ps(tmp[m], _mm512_mul_ps(v, _mm512_loadu_ps(xc + m * Kp + i * kL)));
      }
      __m512 sl;
      if (one_scale) {
        sl = _mm512_set1_ps(s[(c * CK) >> lg]);
      } else {
        // the chunk's groups start at g0; lane j's is g0 + (j * per >> lg)
        const __m512i k0 = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(c * CK)), lane_k);
        const __mmask16 inside = _mm512_cmplt_epi32_mask(k0, _mm512_set1_epi32(static_cast<int>(K)));
        sl = _mm512_maskz_permutexvar_ps(inside, lane_g, _mm512_loadu_ps(s + ((c * CK) >> lg)));
      }
      for (int m = 0; m < MR; ++m) total[m] = _mm512_add_ps(total[m], _mm512_mul_ps(tmp[m], sl));
    }
    for (int m = 0; m < MR; ++m) {
      alignas(64) float h[kL];
      _mm512_store_ps(h, total[m]);
      for (int wdt = kL / 2; wdt >= 1; wdt /= 2)
        for (int j = 0; j < wdt; ++j) h[j] = h[j] + h[j + wdt];
      float r = h[0];
      if (VAL == 0) {
        const float* xs = xsum + (m0 + m) * G;
        for (int64_t g = 0; g < G; ++g) r = r + bi[g] * xs[g];
      }
      a.out[(b * M + m0 + m) * N + n] = r;
    }
  }
}
#pragma GCC diagnostic pop
#define EMBER_QMV_ROWS qmv_rows_512
#else
#define EMBER_QMV_ROWS qmv_rows
#endif

template <int BITS, int VAL>
void qmv(const QmmArgs& a) {
  constexpr int per = 32 / BITS, CK = kL * per;
  const int64_t M = a.M, N = a.N, K = a.K, G = K / a.group_size;
  const int64_t Kp = (K + CK - 1) / CK * CK;
  std::vector<float> xp(a.batch * M * Kp, 0.0f), xsum(a.batch * M * G, 0.0f);
  for (int64_t bm = 0; bm < a.batch * M; ++bm) {
    const float* x = a.x + bm * K;
    float* p = xp.data() + bm * Kp;
    for (int64_t k = 0; k < K; ++k) {
      const int64_t c = k / CK, r = k % CK;  // r = j * per + i
      p[c * CK + (r % per) * kL + r / per] = x[k];
    }
    for (int64_t g = 0; g < G; ++g) {
      float acc = 0.0f;
      for (int64_t k = 0; k < a.group_size; ++k) acc = acc + x[g * a.group_size + k];
      xsum[bm * G + g] = acc;
    }
  }
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(K, 1));
  parallel_for(a.batch * N, grain, [&](int64_t t0, int64_t t1) {
    while (t0 < t1) {
      const int64_t b = t0 / N, n0 = t0 % N, n1 = std::min(N, n0 + (t1 - t0));
      const float* xb = xp.data() + b * M * Kp;
      const float* sb = xsum.data() + b * M * G;
      for (int64_t m0 = 0; m0 < M; m0 += 4) {
        switch (std::min<int64_t>(4, M - m0)) {
          case 1: EMBER_QMV_ROWS<BITS, VAL, 1>(a, b, n0, n1, m0, xb, Kp, sb); break;
          case 2: EMBER_QMV_ROWS<BITS, VAL, 2>(a, b, n0, n1, m0, xb, Kp, sb); break;
          case 3: EMBER_QMV_ROWS<BITS, VAL, 3>(a, b, n0, n1, m0, xb, Kp, sb); break;
          default: EMBER_QMV_ROWS<BITS, VAL, 4>(a, b, n0, n1, m0, xb, Kp, sb); break;
        }
      }
      t0 += n1 - n0;
    }
  });
}

// --------------------------------------------------------------------------
// The int8 matrix-vector path (affine 4- and 8-bit weights, as llama.cpp's
// Q8 activations): x is quantized per block of 32 columns to int8 (d =
// max|x| / 127, q = round(x / d)), each chunk of 64 weight bytes is
// multiplied by the int8 x with integer dot products into 16 int32 lanes
// (lane l: the bytes 4l..4l+3 of the chunk, exact), and each lane's sum is
// scaled in float by its group's scale times its block's d and added to 16
// float lane totals, reduced by the same pairwise tree as the float path;
// biases enter as bias * the group's sum of the quantized x (sum over its
// blocks of d * the integer sum of q), as llama.cpp's Q8_1 sums do, so that
// the result is that of the quantized x times the weights themselves (its
// error bounded by sum over blocks of d / 2 * sum |w|). The lane
// sums are exact integers, so every level (VNNI, pmaddubsw at 512, 256 or
// 128 bits, or the scalar loop) gives the same bits.
//
// Layouts: 4 bits: a chunk is 128 columns; byte p holds columns 2p (low
// nibble) and 2p+1 (high), so x's chunk is stored as 64 int8 of the even
// columns then 64 of the odd ones; lane l covers columns 8l..8l+7. 8 bits:
// a chunk is 64 columns, byte p column p, x in column order; lane l covers
// columns 4l..4l+3.
constexpr int kXB = 32;  // columns per activation block

template <int BITS>
constexpr int int8_chunk_cols() { return BITS == 4 ? 128 : 64; }

// GCC 12 warns about the undefined pass-through operand inside its own
// AVX-512 intrinsic headers (a false positive, as below)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// One block of kXB values of x (finite) to int8, in column order: d =
// max |x| / 127, q = x / d rounded to nearest even and clamped to +-127 (a
// block below 127 * FLT_MIN quantizes to zero: 1 / d would overflow).
// Returns d; isum gets the block's sum of q. A max is exact in any order and
// the sum is an exact integer, so the vector form and the loops give the
// same bits.
inline float quantize_block(const float* xb, int8_t* q, int32_t& isum) {
#if EMBER_ISA_HAS_AVX512
  const __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
#else
  // in 8 lanes (one chain of 32 dependent maxima was most of the time)
  float lane[8] = {};
  for (int k = 0; k < kXB; ++k) lane[k % 8] = std::max(lane[k % 8], std::fabs(xb[k]));
  float amax = 0.0f;
  for (int j = 0; j < 8; ++j) amax = std::max(amax, lane[j]);
#endif
  const float db = amax / 127.0f;
  const float id = db >= std::numeric_limits<float>::min() ? 1.0f / db : 0.0f;
#if EMBER_ISA_HAS_AVX512
  const __m512 vid = _mm512_set1_ps(id), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
  auto quant = [&](__m512 v) {
    const __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(v, vid), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    return _mm512_cvtps_epi32(_mm512_min_ps(hi, _mm512_max_ps(lo, r)));
  };
  const __m512i i0 = quant(v0), i1 = quant(v1);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(i0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(i1));
  isum = _mm512_reduce_add_epi32(_mm512_add_epi32(i0, i1));
#else
  int32_t s = 0;
  for (int k = 0; k < kXB; ++k) {
    // round to nearest even (|x * id| <= 127.x: adding 1.5 * 2^23 leaves
    // units), as nearbyint in the default rounding mode
    float v = (xb[k] * id + 12582912.0f) - 12582912.0f;
    v = std::min(127.0f, std::max(-127.0f, v));
    q[k] = static_cast<int8_t>(v);
    s += q[k];
  }
  isum = s;
#endif
  return db;
}

// xs[g] for the G groups of a row: its blocks' d times their sums of q,
// added in block order
inline void group_sums(const float* d, const int32_t* isum, int64_t G, int64_t bpg, float* xs) {
  for (int64_t g = 0; g < G; ++g) {
    float acc = 0.0f;
    for (int64_t b = g * bpg; b < (g + 1) * bpg; ++b) acc = acc + d[b] * static_cast<float>(isum[b]);
    xs[g] = acc;
  }
}
#pragma GCC diagnostic pop

// x rows (M of K) -> xq (M rows of K int8, laid out as above), dl (M rows
// of K / 32 floats: each block's d) and xs (M rows of K / gs: each group's
// sum of the quantized x).
template <int BITS>
void quantize_x_int8(const float* x, int64_t M, int64_t K, int64_t gs, int8_t* xq, float* dl, float* xs) {
  constexpr int CK = int8_chunk_cols<BITS>();
  const int64_t chunks = K / CK;
  std::vector<int8_t> q(K);
  std::vector<int32_t> isum_of(K / kXB);
  for (int64_t m = 0; m < M; ++m) {
    const float* xm = x + m * K;
    float* d = dl + m * (K / kXB);
    for (int64_t b = 0; b < K / kXB; ++b) d[b] = quantize_block(xm + b * kXB, q.data() + b * kXB, isum_of[b]);
    group_sums(d, isum_of.data(), K / gs, gs / kXB, xs + m * (K / gs));
    int8_t* o = xq + m * K;
    for (int64_t c = 0; c < chunks; ++c) {
      const int8_t* qc = q.data() + c * CK;
      int8_t* oc = o + c * CK;
      if (BITS == 4) {
        for (int p = 0; p < 64; ++p) {
          oc[p] = qc[2 * p];
          oc[64 + p] = qc[2 * p + 1];
        }
      } else {
        std::memcpy(oc, qc, CK);
      }
    }
  }
}

// sum over g of bi[g] * xs[g]: 8 partial sums (g mod 8), then a pairwise
// tree (a fixed order, independent of the vector width)
#if EMBER_ISA_HAS_AVX2
// p[0..8) summed by the tree below (w = 4, 2, 1), in registers
inline float tree8(__m256 v) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}
#endif

inline float bias_dot(const float* bi, const float* xs, int64_t G) {
  int64_t g = 0;
#if EMBER_ISA_HAS_AVX2
  __m256 v = _mm256_setzero_ps();
  for (; g + 8 <= G; g += 8) v = _mm256_add_ps(v, _mm256_mul_ps(_mm256_loadu_ps(bi + g), _mm256_loadu_ps(xs + g)));
  if (g == G) return tree8(v);
  alignas(32) float p[8];
  _mm256_store_ps(p, v);
#else
  float p[8] = {};
  for (; g + 8 <= G; g += 8)
    for (int j = 0; j < 8; ++j) p[j] = p[j] + bi[g + j] * xs[g + j];
#endif
  for (int j = 0; g < G; ++g, ++j) p[j] = p[j] + bi[g] * xs[g];
  for (int w = 4; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) p[j] = p[j] + p[j + w];
  return p[0];
}

#if defined(__SSSE3__) || EMBER_ISA_HAS_AVX2
// GCC 12 warns about the undefined pass-through operand inside its own
// AVX-512 intrinsic headers (a false positive, as above)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// One register of the level: B bytes of weights, B / 4 int32 lanes.
#if EMBER_ISA_HAS_AVX512
struct I8V {
  using I = __m512i;
  using F = __m512;
  static constexpr int B = 64;
  static I load(const void* p) { return _mm512_loadu_si512(p); }
  static I set1_8(int v) { return _mm512_set1_epi8(static_cast<char>(v)); }
  static I set1_16(int v) { return _mm512_set1_epi16(static_cast<short>(v)); }
  static I set1_32(int v) { return _mm512_set1_epi32(v); }
  static I band(I a, I b) { return _mm512_and_si512(a, b); }
  static I srl4(I a) { return _mm512_srli_epi16(a, 4); }
  static I dot_u8s8(I u, I s, I ones) { return _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), ones); }
  static I dot2_u8s8(I u, I s, I v, I t, I ones) {
    return _mm512_madd_epi16(_mm512_add_epi16(_mm512_maddubs_epi16(u, s), _mm512_maddubs_epi16(v, t)), ones);
  }
  static I add32(I a, I b) { return _mm512_add_epi32(a, b); }
  static I zero() { return _mm512_setzero_si512(); }
  static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
  static F fzero() { return _mm512_setzero_ps(); }
  static F fload(const float* p) { return _mm512_loadu_ps(p); }
  static F fset1(float v) { return _mm512_set1_ps(v); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static void fstore(float* p, F a) { _mm512_storeu_ps(p, a); }
  // lane j: p[j * CPL / 32], the block of its columns (CPL columns a lane;
  // at most 4 blocks a register): a 16-byte load, no line split
  template <int CPL>
  static F expand(const float* p) {
    const __m512i ctrl = CPL == 8 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3)
                                  : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    return _mm512_permutevar_ps(_mm512_broadcast_f32x4(_mm_loadu_ps(p)), ctrl);
  }
  // lane j: s[(b0 + j) * 32 >> lg], the group of block b0 + j (b0 a
  // multiple of 16, groups powers of 2 of at least a block). The indices
  // are made in registers (a table on the stack, rewritten a row, stalled
  // each row on its store forwarding), and the load is of the 16 groups
  // row_scales stored together (16 blocks span at most 16 groups and start
  // at a multiple of their count): a load across two stores stalls until
  // they retire.
  static F group_scales(const float* s, int64_t b0, int lg) {
    const int64_t g0 = (b0 * kXB) >> lg;
    const __m512i gi = _mm512_srlv_epi32(
        _mm512_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480),
        _mm512_set1_epi32(lg));
    return _mm512_permutexvar_ps(_mm512_add_epi32(gi, _mm512_set1_epi32(static_cast<int>(g0 & 15))),
                                 _mm512_loadu_ps(s + (g0 & ~int64_t(15))));
  }
};
#elif EMBER_ISA_HAS_AVX2
struct I8V {
  using I = __m256i;
  using F = __m256;
  static constexpr int B = 32;
  static I load(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static I set1_8(int v) { return _mm256_set1_epi8(static_cast<char>(v)); }
  static I set1_16(int v) { return _mm256_set1_epi16(static_cast<short>(v)); }
  static I set1_32(int v) { return _mm256_set1_epi32(v); }
  static I band(I a, I b) { return _mm256_and_si256(a, b); }
  static I srl4(I a) { return _mm256_srli_epi16(a, 4); }
  static I dot_u8s8(I u, I s, I ones) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones); }
  static I dot2_u8s8(I u, I s, I v, I t, I ones) {
    return _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(u, s), _mm256_maddubs_epi16(v, t)), ones);
  }
  static I add32(I a, I b) { return _mm256_add_epi32(a, b); }
  static I zero() { return _mm256_setzero_si256(); }
  static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
  static F fzero() { return _mm256_setzero_ps(); }
  static F fload(const float* p) { return _mm256_loadu_ps(p); }
  static F fset1(float v) { return _mm256_set1_ps(v); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static void fstore(float* p, F a) { _mm256_storeu_ps(p, a); }
  template <int CPL>  // lane j: p[j * CPL / 32] (at most 2 blocks a register)
  static F expand(const float* p) {
    if (CPL == 4) return _mm256_broadcast_ss(p);
    return _mm256_permutevar_ps(_mm256_castpd_ps(_mm256_broadcast_sd(reinterpret_cast<const double*>(p))),
                                _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
  }
  static F group_scales(const float* s, int64_t b0, int lg) {  // as above, 8 blocks (and groups a store)
    const int64_t g0 = (b0 * kXB) >> lg;
    const __m256i gi = _mm256_srlv_epi32(_mm256_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224), _mm256_set1_epi32(lg));
    return _mm256_permutevar8x32_ps(_mm256_loadu_ps(s + (g0 & ~int64_t(7))),
                                    _mm256_add_epi32(gi, _mm256_set1_epi32(static_cast<int>(g0 & 7))));
  }
};
#else
struct I8V {
  using I = __m128i;
  using F = __m128;
  static constexpr int B = 16;
  static I load(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }
  static I set1_8(int v) { return _mm_set1_epi8(static_cast<char>(v)); }
  static I set1_16(int v) { return _mm_set1_epi16(static_cast<short>(v)); }
  static I set1_32(int v) { return _mm_set1_epi32(v); }
  static I band(I a, I b) { return _mm_and_si128(a, b); }
  static I srl4(I a) { return _mm_srli_epi16(a, 4); }
  static I dot_u8s8(I u, I s, I ones) { return _mm_madd_epi16(_mm_maddubs_epi16(u, s), ones); }
  static I dot2_u8s8(I u, I s, I v, I t, I ones) {
    return _mm_madd_epi16(_mm_add_epi16(_mm_maddubs_epi16(u, s), _mm_maddubs_epi16(v, t)), ones);
  }
  static I add32(I a, I b) { return _mm_add_epi32(a, b); }
  static I zero() { return _mm_setzero_si128(); }
  static F cvt(I a) { return _mm_cvtepi32_ps(a); }
  static F fzero() { return _mm_setzero_ps(); }
  static F fload(const float* p) { return _mm_loadu_ps(p); }
  static F fset1(float v) { return _mm_set1_ps(v); }
  static F mul(F a, F b) { return _mm_mul_ps(a, b); }
  static F add(F a, F b) { return _mm_add_ps(a, b); }
  static void fstore(float* p, F a) { _mm_storeu_ps(p, a); }
  template <int CPL>  // lane j: p[j * CPL / 32] (one block a register)
  static F expand(const float* p) { return _mm_set1_ps(*p); }
  static F group_scales(const float* s, int64_t b0, int lg) {  // as above, 4 blocks
    return _mm_setr_ps(s[(b0 * kXB) >> lg], s[((b0 + 1) * kXB) >> lg], s[((b0 + 2) * kXB) >> lg],
                       s[((b0 + 3) * kXB) >> lg]);
  }
};
#endif

#if EMBER_ISA_HAS_AVX512
// acc += u8 x s8, four bytes a lane (VNNI; as inline assembly, so that the
// unit's target needs no avx512vnni: the caller checks the CPU)
inline __m512i dpbusd(__m512i acc, __m512i u, __m512i s) {
  __asm__("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
  return acc;
}
#endif

// A row's scale times x's d for each 32-column block (M0 rows of x from
// dm, nb blocks a row; sd's rows nbp apart, padded to a multiple of 16
// blocks): the products the lane sums are scaled by, once a row instead of
// a full-width load and multiply a chunk.
inline void block_products(const float* s, int lg, const float* dm, int64_t nb, int64_t nbp, int M0, float* sd) {
  using V = I8V;
  for (int64_t b0 = 0; b0 < nbp; b0 += V::B / 4) {
    const V::F sv = V::group_scales(s, b0, lg);
    for (int m = 0; m < M0; ++m) V::fstore(sd + m * nbp + b0, V::mul(sv, V::fload(dm + m * nb + b0)));
  }
}

// Output rows [n0, n1) of batch item b for the MR rows m0.. of x.
template <int BITS, int MR, bool VNNI>
void qmv_int8_rows(const QmmArgs& a, int64_t b, int64_t n0, int64_t n1, int64_t m0, const int8_t* xq,
                   const float* dl, const float* xsum) {
  using V = I8V;
  constexpr int CK = int8_chunk_cols<BITS>(), R = 64 / V::B, LPR = V::B / 4;  // registers a chunk, lanes a register
  constexpr int CPL = CK / 16, NB = CK / kXB;                                 // columns a lane, blocks a chunk
  const int64_t M = a.M, N = a.N, K = a.K, gs = a.group_size, G = K / gs, wb = K * BITS / 8;
  const int64_t chunks = K / CK, nb = K / kXB, nbp = (nb + 15) / 16 * 16;
  int lg = 0;
  while ((int64_t(1) << lg) < gs) ++lg;
  const typename V::I low4 = V::set1_8(0x0F), ones = V::set1_16(1), sixteen = V::set1_16(16);
  // s is read 16 groups at a time (block_products): zeros past a row's G
  alignas(64) float s[1024 + 16] = {}, bi[1024];
  std::vector<float> sdv(MR * nbp + 16);
  float* sd = sdv.data();
  // software prefetch: into L2 8 KB ahead of the loads (a core's DRAM
  // latency times its bandwidth is several KB: 1 KB ahead left the stream
  // 10-20% short on Zen 5), and from there into L1 2 KB ahead. 8 KB ahead
  // straight into L1 evicted lines before their use in Zen 4's 32 KB L1:
  // K = 8192 rows streamed at 20-25 GB/s there, against 27-33 with the two
  // distances (2 threads, interleaved A/B; K = 2048 rows +7%).
  constexpr int64_t PFD = 2048, PFD_L2 = 8192;
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t row = b * N + n;
    row_scales(a, a.scales, row, G, s);
    row_scales(a, a.biases, row, G, bi);
    block_products(s, lg, dl + m0 * nb, nb, nbp, MR, sd);
    const uint8_t* wr = reinterpret_cast<const uint8_t*>(a.w) + row * wb;
    if (n + 1 < n1) {
      // the next row's first lines (the rest streams in behind them), until
      // the L1 stream prefetch below, PFD ahead, has reached them: past the
      // task's first PFD bytes they are in flight already (8 prefetches a
      // row of 16 chunks were 6% of a cache-resident K = 2048 call on Zen 4)
      if ((n + 1 - n0) * wb < PFD)
        for (int64_t o = 0; o < std::min<int64_t>(wb, 512); o += 64)
          _mm_prefetch(reinterpret_cast<const char*>(wr + wb + o), _MM_HINT_T0);
      // and the scales and biases of the row after it (a tenth of the bytes
      // of 4-bit weights, else a stall of their own at each row's start)
      if (n + 2 < n1) {
        const int64_t sb = G * scale_bytes(a.scale_kind);
        for (int64_t o = 0; o < sb; o += 64) {
          _mm_prefetch(static_cast<const char*>(a.scales) + (row + 2) * sb + o, _MM_HINT_T0);
          _mm_prefetch(static_cast<const char*>(a.biases) + (row + 2) * sb + o, _MM_HINT_T0);
        }
      }
    }
    typename V::F total[MR][R];
    for (int m = 0; m < MR; ++m)
      for (int r = 0; r < R; ++r) total[m][r] = V::fzero();
    for (int64_t c = 0; c < chunks; ++c) {
      const uint8_t* wc = wr + c * 64;
      _mm_prefetch(reinterpret_cast<const char*>(wc + PFD), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(wc + PFD_L2), _MM_HINT_T1);
      for (int r = 0; r < R; ++r) {
        // one load of the weights for both nibbles (else the compiler folds
        // it into each use: a second load a chunk, in a loop bound by loads)
        typename V::I w = V::load(wc + r * V::B);
        __asm__("" : "+v"(w));
        const typename V::I lo = V::band(w, low4), hi = V::band(V::srl4(w), low4);
        for (int m = 0; m < MR; ++m) {
          const int8_t* xc = xq + (m0 + m) * K + c * CK;
          typename V::I acc;
          if (BITS == 4) {
            const typename V::I xl = V::load(xc + r * V::B), xh = V::load(xc + 64 + r * V::B);
#if EMBER_ISA_HAS_AVX512
            if (VNNI) acc = dpbusd(dpbusd(V::zero(), lo, xl), hi, xh);
            else
#endif
              // both codes' pair sums in 16 bits, then one pmaddwd: |sum| <=
              // 4 * 15 * 127 < 2^15, and integer sums are exact (same bits)
              acc = V::dot2_u8s8(lo, xl, hi, xh, ones);
          } else {
            const typename V::I xv = V::load(xc + r * V::B);
#if EMBER_ISA_HAS_AVX512
            if (VNNI) acc = dpbusd(V::zero(), w, xv);
            else
#endif
              // w = 16 hi + lo: pmaddubsw's pair sums stay below 2^15
              acc = V::add32(V::dot_u8s8(hi, xv, sixteen), V::dot_u8s8(lo, xv, ones));
          }
          // lane l's scale times its block's d (register r's first lane is
          // r * LPR of the chunk's 16)
          const typename V::F sdr = V::template expand<CPL>(sd + m * nbp + c * NB + r * LPR * CPL / kXB);
          total[m][r] = V::add(total[m][r], V::mul(V::cvt(acc), sdr));
        }
      }
    }
    for (int m = 0; m < MR; ++m) {
      // the 16 lanes by the fixed tree (w = 8, 4, 2, 1)
#if EMBER_ISA_HAS_AVX512
      const float h0 = tree8(_mm256_add_ps(_mm512_castps512_ps256(total[m][0]), _mm512_extractf32x8_ps(total[m][0], 1)));
#elif EMBER_ISA_HAS_AVX2
      const float h0 = tree8(_mm256_add_ps(total[m][0], total[m][1]));
#else
      alignas(64) float h[16];
      for (int r = 0; r < R; ++r) V::fstore(h + r * LPR, total[m][r]);
      for (int wdt = 8; wdt >= 1; wdt /= 2)
        for (int j = 0; j < wdt; ++j) h[j] = h[j] + h[j + wdt];
      const float h0 = h[0];
#endif
      a.out[(b * M + m0 + m) * N + n] = h0 + bias_dot(bi, xsum + (m0 + m) * G, G);
    }
  }
}
#pragma GCC diagnostic pop
#else
// No SSSE3 (another architecture): the lanes in plain C++.
template <int BITS, int MR, bool VNNI>
void qmv_int8_rows(const QmmArgs& a, int64_t b, int64_t n0, int64_t n1, int64_t m0, const int8_t* xq,
                   const float* dl, const float* xsum) {
  constexpr int CK = int8_chunk_cols<BITS>(), CPL = CK / 16;
  const int64_t M = a.M, N = a.N, K = a.K, gs = a.group_size, G = K / gs, wb = K * BITS / 8;
  const int64_t chunks = K / CK;
  float s[1024], bi[1024];
  for (int64_t n = n0; n < n1; ++n) {
    const int64_t row = b * N + n;
    row_scales(a, a.scales, row, G, s);
    row_scales(a, a.biases, row, G, bi);
    const uint8_t* wr = reinterpret_cast<const uint8_t*>(a.w) + row * wb;
    float total[MR][16] = {};
    for (int64_t c = 0; c < chunks; ++c) {
      const uint8_t* wc = wr + c * 64;
      for (int l = 0; l < 16; ++l) {
        const float sc = s[(c * CK + l * CPL) / gs];
        for (int m = 0; m < MR; ++m) {
          const int8_t* xc = xq + (m0 + m) * K + c * CK;
          int32_t acc = 0;
          for (int p = 4 * l; p < 4 * l + 4; ++p) {
            if (BITS == 4) acc += (wc[p] & 15) * xc[p] + (wc[p] >> 4) * xc[64 + p];
            else acc += wc[p] * xc[p];
          }
          const float dv = dl[(m0 + m) * (K / kXB) + (c * CK + l * CPL) / kXB];
          total[m][l] = total[m][l] + static_cast<float>(acc) * (sc * dv);
        }
      }
    }
    for (int m = 0; m < MR; ++m) {
      float h[16];
      for (int j = 0; j < 16; ++j) h[j] = total[m][j];
      for (int wdt = 8; wdt >= 1; wdt /= 2)
        for (int j = 0; j < wdt; ++j) h[j] = h[j] + h[j + wdt];
      a.out[(b * M + m0 + m) * N + n] = h[0] + bias_dot(bi, xsum + (m0 + m) * G, G);
    }
  }
}
#endif

// The products of na matrices with one x (as[i] differ only in the weights,
// scales, biases and outputs: a decoding step's q, k and v projections, say):
// x quantized once, and the rows of every matrix in one pool job, so that
// the small ones start and end no ramp of their own.
template <int BITS, bool VNNI>
void qmv_int8(const QmmArgs* as, int na) {
  const QmmArgs& a0 = as[0];
  const int64_t M = a0.M, K = a0.K, G = K / a0.group_size;
  const int64_t BM = a0.batch * M;
  std::vector<int8_t> xq(BM * K);
  // dl padded: block_products reads 16 blocks at a time
  std::vector<float> dl(BM * (K / kXB) + 16), xsum(BM * G, 0.0f);
  quantize_x_int8<BITS>(a0.x, BM, K, a0.group_size, xq.data(), dl.data(), xsum.data());
  // chunks of rows handed out one at a time (a core lent elsewhere for a
  // while takes fewer): about 4 a thread, each at least 512 KB of weights
  // unless that would leave a thread without one. Each chunk starts a new stream from DRAM
  // whose first lines the prefetchers have not seen coming: 16 chunks a
  // thread of a 0.5-2 MB matrix (the attention projections of a decode
  // step) ran 25-30% slower than 2-4 on Zen 5. Toward the end they shrink
  // (at most half of what is left over the threads, down to 256 KB), so
  // that the threads finish together: with equal chunks one thread could
  // idle for most of a chunk (a 128256-row head's are 18 MB) and then sleep,
  // and the call waited for its wake-up too. On a 2-core Zen 4 decoding
  // step, the time from the last chunk's end to the call's return fell from
  // 120-160 us to 5-7 on the head and from 11-30 us to 4-7 on the others
  // (decode tokens/s +1%, median of 12 rounds alternating in one process).
  struct Chunk {
    int i;
    int64_t t0, t1;
  };
  std::vector<Chunk> chunks;
  const int64_t nt = num_threads();
  const int64_t min_rows = std::max<int64_t>(1, (int64_t(512) << 13) / (K * BITS));
  const int64_t tail_rows = std::max<int64_t>(1, (int64_t(256) << 13) / (K * BITS));
  int64_t left = 0;
  for (int i = 0; i < na; ++i) left += as[i].batch * as[i].N;
  for (int i = 0; i < na; ++i) {
    const int64_t rows = as[i].batch * as[i].N;
    const int64_t chunk = std::min(std::max<int64_t>(min_rows, (rows + 4 * nt - 1) / (4 * nt)), (rows + nt - 1) / nt);
    for (int64_t t0 = 0; t0 < rows;) {
      const int64_t c = std::min({chunk, std::max(tail_rows, left / (2 * nt)), rows - t0});
      chunks.push_back({i, t0, t0 + c});
      t0 += c;
      left -= c;
    }
  }
  dynamic_for(static_cast<int64_t>(chunks.size()), no_state, [&](int64_t c, NoState&) {
    const QmmArgs& a = as[chunks[c].i];
    const int64_t N = a.N;
    for (int64_t t0 = chunks[c].t0, t1 = chunks[c].t1; t0 < t1;) {
      const int64_t b = t0 / N, n0 = t0 % N, n1 = std::min(N, n0 + (t1 - t0));
      const int8_t* xb = xq.data() + b * M * K;
      const float* db = dl.data() + b * M * (K / kXB);
      const float* sb = xsum.data() + b * M * G;
      for (int64_t m0 = 0; m0 < M; m0 += 4) {
        // the row pointers are relative to m0 = 0 of the batch item
        switch (std::min<int64_t>(4, M - m0)) {
          case 1: qmv_int8_rows<BITS, 1, VNNI>(a, b, n0, n1, m0, xb, db, sb); break;
          case 2: qmv_int8_rows<BITS, 2, VNNI>(a, b, n0, n1, m0, xb, db, sb); break;
          case 3: qmv_int8_rows<BITS, 3, VNNI>(a, b, n0, n1, m0, xb, db, sb); break;
          default: qmv_int8_rows<BITS, 4, VNNI>(a, b, n0, n1, m0, xb, db, sb); break;
        }
      }
      t0 += n1 - n0;
    }
  });
}

// --------------------------------------------------------------------------
// The int8 matrix-matrix path (M > 8: prefill; affine 4- and 8-bit weights,
// transpose, group sizes that are multiples of 32). The same arithmetic as
// the int8 matrix-vector path — x quantized per block of 32 columns (d =
// max|x| / 127, q = round(x / d)), exact integer sums of u8 weight codes
// times the int8 x per block, each block's sum scaled in float by its
// group's scale times its d, the biases once per group times the group's
// sum of the quantized x — but laid out as an outer product: the lanes of a
// vector are output columns n, each lane holding 4 consecutive codes of its
// weight row, and x's 4 int8 of the same columns are broadcast to all lanes
// (vpdpbusd, or pmaddubsw + pmaddwd). A tile of MR rows of x times P weight
// rows keeps MR x NV integer accumulators in registers over a block; the
// float totals live in a per-task buffer (touched once per block).
//
// The weights of P rows and a slice of KB columns are transposed once per
// task and slice into a panel (word w: the P rows' words w, 4-bit codes
// split into their even and odd codes, one byte each) that every row of x
// reuses; x is stored per 8 columns as the 4 even then the 4 odd ones for
// 4 bits, in column order for 8. Lane n's float steps are the same on every
// level and for either integer instruction (the integer sums are exact), so
// every level gives the same bits.
//
// Per (m, n): total = 0; for each group g, for each block b of g: total +=
// float(isum(b)) * (s[g] * d[b]); then total += bias[g] * xsum[g].
#if defined(__SSSE3__) || EMBER_ISA_HAS_AVX2
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// I8V's register, its lanes the output columns
struct GV : I8V {
  static constexpr int L = B / 4;
  static I bcast(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return set1_32(v);
  }
  static I dot4(I acc, I w, I x) { return add32(acc, dot_u8s8(w, x, set1_16(1))); }  // pair sums fit int16
  static I dot8(I acc, I w, I x) {  // 8-bit codes as 16 hi + lo
    const I m = set1_8(0x0F);
    acc = add32(acc, dot_u8s8(band(srl4(w), m), x, set1_16(16)));
    return add32(acc, dot_u8s8(band(w, m), x, set1_16(1)));
  }
#if EMBER_ISA_HAS_AVX512
  static I vnni(I acc, I w, I x) { return dpbusd(acc, w, x); }
  static bool has_vnni() { return __builtin_cpu_supports("avx512vnni"); }
#elif EMBER_ISA_HAS_AVX2
  static I vnni(I acc, I w, I x) {  // AVX-VNNI (VEX-encoded vpdpbusd)
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(w), "x"(x));
    return acc;
  }
  static bool has_vnni() { return __builtin_cpu_supports("avxvnni"); }
#else
  static I vnni(I acc, I w, I x) { return dot8(acc, w, x); }  // not selected (no VNNI without AVX)
  static bool has_vnni() { return false; }
#endif
};
// accumulators: 16 of 32 registers with AVX-512 (8 weight vectors a word),
// 8 of 16 below it
constexpr int kGNV = EMBER_ISA_HAS_AVX512 ? 4 : 2, kGMR = EMBER_ISA_HAS_AVX2 ? 4 : 2;
#else
// another architecture: one lane in plain C++
struct GV {
  using I = int32_t;
  using F = float;
  static constexpr int L = 1;
  static I zero() { return 0; }
  static I load(const uint32_t* p) { return static_cast<I>(*p); }
  static I bcast(const int8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  static I dot8(I acc, I w, I x) {
    for (int i = 0; i < 4; ++i)
      acc += static_cast<int32_t>((static_cast<uint32_t>(w) >> (8 * i)) & 255) *
             static_cast<int8_t>(static_cast<uint32_t>(x) >> (8 * i));
    return acc;
  }
  static I dot4(I acc, I w, I x) { return dot8(acc, w, x); }
  static I vnni(I acc, I w, I x) { return dot8(acc, w, x); }
  static bool has_vnni() { return false; }
  static F cvt(I a) { return static_cast<float>(a); }
  static F fload(const float* p) { return *p; }
  static F fset1(float v) { return v; }
  static F mul(F a, F b) { return a * b; }
  static F add(F a, F b) { return a + b; }
  static void fstore(float* p, F a) { *p = a; }
};
constexpr int kGNV = 4, kGMR = 2;
#endif
constexpr int kGP = kGNV * GV::L;  // weight rows a panel
constexpr int kGKB = 256;          // columns a panel slice (a multiple of every group size)
constexpr int kGMC = 32;           // rows of x a pass over the slices

// x rows [r0, r1) (rows of K) -> xq (int8, the layout above), d (K / 32 a
// row) and xs (K / gs a row), with the rounding of quantize_x_int8.
template <int BITS>
void quantize_rows_q8(const float* x, int64_t r0, int64_t r1, int64_t K, int64_t gs, int8_t* xq, float* d,
                      float* xs) {
  const int64_t nb = K / kXB, G = K / gs, bpg = gs / kXB;
  std::vector<int32_t> isum(nb);
  for (int64_t r = r0; r < r1; ++r) {
    const float* xm = x + r * K;
    int8_t* o = xq + r * K;
    for (int64_t b = 0; b < nb; ++b) {
      int8_t q[kXB];
      d[r * nb + b] = quantize_block(xm + b * kXB, q, isum[b]);
      int8_t* ob = o + b * kXB;
      if (BITS == 4) {
        for (int j = 0; j < kXB / 8; ++j)
          for (int i = 0; i < 4; ++i) {
            ob[8 * j + i] = q[8 * j + 2 * i];
            ob[8 * j + 4 + i] = q[8 * j + 2 * i + 1];
          }
      } else {
        std::memcpy(ob, q, kXB);
      }
    }
    group_sums(d + r * nb, isum.data(), G, bpg, xs + r * G);
  }
}


// The scales and biases of weight rows [n0, n0 + P) of batch item b as
// sp/bp[g * P + n] (rows past N: zeros); row: G floats of scratch.
void panel_scales(const QmmArgs& a, int64_t b, int64_t n0, int64_t P, float* row, float* sp, float* bp) {
  const int64_t N = a.N, G = a.K / a.group_size;
  for (int64_t n = 0; n < P; ++n) {
    const bool live = n0 + n < N;
    if (live) row_scales(a, a.scales, b * N + n0 + n, G, row);
    for (int64_t g = 0; g < G; ++g) sp[g * P + n] = live ? row[g] : 0.0f;
    if (live) row_scales(a, a.biases, b * N + n0 + n, G, row);
    for (int64_t g = 0; g < G; ++g) bp[g * P + n] = live ? row[g] : 0.0f;
  }
}

// Weight rows [n0, n0 + kGP) of batch item b (rows past N as zeros),
// columns [k0, k1), into panel: word w (KW = 32 / BITS columns) at
// panel + w * PW * kGP, PW = 2 (even codes, then odd) for 4 bits, 1 for 8.
template <int BITS>
void pack_panel(const QmmArgs& a, int64_t b, int64_t n0, int64_t k0, int64_t k1, uint32_t* panel) {
  constexpr int KW = 32 / BITS, PW = BITS == 4 ? 2 : 1;
  const int64_t N = a.N, wc = a.K / KW, nw = (k1 - k0) / KW;
  const uint32_t* base = a.w + b * N * wc + k0 / KW;
  int64_t w0 = 0;
#if EMBER_ISA_HAS_AVX512
  // 16 x 16 word transposes
  const __m512i m4 = _mm512_set1_epi32(0x0F0F0F0F);
  const int64_t nw16 = nw / 16 * 16;
  for (int q = 0; q < kGP / 16; ++q) {  // 16 rows at a time (16 streams), all their words
    for (w0 = 0; w0 < nw16; w0 += 16) {
      __m512i t[16];
      for (int i = 0; i < 16; ++i) {
        const int64_t n = n0 + q * 16 + i;
        t[i] = n < N ? _mm512_loadu_si512(base + n * wc + w0) : _mm512_setzero_si512();
      }
      transpose16_epi32(t);  // t[j]: word w0 + j of the 16 rows
      for (int j = 0; j < 16; ++j) {
        uint32_t* p = panel + (w0 + j) * PW * kGP + q * 16;
        if (BITS == 4) {
          _mm512_storeu_si512(p, _mm512_and_si512(t[j], m4));
          _mm512_storeu_si512(p + kGP, _mm512_and_si512(_mm512_srli_epi32(t[j], 4), m4));
        } else {
          _mm512_storeu_si512(p, t[j]);
        }
      }
    }
  }
  w0 = nw16;
#endif
  for (int64_t n = 0; n < kGP; ++n) {
    const uint32_t* wr = base + (n0 + n) * wc;
    for (int64_t w = w0; w < nw; ++w) {
      const uint32_t u = n0 + n < N ? wr[w] : 0u;
      uint32_t* p = panel + w * PW * kGP + n;
      if (BITS == 4) {
        p[0] = u & 0x0F0F0F0Fu;
        p[kGP] = (u >> 4) & 0x0F0F0F0Fu;
      } else {
        p[0] = u;
      }
    }
  }
}

// Rows m0 .. m0 + MR of the tile times the panel's weight rows, groups [g0,
// g1) of the slice that starts at column k0: tot (MR rows of kGP floats)
// += their terms. xq, d, xs point to row m0.
template <int BITS, int MR, bool VNNI>
void gemm_tile(const uint32_t* panel, int64_t k0, int64_t g0, int64_t g1, int64_t gs, const float* sp,
               const float* bp, const int8_t* xq, int64_t K, const float* d, const float* xs, int64_t G, float* tot) {
  using V = GV;
  using I = typename V::I;
  constexpr int NV = kGNV, P = kGP, L = V::L, KW = 32 / BITS, PW = BITS == 4 ? 2 : 1;
  const int64_t nb = K / kXB;
  for (int64_t g = g0; g < g1; ++g) {
    typename V::F sv[NV];
    for (int v = 0; v < NV; ++v) sv[v] = V::fload(sp + g * P + v * L);
    for (int64_t blk = g * gs / kXB; blk < (g + 1) * gs / kXB; ++blk) {
      I acc[MR][NV];
      for (int m = 0; m < MR; ++m)
        for (int v = 0; v < NV; ++v) acc[m][v] = V::zero();
      const uint32_t* pw = panel + (blk * kXB - k0) / KW * PW * P;
      for (int j = 0; j < kXB / KW; ++j, pw += PW * P) {
        const int64_t k = blk * kXB + j * KW;
        if (BITS == 4) {
          I we[NV], wo[NV];
          for (int v = 0; v < NV; ++v) {
            we[v] = V::load(pw + v * L);
            wo[v] = V::load(pw + P + v * L);
          }
          for (int m = 0; m < MR; ++m) {
            const I xe = V::bcast(xq + m * K + k), xo = V::bcast(xq + m * K + k + 4);
            for (int v = 0; v < NV; ++v) {
              if (VNNI) acc[m][v] = V::vnni(V::vnni(acc[m][v], we[v], xe), wo[v], xo);
              else acc[m][v] = V::dot4(V::dot4(acc[m][v], we[v], xe), wo[v], xo);
            }
          }
        } else {
          I w[NV];
          for (int v = 0; v < NV; ++v) w[v] = V::load(pw + v * L);
          for (int m = 0; m < MR; ++m) {
            const I xv = V::bcast(xq + m * K + k);
            for (int v = 0; v < NV; ++v) acc[m][v] = VNNI ? V::vnni(acc[m][v], w[v], xv) : V::dot8(acc[m][v], w[v], xv);
          }
        }
      }
      for (int m = 0; m < MR; ++m) {
        const typename V::F dm = V::fset1(d[m * nb + blk]);
        for (int v = 0; v < NV; ++v) {
          float* t = tot + m * P + v * L;
          V::fstore(t, V::add(V::fload(t), V::mul(V::cvt(acc[m][v]), V::mul(sv[v], dm))));
        }
      }
    }
    for (int m = 0; m < MR; ++m) {
      const typename V::F xm = V::fset1(xs[m * G + g]);
      for (int v = 0; v < NV; ++v) {
        float* t = tot + m * P + v * L;
        V::fstore(t, V::add(V::fload(t), V::mul(V::fload(bp + g * P + v * L), xm)));
      }
    }
  }
}
#if EMBER_ISA_HAS_AVX512
#pragma GCC diagnostic pop
#endif

// How many of x's `units` (rows, or tiles of rows) a matrix-matrix task
// takes: all of them, unless the jobs alone (batch items x weight blocks)
// would leave threads idle; then about 4 tasks a thread, in multiples of
// `step` and no fewer than `least`.
inline int64_t task_units(int64_t units, int64_t jobs, int64_t step, int64_t least) {
  const int64_t nt = num_threads();
  if (jobs >= 4 * nt) return units;
  const int64_t parts = (4 * nt + jobs - 1) / jobs;
  return std::max(least, ((units + parts - 1) / parts + step - 1) / step * step);
}

// gemm_tile for the last, short tile too (r <= R rows)
template <int BITS, bool VNNI, int R>
void gemm_rows(int64_t r, const uint32_t* panel, int64_t k0, int64_t g0, int64_t g1, int64_t gs, const float* sp,
               const float* bp, const int8_t* xq, int64_t K, const float* d, const float* xs, int64_t G, float* tot) {
  if constexpr (R > 1) {
    if (r < R) return gemm_rows<BITS, VNNI, R - 1>(r, panel, k0, g0, g1, gs, sp, bp, xq, K, d, xs, G, tot);
  }
  gemm_tile<BITS, R, VNNI>(panel, k0, g0, g1, gs, sp, bp, xq, K, d, xs, G, tot);
}

template <int BITS, bool VNNI>
void qmm_int8_gemm(const QmmArgs& a) {
  constexpr int KW = 32 / BITS, PW = BITS == 4 ? 2 : 1, P = kGP, MR = kGMR;
  const int64_t M = a.M, N = a.N, K = a.K, gs = a.group_size, G = K / gs, nb = K / kXB;
  const int64_t BM = a.batch * M;
  std::vector<int8_t> xq(BM * K);
  std::vector<float> d(BM * nb), xs(BM * G);
  parallel_for(BM, std::max<int64_t>(1, 8192 / K), [&](int64_t r0, int64_t r1) {
    quantize_rows_q8<BITS>(a.x, r0, r1, K, gs, xq.data(), d.data(), xs.data());
  });
  // tasks: (batch item, block of P weight rows, chunk of x rows); x is split
  // only where the weight blocks alone would leave threads idle
  const int64_t nblocks = (N + P - 1) / P, jobs = a.batch * nblocks;
  const int64_t mc = task_units(M, jobs, MR, 4 * MR);
  const int64_t mchunks = (M + mc - 1) / mc, tasks = jobs * mchunks;
  struct Scratch {
    std::vector<uint32_t> panel;
    std::vector<float> sp, bp, row, tot;
  };
  auto make = [&] {
    return Scratch{std::vector<uint32_t>(K / KW * PW * P), std::vector<float>(G * P), std::vector<float>(G * P),
                   std::vector<float>(G), std::vector<float>(kGMC * P)};
  };
  dynamic_for(tasks, make, [&](int64_t t, Scratch& st) {
    std::vector<uint32_t>& panel = st.panel;
    std::vector<float>& sp = st.sp;
    std::vector<float>& bp = st.bp;
    std::vector<float>& row = st.row;
    std::vector<float>& tot = st.tot;
    const int64_t b = t / (nblocks * mchunks), n0 = (t / mchunks) % nblocks * P, mb = (t % mchunks) * mc;
    const int64_t me = std::min(M, mb + mc);
    panel_scales(a, b, n0, P, row.data(), sp.data(), bp.data());
    pack_panel<BITS>(a, b, n0, 0, K, panel.data());
    const int8_t* xb = xq.data() + b * M * K;
    const float* db = d.data() + b * M * nb;
    const float* sb = xs.data() + b * M * G;
    // kGMC rows at a time, over slices of kGKB columns: the slice of the
    // panel, those rows' x and their totals stay in L1 across the tiles
    for (int64_t c0 = mb; c0 < me; c0 += kGMC) {
      const int64_t c1 = std::min(me, c0 + kGMC);
      std::fill(tot.begin(), tot.end(), 0.0f);
      for (int64_t k0 = 0; k0 < K; k0 += kGKB) {
        const int64_t k1 = std::min(K, k0 + kGKB), g0 = k0 / gs, g1 = k1 / gs;
        const uint32_t* ps = panel.data() + k0 / KW * PW * P;
        for (int64_t m0 = c0; m0 < c1; m0 += MR) {
          gemm_rows<BITS, VNNI, MR>(std::min<int64_t>(MR, c1 - m0), ps, k0, g0, g1, gs, sp.data(), bp.data(),
                                    xb + m0 * K, K, db + m0 * nb, sb + m0 * G, G, tot.data() + (m0 - c0) * P);
        }
      }
      for (int64_t m = c0; m < c1; ++m)
        std::memcpy(a.out + (b * M + m) * N + n0, tot.data() + (m - c0) * P,
                    std::min<int64_t>(P, N - n0) * sizeof(float));
    }
  });
}

#if EMBER_ISA_HAS_AVX512 && defined(__x86_64__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 on _mm512_cvtepi32_ps's undefined source
// --------------------------------------------------------------------------
// The int8 matrix-matrix path on AMX tiles (setting 3, CPUs with AMX-INT8):
// the arithmetic of qmm_int8_gemm, bit for bit, with the integer block sums
// from the tile unit. tdpbusd multiplies u8 rows by s8 columns, so the weight
// codes are the A tiles (16 weight rows x the 32 codes of a block, one byte
// each) and x the B tiles (a block's 32 columns of 16 rows of x as 8 rows of
// 16 x 4 bytes); C (16 x 16 int32) holds the block sums of 16 weight rows
// times 16 rows of x, exact. Two A and two B tiles give four C tiles per
// block (32 x 32 outputs), stored and then scaled in float exactly as the
// vector path does: total += float(isum) * (s * d), and once a group
// total += bias * xsum. The totals live transposed ([n][m]) in a 4 KB task
// buffer and go to out once the row tiles are done.
constexpr int kAN = 32;  // weight rows a task (two A tiles)
constexpr int kAT = 16;  // rows of x a B tile

// x, quantized as quantize_rows_q8<8> lays it out, as B tiles: per batch
// item, row tile mt and block: 512 bytes (column quad kq, row mm: 4 bytes at
// kq * 64 + mm * 4); d and xsum per row tile as 16 floats a block / group.
// Rows past M are zeros.
struct AmxX {
  int64_t MT;  // row tiles per batch item
  AlignedScratch<int8_t> xb;
  std::vector<float> dt, st;
  AmxX(int64_t batch, int64_t M, int64_t K, int64_t G)
      : MT((M + kAT - 1) / kAT),
        xb(batch * MT * (K / kXB) * 512),
        dt(batch * MT * (K / kXB) * kAT),
        st(batch * MT * G * kAT) {}
};

void amx_pack_x(const int8_t* xq, const float* d, const float* xs, int64_t batch, int64_t M, int64_t K, int64_t G,
                AmxX& X) {
  const int64_t nb = K / kXB, MT = X.MT;
  parallel_for(batch * MT, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t b = t / MT, mt = t % MT;
      for (int64_t mm = 0; mm < kAT && mt * kAT + mm < M; ++mm) {
        const int64_t row = b * M + mt * kAT + mm;
        const int8_t* xr = xq + row * K;
        for (int64_t blk = 0; blk < nb; ++blk) {
          int8_t* dst = X.xb.data + (t * nb + blk) * 512 + mm * 4;
          for (int kq = 0; kq < kXB / 4; ++kq) std::memcpy(dst + kq * 64, xr + blk * kXB + kq * 4, 4);
          X.dt[(t * nb + blk) * kAT + mm] = d[row * nb + blk];
        }
        for (int64_t g = 0; g < G; ++g) X.st[(t * G + g) * kAT + mm] = xs[row * G + g];
      }
    }
  });
}

struct AmxScratch {
  AlignedScratch<uint8_t> pa;  // per block: 32 weight rows x 32 codes (two A tiles)
  std::vector<float> sp, bp, row, tot;
  AlignedScratch<int32_t> c;
};

// Weight rows [n0, n0 + 32) of batch item b (past N: zero codes, scales and
// biases) as one byte a code; their scales and biases as sp/bp[g * 32 + n].
template <int BITS>
void amx_pack_w(const QmmArgs& a, int64_t b, int64_t n0, AmxScratch& s) {
  const int64_t N = a.N, K = a.K, nb = K / kXB, wc = K * BITS / 32;
  const __m128i m4 = _mm_set1_epi8(0x0F);
  for (int64_t n = 0; n < kAN; ++n) {
    uint8_t* dst = s.pa.data + n * kXB;
    const bool live = n0 + n < N;
    const uint8_t* src = live ? reinterpret_cast<const uint8_t*>(a.w + (b * N + n0 + n) * wc) : nullptr;
    for (int64_t blk = 0; blk < nb; ++blk, dst += kAN * kXB) {
      if (!live) {
        std::memset(dst, 0, kXB);
      } else if (BITS == 8) {
        std::memcpy(dst, src + blk * kXB, kXB);
      } else {  // byte j holds codes 2j (low nibble) and 2j + 1
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + blk * (kXB / 2)));
        const __m128i lo = _mm_and_si128(v, m4), hi = _mm_and_si128(_mm_srli_epi16(v, 4), m4);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm_unpacklo_epi8(lo, hi));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 16), _mm_unpackhi_epi8(lo, hi));
      }
    }
  }
  panel_scales(a, b, n0, kAN, s.row.data(), s.sp.data(), s.bp.data());
}

// Tile (t, u) of C: weight rows t * 16.., x rows u * 16..; totals (32 x 32,
// [n][m]) += its block sums times s * d (the float steps of gemm_tile).
inline void amx_scale_tile(const int32_t* c, const float* sp, const float* dv, float* tot) {
  const __m512 d = _mm512_loadu_ps(dv);
  for (int r = 0; r < kAT; ++r) {
    const __m512 sd = _mm512_mul_ps(_mm512_set1_ps(sp[r]), d);
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512(c + r * kAT)), sd);
    _mm512_storeu_ps(tot + r * kAN, _mm512_add_ps(_mm512_loadu_ps(tot + r * kAN), v));
  }
}

// Weight rows [n0, n0 + 32) of batch item b times x row tiles [mt0, mt1).
__attribute__((target("amx-tile,amx-int8"))) void amx_task(const QmmArgs& a, int64_t b, int64_t n0, int64_t mt0,
                                                           int64_t mt1, const AmxX& X, AmxScratch& s) {
  const int64_t M = a.M, N = a.N, K = a.K, nb = K / kXB, G = K / a.group_size, bpg = a.group_size / kXB;
  AmxConfig cfg;
  for (int t = 0; t < 4; ++t) cfg.rows[t] = kAT, cfg.colsb[t] = kAT * 4;  // C
  for (int t = 4; t < 6; ++t) cfg.rows[t] = kAT, cfg.colsb[t] = kXB;      // A: weights
  for (int t = 6; t < 8; ++t) cfg.rows[t] = kXB / 4, cfg.colsb[t] = kAT * 4;  // B: x
  amx_load(cfg);
  int32_t* c = s.c.data;
  float* tot = s.tot.data();
  for (int64_t mt = mt0; mt < mt1; mt += 2) {
    const int nu = mt + 1 < mt1 ? 2 : 1;  // B tiles this pass
    std::fill(s.tot.begin(), s.tot.end(), 0.0f);
    const int64_t x0 = (b * X.MT + mt) * nb;  // the first tile's blocks
    for (int64_t blk = 0; blk < nb; ++blk) {
      const uint8_t* pa = s.pa.data + blk * kAN * kXB;
      _tile_zero(0);
      _tile_zero(1);
      _tile_loadd(4, pa, kXB);
      _tile_loadd(5, pa + kAT * kXB, kXB);
      _tile_loadd(6, X.xb.data + (x0 + blk) * 512, kAT * 4);
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 5, 6);
      _tile_stored(0, c, kAT * 4);
      _tile_stored(1, c + 256, kAT * 4);
      if (nu == 2) {
        _tile_zero(2);
        _tile_zero(3);
        _tile_loadd(7, X.xb.data + (x0 + nb + blk) * 512, kAT * 4);
        _tile_dpbusd(2, 4, 7);
        _tile_dpbusd(3, 5, 7);
        _tile_stored(2, c + 512, kAT * 4);
        _tile_stored(3, c + 768, kAT * 4);
      }
      const int64_t g = blk / bpg;
      for (int u = 0; u < nu; ++u)
        for (int t = 0; t < 2; ++t)
          amx_scale_tile(c + (2 * u + t) * 256, s.sp.data() + g * kAN + t * kAT,
                         X.dt.data() + (x0 + u * nb + blk) * kAT, tot + t * kAT * kAN + u * kAT);
      if ((blk + 1) % bpg == 0) {
        for (int u = 0; u < nu; ++u) {
          const __m512 xv = _mm512_loadu_ps(X.st.data() + ((b * X.MT + mt + u) * G + g) * kAT);
          for (int n = 0; n < kAN; ++n) {
            float* tp = tot + n * kAN + u * kAT;
            const __m512 bx = _mm512_mul_ps(_mm512_set1_ps(s.bp[g * kAN + n]), xv);
            _mm512_storeu_ps(tp, _mm512_add_ps(_mm512_loadu_ps(tp), bx));
          }
        }
      }
    }
    const int64_t m1 = std::min(M, (mt + nu) * kAT), nn = std::min<int64_t>(kAN, N - n0);
    for (int64_t m = mt * kAT; m < m1; ++m) {
      float* o = a.out + (b * M + m) * N + n0;
      for (int64_t n = 0; n < nn; ++n) o[n] = tot[n * kAN + (m - mt * kAT)];
    }
  }
  _tile_release();
}

template <int BITS>
void qmm_int8_amx(const QmmArgs& a) {
  const int64_t M = a.M, N = a.N, K = a.K, G = K / a.group_size, nb = K / kXB, BM = a.batch * M;
  AmxX X(a.batch, M, K, G);
  {
    std::vector<int8_t> xq(BM * K);
    std::vector<float> d(BM * nb), xs(BM * G);
    parallel_for(BM, std::max<int64_t>(1, 8192 / K), [&](int64_t r0, int64_t r1) {
      quantize_rows_q8<8>(a.x, r0, r1, K, a.group_size, xq.data(), d.data(), xs.data());  // columns in order
    });
    amx_pack_x(xq.data(), d.data(), xs.data(), a.batch, M, K, G, X);
  }
  // tasks: (batch item, 32 weight rows, a range of row-tile pairs); x is split
  // only where the weight blocks alone would leave threads idle
  const int64_t nblocks = (N + kAN - 1) / kAN, jobs = a.batch * nblocks;
  const int64_t mc = task_units(X.MT, jobs, 2, 2);  // row tiles a task (pairs)
  const int64_t mchunks = (X.MT + mc - 1) / mc;
  auto make = [&] {
    return AmxScratch{AlignedScratch<uint8_t>(nb * kAN * kXB, false), std::vector<float>(G * kAN),
                      std::vector<float>(G * kAN), std::vector<float>(G), std::vector<float>(kAN * kAN),
                      AlignedScratch<int32_t>(4 * 256, false)};
  };
  dynamic_for(jobs * mchunks, make, [&](int64_t t, AmxScratch& s) {
    const int64_t job = t / mchunks, mt0 = (t % mchunks) * mc, b = job / nblocks, n0 = job % nblocks * kAN;
    amx_pack_w<BITS>(a, b, n0, s);
    amx_task(a, b, n0, mt0, std::min(X.MT, mt0 + mc), X, s);
  });
}

// --------------------------------------------------------------------------
// The bfloat16 matrix-matrix path on AMX tiles (setting 4, the default on
// CPUs with AMX-BF16): x rounded to bfloat16 (nearest even), the weights
// dequantized (q * s + b in float) and rounded the same way, and tdpbf16ps
// summing their exact products in float32 over all of K inside the C tiles —
// no per-block scaling, so the tile unit runs at its own speed. Not the int8
// path's bits, but within its error bound: each product is off by at most
// 2^-8 |x w|, and the int8 path's bound allows (max |x| of the block / 254)
// |w| per term. x rows are the A tiles (16 rows x 32 columns), the weights
// the B tiles (16 column pairs x 16 weight rows x 2); a task holds 32 weight
// rows dequantized once into a panel (2 KB per 32 columns, in L2) and runs
// 32 x 32 output tiles (four C tiles) over it.
constexpr int kBN = 32;  // weight rows a task (two B tiles)

// x as bfloat16 A tiles, rows padded with zeros to a multiple of 32 per
// batch item: row r of row tile mt, columns [32 ks, 32 ks + 32) at
// x + ((b * MP / 16 + mt) * K / 32 + ks) * 512 + (r % 16) * 32 — each tile
// 1 KB contiguous (rows K apart would share one L1 set when K * 2 is a
// multiple of 4 KB)
struct AmxBf16X {
  int64_t MP;
  AlignedScratch<uint16_t> x;
  AmxBf16X(int64_t batch, int64_t M, int64_t K) : MP((M + 31) / 32 * 32), x(batch * MP * K) {}
};

// row x (K floats) -> its tile rows at dst (row r of a tile: dst = tile + r * 32)
__attribute__((target("avx512bf16"))) void bf16_row(const float* x, int64_t K, uint16_t* dst) {
  for (int64_t k = 0; k < K; k += 16)  // K: a multiple of 32
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + k / 32 * 512 + k % 32),
                        (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(x + k)));
}

// Weight rows [n0, n0 + 32) of batch item b, dequantized and rounded to
// bfloat16, as B tiles: columns [32 ks, 32 ks + 32) of rows n0 + 16 t.. at
// pb + ks * 1024 + t * 512 (tile row kp: the 16 rows' columns 2 kp, 2 kp + 1).
// Rows past N are zeros. sc, bi: 16 * G floats of scratch.
template <int BITS>
__attribute__((target("avx512bf16"))) void amx_bf16_pack_w(const QmmArgs& a, int64_t b, int64_t n0, uint16_t* pb,
                                                            float* sc, float* bi) {
  const int64_t N = a.N, K = a.K, gs = a.group_size, G = K / gs, wc = K * BITS / 32, nks = K / 32;
  const __m512 iota = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i nib = _mm512_set1_epi32(0x000F000F);
  for (int t = 0; t < 2; ++t) {
    const int64_t r0 = n0 + t * 16, live = std::max<int64_t>(0, std::min<int64_t>(16, N - r0));
    for (int64_t i = 0; i < live; ++i) {
      row_scales(a, a.scales, b * N + r0 + i, G, sc + i * G);
      row_scales(a, a.biases, b * N + r0 + i, G, bi + i * G);
    }
    __m512i tab[16];  // 4 bits: each row's 16 values q * s + b of the group, as bfloat16 (words 0-15)
    for (int64_t ks = 0; ks < nks; ++ks) {
      const int64_t g = ks * 32 / gs;
      __m512i r[16];
      for (int64_t i = 0; i < 16; ++i) {
        if (i >= live) {
          r[i] = _mm512_setzero_si512();
          continue;
        }
        const uint8_t* src = reinterpret_cast<const uint8_t*>(a.w + (b * N + r0 + i) * wc);
        const __m512 s = _mm512_set1_ps(sc[i * G + g]), bb = _mm512_set1_ps(bi[i * G + g]);
        if (BITS == 4) {
          if (ks * 32 % gs == 0) {
            const __m512 v = _mm512_add_ps(_mm512_mul_ps(iota, s), bb);
            tab[i] = (__m512i)_mm512_cvtne2ps_pbh(v, v);
          }
          // dword j = byte j (codes 2j, 2j + 1) -> word indices 2j, 2j + 1
          const __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + ks * 16)));
          const __m512i idx = _mm512_ternarylogic_epi32(d, _mm512_slli_epi32(d, 12), nib, 0xA8);  // (d | d << 12) & nib
          r[i] = _mm512_permutexvar_epi16(idx, tab[i]);
        } else {
          const __m128i c0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + ks * 32));
          const __m128i c1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + ks * 32 + 16));
          const __m512 w0 = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(c0)), s), bb);
          const __m512 w1 = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(c1)), s), bb);
          r[i] = (__m512i)_mm512_cvtne2ps_pbh(w1, w0);  // columns 0..31 in order: word j = columns 2j, 2j + 1
        }
      }
      transpose16_epi32(r);
      for (int kp = 0; kp < 16; ++kp) _mm512_storeu_si512(pb + ks * 1024 + t * 512 + kp * 32, r[kp]);
    }
  }
}

// Rows [32 p0, 32 p1) of x (batch item b) times the panel's 32 weight rows.
__attribute__((target("amx-tile,amx-bf16"))) void amx_bf16_task(const QmmArgs& a, int64_t b, int64_t n0, int64_t p0,
                                                                int64_t p1, const AmxBf16X& X, const uint16_t* pb,
                                                                float* tmp) {
  const int64_t M = a.M, N = a.N, K = a.K, nks = K / 32;
  amx_configure(8, 16, 64);
  const uint16_t* xb = X.x.data + b * X.MP * K;
  float* out = a.out + b * M * N;
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t m = p * 32;
    const uint16_t* a0 = xb + m * K;  // row tiles 2p and 2p + 1
    const uint16_t* a1 = a0 + 16 * K;
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (int64_t ks = 0; ks < nks; ++ks) {
      _tile_loadd(4, a0 + ks * 512, 64);
      _tile_loadd(5, a1 + ks * 512, 64);
      _tile_loadd(6, pb + ks * 1024, 64);
      _tile_loadd(7, pb + ks * 1024 + 512, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
    if (m + 32 <= M && n0 + kBN <= N) {  // C tile (u, t): rows m + 16 u, columns n0 + 16 t
      float* o = out + m * N + n0;
      _tile_stored(0, o, N * 4);
      _tile_stored(1, o + 16, N * 4);
      _tile_stored(2, o + 16 * N, N * 4);
      _tile_stored(3, o + 16 * N + 16, N * 4);
    } else {
      _tile_stored(0, tmp, kBN * 4);
      _tile_stored(1, tmp + 16, kBN * 4);
      _tile_stored(2, tmp + 16 * kBN, kBN * 4);
      _tile_stored(3, tmp + 16 * kBN + 16, kBN * 4);
      const int64_t nn = std::min<int64_t>(kBN, N - n0);
      for (int64_t r = 0; r < 32 && m + r < M; ++r)
        std::memcpy(out + (m + r) * N + n0, tmp + r * kBN, nn * sizeof(float));
    }
  }
  _tile_release();
}

template <int BITS>
void qmm_bf16_amx(const QmmArgs& a) {
  const int64_t M = a.M, N = a.N, K = a.K, G = K / a.group_size, nks = K / 32;
  AmxBf16X X(a.batch, M, K);
  parallel_for(a.batch * M, std::max<int64_t>(1, 8192 / K), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t row = r / M * X.MP + r % M;  // in the padded rows
      bf16_row(a.x + r * K, K, X.x.data + row / 16 * nks * 512 + row % 16 * 32);
    }
  });
  // tasks: (batch item, 32 weight rows, a range of 32-row blocks of x); x is
  // split only where the weight blocks alone would leave threads idle
  const int64_t nblocks = (N + kBN - 1) / kBN, jobs = a.batch * nblocks, MB = X.MP / 32;
  const int64_t mc = task_units(MB, jobs, 1, 1);  // 32-row blocks a task
  const int64_t mchunks = (MB + mc - 1) / mc;
  struct Scratch {
    AlignedScratch<uint16_t> pb;
    std::vector<float> sc, bi, tmp;
  };
  auto make = [&] {
    return Scratch{AlignedScratch<uint16_t>(nks * 1024, false), std::vector<float>(16 * G), std::vector<float>(16 * G),
                   std::vector<float>(32 * kBN)};
  };
  dynamic_for(jobs * mchunks, make, [&](int64_t t, Scratch& s) {
    const int64_t job = t / mchunks, p0 = (t % mchunks) * mc, b = job / nblocks, n0 = job % nblocks * kBN;
    amx_bf16_pack_w<BITS>(a, b, n0, s.pb.data, s.sc.data(), s.bi.data());
    amx_bf16_task(a, b, n0, p0, std::min(MB, p0 + mc), X, s.pb.data, s.tmp.data());
  });
}
#pragma GCC diagnostic pop
#endif

// Whether x (rows of K) holds only finite values (else the float path, which
// carries infinities and NaN through as float arithmetic does).
bool all_finite(const float* x, int64_t n) {
  // an exponent of all ones is inf or NaN; integer ORs vectorize (a float
  // sum of x * 0 would be a chain of dependent adds)
  uint32_t any = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, 4);
    any |= static_cast<uint32_t>((u & 0x7F800000u) == 0x7F800000u);
  }
  return any == 0;
}

// the int8 matrix-vector path takes a: the int8 setting on, affine 4/8 bits,
// transpose, M <= 8, K a multiple of 128 and finite x
bool int8_vec(const QmmArgs& a) {
  return a.int8 && a.mode == 0 && (a.bits == 4 || a.bits == 8) && a.transpose && a.M <= kMaxVecRows &&
         a.group_size % kXB == 0 && a.K % int8_chunk_cols<4>() == 0 && a.K / a.group_size <= 1024 &&
         all_finite(a.x, a.batch * a.M * a.K);
}

void int8_vec_run(const QmmArgs* as, int n) {
#if EMBER_ISA_HAS_AVX512
  if (as[0].int8 >= 2 && __builtin_cpu_supports("avx512vnni"))
    return as[0].bits == 4 ? qmv_int8<4, true>(as, n) : qmv_int8<8, true>(as, n);
#endif
  return as[0].bits == 4 ? qmv_int8<4, false>(as, n) : qmv_int8<8, false>(as, n);
}

}  // namespace

void qmm_run(const QmmArgs& a) {
  if (a.batch * a.M * a.N == 0) return;
  if (a.K == 0) {
    std::fill(a.out, a.out + a.batch * a.M * a.N, 0.0f);
    return;
  }
  const bool pow2 = (a.bits & (a.bits - 1)) == 0;
  if (int8_vec(a)) return int8_vec_run(&a, 1);
  if (a.int8 && a.mode == 0 && (a.bits == 4 || a.bits == 8) && a.transpose && a.M > kMaxVecRows &&
      a.group_size % kXB == 0 && all_finite(a.x, a.batch * a.M * a.K)) {
#if EMBER_ISA_HAS_AVX512 && defined(__x86_64__)
    if (a.int8 == 4 && amx_bf16_usable()) return a.bits == 4 ? qmm_bf16_amx<4>(a) : qmm_bf16_amx<8>(a);
    if (a.int8 >= 3 && amx_int8_usable()) return a.bits == 4 ? qmm_int8_amx<4>(a) : qmm_int8_amx<8>(a);
#endif
    if (a.int8 >= 2 && GV::has_vnni()) return a.bits == 4 ? qmm_int8_gemm<4, true>(a) : qmm_int8_gemm<8, true>(a);
    return a.bits == 4 ? qmm_int8_gemm<4, false>(a) : qmm_int8_gemm<8, false>(a);
  }
  if (a.transpose && pow2 && a.M <= kMaxVecRows && a.K / a.group_size <= 1024) {
    if (a.mode == 0) {
      switch (a.bits) {
        case 1: return qmv<1, 0>(a);
        case 2: return qmv<2, 0>(a);
        case 4: return qmv<4, 0>(a);
        default: return qmv<8, 0>(a);
      }
    }
    if (a.mode == 2) return qmv<8, 2>(a);
    return qmv<4, 1>(a);
  }
  qmm_panels(a);
}

void qmm_run_batch(const QmmArgs* as, int n) {
  // one job when every product takes the int8 matrix-vector path with the
  // same x, shapes and format (only their weights and outputs differ)
  bool one = n > 1 && as[0].N > 0 && int8_vec(as[0]);
  for (int i = 1; one && i < n; ++i) {
    const QmmArgs &a = as[i], &f = as[0];
    one = a.x == f.x && a.batch == f.batch && a.M == f.M && a.K == f.K && a.N > 0 && a.bits == f.bits &&
          a.group_size == f.group_size && a.mode == f.mode && a.transpose && a.int8 == f.int8;
  }
  if (one) return int8_vec_run(as, n);
  for (int i = 0; i < n; ++i) qmm_run(as[i]);
}

}  // namespace ember::cpu::EMBER_ISA_NS
