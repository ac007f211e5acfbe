// CPU feature detection, the choice of the kernel level (see isa.h) and
// the report of both (cpu_config).
#include "ember/backend/cpu/isa.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define EMBER_X86 1
#else
#define EMBER_X86 0
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#define EMBER_LINUX_X64 1
#else
#define EMBER_LINUX_X64 0
#endif

#include "ember/backend/cpu/threadpool.h"

namespace ember::cpu {

namespace {

struct Features {
  bool sse42 = false, popcnt = false, avx = false, avx2 = false, fma = false, f16c = false, bmi1 = false,
       bmi2 = false, lzcnt = false, movbe = false, avx512f = false, avx512bw = false, avx512cd = false,
       avx512dq = false, avx512vl = false, avx512_vnni = false, avx512_bf16 = false, avx512_fp16 = false,
       avx512_vbmi = false, amx_tile = false, amx_int8 = false, amx_bf16 = false, os_avx = false,
       os_avx512 = false, os_amx = false;
};

Features detect() {
  Features f;
#if EMBER_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
  const unsigned max_leaf = a;
  __get_cpuid(1, &a, &b, &c, &d);
  f.sse42 = c & (1u << 20);
  f.popcnt = c & (1u << 23);
  f.fma = c & (1u << 12);
  f.movbe = c & (1u << 22);
  f.avx = c & (1u << 28);
  f.f16c = c & (1u << 29);
  const bool osxsave = c & (1u << 27);
  if (osxsave) {
    // XCR0: which register states the OS saves on a context switch
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    f.os_avx = (lo & 0x6u) == 0x6u;        // SSE and AVX (YMM) state
    f.os_avx512 = (lo & 0xE6u) == 0xE6u;   // + opmask, ZMM_Hi256, Hi16_ZMM
    f.os_amx = (lo & 0x60000u) == 0x60000u;  // XTILECFG, XTILEDATA
  }
  if (max_leaf >= 7) {
    __get_cpuid_count(7, 0, &a, &b, &c, &d);
    f.bmi1 = b & (1u << 3);
    f.avx2 = b & (1u << 5);
    f.bmi2 = b & (1u << 8);
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512cd = b & (1u << 28);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.avx512_vbmi = c & (1u << 1);
    f.avx512_vnni = c & (1u << 11);
    f.avx512_fp16 = d & (1u << 23);
    f.amx_tile = d & (1u << 24);
    f.amx_int8 = d & (1u << 25);
    f.amx_bf16 = d & (1u << 22);
    const unsigned sub = a;
    if (sub >= 1) {
      __get_cpuid_count(7, 1, &a, &b, &c, &d);
      f.avx512_bf16 = a & (1u << 5);
    }
  }
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000001u) {
    __get_cpuid(0x80000001u, &a, &b, &c, &d);
    f.lzcnt = c & (1u << 5);
  }
  if (!f.os_avx) f.avx = f.avx2 = f.fma = f.f16c = false;
  if (!f.os_avx512) {
    f.avx512f = f.avx512bw = f.avx512cd = f.avx512dq = f.avx512vl = false;
    f.avx512_vnni = f.avx512_bf16 = f.avx512_fp16 = f.avx512_vbmi = false;
  }
  if (!f.os_amx || !f.avx512f) f.amx_tile = f.amx_int8 = f.amx_bf16 = false;
#endif
  return f;
}

const Features& features() {
  static const Features f = detect();
  return f;
}

int detect_level() {
#if defined(EMBER_ISA_SINGLE) || !EMBER_X86
  return kIsaBaseline;  // one level: whatever the build targeted
#else
  const Features& f = features();
  const bool v3 = f.avx && f.avx2 && f.fma && f.f16c && f.bmi1 && f.bmi2 && f.lzcnt && f.movbe;
  const bool v4 = v3 && f.avx512f && f.avx512bw && f.avx512cd && f.avx512dq && f.avx512vl;
  return v4 ? kIsaAvx512 : v3 ? kIsaAvx2 : kIsaBaseline;
#endif
}

int initial_level() {
  int best = detect_level();
  const char* env = std::getenv("EMBER_ISA");
  if (env && *env) {
    int cap = parse_isa_level(env);
    if (cap < 0) {
      std::fprintf(stderr,
                   "ember: EMBER_ISA=%s is not a level (baseline, avx2, avx512); using %s.\n", env,
                   isa_level_name(best));
    } else {
      best = std::min(best, cap);
    }
  }
  return best;
}

}  // namespace

namespace isa_detail {
int g_level = initial_level();
}

int isa_supported_level() { return detect_level(); }

int set_isa_level(int level) {
  isa_detail::g_level = std::clamp(level, static_cast<int>(kIsaBaseline), detect_level());
  return isa_detail::g_level;
}

const char* isa_level_name(int level) {
#if defined(EMBER_ISA_SINGLE)
  (void)level;
#if defined(EMBER_NATIVE_BUILD)
  return "native";
#else
  return "generic";
#endif
#else
  switch (level) {
    case kIsaAvx512: return "avx512";
    case kIsaAvx2: return "avx2";
    default: return "baseline";
  }
#endif
}

int parse_isa_level(const std::string& name) {
  size_t b = 0, e = name.size();  // surrounding whitespace does not count
  while (b < e && std::isspace(static_cast<unsigned char>(name[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(name[e - 1]))) --e;
  std::string s;
  for (size_t i = b; i < e; ++i) s += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
  if (s == "native" || s == "generic") return isa_dispatch_build() ? -1 : kIsaBaseline;  // the one level of such builds
  if (s == "baseline" || s == "sse4.2" || s == "sse42" || s == "x86-64-v2" || s == "v2") return kIsaBaseline;
  if (s == "avx2" || s == "x86-64-v3" || s == "v3") return kIsaAvx2;
  if (s == "avx512" || s == "avx-512" || s == "x86-64-v4" || s == "v4") return kIsaAvx512;
  return -1;
}

bool isa_dispatch_build() {
#if defined(EMBER_ISA_SINGLE)
  return false;
#else
  return true;
#endif
}

std::vector<std::string> cpu_features() {
  const Features& f = features();
  std::vector<std::string> out;
  auto add = [&](bool on, const char* name) {
    if (on) out.emplace_back(name);
  };
  add(f.sse42, "sse4_2");
  add(f.popcnt, "popcnt");
  add(f.avx, "avx");
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.f16c, "f16c");
  add(f.bmi1, "bmi1");
  add(f.bmi2, "bmi2");
  add(f.lzcnt, "lzcnt");
  add(f.movbe, "movbe");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512cd, "avx512cd");
  add(f.avx512dq, "avx512dq");
  add(f.avx512vl, "avx512vl");
  add(f.avx512_vbmi, "avx512vbmi");
  add(f.avx512_vnni, "avx512_vnni");
  add(f.avx512_bf16, "avx512_bf16");
  add(f.avx512_fp16, "avx512_fp16");
  add(f.amx_tile, "amx_tile");
  add(f.amx_int8, "amx_int8");
  add(f.amx_bf16, "amx_bf16");
  return out;
}

namespace {
// Linux hands out the 8 KB tile state only to processes that ask for it
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 18); the
// permission holds for every thread of the process
bool amx_tiles_usable() {
  static const bool ok = [] {
    if (!features().amx_tile) return false;
#if EMBER_LINUX_X64
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
#else
    return false;
#endif
  }();
  return ok;
}
}  // namespace

namespace {
std::atomic<bool> g_amx_on{[] {
  const char* env = std::getenv("EMBER_AMX");
  return !(env && std::strcmp(env, "0") == 0);
}()};
}  // namespace

bool amx_enabled() { return g_amx_on.load(std::memory_order_relaxed); }
bool set_amx(bool on) { return g_amx_on.exchange(on); }
bool avx512_bf16_usable() { return features().avx512_bf16; }
bool amx_int8_usable() { return amx_enabled() && features().amx_int8 && amx_tiles_usable(); }
bool amx_bf16_usable() {
  return amx_enabled() && features().amx_bf16 && features().avx512_bf16 && amx_tiles_usable();
}

}  // namespace ember::cpu

namespace ember {

CpuConfig cpu_config() {
  CpuConfig c;
  c.isa = cpu::isa_level_name(cpu::isa_level());
  c.isa_supported = cpu::isa_level_name(cpu::isa_supported_level());
  for (int l = cpu::kIsaBaseline; l <= cpu::isa_supported_level(); ++l) c.isa_levels.push_back(cpu::isa_level_name(l));
  c.features = cpu::cpu_features();
  c.dispatch = cpu::isa_dispatch_build();
  c.amx = cpu::amx_bf16_usable() || cpu::amx_int8_usable();
  c.threads = cpu::num_threads();
  return c;
}

std::string set_cpu_isa(const std::string& level) {
  int l = cpu::parse_isa_level(level);
  if (l < 0) {
    throw std::invalid_argument("[set_cpu_isa] Unknown instruction-set level '" + level +
                                "' (expected baseline, avx2 or avx512).");
  }
  return cpu::isa_level_name(cpu::set_isa_level(l));
}

}  // namespace ember
