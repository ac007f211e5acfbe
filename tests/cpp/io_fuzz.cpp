// The loaders under AddressSanitizer and UndefinedBehaviorSanitizer: the
// malformed-file table and a seeded mutation fuzz run over valid files.
//
//   io_fuzz CASES_DIR [--iterations N] [--seed S]
//
// CASES_DIR comes from tools/io_cases_dump.py: bad-<id>.<fmt> with the
// expected message fragment in bad-<id>.<fmt>.expect, and seed-<k>.<fmt>.
// Every malformed file must raise std::invalid_argument holding its fragment;
// every mutated seed must load (then every byte of every array is read) or
// raise std::invalid_argument, nothing else. Loaded files are also saved
// again and reloaded (save of loaded, evaluated arrays).
//
// Built by .ci/run from the io sources and the few engine files they need
// (not the whole library): detail::dense, which evaluates arbitrary arrays
// through the ops in the library, is replaced below by a version for the
// evaluated arrays a loader returns (dense ones; strided ones are copied
// with a plain loop), and ember::eval by a check that they are evaluated.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ember/io/reader.h"

namespace ember::io::detail {
// Loaded arrays are evaluated; copy strided ones (Fortran-order .npy) densely.
array dense(const array& a) {
  if (!a.is_evaluated()) throw std::logic_error("io_fuzz: only evaluated arrays are saved here");
  if (a.row_contiguous()) return a;
  array out = array::empty_evaluated(a.shape(), a.dtype());
  const int item = a.itemsize();
  std::vector<int64_t> idx(a.ndim(), 0);
  const char* base = static_cast<const char*>(a.buffer()->ptr());
  char* o = static_cast<char*>(out.raw_data());
  for (int64_t k = 0; k < a.size(); ++k) {
    int64_t off = a.offset();
    for (int d = 0; d < a.ndim(); ++d) off += idx[d] * a.strides()[d];
    std::memcpy(o + k * item, base + off * item, item);
    for (int d = a.ndim() - 1; d >= 0; --d) {
      if (++idx[d] < a.shape(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}
}  // namespace ember::io::detail

namespace ember {
// array.cpp's array::eval needs the evaluator, which this build leaves out:
// everything a loader returns is evaluated already.
void eval(const std::vector<array>& arrays) {
  for (auto& a : arrays)
    if (!a.is_evaluated()) throw std::logic_error("io_fuzz: a loader returned an unevaluated array");
}
}  // namespace ember

using namespace ember;

namespace {

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

volatile uint64_t g_sink = 0;

void touch(const array& a) {
  // every addressed byte of the array (strides may be negative or zero)
  const int item = a.itemsize();
  std::vector<int64_t> idx(a.ndim(), 0);
  const unsigned char* base = static_cast<const unsigned char*>(a.buffer()->ptr());
  uint64_t acc = 0;
  for (int64_t k = 0; k < a.size(); ++k) {
    int64_t off = a.offset();
    for (int d = 0; d < a.ndim(); ++d) off += idx[d] * a.strides()[d];
    for (int b = 0; b < item; ++b) acc += base[off * item + b];
    for (int d = a.ndim() - 1; d >= 0; --d) {
      if (++idx[d] < a.shape(d)) break;
      idx[d] = 0;
    }
  }
  g_sink = g_sink + acc;
}

// Loads (and on success reads everything, saves and reloads); returns the
// ValueError message or "" on success. Anything but invalid_argument escapes.
std::string load_one(const std::string& fmt, const std::string& bytes) {
  io::Source src = io::memory_source(bytes, "fuzz." + fmt);
  std::string saved;
  io::Writer w = [&](const void* p, size_t n) { saved.append(static_cast<const char*>(p), n); };
  try {
    if (fmt == "npy") {
      array a = io::load_npy(src);
      touch(a);
      io::save_npy(a, w);
      touch(io::load_npy(io::memory_source(saved, "re.npy")));
    } else if (fmt == "npz") {
      auto as = io::load_npz(src);
      for (auto& e : as) touch(e.second);
      io::save_npz(as, bytes.size() % 2 == 0, w);
      for (auto& e : io::load_npz(io::memory_source(saved, "re.npz"))) touch(e.second);
    } else if (fmt == "safetensors") {
      auto st = io::load_safetensors(src);
      for (auto& e : st.arrays) touch(e.second);
      io::save_safetensors(st.arrays, st.metadata, w);
      for (auto& e : io::load_safetensors(io::memory_source(saved, "re.safetensors")).arrays) touch(e.second);
    } else {
      auto g = io::load_gguf(src);
      for (auto& e : g.arrays) touch(e.second);
      for (auto& e : g.metadata)
        if (e.second.kind == io::GgufValue::Array) touch(e.second.arr);
    }
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

std::string mutate(std::string s, std::mt19937_64& rng) {
  auto pick = [&](uint64_t n) { return n ? rng() % n : 0; };
  int rounds = 1 + static_cast<int>(pick(4));
  for (int r = 0; r < rounds; ++r) {
    switch (pick(7)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1 << pick(8));
        break;
      case 1:  // a random byte
        if (!s.empty()) s[pick(s.size())] = static_cast<char>(rng());
        break;
      case 2:  // truncate
        s.resize(pick(s.size() + 1));
        break;
      case 3: {  // an extreme 32- or 64-bit value
        static const uint64_t vals[] = {0, 1, 0xFFFFFFFFull, 0x7FFFFFFFull, 1ull << 63, ~0ull, 1ull << 32, 31, 33};
        uint64_t v = vals[pick(sizeof vals / sizeof *vals)];
        size_t w = pick(2) ? 8 : 4;
        if (s.size() >= w) std::memcpy(&s[pick(s.size() - w + 1)], &v, w);
        break;
      }
      case 4: {  // insert bytes
        size_t at = pick(s.size() + 1);
        s.insert(at, std::string(1 + pick(16), static_cast<char>(rng())));
        break;
      }
      case 5: {  // delete a range
        if (s.empty()) break;
        size_t at = pick(s.size());
        s.erase(at, 1 + pick(16));
        break;
      }
      default: {  // a digit in a text header
        if (s.empty()) break;
        size_t at = pick(s.size());
        if (s[at] >= '0' && s[at] <= '9') s[at] = static_cast<char>('0' + pick(10));
        else s[at] = "0123456789,:[]{}()\"' -"[pick(22)];
      }
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: io_fuzz CASES_DIR [--iterations N] [--seed S]\n");
    return 2;
  }
  std::string dir = argv[1];
  long iterations = 10000;
  uint64_t seed = 1;
  for (int k = 2; k + 1 < argc; k += 2) {
    if (!std::strcmp(argv[k], "--iterations")) iterations = std::atol(argv[k + 1]);
    if (!std::strcmp(argv[k], "--seed")) seed = std::strtoull(argv[k + 1], nullptr, 10);
  }
  // CRC-32 (carry-less multiplication where the CPU has it) against the bitwise definition
  {
    std::mt19937_64 r(seed);
    std::vector<uint8_t> buf(4096);
    for (auto& b : buf) b = static_cast<uint8_t>(r());
    int bad = 0;
    for (size_t n = 0; n < 700; ++n)
      for (size_t off = 0; off < 3; ++off) {
        uint32_t ref = ~0u;
        for (size_t i = 0; i < n; ++i) {
          ref ^= buf[off + i];
          for (int k = 0; k < 8; ++k) ref = (ref >> 1) ^ (0xEDB88320u & (0u - (ref & 1)));
        }
        ref = ~ref;
        uint32_t part = io::crc32(buf.data() + off, n / 3);
        if (io::crc32(buf.data() + off, n) != ref || io::crc32(buf.data() + off + n / 3, n - n / 3, part) != ref) ++bad;
      }
    std::printf("crc32: %s\n", bad ? "MISMATCH" : "matches the bitwise definition");
    if (bad) return 1;
  }
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) names.push_back(e->d_name);
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  int bad_ok = 0, failures = 0;
  std::map<std::string, std::vector<std::string>> seeds;
  for (auto& n : names) {
    auto dot = n.rfind('.');
    if (dot == std::string::npos) continue;
    std::string fmt = n.substr(dot + 1);
    if (fmt == "expect") continue;
    std::string bytes = read_all(dir + "/" + n);
    if (n.rfind("seed-", 0) == 0) {
      seeds[fmt].push_back(bytes);
      std::string m = load_one(fmt, bytes);
      if (!m.empty()) {
        std::printf("FAIL %s: a valid seed raised: %s\n", n.c_str(), m.c_str());
        ++failures;
      }
    } else if (n.rfind("bad-", 0) == 0) {
      std::string frag = read_all(dir + "/" + n + ".expect");
      std::string m = load_one(fmt, bytes);
      if (m.empty() || m.find(frag) == std::string::npos) {
        std::printf("FAIL %s: expected a ValueError with '%s', got '%s'\n", n.c_str(), frag.c_str(), m.c_str());
        ++failures;
      } else {
        ++bad_ok;
      }
    }
  }
  std::printf("malformed table: %d cases raised as expected\n", bad_ok);
  std::mt19937_64 rng(seed);
  for (auto& [fmt, files] : seeds) {
    long ok = 0, rejected = 0;
    for (long it = 0; it < iterations; ++it) {
      std::string m = mutate(files[it % files.size()], rng);
      (load_one(fmt, m).empty() ? ok : rejected)++;
    }
    std::printf("fuzz %s: %ld inputs (%ld loaded, %ld rejected), no crash\n", fmt.c_str(), iterations, ok, rejected);
  }
  if (bad_ok == 0 || seeds.size() != 4) {
    std::printf("FAIL: no cases found in %s\n", dir.c_str());
    return 1;
  }
  return failures ? 1 : 0;
}
