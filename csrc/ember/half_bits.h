// half_bits.h — float16 (IEEE binary16) bits from and to float32/float64
// with integer and float32 arithmetic alone, for ember::float16_t (dtype.h)
// and, embedded as text, compile's fused kernels (jit.cpp), so that both
// give the same bits. Selects are 32-bit masks (GCC turns conditionals into
// branches where it does not vectorize a loop), and loops over these
// vectorize at every ISA level (GCC 12 converts the compiler's _Float16 one
// value at a time, with or without F16C). float16 rounds to nearest even,
// as F16C's VCVTPS2PH and libgcc do, with their NaNs: the quiet bit set, the
// payload's top bits kept.
#pragma once

#include <cstdint>
#include <cstring>

namespace ember {
namespace half_bits {
inline uint32_t of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t from_float(float f) {
  const uint32_t u = of(f), a = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
  // normal results: the exponent rebiased, 13 mantissa bits rounded off
  // (to nearest even; a carry into the exponent is right, up to infinity)
  const uint32_t normal = (a - (112u << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
  // below 2^-14: |f| + 0.5 rounds |f| to a multiple of 2^-24 in float32
  // arithmetic; the sum's low bits are the subnormal (or 0x400, the least normal)
  const uint32_t sub = of(to_float(a) + 0.5f) - 0x3f000000u;
  const uint32_t nan = 0x7e00u | ((a >> 13) & 0x3ffu);
  // masks, not selects: GCC makes selects branches where it does not
  // vectorize the loop (softmax's scaling of a float16 row)
  const uint32_t is_nan = 0u - static_cast<uint32_t>(a > 0x7f800000u);
  const uint32_t is_inf = 0u - static_cast<uint32_t>(a >= 0x477ff000u);
  const uint32_t is_sub = 0u - static_cast<uint32_t>(a < 0x38800000u);
  uint32_t r = (is_sub & sub) | (~is_sub & normal);
  r = (is_inf & 0x7c00u) | (~is_inf & r);
  r = (is_nan & nan) | (~is_nan & r);
  return static_cast<uint16_t>(r | sign);
}
inline float to_float16_value(uint16_t h) {
  // 32-bit masks rather than selects: GCC turns selects on values widened
  // from 16 bits into branches, and then does not vectorize the loop
  const uint32_t x = h, a = x & 0x7fffu, sign = (x & 0x8000u) << 16;
  const uint32_t special = 0u - static_cast<uint32_t>(a >= 0x7c00u), nan = 0u - static_cast<uint32_t>(a > 0x7c00u);
  const uint32_t sub = 0u - static_cast<uint32_t>(a < 0x400u);
  // the exponent rebiased (twice for infinities and NaNs, NaNs quieted)
  uint32_t o = (a << 13) + (112u << 23);
  o += special & (112u << 23);
  o |= nan & 0x400000u;
  // subnormals (and zero): 2^-14 * (1 + m / 1024) - 2^-14, exact in float32
  const uint32_t s = of(to_float(o + (1u << 23)) - 6.103515625e-05f);
  return to_float(((sub & s) | (~sub & o)) | sign);
}
// from a double: one rounding (not two through float32)
inline uint16_t from_double(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  const uint64_t a = u & 0x7fffffffffffffffull;
  const uint32_t sign = static_cast<uint32_t>(u >> 48) & 0x8000u;
  uint64_t r;
  if (a > 0x7ff0000000000000ull) {
    r = 0x7e00u | ((a >> 42) & 0x3ffu);
  } else if (a >= 0x40effe0000000000ull) {  // 65520 and up
    r = 0x7c00u;
  } else if (a < 0x3f10000000000000ull) {  // below 2^-14: + 2^28 rounds to a multiple of 2^-24
    double s, m = 268435456.0, x;
    std::memcpy(&x, &a, 8);
    s = x + m;
    uint64_t sb, mb;
    std::memcpy(&sb, &s, 8);
    std::memcpy(&mb, &m, 8);
    r = sb - mb;
  } else {
    r = (a - (1008ull << 52) + ((1ull << 41) - 1) + ((a >> 42) & 1u)) >> 42;
  }
  return static_cast<uint16_t>(r | sign);
}
}  // namespace half_bits

}  // namespace ember
