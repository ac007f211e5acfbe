// The quantized matrix product (QuantizedMatmul's kernel, arguments in
// backend/cpu/qmm.h), compiled once per ISA level.
//
// Two paths:
//  - matrix-vector (transpose, M <= 8, codes of 1, 2, 4 or 8 bits): each
//    output row's codes are unpacked in registers, 16 words at a time: lane
//    j of a chunk holds word j, whose `per` codes are the consecutive columns
//    chunk + j*per + i, so x is read through a copy permuted the same way
//    (xp[i*16 + j]); the chunk's lane sums are scaled by their group's scale
//    and the biases enter once per group as bias * sum(x over the group).
//    No dequantized weights are written anywhere.
//  - otherwise: tiles of the weights dequantized into a per-thread float32
//    panel (about 128 KB) and multiplied by sgemm, accumulating over K tiles.
// Work is split over output rows/column blocks (and the batch) with the
// pool. The lane arithmetic is multiply then add, never fused, so every
// level computes the same bits.
#include "ember/backend/cpu/isa_unit.h"

#if !defined(EMBER_ISA_SINGLE) && EMBER_ISA_LEVEL == 4
// the 16 lanes of the matrix-vector kernel in one zmm register (before the
// entry point's declaration, which must carry the same target)
#pragma GCC target("prefer-vector-width=512")
#endif
#include "ember/backend/cpu/qmm.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

float half_to_float(uint16_t h) {
  float16_t v;
  std::memcpy(&v, &h, 2);
  return static_cast<float>(v);
}

// Row r's scales (or biases) as float32 (n values).
void row_scales(const QmmArgs& a, const void* base, int64_t r, int64_t n, float* dst) {
  if (a.scale_kind == 0) {
    std::memcpy(dst, static_cast<const float*>(base) + r * n, n * sizeof(float));
  } else if (a.scale_kind == 1) {
    const uint16_t* p = static_cast<const uint16_t*>(base) + r * n;
    for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(p[i]);
  } else if (a.scale_kind == 2) {
    const uint16_t* p = static_cast<const uint16_t*>(base) + r * n;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t u = static_cast<uint32_t>(p[i]) << 16;
      std::memcpy(dst + i, &u, 4);
    }
  } else {
    const uint8_t* p = static_cast<const uint8_t*>(base) + r * n;
    const float* t = a.mode == 3 ? fp8_e4m3_values() : e8m0_values();
    for (int64_t i = 0; i < n; ++i) dst[i] = t[p[i]];
  }
}

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

}  // namespace

void qmm_run(const QmmArgs& a) {
  if (a.batch * a.M * a.N == 0) return;
  if (a.K == 0) {
    std::fill(a.out, a.out + a.batch * a.M * a.N, 0.0f);
    return;
  }
  const bool pow2 = (a.bits & (a.bits - 1)) == 0;
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

}  // namespace ember::cpu::EMBER_ISA_NS
