// The quantized matrix product's arithmetic setting for affine 4/8-bit
// weights (defined in backend/cpu/quantized.cpp; ops/quantized.h's
// set_qmm_int8 forwards here).
#pragma once

namespace ember::cpu {
// 0 float arithmetic, 1 int8 activations (pmaddubsw), 2 int8 with VNNI where
// the CPU has it, 3 the same with the matrix-matrix products on AMX int8
// tiles where the CPU has AMX-INT8; 1, 2 and 3 give the same bits. 4 (the
// default) is 3 with the matrix-matrix products in bfloat16 on AMX tiles
// where the CPU has AMX-BF16 (within the int8 path's error bound, not its
// bits; elsewhere exactly 3). EMBER_QMM_INT8 sets it at load. Returns the
// previous setting; throws std::invalid_argument outside 0..4.
int set_qmm_int8(int level);
int qmm_int8();
}  // namespace ember::cpu
