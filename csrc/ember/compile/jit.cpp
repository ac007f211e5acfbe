// Compile's kernel builder: the system C++ compiler, the disk cache and the
// in-memory cache of fused kernels.
//
// A kernel's full source is the prelude, the text of half_bits.h and simd_math.h (embedded at
// build time) and the generators' functions (codegen.cpp), then the kernel;
// the prelude is a header of its own in the cache folder, which GCC
// precompiles once (see Pch below). A kernel is compiled for
// the ISA level in use (-march=x86-64-v2/v3/v4, -ffp-contract=off as the
// library's kernels) into a shared object in the cache folder
// ($EMBER_CACHE_DIR, else ~/.cache/ember/kernels) named by a hash of the
// source, the compiler's identity (path, size, modification time), the
// flags and Ember's version. A compile writes a file of its own (pid and a
// counter in the name) and renames it into place, so processes sharing the
// folder never see a partial object; the object is loaded with dlopen and
// kept, with its entry point, in memory under the same key. The compiler is
// $CXX (its first word), else c++, g++ or clang++ on PATH; without one, or
// when a compile fails, the kernel is null and the caller keeps the unfused
// graph (one warning per process on stderr).
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/compile/fuse.h"

extern char** environ;

namespace ember::compile {

namespace {

const char kSimdMathText[] =
#include "ember/compile/simd_math_text.inc"
    ;

#ifndef EMBER_VERSION
#define EMBER_VERSION "unknown"
#endif

uint64_t fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

struct Compiler {
  std::string path;      // empty: none found
  std::string identity;  // path, size and mtime
};

bool executable(const std::string& p, struct stat* st) {
  return ::stat(p.c_str(), st) == 0 && S_ISREG(st->st_mode) && ::access(p.c_str(), X_OK) == 0;
}

std::string on_path(const std::string& name, struct stat* st) {
  if (name.find('/') != std::string::npos) return executable(name, st) ? name : std::string();
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::string all(path);
  size_t start = 0;
  while (start <= all.size()) {
    size_t end = all.find(':', start);
    if (end == std::string::npos) end = all.size();
    std::string dir = all.substr(start, end - start);
    if (!dir.empty()) {
      std::string cand = dir + "/" + name;
      if (executable(cand, st)) return cand;
    }
    start = end + 1;
  }
  return {};
}

const Compiler& compiler() {
  static const Compiler c = [] {
    Compiler r;
    std::vector<std::string> names;
    if (const char* cxx = std::getenv("CXX"); cxx && *cxx) {
      std::string s(cxx);
      names.push_back(s.substr(0, s.find(' ')));
    } else {
      names = {"c++", "g++", "clang++"};
    }
    for (const auto& n : names) {
      struct stat st;
      std::string p = on_path(n, &st);
      if (!p.empty()) {
        r.path = p;
        r.identity = p + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
        break;
      }
    }
    return r;
  }();
  return c;
}

const char* kLevelFlag[] = {"-march=x86-64-v2", "-march=x86-64-v3", "-march=x86-64-v4"};
// the flags of a kernel's and of the prelude's precompiled header's compile
// (they must be the same for the compiler to use the header)
const std::vector<std::string>& common_flags() {
  static const std::vector<std::string> f = {"-std=c++17", "-O3", "-fno-math-errno", "-ffp-contract=off",
                                             "-mtune=generic", "-fPIC", "-fvisibility=hidden", "-fno-exceptions",
                                             "-w"};
  return f;
}

// The precompiled prelude of one ISA level: the header every kernel source
// includes (prelude-KEY.h in the cache folder) and its GCC precompiled form
// (prelude-KEY.h.gch beside it), built in the background (at the idle
// priority; stopped at exit) after the first compile of a process that does
// not find it; a compile uses it once it is there (GCC reads the .gch
// instead of parsing the header when the flags match, and parses the header
// otherwise, so a kernel never depends on it).
struct Pch {
  bool header = false;  // the header file is in place (as of the last compile)
  bool gave_up = false; // a build failed or the compiler is not GCC: not retried
  pid_t pid = -1;       // the build in flight
  std::string tmp, gch;
};

struct State {
  std::mutex mu;  // the memory cache and one compile at a time per process
  // loaded kernels (null: the compiler failed, not retried) by source text,
  // per level: within a process the compiler, flags and version are fixed,
  // so no hash is needed to look one up (fuse looks up every group it
  // makes, and derivative rules fuse on every eager backward)
  std::unordered_map<std::string, FusedProgram::Kernel> kernels[3];
  std::atomic<int64_t> memory_hits{0}, disk_hits{0}, compiles{0}, failures{0}, pch_builds{0};
  double compile_seconds = 0;
  uint64_t counter = 0;
  Pch pch[3];
  pid_t owner = 0;  // the process whose builds pch[] holds (a fork's child has none)
};
State& state() {
  static State* s = new State();  // never destroyed: kernels may run at exit
  return *s;
}

void warn_once(const std::string& msg) {
  static std::once_flag once;
  std::call_once(once, [&] { std::fprintf(stderr, "[ember] compile: %s\n", msg.c_str()); });
}

bool make_dirs(const std::string& dir) {
  std::string cur;
  size_t i = 0;
  while (i <= dir.size()) {
    size_t j = dir.find('/', i);
    if (j == std::string::npos) j = dir.size();
    cur = dir.substr(0, j);
    if (!cur.empty()) {
      if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
    i = j + 1;
  }
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

FusedProgram::Kernel open_kernel(const std::string& so) {
  void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) return nullptr;
  auto fn = reinterpret_cast<FusedProgram::Kernel>(::dlsym(h, "ember_fused"));
  if (!fn) ::dlclose(h);
  return fn;  // the handle stays open for the process's life
}

// Starts the compiler on `args` (after the flags); its output goes to `log`.
// -1 when it cannot start.
// `idle`: at the idle scheduling priority (Linux's SCHED_IDLE), so that a
// build in the background takes no time from the process's own work, and in
// a process group of its own (pid = the group).
pid_t spawn_compiler(const std::vector<std::string>& tail, int level, const std::string& log, bool idle = false) {
  std::vector<std::string> args = {compiler().path};
  if (const char* cxx = std::getenv("CXX"); cxx && *cxx) {  // extra words of $CXX
    std::string s(cxx);
    size_t p = s.find(' ');
    while (p != std::string::npos) {
      size_t q = s.find(' ', p + 1);
      std::string w = s.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1);
      if (!w.empty()) args.push_back(w);
      p = q;
    }
  }
  for (const auto& f : common_flags()) args.push_back(f);
  args.push_back(kLevelFlag[level]);
  args.insert(args.end(), tail.begin(), tail.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (idle) {
    // a process group of its own, so that stop_pch_builds stops the
    // compiler proper (cc1plus) too, not only the driver
    short flags = POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
#ifdef SCHED_IDLE
    struct sched_param sp {};
    posix_spawnattr_setschedpolicy(&attr, SCHED_IDLE);
    posix_spawnattr_setschedparam(&attr, &sp);
    flags |= POSIX_SPAWN_SETSCHEDULER;
#endif
    posix_spawnattr_setflags(&attr, flags);
  }
  int rc = posix_spawn(&pid, args[0].c_str(), &fa, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

// Whether the child `pid` exited with status 0 (waiting for it unless `poll`;
// polling a child still running gives false and sets *running).
bool exited_ok(pid_t pid, bool poll = false, bool* running = nullptr) {
  int status = 0;
  pid_t r;
  while ((r = ::waitpid(pid, &status, poll ? WNOHANG : 0)) < 0) {
    if (errno != EINTR) return false;
  }
  if (r == 0) {
    if (running) *running = true;
    return false;
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Runs the compiler on a kernel's source; true on success.
bool run_compiler(const std::string& src, const std::string& so, int level, const std::string& log) {
  pid_t pid = spawn_compiler({"-shared", "-o", so, src}, level, log);
  return pid > 0 && exited_ok(pid);
}

bool write_file(const std::string& path, const std::string& text) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  return std::fclose(f) == 0 && ok;
}

bool is_gcc() {
  static const bool gcc = [] {
    char buf[4096];
    const char* real = ::realpath(compiler().path.c_str(), buf);
    std::string name = real ? real : compiler().path;
    name = name.substr(name.rfind('/') + 1);
    return name.find("clang") == std::string::npos &&
           (name.find("g++") != std::string::npos || name.find("c++") != std::string::npos ||
            name.find("gcc") != std::string::npos);
  }();
  return gcc;
}

bool pch_enabled() {
  const char* e = std::getenv("EMBER_KERNEL_PCH");
  return !(e && (std::string(e) == "0" || std::string(e) == "off")) && is_gcc();
}

// A build's result put in place once it has finished (waiting for it
// unless `poll`; the caller holds the state's lock).
void finish_pch(Pch& p, bool poll) {
  if (p.pid <= 0 || state().owner != ::getpid()) return;
  bool running = false;
  const bool ok = exited_ok(p.pid, poll, &running);
  if (running) return;
  p.pid = -1;
  if (!ok || ::rename(p.tmp.c_str(), p.gch.c_str()) != 0) {
    ::unlink(p.tmp.c_str());
    p.gave_up = true;
  }
  ::unlink((p.tmp + ".log").c_str());
}

// At exit: a build still running is stopped (nothing outlives the process,
// which may be about to remove its cache folder).
void stop_pch_builds() {
  State& S = state();
  if (S.owner != ::getpid()) return;
  for (Pch& p : S.pch) {
    if (p.pid <= 0) continue;
    ::kill(-p.pid, SIGKILL);  // the driver's group: the driver and the compiler it runs
    exited_ok(p.pid);
    ::unlink(p.tmp.c_str());
    ::unlink((p.tmp + ".log").c_str());
    p.pid = -1;
  }
}

}  // namespace

std::string cache_dir() {
  if (const char* d = std::getenv("EMBER_CACHE_DIR"); d && *d) return d;
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ember/kernels";
  return "/tmp/ember-kernels-" + std::to_string(::getuid());
}

bool compiler_available() { return !compiler().path.empty(); }

namespace {
// load_kernel past its memory cache (the caller holds S.mu): the kernel's
// key (a 128-bit hash of the source, the prelude, the compiler, the flags
// and the version) names its file in the disk cache, else the compiler
// builds it. Nothing when the cache folder cannot be made (not remembered:
// it may be made later); null when the compiler fails.
std::optional<FusedProgram::Kernel> load_or_compile(const std::string& source, int level, const Compiler& cc) {
  State& S = state();
  static const uint64_t prelude_hash = fnv1a(kernel_prelude(), fnv1a(kSimdMathText, 1469598103934665603ull));
  std::string flags;
  for (const auto& f : common_flags()) flags += f + " ";
  flags += kLevelFlag[level];
  flags += " -shared";
  const std::string meta = cc.identity + "|" + flags + "|" + EMBER_VERSION + "|";
  // two independent 64-bit hashes: a 128-bit name
  uint64_t h1 = fnv1a(source, fnv1a(meta, prelude_hash));
  uint64_t h2 = fnv1a(source, fnv1a(meta, prelude_hash ^ 0x9e3779b97f4a7c15ull) * 31 + 7);
  const std::string key = hex(h1) + hex(h2);
  const std::string dir = cache_dir();
  const std::string so = dir + "/" + key + ".so";
  struct stat st;
  if (::stat(so.c_str(), &st) == 0) {
    if (auto fn = open_kernel(so)) {
      S.disk_hits++;
      return fn;
    }
  }
  if (!make_dirs(dir)) {
    warn_once("cannot create the kernel cache folder " + dir + ": compiled graphs run on the ordinary kernels");
    S.failures++;
    return std::nullopt;
  }
  // a name no other writer uses: pid, a counter and the clock (processes of
  // other PID namespaces may share the folder)
  const std::string tmp = dir + "/" + key + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(S.counter++) +
                          "." + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() & 0xffffff);
  // the prelude (half_bits.h's and simd_math.h's text and the generators' functions) as a
  // header of its own, named by the prelude, the compiler, the flags and
  // the version, which the kernel includes
  Pch& pch = S.pch[level];
  const std::string prelude = "prelude-" + hex(fnv1a(meta, prelude_hash)) + ".h";
  auto t0 = std::chrono::steady_clock::now();
  {  // looked for at each compile (one stat): the folder may have been emptied
    struct stat hs;
    if (::stat((dir + "/" + prelude).c_str(), &hs) == 0) {
      pch.header = true;
    } else {
      std::string text = "// Ember " EMBER_VERSION " fused-kernel prelude\n#define EMBER_ISA_NS ember_jit\n";
      text += kSimdMathText;
      text += kernel_prelude();
      pch.header = write_file(tmp + ".h", text) && ::rename((tmp + ".h").c_str(), (dir + "/" + prelude).c_str()) == 0;
      if (!pch.header) ::unlink((tmp + ".h").c_str());
    }
  }
  finish_pch(pch, true);
  std::string full = "// Ember " EMBER_VERSION " fused kernel\n";
  if (pch.header) {
    full += "#include \"" + prelude + "\"\n";
  } else {  // the prelude inline
    full += "#define EMBER_ISA_NS ember_jit\n";
    full += kSimdMathText;
    full += kernel_prelude();
  }
  full += source;
  bool ok = write_file(tmp + ".cpp", full) && run_compiler(tmp + ".cpp", tmp + ".so", level, tmp + ".log");
  S.compile_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // after the first compile without it: the precompiled prelude, built in
  // the background for the compiles that follow
  struct stat gs;
  pch.gch = dir + "/" + prelude + ".gch";
  if (ok && pch.header && pch.pid <= 0 && !pch.gave_up && ::stat(pch.gch.c_str(), &gs) != 0) {
    if (!pch_enabled()) {
      pch.gave_up = true;
    } else {
      static std::once_flag at_exit;
      std::call_once(at_exit, [] { std::atexit(stop_pch_builds); });
      S.owner = ::getpid();
      pch.tmp = tmp + ".gch";
      pch.pid = spawn_compiler({"-x", "c++-header", dir + "/" + prelude, "-o", pch.tmp}, level, pch.tmp + ".log",
                                true);
      if (pch.pid > 0) S.pch_builds++;
      else pch.gave_up = true;
    }
  }
  FusedProgram::Kernel fn = nullptr;
  if (ok && ::rename((tmp + ".so").c_str(), so.c_str()) == 0) fn = open_kernel(so);
  if (!fn) {
    warn_once("the C++ compiler (" + cc.path + ") failed on a fused kernel (see " + tmp +
              ".log): that group runs on the ordinary kernels");
    S.failures++;
    ::unlink((tmp + ".so").c_str());
    return nullptr;
  }
  S.compiles++;
  ::unlink((tmp + ".cpp").c_str());
  ::unlink((tmp + ".log").c_str());
  return fn;
}
}  // namespace

FusedProgram::Kernel load_kernel(const std::string& source, int level) {
  if (level < 0 || level > 2) level = 0;
  State& S = state();
  const Compiler& cc = compiler();
  if (cc.path.empty()) {
    warn_once("no C++ compiler found ($CXX, or c++/g++/clang++ on PATH): fused kernels are off and compiled graphs "
              "run on the ordinary kernels");
    S.failures++;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(S.mu);
  auto& loaded = S.kernels[level];
  if (auto it = loaded.find(source); it != loaded.end()) {
    S.memory_hits++;
    return it->second;
  }
  std::optional<FusedProgram::Kernel> fn = load_or_compile(source, level, cc);
  if (!fn) return nullptr;
  loaded.emplace(source, *fn);
  return *fn;
}

JitStats jit_stats() {
  State& S = state();
  std::lock_guard<std::mutex> lock(S.mu);
  JitStats r;
  r.memory_hits = S.memory_hits;
  r.disk_hits = S.disk_hits;
  r.compiles = S.compiles;
  r.failures = S.failures;
  r.compile_seconds = S.compile_seconds;
  r.pch_builds = S.pch_builds;
  return r;
}

void wait_pch() {
  State& S = state();
  std::lock_guard<std::mutex> lock(S.mu);
  for (Pch& p : S.pch) finish_pch(p, false);
}

void clear_memory_cache() {
  State& S = state();
  std::lock_guard<std::mutex> lock(S.mu);
  for (auto& m : S.kernels) m.clear();
}

}  // namespace ember::compile
