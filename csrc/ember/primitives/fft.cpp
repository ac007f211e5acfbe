// Transform rules of the FFT primitive (primitives/fft.h). Every kind is
// linear over the reals, so jvp applies the same transform to the tangent;
// vjp applies the adjoint with respect to Re<a, b> = Re sum conj(a) b:
//   C2C  y = c F_(+-) x          ->  x_ct = c F_(-+) y_ct (the other sign);
//   R2C  y = c P F x (x real, P keeps bins 0..n/2)
//        ->  x_ct = Re(c F_+ P^T y_ct): the cotangent zero-padded to n,
//        inverse-signed C2C, real part;
//   C2R  x_k = c Re sum_j w_j z_j e^(+2 pi i j k / n), with w_0 = 1,
//        w_(n/2) = 1 for even n and 2 otherwise (the Hermitian extension)
//        ->  z_ct = w * c R2C(x_ct).
// vmap moves the transformed axis past the batch axis.
#include "ember/primitives/fft.h"

#include <vector>

#include "ember/ops.h"
#include "ember/transforms/transforms.h"

namespace ember {

namespace {

// The C2R weights w along `axis` of an ndim-d array (size 1 elsewhere).
array hermitian_weights(int64_t n, int axis, int ndim) {
  const int64_t half = n / 2 + 1;
  std::vector<float> w(half, 2.f);
  w[0] = 1.f;
  if (n % 2 == 0) w[half - 1] = 1.f;
  Shape shape(ndim, 1);
  shape[axis] = half;
  return array(w.data(), shape, Dtype::float32);
}

}  // namespace

array fft_node(const array& x, FFT::Kind kind, int axis, bool inverse, int64_t n, double scale, Stream s) {
  using detail::fail;
  const char* op = "fft";
  if (axis < 0 || axis >= x.ndim()) fail(op, "Invalid axis ", axis, " for shape ", shape_str(x.shape()), ".");
  const int64_t half = n / 2 + 1;
  Shape shape = x.shape();
  if (kind == FFT::R2C) {
    if (x.dtype() != Dtype::float32 || x.shape(axis) != n) fail(op, "R2C needs float32 of length ", n, ".");
    shape[axis] = half;
  } else if (kind == FFT::C2R) {
    if (x.dtype() != Dtype::complex64 || x.shape(axis) != half) fail(op, "C2R needs complex64 of length ", half, ".");
    shape[axis] = n;
  } else if (x.dtype() != Dtype::complex64 || x.shape(axis) != n) {
    fail(op, "C2C needs complex64 of length ", n, ".");
  }
  return make_node<FFT>(std::move(shape), kind == FFT::C2R ? Dtype::float32 : Dtype::complex64, {x}, s, kind, axis,
                        inverse, n, scale);
}

std::vector<array> FFT::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                            const std::vector<int>& argnums, const std::vector<array>& outputs) {
  Stream s = stream();
  const array& ct = cotangents[0];
  if (kind_ == C2C) return {fft_node(ct, C2C, axis_, !inverse_, n_, scale_, s)};
  if (kind_ == R2C) {
    array padded = ct;  // P^T: bins n/2+1 .. n-1 are zero
    if (ct.shape(axis_) < n_) {
      std::vector<std::pair<int64_t, int64_t>> widths(ct.ndim(), {0, 0});
      widths[axis_].second = n_ - ct.shape(axis_);
      padded = pad(ct, widths, "constant", array(0.0, ct.dtype()), s);
    }
    return {real(fft_node(padded, C2C, axis_, true, n_, scale_, s), s)};
  }
  array y = fft_node(ct, R2C, axis_, false, n_, scale_, s);
  return {multiply(y, hermitian_weights(n_, axis_, ct.ndim()), s)};
}

std::vector<array> FFT::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                            const std::vector<int>& argnums, const std::vector<array>& outputs) {
  return {fft_node(tangents[0], kind_, axis_, inverse_, n_, scale_, stream())};
}

std::pair<std::vector<array>, std::vector<int>> FFT::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  int b = axes[0];
  return {{fft_node(inputs[0], kind_, example_axis(axis_, b), inverse_, n_, scale_, stream())}, {b}};
}

}  // namespace ember
