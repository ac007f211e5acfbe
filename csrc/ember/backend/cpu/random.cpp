// Kernels of the random primitives (primitives/random.h): Threefry over
// counter blocks, and the small batched Cholesky used by
// multivariate_normal.
//
// RandomBits splits the (key, pair) index space across the thread pool; each
// pair's value depends only on its key and counter, so the output does not
// depend on how the work is split. Pairs are hashed in blocks of kBlock
// counters with a branch-free loop the compiler vectorizes.
#include "ember/backend/cpu/isa_unit.h"

#include "ember/backend/cpu/simd_math.h"

namespace ember::cpu::EMBER_ISA_NS {

namespace {

constexpr int64_t kBlock = 256;

// a[i], b[i] = threefry(key, (c0 + i, c1 + i)) for i < n (n <= kBlock).
void hash_block(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1, int64_t n, uint32_t* a, uint32_t* b) {
  for (int64_t i = 0; i < n; ++i) {
    auto r = threefry2x32(k0, k1, c0 + static_cast<uint32_t>(i), c1 + static_cast<uint32_t>(i));
    a[i] = r.first;
    b[i] = r.second;
  }
}

constexpr float kTwoM32 = 0x1p-32f;
constexpr float kOneBelow = 0x1.fffffep-1f;  // nextafter(1, 0)
constexpr float kNormLo = -0x1.fffffep-1f;   // nextafter(-1, 0)

// float(w) rounded to nearest, from two exact int32 conversions (AVX2 has
// no vector uint32 -> float conversion; this form vectorizes).
inline float u32_to_float(uint32_t w) {
  return static_cast<float>(static_cast<int32_t>(w >> 16)) * 65536.0f +
         static_cast<float>(static_cast<int32_t>(w & 0xffffu));
}
// min(v, kOneBelow) as a bitwise select (a ternary here stops GCC from
// vectorizing the erfinv loop).
inline float below_one(float v) { return simd::detail::sel(simd::detail::mask(v < kOneBelow), v, kOneBelow); }

void to_uniform(const uint32_t* w, float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = below_one(u32_to_float(w[i]) * kTwoM32);
}

void to_normal(const uint32_t* w, float* __restrict out, int64_t n) {
  const float range = 1.0f - kNormLo;
  for (int64_t i = 0; i < n; ++i) {
    float p = range * (u32_to_float(w[i]) * kTwoM32);
    out[i] = 1.4142135623730951f * simd::erfinv(below_one(p + kNormLo));
  }
}

// Stores word `w` of a key's stream into its nbytes output bytes.
inline void store_word(char* base, int64_t nbytes, int64_t w, uint32_t v) {
  int64_t at = 4 * w;
  if (at + 4 <= nbytes) {
    std::memcpy(base + at, &v, 4);
  } else {
    std::memcpy(base + at, &v, static_cast<size_t>(nbytes - at));
  }
}

}  // namespace

void random_bits_eval(const RandomBits& p, const std::vector<array>& inputs, std::vector<array>& outputs) {
  using Kind = RandomBits::Kind;
  constexpr Kind Bits = RandomBits::Bits, Uniform = RandomBits::Uniform;
  const array& keys = inputs[0];
  array& out = outputs[0];
  out.alloc();
  const int64_t num_keys = keys.size() / 2;
  std::vector<uint32_t> kv(static_cast<size_t>(keys.size()));
  copy_to_dense(keys, kv.data());
  if (num_keys == 0 || out.size() == 0) return;
  const int64_t per_key = out.size() / num_keys;
  const int64_t nbytes = per_key * out.itemsize();
  const int64_t words = (nbytes + 3) / 4;
  const int64_t half = words / 2, odd = words % 2;
  const int64_t slots = half + odd;  // hash calls per key
  char* base = static_cast<char*>(out.raw_data());
  const Kind kind = p.kind();
  const bool whole_words = (nbytes % 4 == 0);

  auto run = [&](int64_t begin, int64_t end) {
    alignas(64) uint32_t a[kBlock], b[kBlock];
    alignas(64) float fa[kBlock], fb[kBlock];
    int64_t i = begin;
    while (i < end) {
      const int64_t k = i / slots, j0 = i % slots;
      const int64_t j1 = std::min({slots, j0 + kBlock, j0 + (end - i)});
      const uint32_t k0 = kv[2 * k], k1 = kv[2 * k + 1];
      char* kb = base + k * nbytes;
      // Full pairs: j < half.
      const int64_t p1 = std::min(j1, half);
      if (j0 < p1) {
        const int64_t n = p1 - j0;
        hash_block(k0, k1, static_cast<uint32_t>(j0), static_cast<uint32_t>(j0 + half + odd), n, a, b);
        if (kind == Bits) {
          if (whole_words) {
            std::memcpy(kb + 4 * j0, a, 4 * n);
            std::memcpy(kb + 4 * (j0 + half + odd), b, 4 * n);
          } else {
            for (int64_t t = 0; t < n; ++t) {
              store_word(kb, nbytes, j0 + t, a[t]);
              store_word(kb, nbytes, j0 + half + odd + t, b[t]);
            }
          }
        } else {
          float* f = reinterpret_cast<float*>(kb);
          if (kind == Uniform) {
            to_uniform(a, fa, n);
            to_uniform(b, fb, n);
          } else {
            to_normal(a, fa, n);
            to_normal(b, fb, n);
          }
          std::memcpy(f + j0, fa, 4 * n);
          std::memcpy(f + j0 + half + odd, fb, 4 * n);
        }
      }
      // The odd word: first half of hash(key, (half, 0)).
      if (odd && j0 <= half && half < j1) {
        uint32_t w = threefry2x32(k0, k1, static_cast<uint32_t>(half), 0u).first;
        if (kind == Bits) {
          store_word(kb, nbytes, half, w);
        } else {
          float v;
          if (kind == Uniform) {
            to_uniform(&w, &v, 1);
          } else {
            to_normal(&w, &v, 1);
          }
          std::memcpy(kb + 4 * half, &v, 4);
        }
      }
      i += j1 - j0;
    }
  };
  const int64_t total = num_keys * slots;
  cpu::parallel_for(total, kind == Bits ? 1 << 15 : 1 << 13, run);
}

// ------------------------------------------------------------------ Cholesky

namespace {

template <class T>
void cholesky_one(const T* a, T* l, int64_t n) {
  // Lower factor, column by column. A pivot below a small multiple of the
  // matrix's scale times epsilon counts as zero (semi-definite): its column
  // must then vanish; a clearly negative pivot means not PSD.
  T scale = 0;
  for (int64_t i = 0; i < n; ++i) scale = std::max(scale, std::abs(a[i * n + i]));
  const T tol = scale * static_cast<T>(n) * std::numeric_limits<T>::epsilon() * 16;
  std::fill(l, l + n * n, T(0));
  for (int64_t j = 0; j < n; ++j) {
    if (!(std::abs(a[j * n + j]) <= std::numeric_limits<T>::max())) {
      throw std::invalid_argument("[multivariate_normal] The covariance matrix holds a non-finite value.");
    }
    T d = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
    if (d < -tol || std::isnan(d)) {
      throw std::invalid_argument("[multivariate_normal] The covariance matrix is not positive semi-definite.");
    }
    if (d <= tol) {
      // Zero pivot: the rest of the column must be (numerically) zero too.
      for (int64_t i = j + 1; i < n; ++i) {
        T s = a[i * n + j];
        for (int64_t k = 0; k < j; ++k) s -= l[i * n + k] * l[j * n + k];
        if (std::abs(s) > std::sqrt(tol) * std::sqrt(std::max(tol, std::abs(a[i * n + i])))) {
          throw std::invalid_argument(
              "[multivariate_normal] The covariance matrix is not positive semi-definite.");
        }
      }
      continue;
    }
    const T r = std::sqrt(d);
    l[j * n + j] = r;
    for (int64_t i = j + 1; i < n; ++i) {
      T s = a[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= l[i * n + k] * l[j * n + k];
      l[i * n + j] = s / r;
    }
  }
}

template <class T>
void cholesky_batch(const array& in, array& out) {
  const int64_t n = in.shape(-1);
  const int64_t mats = n == 0 ? 0 : in.size() / (n * n);
  std::vector<T> a(static_cast<size_t>(in.size()));
  copy_to_dense(in, a.data());
  // Symmetry within a tolerance (only the lower triangle is used).
  for (int64_t m = 0; m < mats; ++m) {
    const T* am = a.data() + m * n * n;
    T scale = 0;
    for (int64_t i = 0; i < n * n; ++i) scale = std::max(scale, std::abs(am[i]));
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < i; ++j) {
        T d = std::abs(am[i * n + j] - am[j * n + i]);
        if (d > scale * std::numeric_limits<T>::epsilon() * 64) {
          throw std::invalid_argument("[multivariate_normal] The covariance matrix is not symmetric.");
        }
      }
    }
    cholesky_one(am, out.data<T>() + m * n * n, n);
  }
}

}  // namespace

void random_cholesky_eval(const RandomCholesky&, const std::vector<array>& inputs, std::vector<array>& outputs) {
  array& out = outputs[0];
  out.alloc();
  if (inputs[0].dtype() == Dtype::float64) {
    cholesky_batch<double>(inputs[0], out);
  } else {
    cholesky_batch<float>(inputs[0], out);
  }
}

}  // namespace ember::cpu::EMBER_ISA_NS

#if EMBER_ISA_BASE_UNIT
namespace ember {

void RandomBits::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(random_bits_eval)(*this, inputs, outputs);
}

void RandomCholesky::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  EMBER_ISA_CALL(random_cholesky_eval)(*this, inputs, outputs);
}

}  // namespace ember
#endif
