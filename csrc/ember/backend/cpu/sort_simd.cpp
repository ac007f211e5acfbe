// Vectorized sort of int32 keys, the 32-bit path of sort.cpp: compiled
// once per ISA level (backend/cpu/isa.h); the AVX2 and AVX-512 levels run
// the AVX2 code below, the baseline has none (sort.cpp sorts by radix).
//
// Quicksort whose partition step classifies 8 keys per instruction against
// the pivot and writes them to both ends with one permutation (a lookup
// table of lane orders by comparison mask); reading U vectors at a time
// from whichever end has less free room keeps every store inside space
// already read. Pieces of up to 1024 keys are finished by a bitonic network
// in registers: an 8-input sorting network per lane, an 8x8 transpose, then
// bitonic merges of ever longer runs.
#include "ember/backend/cpu/isa_unit.h"
#include "ember/backend/cpu/vec.h"

namespace ember::cpu::EMBER_ISA_NS {

#if EMBER_ISA_HAS_AVX2
namespace {

struct PermTable {
  alignas(32) int32_t idx[256][8];
  PermTable() {
    for (int m = 0; m < 256; ++m) {  // lanes <= pivot first, then the others, each in order
      int k = 0;
      for (int j = 0; j < 8; ++j)
        if (!(m >> j & 1)) idx[m][k++] = j;
      for (int j = 0; j < 8; ++j)
        if (m >> j & 1) idx[m][k++] = j;
    }
  }
};
inline const PermTable& perm_table() {
  static const PermTable t;
  return t;
}

inline __m256i reverse8(__m256i v) { return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(7, 6, 5, 4, 3, 2, 1, 0)); }

inline void cx(__m256i& a, __m256i& b) {
  __m256i t = _mm256_min_epi32(a, b);
  b = _mm256_max_epi32(a, b);
  a = t;
}

// A bitonic vector sorted ascending (distances 4, 2, 1 within the vector).
inline __m256i bitonic_clean(__m256i v) {
  __m256i w = _mm256_permute2x128_si256(v, v, 1);
  v = _mm256_blend_epi32(_mm256_min_epi32(v, w), _mm256_max_epi32(v, w), 0xF0);
  w = _mm256_shuffle_epi32(v, _MM_SHUFFLE(1, 0, 3, 2));
  v = _mm256_blend_epi32(_mm256_min_epi32(v, w), _mm256_max_epi32(v, w), 0xCC);
  w = _mm256_shuffle_epi32(v, _MM_SHUFFLE(2, 3, 0, 1));
  return _mm256_blend_epi32(_mm256_min_epi32(v, w), _mm256_max_epi32(v, w), 0xAA);
}

inline void transpose8(__m256i* r) {
  VecN<int32_t, 8> v[8];
  for (int i = 0; i < 8; ++i) v[i] = (VecN<int32_t, 8>)r[i];
  transpose8x8(v);
  for (int i = 0; i < 8; ++i) r[i] = (__m256i)v[i];
}

// Merges the sorted runs r[0, K) and r[K, 2K) of vectors. Vectors from
// `lim` on do not exist: they stand for +inf, which no compare-exchange
// moves, so their work is skipped.
template <int K>
inline void merge_runs(__m256i* r, int lim) {
  if (lim <= K) return;
  for (int i = 0; i < K; ++i) {
    const int j = 2 * K - 1 - i;  // second run reversed: the pair is bitonic
    if (j >= lim) continue;
    __m256i b = reverse8(r[j]), a = r[i];
    r[i] = _mm256_min_epi32(a, b);
    r[j] = _mm256_max_epi32(a, b);
  }
  for (int h = 0; h < 2; ++h) {
    __m256i* q = r + h * K;
    const int ql = std::min(K, lim - h * K);
    for (int d = K / 2; d >= 1; d /= 2) {
      for (int i = 0; i + d < ql; ++i) {
        if ((i & d) == 0) cx(q[i], q[i + d]);
      }
    }
    for (int i = 0; i < ql; ++i) q[i] = bitonic_clean(q[i]);
  }
}

// 64 keys in 8 vectors, sorted in vector order.
inline void sort64(__m256i* r) {
  // Batcher's odd-even merge network on 8 inputs, each lane on its own
  cx(r[0], r[1]), cx(r[2], r[3]), cx(r[4], r[5]), cx(r[6], r[7]);
  cx(r[0], r[2]), cx(r[1], r[3]), cx(r[4], r[6]), cx(r[5], r[7]);
  cx(r[1], r[2]), cx(r[5], r[6]);
  cx(r[0], r[4]), cx(r[1], r[5]), cx(r[2], r[6]), cx(r[3], r[7]);
  cx(r[2], r[4]), cx(r[3], r[5]);
  cx(r[1], r[2]), cx(r[3], r[4]), cx(r[5], r[6]);
  transpose8(r);  // 8 sorted runs of 8
  for (int i = 0; i < 8; i += 2) merge_runs<1>(r + i, 2);
  for (int i = 0; i < 8; i += 4) merge_runs<2>(r + i, 4);
  merge_runs<4>(r, 8);
}

// a[0, n), n <= 8 * NV, by a bitonic network over whole 64-key groups.
template <int NV>
void sort_net(int32_t* a, int64_t n) {
  alignas(32) int32_t buf[NV * 8];
  const int nv = static_cast<int>((n + 63) / 64) * 8;
  std::memcpy(buf, a, static_cast<size_t>(n) * 4);
  for (int64_t i = n; i < nv * 8; ++i) buf[i] = std::numeric_limits<int32_t>::max();
  __m256i r[NV];
  for (int i = 0; i < nv; ++i) r[i] = _mm256_load_si256(reinterpret_cast<const __m256i*>(buf + 8 * i));
  for (int i = 0; i < nv; i += 8) sort64(r + i);
  if constexpr (NV >= 16)
    for (int i = 0; i < nv; i += 16) merge_runs<8>(r + i, nv - i);
  if constexpr (NV >= 32)
    for (int i = 0; i < nv; i += 32) merge_runs<16>(r + i, nv - i);
  if constexpr (NV >= 64)
    for (int i = 0; i < nv; i += 64) merge_runs<32>(r + i, nv - i);
  if constexpr (NV >= 128) merge_runs<64>(r, nv);
  for (int i = 0; i < nv; ++i) _mm256_store_si256(reinterpret_cast<__m256i*>(buf + 8 * i), r[i]);
  std::memcpy(a, buf, static_cast<size_t>(n) * 4);
}

constexpr int64_t kLeaf = 1024;

void sort_small(int32_t* a, int64_t n) {
  if (n <= 16) {
    for (int64_t i = 1; i < n; ++i) {  // insertion sort
      int32_t x = a[i];
      int64_t j = i;
      for (; j > 0 && a[j - 1] > x; --j) a[j] = a[j - 1];
      a[j] = x;
    }
  } else if (n <= 64) {
    sort_net<8>(a, n);
  } else if (n <= 128) {
    sort_net<16>(a, n);
  } else if (n <= 256) {
    sort_net<32>(a, n);
  } else if (n <= 512) {
    sort_net<64>(a, n);
  } else {
    sort_net<128>(a, n);
  }
}

// Partitions a[0, n) (n >= 16U): a[0, m) <= p < a[m, n); returns m.
template <int U>
int64_t partition(int32_t* a, int64_t n, int32_t p) {
  const PermTable& T = perm_table();
  const __m256i P = _mm256_set1_epi32(p);
  __m256i save[2 * U];  // both ends, read first: room for the first writes
  for (int i = 0; i < U; ++i) {
    save[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + 8 * i));
    save[U + i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + n - 8 * (i + 1)));
  }
  int64_t lr = 8 * U, rr = n - 8 * U, lw = 0, rw = n;  // read / write fronts
  for (int64_t rem = (rr - lr) % (8 * U); rem > 0; --rem) {
    int32_t x = a[lr++];
    if (x <= p) a[lw++] = x;
    else a[--rw] = x;
  }
  auto put = [&](__m256i v) {
    int m = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(v, P)));
    __m256i w = _mm256_permutevar8x32_epi32(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(T.idx[m])));
    int gt = __builtin_popcount(static_cast<unsigned>(m));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + lw), w);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(a + rw - 8), w);
    lw += 8 - gt;
    rw -= gt;
  };
  while (rr > lr) {
    const bool left = lr - lw <= rw - rr;  // read where the room is smaller
    const int64_t at = left ? lr : rr - 8 * U;
    lr += left ? 8 * U : 0;
    rr -= left ? 0 : 8 * U;
    __m256i v[U];
    for (int i = 0; i < U; ++i) v[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + at + 8 * i));
    for (int i = 0; i < U; ++i) put(v[i]);
  }
  for (int i = 0; i < 2 * U; ++i) put(save[i]);
  return lw;
}

inline int32_t med3(int32_t a, int32_t b, int32_t c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); }

void quicksort(int32_t* a, int64_t n, int depth) {
  while (n > kLeaf) {
    if (depth-- == 0) {  // pathological pivots: fall back to introsort
      std::sort(a, a + n);
      return;
    }
    const int64_t s = n / 8;
    const int32_t p = med3(med3(a[0], a[s], a[2 * s]), med3(a[3 * s], a[4 * s], a[5 * s]),
                           med3(a[6 * s], a[7 * s], a[n - 1]));
    int64_t m = partition<4>(a, n, p);
    if (m == n) {  // nothing above the pivot: split off the keys equal to it
      if (p == std::numeric_limits<int32_t>::min()) return;
      n = partition<4>(a, n, p - 1);
      continue;
    }
    if (m < n - m) {
      quicksort(a, m, depth);
      a += m;
      n -= m;
    } else {
      quicksort(a + m, n - m, depth);
      n = m;
    }
  }
  sort_small(a, n);
}

void sort(int32_t* a, int64_t n) {
  int depth = 2 * (64 - __builtin_clzll(static_cast<unsigned long long>(n) | 1));
  quicksort(a, n, depth);
}

}  // namespace

bool sort_i32(int32_t* a, int64_t n) {
  sort(a, n);
  return true;
}

int64_t partition_i32(int32_t* a, int64_t n, int32_t pivot) { return partition<4>(a, n, pivot); }
#else
bool sort_i32(int32_t*, int64_t) { return false; }
int64_t partition_i32(int32_t*, int64_t, int32_t) { return -1; }
#endif

}  // namespace ember::cpu::EMBER_ISA_NS
