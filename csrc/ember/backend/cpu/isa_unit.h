// The first include of a kernel translation unit that is compiled once per
// ISA level (EMBER_ISA_SOURCES in CMakeLists.txt; see isa.h).
//
// The build defines EMBER_ISA_LEVEL (2, 3 or 4: x86-64-v2/v3/v4) and
// EMBER_ISA_NS (v2, v3, v4) for each of the unit's compilations. This header
//   1. includes every standard and engine header a kernel unit may use —
//      before the level's instruction set is switched on, so that their
//      inline functions and templates stay baseline code (the linker keeps
//      one copy of each; it must run on every CPU);
//   2. switches the instruction set on for the rest of the unit with
//      `#pragma GCC target`;
//   3. defines the macros kernels test instead of __AVX2__ & co. (GCC does
//      not update those after a target pragma in C++):
//        EMBER_ISA_HAS_AVX2, EMBER_ISA_HAS_AVX512, EMBER_ISA_VECTOR_BYTES,
//        EMBER_SIMD_FMA (read by simd_math.h).
//
// Rules for the code after it: everything goes in `namespace
// ember::cpu::EMBER_ISA_NS` (an anonymous namespace inside it is fine);
// include only kernel headers that put their inline code in the inline
// namespace EMBER_ISA_NS (simd_math.h, functors.h, kernel_utils.h, loops.h);
// include no other standard or engine header (add it here instead: an
// inline function compiled after the pragma would be a second, AVX copy of a
// baseline function); do not pass a
// lambda or function of this unit to a standard algorithm that must inline
// it to be fast (std::sort with a comparator: the algorithm is baseline code
// and cannot inline a function compiled for a higher level).
// tests/check_isa_symbols.py checks the result: no function outside the
// level namespaces of the built library uses an instruction above baseline.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include <cblas.h>

#include "ember/allocator.h"
#include "ember/array.h"
#include "ember/backend/cpu/blas.h"
#include "ember/backend/cpu/copy.h"
#include "ember/backend/cpu/isa.h"
#include "ember/backend/cpu/threadpool.h"
#include "ember/dtype.h"
#include "ember/primitives/conv.h"
#include "ember/primitives/elementwise.h"
#include "ember/primitives/fast.h"
#include "ember/primitives/fft.h"
#include "ember/primitives/linalg.h"
#include "ember/primitives/random.h"
#include "ember/primitives/reduce.h"
#include "ember/primitives/sort.h"

#if !defined(EMBER_ISA_LEVEL)
#error "isa_unit.h: compile this unit once per level with EMBER_ISA_LEVEL and EMBER_ISA_NS defined"
#endif

#if defined(EMBER_ISA_SINGLE)
// One compilation for the build machine (-march=native): the compiler's own
// macros say what it has.
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__)
#define EMBER_ISA_HAS_AVX512 1
#else
#define EMBER_ISA_HAS_AVX512 0
#endif
#if defined(__AVX2__) && defined(__FMA__)
#define EMBER_ISA_HAS_AVX2 1
#else
#define EMBER_ISA_HAS_AVX2 0
#endif
#elif EMBER_ISA_LEVEL == 4
#pragma GCC target("avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe,avx512f,avx512bw,avx512cd,avx512dq,avx512vl")
#define EMBER_ISA_HAS_AVX512 1
#define EMBER_ISA_HAS_AVX2 1
#elif EMBER_ISA_LEVEL == 3
#pragma GCC target("avx,avx2,fma,f16c,bmi,bmi2,lzcnt,movbe")
#define EMBER_ISA_HAS_AVX512 0
#define EMBER_ISA_HAS_AVX2 1
#elif EMBER_ISA_LEVEL == 2
#define EMBER_ISA_HAS_AVX512 0
#define EMBER_ISA_HAS_AVX2 0
#else
#error "isa_unit.h: EMBER_ISA_LEVEL must be 2, 3 or 4"
#endif

#define EMBER_ISA_VECTOR_BYTES (EMBER_ISA_HAS_AVX512 ? 64 : EMBER_ISA_HAS_AVX2 ? 32 : 16)
#if !defined(EMBER_SIMD_FMA)
#define EMBER_SIMD_FMA EMBER_ISA_HAS_AVX2
#endif
// The unit that also holds the baseline entry points (the primitives'
// eval_cpu, which dispatch): the v2 compilation, or the only one.
#if defined(EMBER_ISA_SINGLE) || EMBER_ISA_LEVEL == 2
#define EMBER_ISA_BASE_UNIT 1
#else
#define EMBER_ISA_BASE_UNIT 0
#endif
