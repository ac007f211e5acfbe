// What every format shares: mapped files, atomic writes, arrays on the
// mapping, UTF-8 and JSON, CRC-32.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <array>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <mutex>
#include <cstdio>
#include <cstring>
#include <random>
#include <unordered_set>

#include "ember/io/reader.h"

namespace ember::io {

namespace {
[[noreturn]] void os_fail(const char* op, const std::string& what, const std::string& path, int err) {
  throw os_error(std::string("[") + op + "] " + what + " " + path + ": " + std::strerror(err), err);
}
}  // namespace

namespace {

// ---- the registry of live mappings and the SIGBUS handler ----
constexpr int kSlots = 4096;
struct Slot {
  std::atomic<uintptr_t> lo{0}, hi{0};
  std::atomic<int> faulted{0};
};
Slot g_slots[kSlots];
std::string g_names[kSlots];  // under g_slot_mutex, never read by the handler
std::mutex g_slot_mutex;
std::atomic<int> g_any_fault{0};
struct sigaction g_old_bus;
uintptr_t g_page = 4096;

void on_sigbus(int sig, siginfo_t* si, void* ctx) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(si->si_addr);
  for (auto& s : g_slots) {
    uintptr_t lo = s.lo.load(std::memory_order_acquire);
    if (lo && a >= lo && a < s.hi.load(std::memory_order_acquire)) {
      void* page = reinterpret_cast<void*>(a & ~(g_page - 1));
      if (::mmap(page, g_page, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED) {
        s.faulted.store(1);
        g_any_fault.store(1);
        return;  // the read is retried and sees zeros
      }
    }
  }
  // not a mapped file of ours: the previous handler (or the default) takes it
  ::sigaction(SIGBUS, &g_old_bus, nullptr);
}

int register_mapping(void* p, size_t n, const std::string& name) {
  static std::once_flag once;
  std::call_once(once, [] {
    g_page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_old_bus);
  });
  std::lock_guard<std::mutex> lock(g_slot_mutex);
  for (int k = 0; k < kSlots; ++k) {
    if (g_slots[k].lo.load() == 0) {
      g_names[k] = name;
      g_slots[k].faulted.store(0);
      g_slots[k].hi.store(reinterpret_cast<uintptr_t>(p) + n, std::memory_order_release);
      g_slots[k].lo.store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);
      return k;
    }
  }
  return -1;  // more than kSlots live mappings: the rest are not guarded
}

void unregister_mapping(int k) {
  if (k < 0) return;
  std::lock_guard<std::mutex> lock(g_slot_mutex);
  if (g_slots[k].faulted.load()) g_any_fault.store(1);  // reported by the next check
  g_slots[k].lo.store(0, std::memory_order_release);
  g_slots[k].hi.store(0, std::memory_order_release);
}

std::vector<std::string> g_gone;  // faulted mappings already released, under g_slot_mutex

// Maps fd read-only; closes it afterwards when `own`.
Source map_open(int fd, bool own, const std::string& name, const char* op) {
  auto done = [&] {
    if (own) ::close(fd);
  };
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    done();
    os_fail(op, "Failed to stat file", name, e);
  }
  if (!S_ISREG(st.st_mode)) {
    done();
    os_fail(op, "Failed to open file", name, S_ISDIR(st.st_mode) ? EISDIR : EINVAL);
  }
  Source s;
  s.name = name;
  s.size = static_cast<size_t>(st.st_size);
  if (s.size == 0) {
    done();
    static char empty[8];
    s.buf = Buffer::borrowed(empty, 0, {}, true);
    return s;
  }
  void* p = ::mmap(nullptr, s.size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  done();  // the mapping outlives the descriptor
  if (p == MAP_FAILED) os_fail(op, "Failed to map file", name, e);
  size_t n = s.size;
  int slot = register_mapping(p, n, name);
  s.buf = Buffer::borrowed(p, n, [p, n, slot] {
    if (slot >= 0 && g_slots[slot].faulted.load()) {
      std::lock_guard<std::mutex> lock(g_slot_mutex);
      g_gone.push_back(g_names[slot]);
    }
    unregister_mapping(slot);
    ::munmap(p, n);
  }, true);
  return s;
}
}  // namespace

void check_mappings() {
  if (!g_any_fault.exchange(0)) return;
  std::string files;
  {
    std::lock_guard<std::mutex> lock(g_slot_mutex);
    for (int k = 0; k < kSlots; ++k)
      if (g_slots[k].lo.load() && g_slots[k].faulted.exchange(0)) files += (files.empty() ? "" : ", ") + g_names[k];
    for (auto& g : g_gone) files += (files.empty() ? "" : ", ") + g;
    g_gone.clear();
  }
  if (files.empty()) return;
  throw os_error("[eval] " + files +
                     ": the file shrank while mapped; arrays loaded from it read zeros where its data vanished",
                 EIO);
}

Source map_file(const std::string& path, const char* op) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) os_fail(op, "Failed to open file", path, errno);
  return map_open(fd, true, path, op);
}

Source map_fd(int fd, const std::string& name, const char* op) { return map_open(fd, false, name, op); }

Source memory_source(std::string bytes, std::string name) {
  auto owner = std::make_shared<std::string>(std::move(bytes));
  // std::string's storage is suitably aligned for any scalar (operator new)
  // once it is heap-allocated; short strings live inline, so copy those out.
  if (owner->size() < 64) owner->reserve(64);
  Source s;
  s.name = std::move(name);
  s.size = owner->size();
  s.buf = Buffer::borrowed(owner->data(), owner->size(), [owner]() mutable { owner.reset(); }, true);
  return s;
}

void write_file_atomic(const std::string& path, const std::function<void(const Writer&)>& body, const char* op) {
  std::random_device rd;
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(rd() & 0xffffff);
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) os_fail(op, "Failed to open file", path, errno);
  }
  if (fd < 0) os_fail(op, "Failed to open file", path, EEXIST);
  // writes go through a 1 MiB buffer; larger pieces go straight to the file
  std::string pending;
  pending.reserve(1 << 20);
  // written bytes are handed to the disk as they come (sync_file_range), so
  // the final fsync has little left to wait for
  off_t written = 0, kicked = 0;
  auto write_all = [&](const char* p, size_t n) {
    while (n > 0) {
      ssize_t k = ::write(fd, p, n);
      if (k < 0) {
        if (errno == EINTR) continue;
        os_fail(op, "Failed to write file", path, errno);
      }
      p += k;
      n -= static_cast<size_t>(k);
      written += k;
      if (written - kicked >= (off_t(8) << 20)) {
        ::sync_file_range(fd, kicked, written - kicked, SYNC_FILE_RANGE_WRITE);
        kicked = written;
      }
    }
  };
  Writer w = [&](const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    if (pending.size() + n <= pending.capacity()) {
      pending.append(p, n);
      return;
    }
    write_all(pending.data(), pending.size());
    pending.clear();
    if (n >= pending.capacity())
      write_all(p, n);
    else
      pending.append(p, n);
  };
  try {
    body(w);
    write_all(pending.data(), pending.size());
    if (::fsync(fd) != 0) os_fail(op, "Failed to write file", path, errno);
    if (::close(fd) != 0) {
      fd = -1;
      os_fail(op, "Failed to write file", path, errno);
    }
    fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) os_fail(op, "Failed to write file", path, errno);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

namespace detail {

Strides col_strides(const Shape& shape) {
  Strides s(shape.size());
  int64_t acc = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    s[i] = acc;
    acc *= shape[i] == 0 ? 1 : shape[i];
  }
  return s;
}

static void byteswap(uint8_t* p, uint64_t nbytes, int item, bool complex) {
  int w = complex ? item / 2 : item;  // complex64: two float32 halves
  if (w == 1) return;
  for (uint64_t i = 0; i + w <= nbytes; i += w)
    for (int a = 0, b = w - 1; a < b; ++a, --b) std::swap(p[i + a], p[i + b]);
}

array copy_array(const void* data, uint64_t nbytes, const Shape& shape, Dtype dt) {
  auto buf = allocator::malloc(nbytes);
  if (nbytes) std::memcpy(buf->ptr(), data, nbytes);
  return array::from_buffer(std::move(buf), shape, dt, row_strides(shape), 0, "load");
}

array make_array(const Source& src, uint64_t byte_off, uint64_t nbytes, const Shape& shape, Dtype dt,
                 const Strides& strides, bool swap, const char* op) {
  const int item = size_of(dt);
  const uint64_t abs = src.offset + byte_off;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(src.buf->ptr()) + abs;
  if (!swap && addr % item == 0 && abs % item == 0)
    return array::from_buffer(src.buf, shape, dt, strides, static_cast<int64_t>(abs / item), op);
  auto buf = allocator::malloc(nbytes);
  if (nbytes) std::memcpy(buf->ptr(), src.data() + byte_off, nbytes);
  if (swap) byteswap(static_cast<uint8_t*>(buf->ptr()), nbytes, item, dt == Dtype::complex64);
  return array::from_buffer(std::move(buf), shape, dt, strides, 0, op);
}

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    else return false;
    if (i + len > n) return false;
    for (int k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

namespace {
struct JsonParser {
  std::string_view s;
  size_t i = 0;
  const Ctx& c;
  int depth = 0;

  [[noreturn]] void err(const char* what) { bad(c, "", "header is not valid JSON: ", what, " at byte ", i); }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
  }
  bool lit(const char* w) {
    size_t n = std::strlen(w);
    if (s.substr(i, n) != w) return false;
    i += n;
    return true;
  }
  static int hex(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
  }
  uint32_t hex4() {
    if (i + 4 > s.size()) err("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      int h = hex(s[i++]);
      if (h < 0) err("bad \\u escape");
      v = v * 16 + h;
    }
    return v;
  }
  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  std::string string() {
    if (i >= s.size() || s[i] != '"') err("expected a string");
    ++i;
    std::string out;
    while (true) {
      if (i >= s.size()) err("unterminated string");
      char ch = s[i++];
      if (ch == '"') return out;
      if (static_cast<unsigned char>(ch) < 0x20) err("control character in a string");
      if (ch != '\\') {
        out += ch;
        continue;
      }
      if (i >= s.size()) err("unterminated string");
      char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xDC00 && cp <= 0xDFFF) err("unpaired surrogate");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (!lit("\\u")) err("unpaired surrogate");
            uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) err("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          put_utf8(out, cp);
          break;
        }
        default: err("bad escape");
      }
    }
  }
  std::string number() {
    size_t b = i;
    if (i < s.size() && s[i] == '-') ++i;
    if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) err("bad number");
    if (s[i] == '0') ++i;
    else while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i < s.size() && s[i] == '.') {
      ++i;
      if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) err("bad number");
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) err("bad number");
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    }
    return std::string(s.substr(b, i - b));
  }
  Json value() {
    if (++depth > 64) err("nesting deeper than 64");
    ws();
    Json v;
    if (i >= s.size()) err("unexpected end");
    char ch = s[i];
    if (ch == '{') {
      v.type = Json::Object;
      ++i;
      ws();
      if (i < s.size() && s[i] == '}') {
        ++i;
      } else {
        std::unordered_set<std::string> keys;
        while (true) {
          ws();
          std::string k = string();
          if (!keys.insert(k).second) bad(c, "", "header has the key '", k, "' twice");
          ws();
          if (i >= s.size() || s[i] != ':') err("expected ':'");
          ++i;
          Json m = value();
          v.members.emplace_back(std::move(k), std::move(m));
          ws();
          if (i < s.size() && s[i] == ',') {
            ++i;
            continue;
          }
          if (i < s.size() && s[i] == '}') {
            ++i;
            break;
          }
          err("expected ',' or '}'");
        }
      }
    } else if (ch == '[') {
      v.type = Json::Array;
      ++i;
      ws();
      if (i < s.size() && s[i] == ']') {
        ++i;
      } else {
        while (true) {
          v.items.push_back(value());
          ws();
          if (i < s.size() && s[i] == ',') {
            ++i;
            continue;
          }
          if (i < s.size() && s[i] == ']') {
            ++i;
            break;
          }
          err("expected ',' or ']'");
        }
      }
    } else if (ch == '"') {
      v.type = Json::String;
      v.str = string();
    } else if (lit("true")) {
      v.type = Json::Bool, v.b = true;
    } else if (lit("false")) {
      v.type = Json::Bool, v.b = false;
    } else if (lit("null")) {
      v.type = Json::Null;
    } else {
      v.type = Json::Number;
      v.num = number();
    }
    --depth;
    return v;
  }
};
}  // namespace

Json parse_json(std::string_view text, const Ctx& c) {
  JsonParser p{text, 0, c};
  Json v = p.value();
  while (p.i < text.size() && text[p.i] == ' ') ++p.i;  // safetensors pads with spaces
  if (p.i != text.size()) p.err("trailing characters after the value");
  return v;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"') out += "\\\"";
    else if (ch == '\\') out += "\\\\";
    else if (ch < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", ch);
      out += b;
    } else out += static_cast<char>(ch);
  }
  return out + "\"";
}

}  // namespace detail

namespace {

// CRC-32 (ISO-HDLC, as zip) of the raw state `crc` (no pre/post inversion),
// slicing by 8.
uint32_t crc32_table(const uint8_t* p, size_t n, uint32_t crc) {
  static const auto tables = [] {
    std::vector<std::array<uint32_t, 256>> t(8);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
    return t;
  }();
  while (n >= 8) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + 4, 4);
    a ^= crc;
    crc = tables[7][a & 0xFF] ^ tables[6][(a >> 8) & 0xFF] ^ tables[5][(a >> 16) & 0xFF] ^ tables[4][a >> 24] ^
          tables[3][b & 0xFF] ^ tables[2][(b >> 8) & 0xFF] ^ tables[1][(b >> 16) & 0xFF] ^ tables[0][b >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ tables[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
// The same CRC by carry-less multiplication (PCLMULQDQ), for n >= 64 and a
// multiple of 16: four 128-bit lanes folded 64 bytes at a time, folded into
// one, reduced to 64 and 32 bits, then a Barrett reduction. The constants are
// x^k mod P for the bit-reflected polynomial P = 0x1DB710641 (k = 4*128+-32,
// 128+-32, 64) and mu = floor(x^64 / P).
__attribute__((target("pclmul,sse4.1"))) inline __m128i clmul_load(const uint8_t* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}
__attribute__((target("pclmul,sse4.1"))) inline __m128i clmul_fold(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}
__attribute__((target("pclmul,sse4.1"))) uint32_t crc32_clmul(const uint8_t* p, size_t n, uint32_t crc) {
  const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
  const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
  const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124LL);
  const __m128i poly = _mm_set_epi64x(0x1F7011641LL, 0x1DB710641LL);
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  __m128i x1 = _mm_xor_si128(clmul_load(p), _mm_cvtsi32_si128(static_cast<int>(crc)));
  __m128i x2 = clmul_load(p + 16), x3 = clmul_load(p + 32), x4 = clmul_load(p + 48);
  p += 64;
  n -= 64;
  while (n >= 64) {
    x1 = clmul_fold(x1, k1k2, clmul_load(p));
    x2 = clmul_fold(x2, k1k2, clmul_load(p + 16));
    x3 = clmul_fold(x3, k1k2, clmul_load(p + 32));
    x4 = clmul_fold(x4, k1k2, clmul_load(p + 48));
    p += 64;
    n -= 64;
  }
  x1 = clmul_fold(x1, k3k4, x2);
  x1 = clmul_fold(x1, k3k4, x3);
  x1 = clmul_fold(x1, k3k4, x4);
  while (n >= 16) {
    x1 = clmul_fold(x1, k3k4, clmul_load(p));
    p += 16;
    n -= 16;
  }
  // 128 -> 64 bits
  __m128i t = _mm_srli_si128(x1, 8);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x10), t);
  // 64 -> 32 bits
  t = _mm_srli_si128(x1, 4);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), k5, 0x00), t);
  // Barrett reduction
  t = x1;
  x1 = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, mask32), poly, 0x10), mask32);
  x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, poly, 0x00), t);
  return static_cast<uint32_t>(_mm_extract_epi32(x1, 1));
}
#endif

}  // namespace

uint32_t crc32(const uint8_t* p, size_t n, uint32_t crc) {
  crc = ~crc;
#if defined(__x86_64__)
  static const bool clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  if (clmul && n >= 64) {
    size_t m = n & ~size_t(15);
    crc = crc32_clmul(p, m, crc);
    p += m;
    n -= m;
  }
#endif
  return ~crc32_table(p, n, crc);
}

}  // namespace ember::io
