// The FFT primitive: one discrete Fourier transform along one axis. The op
// layer (ops/fft.cpp) casts, crops/zero-pads the input to the transform
// length and chains one node per axis for the multi-axis transforms; the
// kernel lives in backend/cpu/fft.cpp, the transform rules in
// primitives/fft.cpp.
//
//   C2C  complex64 of length n -> complex64 of length n,
//        y_k = scale * sum_t x_t exp(-+2 pi i t k / n)  (+ when inverse);
//   R2C  float32 of length n -> complex64 of length n/2+1 (forward sign);
//   C2R  complex64 of length n/2+1 -> float32 of length n: the inverse
//        transform of the Hermitian spectrum the input is the first half of
//        (the imaginary parts of the zero and, for even n, Nyquist bins are
//        ignored, as NumPy's irfft).
#pragma once

#include "ember/primitive.h"

namespace ember {

class FFT final : public Primitive {
 public:
  enum Kind { C2C, R2C, C2R };
  FFT(Stream s, Kind k, int axis, bool inverse, int64_t n, double scale)
      : Primitive(s), kind_(k), axis_(axis), inverse_(inverse), n_(n), scale_(scale) {}
  const char* name() const override { return "FFT"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  Kind kind() const { return kind_; }
  int axis() const { return axis_; }
  bool inverse() const { return inverse_; }
  int64_t n() const { return n_; }
  double scale() const { return scale_; }

 private:
  Kind kind_;
  int axis_;
  bool inverse_;
  int64_t n_;  // transform length (the real length for R2C / C2R)
  double scale_;
};

// The FFT node of one transform of `kind` along `axis` of x (checked: x is
// float32 of length n for R2C, complex64 of length n/2+1 for C2R and of
// length n for C2C).
array fft_node(const array& x, FFT::Kind kind, int axis, bool inverse, int64_t n, double scale, Stream s);

}  // namespace ember
