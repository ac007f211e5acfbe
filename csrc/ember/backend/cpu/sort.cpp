// Sorting and selection kernels (sort, argsort, partition, topk) and the
// ops built on the same order keys (unique, searchsorted); scans are in
// scan.cpp.
//
// Sorting works on unsigned integer *keys* whose natural order is NumPy's
// order of the values: integers flip their sign bit, floats map through the
// usual sign-magnitude flip with -0 folded onto +0 and every NaN onto the
// largest key, so equal values have equal keys. Complex numbers get a
// 128-bit key (NaN class, then real and imaginary keys) sorted by
// comparison. Each row along the sorted axis is gathered (with its stride)
// into a thread-local key buffer, sorted, and written out:
//
//   * sort, 32-bit keys (float32, int32, uint32), where the ISA level has
//     AVX2: a quicksort with a vectorized partition and bitonic networks for
//     pieces of up to 1024 (sort_simd.cpp);
//   * other sorts and argsort: LSD radix sort on 8-bit digits, skipping
//     digits that are equal across the row; rows too big for the cache get
//     one MSD pass on the top digit first; std::sort for short rows;
//   * argsort sorts (key << 32 | index) words (or key/index pairs for 64-bit
//     keys), which makes it stable for free;
//   * sort turns keys back into values, then restores the exact bits of the
//     folded values (-0 and NaN payloads) in their original order (stable);
//   * partition / argpartition find the kth key by a radix select (8-bit
//     digits from the top; nth_element for complex keys), then write the
//     smaller, equal and larger elements, each in input order.
//
// Rows are shared out to the threads in blocks that each thread claims when
// it is free; a single huge row is split by the top quicksort levels (or
// the MSD pass) and its parts sorted in parallel.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <type_traits>
#include <vector>


#include "ember/allocator.h"
#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/functors.h"
#include "ember/backend/cpu/isa.h"
#include "ember/backend/cpu/kernel_utils.h"
#include "ember/backend/cpu/loops.h"
#include "ember/backend/cpu/threadpool.h"
#include "ember/primitives/sort.h"

namespace ember {

namespace cpu {
namespace {

// --------------------------------------------------------------------------
// keys

// 128-bit key of a complex number: NumPy's order [R+Rj, R+nanj, nan+Rj,
// nan+nanj], each class ordered by its non-NaN parts.
struct CKey {
  uint64_t hi, lo;
  bool operator<(const CKey& o) const { return hi < o.hi || (hi == o.hi && lo < o.lo); }
  bool operator==(const CKey& o) const { return hi == o.hi && lo == o.lo; }
};

// Float bits -> key (U unsigned of the float's width, E the exponent mask).
template <class U, U ExpMask>
inline U float_key(U b) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  const U mag = static_cast<U>(b & ~sign);
  U k = (b & sign) ? static_cast<U>(~b) : static_cast<U>(b | sign);
  k = mag == 0 ? sign : k;                     // -0 == +0
  return mag > ExpMask ? static_cast<U>(~U(0)) : k;  // every NaN last
}
template <class U>
inline U float_from_key(U k) {
  constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
  return (k & sign) ? static_cast<U>(k ^ sign) : static_cast<U>(~k);
}

template <class T, class = void>
struct KeyOf;

template <>
struct KeyOf<bool> {
  using K = uint8_t;
  static K key(bool x) { return x ? 1 : 0; }
  static bool value(K k) { return k != 0; }
  static bool special(bool) { return false; }
  static bool isnan(bool) { return false; }
};

template <class T>
struct KeyOf<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  using K = std::make_unsigned_t<T>;
  static constexpr K flip = std::is_signed_v<T> ? static_cast<K>(K(1) << (sizeof(K) * 8 - 1)) : K(0);
  static K key(T x) { return static_cast<K>(static_cast<K>(x) ^ flip); }
  static T value(K k) { return static_cast<T>(static_cast<K>(k ^ flip)); }
  static bool special(T) { return false; }
  static bool isnan(T) { return false; }
};

template <class T, class U, U ExpMask>
struct FloatKey {
  using K = U;
  static U bits(T x) {
    U b;
    std::memcpy(&b, &x, sizeof(U));
    return b;
  }
  static K key(T x) { return float_key<U, ExpMask>(bits(x)); }
  static T value(K k) {
    U b = float_from_key<U>(k);
    T x;
    std::memcpy(&x, &b, sizeof(U));
    return x;
  }
  // values whose bits the key folds: -0 and NaNs
  static bool special(T x) {
    constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
    U b = bits(x);
    return static_cast<U>(b & ~sign) > ExpMask || b == sign;
  }
  static bool isnan(T x) {
    constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
    return static_cast<U>(bits(x) & ~sign) > ExpMask;
  }
};
template <>
struct KeyOf<float16_t> : FloatKey<float16_t, uint16_t, 0x7C00> {};
template <>
struct KeyOf<bfloat16_t> : FloatKey<bfloat16_t, uint16_t, 0x7F80> {};
template <>
struct KeyOf<float> : FloatKey<float, uint32_t, 0x7F800000u> {};
template <>
struct KeyOf<double> : FloatKey<double, uint64_t, 0x7FF0000000000000ull> {};

template <>
struct KeyOf<complex64_t> {
  using K = CKey;
  static K key(complex64_t z) {
    using F = KeyOf<float>;
    float re = z.real(), im = z.imag();
    bool nr = re != re, ni = im != im;
    uint64_t cls = (nr ? 2u : 0u) + (ni ? 1u : 0u);
    uint64_t first = nr ? (ni ? 0u : F::key(im)) : F::key(re);
    uint64_t second = (nr || ni) ? 0u : F::key(im);
    return CKey{(cls << 32) | first, second};
  }
  static bool special(complex64_t) { return false; }  // complex sorts gather values
  static bool isnan(complex64_t z) { return z.real() != z.real() || z.imag() != z.imag(); }
};

// --------------------------------------------------------------------------
// elements to sort: plain keys (sort), or keys with their index (argsort)

// Key + index for keys of up to 32 bits: one word, (key << 32) | index.
template <class K, class = void>
struct Arg {
  using E = uint64_t;
  static constexpr int LO = 4, NB = sizeof(K);  // radix digits: bytes 4 .. 4+NB
  static E make(K k, uint32_t i) { return (static_cast<uint64_t>(k) << 32) | i; }
  static uint32_t index(E e) { return static_cast<uint32_t>(e); }
};
struct Pair64 {
  uint64_t k;
  uint32_t i;
};
template <>
struct Arg<uint64_t> {
  using E = Pair64;
  static constexpr int LO = 0, NB = 8;
  static E make(uint64_t k, uint32_t i) { return {k, i}; }
  static uint32_t index(E e) { return e.i; }
};
struct PairC {
  CKey k;
  uint32_t i;
};
template <>
struct Arg<CKey> {
  using E = PairC;
  static constexpr int LO = 0, NB = 0;  // comparison sort only
  static E make(CKey k, uint32_t i) { return {k, i}; }
  static uint32_t index(E e) { return e.i; }
};

inline bool elem_less(uint8_t a, uint8_t b) { return a < b; }
inline bool elem_less(uint16_t a, uint16_t b) { return a < b; }
inline bool elem_less(uint32_t a, uint32_t b) { return a < b; }
inline bool elem_less(uint64_t a, uint64_t b) { return a < b; }
inline bool elem_less(const CKey& a, const CKey& b) { return a < b; }
inline bool elem_less(const Pair64& a, const Pair64& b) { return a.k < b.k || (a.k == b.k && a.i < b.i); }
inline bool elem_less(const PairC& a, const PairC& b) { return a.k < b.k || (a.k == b.k && a.i < b.i); }
struct ElemLess {
  template <class E>
  bool operator()(const E& a, const E& b) const {
    return elem_less(a, b);
  }
};

template <class E>
inline uint64_t radix_word(const E& e) {
  if constexpr (std::is_integral_v<E>) return e;
  else return e.k;
}

// --------------------------------------------------------------------------
// scratch

// A growable scratch array from Ember's allocator (its cache keeps big
// buffers mapped, so repeated sorts do not page-fault them in again).
template <class E>
class Buf {
 public:
  E* get(int64_t n) {
    size_t bytes = static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(E);
    if (!buf_ || buf_->size() < bytes) buf_ = allocator::malloc(bytes);
    return static_cast<E*>(buf_->ptr());
  }

 private:
  std::shared_ptr<Buffer> buf_;
};

// --------------------------------------------------------------------------
// radix sort

constexpr int64_t kSmallSort = 192;           // rows below: std::sort
constexpr int64_t kCacheBytes = 256 * 1024;   // LSD directly when a row fits

// LSD radix sort of a[0, n) on bytes LO .. LO+NB of radix_word; t is
// scratch. Returns where the sorted elements are (a or t).
template <class E, int LO, int NB>
E* lsd_sort(E* a, E* t, int64_t n) {
  uint32_t cnt[NB][256];
  std::memset(cnt, 0, sizeof(cnt));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t w = radix_word(a[i]);
    for (int b = 0; b < NB; ++b) ++cnt[b][(w >> (8 * (LO + b))) & 0xFF];
  }
  E* src = a;
  E* dst = t;
  for (int b = 0; b < NB; ++b) {
    const int shift = 8 * (LO + b);
    if (cnt[b][(radix_word(src[0]) >> shift) & 0xFF] == static_cast<uint32_t>(n)) continue;  // one digit
    uint32_t off[256];
    uint32_t sum = 0;
    for (int d = 0; d < 256; ++d) {
      off[d] = sum;
      sum += cnt[b][d];
    }
    for (int64_t i = 0; i < n; ++i) {
      E e = src[i];
      dst[off[(radix_word(e) >> shift) & 0xFF]++] = e;
    }
    std::swap(src, dst);
  }
  return src;
}

// Sorts a[0, n) (scratch t, same size); returns where the result is. With
// `parallel`, the top-digit pass and the buckets are split across threads.
template <class E, int LO, int NB>
E* radix_sort(E* a, E* t, int64_t n, bool parallel) {
  if constexpr (NB == 0) {
    std::sort(a, a + n, ElemLess{});
    return a;
  } else {
    if (n < kSmallSort || n >= (int64_t(1) << 32)) {
      std::sort(a, a + n, ElemLess{});
      return a;
    }
    if (NB == 1 || n * static_cast<int64_t>(sizeof(E)) <= kCacheBytes) return lsd_sort<E, LO, NB>(a, t, n);
    if constexpr (NB >= 2) {
      // One MSD pass on the top digit, then each bucket on its own.
      const int shift = 8 * (LO + NB - 1);
      const int nc = parallel ? 4 * num_threads() : 1;  // chunks of the input
      const int64_t per = (n + nc - 1) / nc;
      std::vector<std::array<int64_t, 256>> hist(nc);
      auto chunks = [&](auto&& f) {
        dynamic_for(nc, no_state, [&](int64_t c, NoState&) { f(static_cast<int>(c)); });
      };
      chunks([&](int c) {
        auto& h = hist[c];
        h.fill(0);
        int64_t b = c * per, e = std::min(n, b + per);
        for (int64_t i = b; i < e; ++i) ++h[(radix_word(a[i]) >> shift) & 0xFF];
      });
      std::array<int64_t, 256> total{}, start{};
      for (int c = 0; c < nc; ++c) {
        for (int d = 0; d < 256; ++d) total[d] += hist[c][d];
      }
      if (*std::max_element(total.begin(), total.end()) == n) {
        return radix_sort<E, LO, NB - 1>(a, t, n, parallel);  // top digit all equal
      }
      int64_t sum = 0;
      for (int d = 0; d < 256; ++d) {
        start[d] = sum;
        sum += total[d];
      }
      // per-chunk write offsets: bucket start + earlier chunks' counts
      std::vector<std::array<int64_t, 256>> off(nc);
      for (int d = 0; d < 256; ++d) {
        int64_t o = start[d];
        for (int c = 0; c < nc; ++c) {
          off[c][d] = o;
          o += hist[c][d];
        }
      }
      chunks([&](int c) {
        auto& o = off[c];
        int64_t b = c * per, e = std::min(n, b + per);
        for (int64_t i = b; i < e; ++i) {
          E x = a[i];
          t[o[(radix_word(x) >> shift) & 0xFF]++] = x;
        }
      });
      // each bucket on its own (claimed by whichever thread is free)
      auto bucket = [&](int64_t d, NoState&) {
        int64_t s = start[d], len = total[d];
        if (len == 0) return;
        E* r = radix_sort<E, LO, NB - 1>(t + s, a + s, len, false);
        if (r != a + s) std::memcpy(static_cast<void*>(a + s), r, static_cast<size_t>(len) * sizeof(E));
      };
      if (parallel) {
        dynamic_for(256, no_state, bucket);
      } else {
        NoState st;
        for (int d = 0; d < 256; ++d) bucket(d, st);
      }
      return a;
    }
    return a;
  }
}


// One huge row on all threads (levels with a vector sort): the top levels of
// the quicksort split the row
// into 4 parts per thread (the parts of a level partitioned in parallel,
// around the median of a sample), then the threads sort the parts, each
// taking the next one when done.
int32_t* par_sort_i32(int32_t* a, int64_t n) {
  constexpr int64_t kLeaf = 1024;  // parts this small are not split further
  const int nt = num_threads();
  const auto sort_part = EMBER_ISA_CALL(sort_i32);
  const auto partition = EMBER_ISA_CALL(partition_i32);
  if (nt <= 1) {
    sort_part(a, n);
    return a;
  }
  struct Part {
    int64_t begin, len;
    bool done;  // all keys equal: nothing to sort
  };
  std::vector<Part> parts{{0, n, false}};
  while (static_cast<int>(parts.size()) < 4 * nt) {
    std::vector<Part> next(2 * parts.size());
    dynamic_for(static_cast<int64_t>(parts.size()), no_state, [&](int64_t i, NoState&) {
      Part p = parts[i];
      int32_t* x = a + p.begin;
      if (p.done || p.len <= kLeaf) {
        next[2 * i] = p;
        next[2 * i + 1] = {p.begin + p.len, 0, true};
        return;
      }
      int32_t sample[63];
      for (int j = 0; j < 63; ++j) sample[j] = x[(j * 2 + 1) * p.len / 126];
      std::nth_element(sample, sample + 31, sample + 63);
      const int32_t pivot = sample[31];
      int64_t m = partition(x, p.len, pivot);
      bool upper_equal = false;
      if (m == p.len) {  // nothing above the pivot: split off the keys equal to it
        m = pivot == std::numeric_limits<int32_t>::min() ? 0 : partition(x, p.len, pivot - 1);
        upper_equal = true;
      }
      next[2 * i] = {p.begin, m, false};
      next[2 * i + 1] = {p.begin + m, p.len - m, upper_equal};
    });
    parts.clear();
    for (const Part& p : next) {
      if (p.len > 0) parts.push_back(p);
    }
    bool any_open = false;
    for (const Part& p : parts) any_open |= !p.done && p.len > kLeaf;
    if (!any_open) break;
  }
  // largest parts first, so the last ones to finish are small
  std::sort(parts.begin(), parts.end(), [](const Part& x, const Part& y) { return x.len > y.len; });
  dynamic_for(static_cast<int64_t>(parts.size()), no_state, [&](int64_t i, NoState&) {
    if (!parts[i].done) sort_part(a + parts[i].begin, parts[i].len);
  });
  return a;
}

// --------------------------------------------------------------------------
// rows along an axis

// The rows of an array along `axis`: count, length, strides, and the offset
// of row r in the input and in a dense output.
struct Rows {
  int64_t count = 1, n = 0, in_stride = 0, out_stride = 0;
  Shape dims;              // the other dims
  Strides in_st, out_st;   // their strides (input / output)

  Rows(const array& in, const Shape& out_shape, int axis) {
    n = in.shape(axis);
    in_stride = in.strides()[axis];
    Strides ost = row_strides(out_shape);
    out_stride = ost[axis];
    for (int d = 0; d < in.ndim(); ++d) {
      if (d == axis || in.shape(d) == 1) continue;
      dims.push_back(in.shape(d));
      in_st.push_back(in.strides()[d]);
      out_st.push_back(ost[d]);
      count *= in.shape(d);
    }
    if (in.size() == 0) count = 0;
  }
  void offsets(int64_t r, int64_t& io, int64_t& oo) const {
    io = oo = 0;
    for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
      int64_t i = r % dims[d];
      r /= dims[d];
      io += i * in_st[d];
      oo += i * out_st[d];
    }
  }
};

// Runs body(scratch, in_offset, out_offset, par) over the rows: blocks of
// rows claimed by free threads, one scratch per thread. A single big row
// (fewer rows than threads) runs here with `par` set, so its sort splits.
template <class Scratch, class Body>
void for_rows(const Rows& rows, Body&& body) {
  if (rows.count == 0) return;
  const int nt = num_threads();
  const bool one_big = rows.count < nt && rows.n >= (int64_t(1) << 18);
  auto run = [&](int64_t b, int64_t e, Scratch& scratch) {
    for (int64_t r = b; r < e; ++r) {
      int64_t io, oo;
      rows.offsets(r, io, oo);
      body(scratch, io, oo, one_big);
    }
  };
  if (one_big || rows.count * rows.n < 2 * kParallelGrain) {
    Scratch scratch(rows.n);
    run(0, rows.count, scratch);
    return;
  }
  // blocks of rows worth ~kParallelGrain elements, at least 4 per thread
  int64_t block = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(rows.n, 1));
  block = std::max<int64_t>(1, std::min(block, (rows.count + 4 * nt - 1) / (4 * nt)));
  dynamic_for((rows.count + block - 1) / block, [&] { return Scratch(rows.n); },
              [&](int64_t i, Scratch& scratch) { run(i * block, std::min(rows.count, (i + 1) * block), scratch); });
}

template <class K>
struct SortScratch {
  using E = typename Arg<K>::E;
  Buf<K> keys, ktmp;
  Buf<E> elems, etmp;
  explicit SortScratch(int64_t) {}
};

template <class T>
using key_t = typename KeyOf<T>::K;

// The row algorithms below see only keys and move values as opaque words of
// the value's width, so one instantiation serves every dtype with the same
// key type; the dtype-specific steps come in a KeyOps table.
template <class K>
struct ValueWord {
  using type = K;
};
template <>
struct ValueWord<CKey> {
  using type = uint64_t;  // complex64
};

template <class K>
struct KeyOps {
  // k[i] = key(x[i * st]) ^ flip for i in [b, e); true if a -0 or NaN was seen
  bool (*gather)(const void* x, int64_t st, int64_t b, int64_t e, K* k, K flip);
  // o[i * ost] = value(k[i] ^ flip) for i in [b, e)
  void (*emit)(const K* k, int64_t b, int64_t e, void* o, int64_t ost, K flip);
  // after a sort of the keys (k, in signed order when `flip`): the exact -0
  // and NaN values back into o, in input order
  void (*restore)(const void* x, int64_t st, int64_t n, const K* k, K flip, void* o, int64_t ost);
};

template <class T>
KeyOps<key_t<T>> key_ops() {
  using K = key_t<T>;
  using KT = KeyOf<T>;
  KeyOps<K> ops{};
  ops.gather = [](const void* xv, int64_t st, int64_t b, int64_t e, K* k, K flip) {
    const T* x = static_cast<const T*>(xv);
    bool sp = false;
    auto run = [&](auto stride) {  // stride 1 as a constant: the loop vectorizes
      for (int64_t i = b; i < e; ++i) {
        T v = x[i * stride];
        if constexpr (std::is_same_v<K, CKey>) k[i] = KT::key(v);  // (never flipped)
        else k[i] = static_cast<K>(KT::key(v) ^ flip);
        if constexpr (is_float_v<T>) sp |= KT::special(v);
      }
    };
    if (st == 1) run(std::integral_constant<int64_t, 1>{});
    else run(st);
    return sp;
  };
  if constexpr (!std::is_same_v<K, CKey>) {
    ops.emit = [](const K* k, int64_t b, int64_t e, void* ov, int64_t ost, K flip) {
      T* o = static_cast<T*>(ov);
      if (ost == 1) {
        for (int64_t i = b; i < e; ++i) o[i] = KT::value(static_cast<K>(k[i] ^ flip));
      } else {
        for (int64_t i = b; i < e; ++i) o[i * ost] = KT::value(static_cast<K>(k[i] ^ flip));
      }
    };
    ops.restore = [](const void* xv, int64_t st, int64_t n, const K* k, K flip, void* ov, int64_t ost) {
      if constexpr (is_float_v<T>) {
        const T* x = static_cast<const T*>(xv);
        T* o = static_cast<T*>(ov);
        auto find = [&](K key) {  // first position of `key` among the sorted keys
          if (flip) {
            using S = std::make_signed_t<K>;
            const S* sk = reinterpret_cast<const S*>(k);
            return std::lower_bound(sk, sk + n, static_cast<S>(key ^ flip)) - sk;
          }
          return std::lower_bound(k, k + n, key) - k;
        };
        const K zero = KT::key(T(0.0f));
        int64_t z = find(zero), nan_at = find(static_cast<K>(~K(0)));
        for (int64_t i = 0; i < n; ++i) {
          T v = x[i * st];
          if (KT::isnan(v)) o[(nan_at++) * ost] = v;
          else if (KT::key(v) == zero) o[(z++) * ost] = v;
        }
      }
    };
  }
  return ops;
}

// f(begin, end) over [0, n): in chunks on every thread when `par`.
template <class F>
void chunked(int64_t n, bool par, F&& f) {
  if (!par) return f(int64_t(0), n);
  constexpr int64_t kChunk = 1 << 16;
  dynamic_for((n + kChunk - 1) / kChunk, no_state,
              [&](int64_t c, NoState&) { f(c * kChunk, std::min(n, (c + 1) * kChunk)); });
}

// Keys of a row (xor flip); returns whether a -0 or NaN was seen.
template <class K>
bool gather_row(const KeyOps<K>& ops, const void* x, int64_t st, int64_t n, K* k, K flip, bool par) {
  std::atomic<bool> special{false};
  chunked(n, par, [&](int64_t b, int64_t e) {
    if (ops.gather(x, st, b, e, k, flip)) special = true;
  });
  return special;
}

// Sorted (key, index) elements of a row: (key, index) order, so ties keep
// their input order.
template <class K>
typename Arg<K>::E* arg_sort_row(const KeyOps<K>& ops, const void* x, int64_t st, int64_t n, SortScratch<K>& s,
                                 bool par) {
  using A = Arg<K>;
  K* k = s.keys.get(n);
  gather_row(ops, x, st, n, k, K{}, par);
  auto* e = s.elems.get(n);
  chunked(n, par, [&](int64_t b, int64_t end) {
    for (int64_t i = b; i < end; ++i) e[i] = A::make(k[i], static_cast<uint32_t>(i));
  });
  return radix_sort<typename A::E, A::LO, A::NB>(e, s.etmp.get(n), n, par);
}

template <class K>
void sort_values_row(const KeyOps<K>& ops, const void* xv, int64_t st, int64_t n, void* ov, int64_t ost,
                     SortScratch<K>& s, bool par) {
  if constexpr (std::is_same_v<K, CKey>) {
    using V = typename ValueWord<K>::type;
    const V* x = static_cast<const V*>(xv);
    V* o = static_cast<V*>(ov);
    auto* e = arg_sort_row(ops, xv, st, n, s, par);
    for (int64_t i = 0; i < n; ++i) o[i * ost] = x[Arg<K>::index(e[i]) * st];
  } else {
    // 32-bit keys go to the vectorized quicksort as int32 (flip the top
    // bit) where the ISA level has one
    const bool vec = std::is_same_v<K, uint32_t> && isa_level() >= kIsaAvx2;
    const K flip = vec ? static_cast<K>(K(1) << (sizeof(K) * 8 - 1)) : K(0);
    K* k = s.keys.get(n);
    const bool special = gather_row(ops, xv, st, n, k, flip, par);  // -0 / NaN: bits to restore
    if (vec) {
      int32_t* ik = reinterpret_cast<int32_t*>(k);
      k = reinterpret_cast<K*>(par ? par_sort_i32(ik, n) : (EMBER_ISA_CALL(sort_i32)(ik, n), ik));
    } else {
      k = radix_sort<K, 0, sizeof(K)>(k, s.ktmp.get(n), n, par);
    }
    chunked(n, par, [&](int64_t b, int64_t e) { ops.emit(k, b, e, ov, ost, flip); });
    // The keys folded -0 onto +0 and all NaNs together: their exact values
    // go back in input order (the sort is stable).
    if (special) ops.restore(xv, st, n, k, flip, ov, ost);
  }
}

// The kth smallest (0 <= kth < n) of n unsigned keys: a radix select, 8
// bits a pass from the top, each pass a histogram of the keys still in the
// running and a branch-free copy of those whose digit holds kth into tmp
// (std::nth_element's compares and swaps were 3x slower on a vocabulary of
// logits).
template <class K>
K radix_select(const K* k, int64_t n, int64_t kth, K* tmp) {
  const K* src = k;
  int64_t m = n;
  K v = 0;
  for (int shift = static_cast<int>(sizeof(K) * 8) - 8; shift >= 0; shift -= 8) {
    // four histograms, summed: keys of a narrow range (logits) share a top
    // digit, and one histogram would chain every increment through memory
    int64_t h4[4][256] = {}, h[256];
    int64_t i = 0;
    for (; i + 4 <= m; i += 4)
      for (int u = 0; u < 4; ++u) ++h4[u][(src[i + u] >> shift) & 255];
    for (; i < m; ++i) ++h4[0][(src[i] >> shift) & 255];
    for (int b = 0; b < 256; ++b) h[b] = h4[0][b] + h4[1][b] + h4[2][b] + h4[3][b];
    int d = 0;
    while (kth >= h[d]) kth -= h[d++];
    v = static_cast<K>(v | (static_cast<K>(d) << shift));
    if (shift == 0) break;
    int64_t w = 0;  // w <= i: compacting src == tmp in place is safe
    for (int64_t i = 0; i < m; ++i) {
      const K x = src[i];
      tmp[w] = x;
      w += static_cast<int>((x >> shift) & 255) == d;
    }
    src = tmp;
    m = w;
  }
  return v;
}

template <class K>
void partition_row(const KeyOps<K>& ops, const void* xv, int64_t st, int64_t n, int64_t kth, void* ov,
                   uint32_t* oi, int64_t ost, SortScratch<K>& s) {
  using V = typename ValueWord<K>::type;
  const V* x = static_cast<const V*>(xv);
  V* o = static_cast<V*>(ov);
  K* k = s.keys.get(n);
  K* t = s.ktmp.get(n);
  gather_row(ops, xv, st, n, k, K{}, false);
  K v;
  if constexpr (std::is_unsigned_v<K>) {
    v = radix_select(k, n, kth, t);
  } else {
    std::copy(k, k + n, t);
    std::nth_element(t, t + kth, t + n, ElemLess{});
    v = t[kth];
  }
  int64_t lt = 0, eq = 0;
  for (int64_t i = 0; i < n; ++i) {
    lt += elem_less(k[i], v);
    eq += k[i] == v;
  }
  // smaller values, then the kth value's equals, then larger, each in input
  // order; the class of each element picks its cursor without a branch
  auto place = [&](auto put) {
    // the three cursors in registers, picked by selects (cursors in memory
    // chained every element of the common class through a store and a load)
    int64_t p_lt = 0, p_eq = lt, p_gt = lt + eq;
    for (int64_t i = 0; i < n; ++i) {
      const bool below = elem_less(k[i], v), above = elem_less(v, k[i]);
      // arithmetic, not a ternary (which GCC turns into a jump that random
      // data mispredicts half the time)
      put(p_eq + static_cast<int64_t>(below) * (p_lt - p_eq) + static_cast<int64_t>(above) * (p_gt - p_eq), i);
      p_lt += below;
      p_gt += above;
      p_eq += !(below || above);
    }
  };
  if (o) place([&](int64_t p, int64_t i) { o[p * ost] = x[i * st]; });
  else place([&](int64_t p, int64_t i) { oi[p * ost] = static_cast<uint32_t>(i); });
}

template <class K>
void topk_row(const KeyOps<K>& ops, const void* xv, int64_t st, int64_t n, int64_t kk, void* ov, int64_t ost,
              SortScratch<K>& s) {
  using A = Arg<K>;
  using V = typename ValueWord<K>::type;
  const V* x = static_cast<const V*>(xv);
  V* o = static_cast<V*>(ov);
  if (kk == 0) return;
  K* k = s.keys.get(n);
  gather_row(ops, xv, st, n, k, K{}, false);
  auto* e = s.elems.get(n);
  for (int64_t i = 0; i < n; ++i) e[i] = A::make(k[i], static_cast<uint32_t>(i));
  auto* first = e + (n - kk);
  if (kk < n) std::nth_element(e, first, e + n, ElemLess{});
  auto* r = radix_sort<typename A::E, A::LO, A::NB>(first, s.etmp.get(kk), kk, false);
  for (int64_t j = 0; j < kk; ++j) o[j * ost] = x[A::index(r[j]) * st];
}

template <class K>
void run_sorting(const KeyOps<K>& ops, Sorting::Kind kind, int64_t param, const array& in, array& out, int axis) {
  using V = typename ValueWord<K>::type;
  static_assert(sizeof(V) <= 8);
  Rows rows(in, out.shape(), axis);
  const V* x = in.data<V>();
  const int64_t n = rows.n;
  for_rows<SortScratch<K>>(rows, [&](SortScratch<K>& s, int64_t io, int64_t oo, bool par) {
    const V* xr = x + io;
    const int64_t st = rows.in_stride, ost = rows.out_stride;
    switch (kind) {
      case Sorting::Sort:
        sort_values_row(ops, xr, st, n, out.data<V>() + oo, ost, s, par);
        break;
      case Sorting::ArgSort: {
        auto* e = arg_sort_row(ops, xr, st, n, s, par);
        uint32_t* oi = out.data<uint32_t>() + oo;
        for (int64_t i = 0; i < n; ++i) oi[i * ost] = Arg<K>::index(e[i]);
        break;
      }
      case Sorting::Partition:
        partition_row(ops, xr, st, n, param, out.data<V>() + oo, nullptr, ost, s);
        break;
      case Sorting::ArgPartition:
        partition_row<K>(ops, xr, st, n, param, nullptr, out.data<uint32_t>() + oo, ost, s);
        break;
      case Sorting::TopK:
        topk_row(ops, xr, st, n, param, out.data<V>() + oo, ost, s);
        break;
    }
  });
}

// --------------------------------------------------------------------------
// unique

template <class T>
void run_unique(const array& a, const array* fill, int64_t size, std::vector<array>& outs) {
  using K = key_t<T>;
  using KT = KeyOf<T>;
  const int64_t n = a.size();
  const int64_t st = a.ndim() ? a.strides()[0] : 1;
  const T* x = a.data<T>();
  T* values = outs[0].data<T>();
  uint32_t* index = outs[1].data<uint32_t>();
  uint32_t* inverse = outs[2].data<uint32_t>();
  int32_t* counts = outs[3].data<int32_t>();
  std::vector<uint32_t> first;
  std::vector<int64_t> cnt;
  if (n > 0) {
    SortScratch<K> s(n);
    static const auto ops = key_ops<T>();
    auto* e = arg_sort_row(ops, x, st, n, s, n >= (int64_t(1) << 18));
    const uint32_t last = static_cast<uint32_t>(std::max<int64_t>(size - 1, 0));
    K prev{};
    for (int64_t p = 0; p < n; ++p) {
      uint32_t i = Arg<K>::index(e[p]);
      T v = x[i * st];
      K k = KT::key(v);
      // NaNs never compare equal: each is its own unique value (as MLX)
      if (p == 0 || !(k == prev) || KT::isnan(v)) {
        first.push_back(i);
        cnt.push_back(0);
      }
      ++cnt.back();
      inverse[i] = std::min(static_cast<uint32_t>(first.size() - 1), last);
      prev = k;
    }
  }
  const int64_t g = static_cast<int64_t>(first.size());
  T fv = fill ? fill->data<T>()[0] : (g ? x[first[0] * st] : T());
  for (int64_t j = 0; j < size; ++j) {
    bool real = j < g;
    values[j] = real ? x[first[j] * st] : fv;
    index[j] = real ? first[j] : (g ? first[0] : 0u);
    counts[j] = real ? static_cast<int32_t>(cnt[j]) : 0;
  }
}

}  // namespace
}  // namespace cpu

// --------------------------------------------------------------------------
// Sorting

const char* Sorting::name() const {
  static const char* names[] = {"Sort", "ArgSort", "Partition", "ArgPartition", "TopK"};
  return names[kind_];
}

bool Sorting::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Sorting*>(&o);
  return p && p->kind_ == kind_ && p->axis_ == axis_ && p->param_ == param_;
}

void Sorting::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  out.alloc();
  if (out.size() == 0) return;
  dispatch_all(in.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    static const auto ops = cpu::key_ops<T>();
    cpu::run_sorting(ops, kind_, param_, in, out, axis_);
  });
}

// --------------------------------------------------------------------------
// SearchSorted

bool SearchSorted::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const SearchSorted*>(&o);
  return p && p->right_ == right_;
}

void SearchSorted::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& a = inputs[0];
  const array& v = inputs[1];
  array& out = outputs[0];
  out.alloc();
  if (out.size() == 0) return;
  const bool right = right_;
  dispatch_all(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using KT = cpu::KeyOf<T>;
    using K = typename KT::K;
    const int64_t n = a.size();
    std::vector<K> keys(n);
    const T* ap = a.data<T>();
    const int64_t ast = n ? a.strides()[0] : 1;
    for (int64_t i = 0; i < n; ++i) keys[i] = KT::key(ap[i * ast]);
    const K* kb = keys.data();
    const K* ke = kb + n;
    cpu::for_each_row<2>(
        out.shape(), {out.strides().data(), v.strides().data()}, {out.data<char>(), v.data<char>()},
        {4, static_cast<int>(sizeof(T))},
        [&](std::array<char*, 2> p, std::array<int64_t, 2> s, int64_t m) {
          uint32_t* o = reinterpret_cast<uint32_t*>(p[0]);
          const T* q = reinterpret_cast<const T*>(p[1]);
          for (int64_t i = 0; i < m; ++i) {
            K k = KT::key(q[i * s[1]]);
            const K* at = right ? std::upper_bound(kb, ke, k, cpu::ElemLess{})
                                : std::lower_bound(kb, ke, k, cpu::ElemLess{});
            o[i * s[0]] = static_cast<uint32_t>(at - kb);
          }
        },
        4096);
  });
}

// --------------------------------------------------------------------------
// Unique

bool Unique::is_equivalent(const Primitive& o) const {
  auto p = dynamic_cast<const Unique*>(&o);
  return p && p->size_ == size_;
}

void Unique::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  for (auto& o : outputs) o.alloc();
  const array* fill = inputs.size() > 1 ? &inputs[1] : nullptr;
  dispatch_all(inputs[0].dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    cpu::run_unique<T>(inputs[0], fill, size_, outputs);
  });
}

}  // namespace ember
