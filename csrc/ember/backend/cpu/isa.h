// Runtime instruction-set dispatch for the CPU kernels.
//
// One binary runs on any x86-64 CPU from the x86-64-v2 baseline (SSE4.2) up
// and uses the best level the CPU it runs on has:
//
//   level 0  "baseline"  x86-64-v2 (SSE4.2, POPCNT)
//   level 1  "avx2"      x86-64-v3 (AVX2, FMA, F16C, BMI1/2)
//   level 2  "avx512"    x86-64-v4 (AVX-512 F/BW/CD/DQ/VL)
//
// How: everything is compiled for the baseline, except the hot kernel
// translation units listed in CMakeLists.txt (EMBER_ISA_SOURCES), which are
// compiled once per level. Such a unit starts with
// `#include "ember/backend/cpu/isa_unit.h"` (standard headers first, then the
// level's `#pragma GCC target`) and puts all of its code in the namespace
// `ember::cpu::EMBER_ISA_NS` (v2, v3 or v4: one name per level, so the
// three compilations never define the same symbol). Its entry points are
// declared once, for every level, in isa_entries.inc; baseline code calls
// them through EMBER_ISA_CALL(name), which picks the function of the level in
// use with one load and an indirect call. The level is chosen once, when the
// library loads, from cpuid and the OS's XSAVE state, capped by the
// environment variable EMBER_ISA (baseline | avx2 | avx512).
//
// Kernel headers whose inline code ends up inside kernels (simd_math.h,
// functors.h, the templates of kernel_utils.h and loops.h) put that code in
// the inline namespace EMBER_ISA_NS as well, so each level has its own copy
// compiled for its own instruction set. Functions that exist once (defined
// in baseline units) are declared outside it.
//
// With EMBER_NATIVE (-march=native), and on CPUs other than x86-64, every
// unit is compiled once (EMBER_ISA_SINGLE), in the namespace `native`, and
// there is nothing to choose.
#pragma once

#include <string>
#include <vector>

#if !defined(EMBER_ISA_NS)
#define EMBER_ISA_NS v2
#endif

namespace ember::cpu {

// The namespace of this translation unit's level is inline: kernel headers
// reopen it, and code in ember::cpu finds their contents unqualified.
inline namespace EMBER_ISA_NS {}

enum IsaLevel : int { kIsaBaseline = 0, kIsaAvx2 = 1, kIsaAvx512 = 2 };

namespace isa_detail {
extern int g_level;  // the level in use (read on every dispatched call)
}

// The level the kernels run at.
inline int isa_level() { return isa_detail::g_level; }
// The best level this CPU and OS support and this build contains.
int isa_supported_level();
// Caps the level at `level` (clamped to what is supported); returns the
// level now in use. Not thread-safe against running kernels: for tests.
int set_isa_level(int level);
// "baseline", "avx2", "avx512" ("native" for an EMBER_NATIVE build,
// "generic" for a single-level build on another architecture).
const char* isa_level_name(int level);
// Parses a level name as EMBER_ISA takes it (also x86-64-v2/v3/v4); -1 if unknown.
int parse_isa_level(const std::string& name);
// Whether the build compiled the kernels once per level (false: EMBER_NATIVE).
bool isa_dispatch_build();
// CPU features that matter to the kernels, as cpuinfo names them
// ("avx2", "fma", "avx512f", "avx512_bf16", ...), present on this CPU and
// enabled by the OS.
std::vector<std::string> cpu_features();
// Whether the CPU has AVX-512's BF16 extension (VDPBF16PS, VCVTNEPS2BF16)
// and the OS saves the AVX-512 state.
bool avx512_bf16_usable();
// Whether the AMX tile unit's int8 products may run here: the CPU has
// AMX-TILE and AMX-INT8, the OS saves the tile state, and (Linux) the
// process got the permission to use it (asked for on the first call).
bool amx_int8_usable();
// The same for AMX-BF16 (with AVX512-BF16 for the conversions).
bool amx_bf16_usable();
// Whether kernels may use the AMX tile unit at all where the CPU has it
// (default yes; EMBER_AMX=0 in the environment, or set_amx(false), makes
// both of the above false: the AVX-512 paths run instead). set_amx returns
// the previous setting; call it while nothing is evaluating.
bool amx_enabled();
bool set_amx(bool on);

}  // namespace ember::cpu

namespace ember {

// What the CPU kernels run on: the instruction-set level in use ("baseline",
// "avx2", "avx512"; "native" for an EMBER_NATIVE build), the best this CPU
// supports, the levels the build contains, the CPU features the kernels care
// about, and the kernel thread count. The level is chosen when the library
// loads (the environment variable EMBER_ISA caps it).
struct CpuConfig {
  std::string isa;
  std::string isa_supported;
  std::vector<std::string> isa_levels;
  std::vector<std::string> features;
  bool dispatch = false;  // kernels compiled once per level, chosen at run time
  bool amx = false;       // kernels use the AMX tile unit (the CPU has it, EMBER_AMX allows it)
  int threads = 1;
};
CpuConfig cpu_config();
// Caps the kernels' level at `level` (a name as EMBER_ISA takes it), clamped
// to what the CPU supports; returns the level now in use. Meant for tests
// comparing levels in one process: call it while nothing is evaluating.
std::string set_cpu_isa(const std::string& level);

}  // namespace ember

// The per-level entry points, declared for every level.
#if defined(EMBER_ISA_SINGLE)
#define EMBER_ISA_DECL_NS native
#include "ember/backend/cpu/isa_entries.inc"
#undef EMBER_ISA_DECL_NS
#define EMBER_ISA_CALL(...) (&::ember::cpu::native::__VA_ARGS__)
#else
#define EMBER_ISA_DECL_NS v2
#include "ember/backend/cpu/isa_entries.inc"
#undef EMBER_ISA_DECL_NS
#define EMBER_ISA_DECL_NS v3
#include "ember/backend/cpu/isa_entries.inc"
#undef EMBER_ISA_DECL_NS
#define EMBER_ISA_DECL_NS v4
#include "ember/backend/cpu/isa_entries.inc"
#undef EMBER_ISA_DECL_NS
// The entry point `name` of the level in use (a function pointer).
#define EMBER_ISA_CALL(...)                                                  \
  (::ember::cpu::isa_level() == ::ember::cpu::kIsaAvx512 ? &::ember::cpu::v4::__VA_ARGS__ \
   : ::ember::cpu::isa_level() == ::ember::cpu::kIsaAvx2 ? &::ember::cpu::v3::__VA_ARGS__ \
                                                         : &::ember::cpu::v2::__VA_ARGS__)
#endif
