// Random-number primitives. RandomBits hashes counters with Threefry-2x32
// (20 rounds, Random123's constants) under one or more uint32 keys; the
// kernel lives in backend/cpu/random.cpp, the transform rules in
// primitives/random.cpp, the samplers built on it in random/random.cpp.
//
// Layout of the bits under one key (the one JAX and MLX use, so that split
// and the samplers reproduce their values): the n*width output bytes are
// W = ceil(n*width/4) little-endian words. With h = W/2 and o = W%2, the
// pair hash(key, (j, j+h+o)) for j < h gives word j (first) and word j+h+o
// (second); when W is odd, word h is the first half of hash(key, (h, 0)).
#pragma once

#include <cstdint>
#include <utility>

#include "ember/primitive.h"

namespace ember {

// Threefry-2x32 with 20 rounds: the block (c0, c1) encrypted under (k0, k1).
inline std::pair<uint32_t, uint32_t> threefry2x32(uint32_t k0, uint32_t k1, uint32_t c0, uint32_t c1) {
  constexpr int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
  uint32_t x0 = c0 + ks[0], x1 = c1 + ks[1];
  for (int s = 0; s < 5; ++s) {
    for (int i = 0; i < 4; ++i) {
      const int r = rot[(4 * s + i) & 7];
      x0 += x1;
      x1 = (x1 << r) | (x1 >> (32 - r));
      x1 ^= x0;
    }
    x0 += ks[(s + 1) % 3];
    x1 += ks[(s + 2) % 3] + static_cast<uint32_t>(s + 1);
  }
  return {x0, x1};
}

// inputs[0]: keys of shape K ++ (2,), uint32. Output: K ++ shape, one
// independent stream per key.
//   Bits:    unsigned integers of `width` bytes (1, 2 or 4);
//   Uniform: float32 in [0, 1): word / 2^32 rounded to float32, then
//            clamped below 1;
//   Normal:  float32 standard normals, sqrt(2) erfinv(v), where v is the
//            uniform word mapped onto [nextafter(-1, 0), 1).
// Uniform and Normal use 4-byte words (width is 4).
class RandomBits final : public Primitive {
 public:
  enum Kind { Bits, Uniform, Normal };
  RandomBits(Stream s, Shape shape, int width, Kind kind)
      : Primitive(s), shape_(std::move(shape)), width_(width), kind_(kind) {}
  const char* name() const override { return "RandomBits"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  const Shape& shape() const { return shape_; }
  int width() const { return width_; }
  Kind kind() const { return kind_; }

 private:
  Shape shape_;
  int width_;
  Kind kind_;
};

// Lower Cholesky factors of a batch of symmetric positive semi-definite
// matrices (..., n, n), float32 or float64, for multivariate_normal. Raises
// ValueError when evaluated on a matrix that is not positive semi-definite.
// Derivatives (positive definite inputs): dL = L Phi(L^-1 dA L^-T), Phi
// keeping the strict lower triangle and half the diagonal.
class RandomCholesky final : public Primitive {
 public:
  explicit RandomCholesky(Stream s) : Primitive(s) {}
  const char* name() const override { return "RandomCholesky"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override { return dynamic_cast<const RandomCholesky*>(&o); }
  EMBER_TRANSFORM_RULES
};

}  // namespace ember
