// The quantized matrix product's kernel (backend/cpu/qmm.cpp, compiled once
// per ISA level): its arguments in baseline types and its entry point,
// declared for every level (called through EMBER_ISA_CALL(qmm_run)). Kept
// out of isa_entries.inc so that the kernel units do not all depend on it.
#pragma once

#include <cstdint>

namespace ember::cpu {

// out (batch, M, N) float32 = x (batch, M, K) float32 times W (transpose:
// W is (N, K), stored as rows of N; else (K, N)), W dequantized from codes
// (batch, R, C*bits/32) and per-group scales/biases (batch, R, C/gs) of
// scale_kind; all dense row-major.
struct QmmArgs {
  const float* x = nullptr;
  const uint32_t* w = nullptr;
  const void* scales = nullptr;
  const void* biases = nullptr;  // affine only
  float* out = nullptr;
  int64_t batch = 1, M = 0, N = 0, K = 0;
  int bits = 4, group_size = 64;
  int mode = 0;        // 0 affine, 1 mxfp4, 2 mxfp8, 3 nvfp4 (QuantMode's order)
  int scale_kind = 0;  // 0 float32, 1 float16, 2 bfloat16, 3 uint8 codes (the fp modes)
  bool transpose = true;
  // affine 4- and 8-bit weights (transpose): 0 float arithmetic; 1 x
  // quantized to int8 per block of 32 and integer dot products (pmaddubsw +
  // pmaddwd); 2 the same with VNNI (vpdpbusd: AVX-512 VNNI, or AVX-VNNI at
  // the avx2 level's matrix-matrix path) where the CPU has it; 3 as 2, with
  // the matrix-matrix path's block sums on AMX tiles (AMX-INT8) where the CPU
  // has them. 1, 2 and 3 give the same bits (exact integer sums). 4: as 3,
  // but the matrix-matrix path in bfloat16 on AMX-BF16 tiles where the CPU
  // has them (qmm_config.h).
  int int8 = 0;
};

// qmm_run_batch: the n products as[i], which share x (the same pointer, M,
// K and format), as one job where the matrix-vector path takes them all
// (else one after another)
#if defined(EMBER_ISA_SINGLE)
namespace native {
void qmm_run(const QmmArgs& a);
void qmm_run_batch(const QmmArgs* a, int n);
}  // namespace native
#else
namespace v2 {
void qmm_run(const QmmArgs& a);
void qmm_run_batch(const QmmArgs* a, int n);
}  // namespace v2
namespace v3 {
void qmm_run(const QmmArgs& a);
void qmm_run_batch(const QmmArgs* a, int n);
}  // namespace v3
namespace v4 {
void qmm_run(const QmmArgs& a);
void qmm_run_batch(const QmmArgs* a, int n);
}  // namespace v4
#endif

// The value tables shared by the kernels and Dequantize (defined in
// backend/cpu/quantized.cpp): fp4 e2m1 codes 0-15, fp8 e4m3 codes 0-255,
// e8m0 codes 0-255 (2^(c-127); 0 is 2^-127, 255 NaN).
extern const float* const kFp4Values;
const float* fp8_e4m3_values();
const float* e8m0_values();

}  // namespace ember::cpu
