// Discrete Fourier transforms (MLX's mx.fft): NumPy's semantics for `n` / `s`
// (crop or zero-pad each transformed axis to that length before the
// transform; irfft's default output length 2 (m - 1)) and for `axes`; MLX's
// dtypes (every input is promoted to complex64, or to float32 for the real
// transforms' input; complex64 out, float32 out of the inverse real ones).
// `norm`: "backward" (1/n on the inverse), "ortho" (1/sqrt(n) both ways) or
// "forward" (1/n on the forward transform).
#pragma once

#include <string>

#include "ember/ops.h"

namespace ember::fft {

#define EMBER_S const StreamOrDevice& s = {}

array fft(const array& a, std::optional<int64_t> n = {}, int axis = -1, const std::string& norm = "backward", EMBER_S);
array ifft(const array& a, std::optional<int64_t> n = {}, int axis = -1, const std::string& norm = "backward",
           EMBER_S);
array rfft(const array& a, std::optional<int64_t> n = {}, int axis = -1, const std::string& norm = "backward",
           EMBER_S);
array irfft(const array& a, std::optional<int64_t> n = {}, int axis = -1, const std::string& norm = "backward",
            EMBER_S);
// n-dimensional forms. axes nullopt: every axis (then s must be nullopt, as
// MLX); s nullopt: the input's lengths (irfftn: 2 (m - 1) on the last axis).
// An empty `axes` returns the input unchanged (MLX).
array fftn(const array& a, const std::optional<Shape>& sz = {}, const std::optional<std::vector<int>>& axes = {},
           const std::string& norm = "backward", EMBER_S);
array ifftn(const array& a, const std::optional<Shape>& sz = {}, const std::optional<std::vector<int>>& axes = {},
            const std::string& norm = "backward", EMBER_S);
array rfftn(const array& a, const std::optional<Shape>& sz = {}, const std::optional<std::vector<int>>& axes = {},
            const std::string& norm = "backward", EMBER_S);
array irfftn(const array& a, const std::optional<Shape>& sz = {}, const std::optional<std::vector<int>>& axes = {},
             const std::string& norm = "backward", EMBER_S);
// Sample frequencies (float32): fftfreq(n, d) = [0, 1, ..., -1] / (d n).
array fftfreq(int64_t n, double d = 1.0, EMBER_S);
array rfftfreq(int64_t n, double d = 1.0, EMBER_S);
// Roll each axis (all when nullopt) by n/2 (fftshift) or -(n/2) (ifftshift).
array fftshift(const array& a, const std::optional<std::vector<int>>& axes = {}, EMBER_S);
array ifftshift(const array& a, const std::optional<std::vector<int>>& axes = {}, EMBER_S);

// Short-time Fourier transform of the last axis: frames of n_fft samples
// every hop_length (default n_fft / 4), times the window (default ones of
// win_length, default n_fft; a given window sets the length) centered and
// zero-padded to n_fft; with `center` the signal is first padded by n_fft/2
// on both sides (pad_mode "reflect", "constant" or "edge"). onesided
// (default: for non-complex input) keeps the n_fft/2+1 non-negative
// frequencies. Result (..., n_freq, n_frames), complex64.
array stft(const array& x, int64_t n_fft = 2048, std::optional<int64_t> hop_length = {},
           std::optional<int64_t> win_length = {}, const std::optional<array>& window = {}, bool center = true,
           const std::string& pad_mode = "reflect", const std::string& norm = "backward",
           std::optional<bool> onesided = {}, EMBER_S);
// Inverse of stft: the frames' inverse transforms (irfft of length n_fft
// when onesided, else the real part of the ifft), times the window,
// overlap-added and divided by the overlap-added squared window (0 where that
// is below 1e-11); `center` drops n_fft/2 samples at the start (and at the
// end when `length` is not given); `length` crops or zero-pads. n_fft
// defaults to 2 (n_freq - 1) when onesided (default), else n_freq.
// stft_matrix (..., n_freq, n_frames) -> float32 (..., length).
array istft(const array& stft_matrix, std::optional<int64_t> n_fft = {}, std::optional<int64_t> hop_length = {},
            std::optional<int64_t> win_length = {}, const std::optional<array>& window = {}, bool center = true,
            const std::string& norm = "backward", std::optional<bool> onesided = {},
            std::optional<int64_t> length = {}, EMBER_S);

#undef EMBER_S

}  // namespace ember::fft
