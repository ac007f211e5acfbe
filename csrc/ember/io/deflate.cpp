// Deflate (RFC 1951) for .npz members, written here so that building Ember
// needs no zlib. inflate() writes into exactly the declared number of bytes
// and checks every code, length and distance; deflate() is LZ77 over a 32 KiB
// window (hash chains) with a dynamic Huffman code per block, or a fixed or
// stored block where that is shorter.
#include <algorithm>
#include <cstring>
#include <queue>

#include "ember/io/reader.h"

namespace ember::io {

namespace {

const uint16_t kLenBase[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                               31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
const uint8_t kLenExtra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
const uint16_t kDistBase[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
const uint8_t kDistExtra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
const uint8_t kClOrder[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};

uint32_t reverse_bits(uint32_t code, int len) {
  uint32_t r = 0;
  for (int k = 0; k < len; ++k) r = (r << 1) | ((code >> k) & 1);
  return r;
}

// ---- inflate ---------------------------------------------------------------

constexpr int kFast = 10;

struct Huffman {
  uint16_t fast[1 << kFast];  // (symbol << 4) | length, 0: longer code
  uint16_t count[16];
  uint16_t symbol[288];
};

struct Inflater {
  const uint8_t* in;
  size_t n;
  size_t pos = 0;
  uint64_t bits = 0;
  int nbits = 0;
  uint64_t used = 0;  // bits consumed
  std::string out;
  size_t w = 0;
  const std::string& what;

  [[noreturn]] void fail(const char* why) {
    throw std::invalid_argument("[load_npz] " + what + ": corrupt deflate stream: " + why);
  }
  void refill() {
    while (nbits <= 56) {
      uint64_t b = pos < n ? in[pos] : 0;
      ++pos;
      bits |= b << nbits;
      nbits += 8;
    }
  }
  void consume(int k) {
    bits >>= k;
    nbits -= k;
    used += k;
    if (used > uint64_t(n) * 8) fail("truncated");
  }
  uint32_t get(int k) {
    if (k == 0) return 0;
    if (nbits < k) refill();
    uint32_t v = static_cast<uint32_t>(bits & ((uint64_t(1) << k) - 1));
    consume(k);
    return v;
  }
  void build(Huffman& h, const uint8_t* lens, int count) {
    std::memset(h.count, 0, sizeof h.count);
    for (int s = 0; s < count; ++s) h.count[lens[s]]++;
    h.count[0] = 0;
    int left = 1;
    for (int l = 1; l < 16; ++l) {
      left <<= 1;
      left -= h.count[l];
      if (left < 0) fail("over-subscribed Huffman code");
    }
    uint16_t offs[16];
    offs[1] = 0;
    for (int l = 1; l < 15; ++l) offs[l + 1] = offs[l] + h.count[l];
    for (int s = 0; s < count; ++s)
      if (lens[s]) h.symbol[offs[lens[s]]++] = static_cast<uint16_t>(s);
    std::memset(h.fast, 0, sizeof h.fast);
    uint32_t code = 0;
    int next_code[16];
    for (int l = 1; l < 16; ++l) {
      next_code[l] = static_cast<int>(code);
      code = (code + h.count[l]) << 1;
    }
    for (int s = 0; s < count; ++s) {
      int l = lens[s];
      if (!l) continue;
      uint32_t c = static_cast<uint32_t>(next_code[l]++);
      if (l <= kFast) {
        uint32_t r = reverse_bits(c, l);
        for (uint32_t k = r; k < (1u << kFast); k += 1u << l) h.fast[k] = static_cast<uint16_t>((s << 4) | l);
      }
    }
  }
  int decode(const Huffman& h) {
    if (nbits < 15) refill();
    uint16_t e = h.fast[bits & ((1u << kFast) - 1)];
    if (e) {
      consume(e & 15);
      return e >> 4;
    }
    int code = 0, first = 0, index = 0;
    for (int l = 1; l < 16; ++l) {
      code |= static_cast<int>((bits >> (l - 1)) & 1);
      int cnt = h.count[l];
      if (code - first < cnt) {
        consume(l);
        return h.symbol[index + code - first];
      }
      index += cnt;
      first = (first + cnt) << 1;
      code <<= 1;
    }
    fail("invalid Huffman code");
  }
  void put(uint8_t b) {
    if (w >= out.size()) fail("inflates to more bytes than the member declares");
    out[w++] = static_cast<char>(b);
  }
  void codes(const Huffman& lit, const Huffman& dist) {
    while (true) {
      int s = decode(lit);
      if (s < 256) {
        put(static_cast<uint8_t>(s));
      } else if (s == 256) {
        return;
      } else {
        s -= 257;
        if (s >= 29) fail("invalid length symbol");
        size_t len = kLenBase[s] + get(kLenExtra[s]);
        int d = decode(dist);
        if (d >= 30) fail("invalid distance symbol");
        size_t dd = kDistBase[d] + get(kDistExtra[d]);
        if (dd > w) fail("distance reaches before the start of the output");
        if (len > out.size() - w) fail("inflates to more bytes than the member declares");
        char* o = out.data();
        for (size_t k = 0; k < len; ++k, ++w) o[w] = o[w - dd];
      }
    }
  }
  void run() {
    Huffman lit, dist;
    bool last = false;
    while (!last) {
      last = get(1);
      uint32_t type = get(2);
      if (type == 0) {
        // to the byte boundary, then LEN and NLEN
        get(nbits % 8);
        uint32_t len = get(16), nlen = get(16);
        if ((len ^ 0xFFFF) != nlen) fail("stored block length check failed");
        for (uint32_t k = 0; k < len; ++k) put(static_cast<uint8_t>(get(8)));
      } else if (type == 1) {
        uint8_t l[320];
        for (int s = 0; s < 144; ++s) l[s] = 8;
        for (int s = 144; s < 256; ++s) l[s] = 9;
        for (int s = 256; s < 280; ++s) l[s] = 7;
        for (int s = 280; s < 288; ++s) l[s] = 8;
        for (int s = 0; s < 30; ++s) l[288 + s] = 5;
        build(lit, l, 288);
        build(dist, l + 288, 30);
        codes(lit, dist);
      } else if (type == 2) {
        int hlit = get(5) + 257, hdist = get(5) + 1, hclen = get(4) + 4;
        if (hlit > 286 || hdist > 30) fail("too many length or distance codes");
        uint8_t cl[19] = {0};
        for (int k = 0; k < hclen; ++k) cl[kClOrder[k]] = static_cast<uint8_t>(get(3));
        Huffman clh;
        build(clh, cl, 19);
        uint8_t l[320] = {0};
        int k = 0;
        while (k < hlit + hdist) {
          int s = decode(clh);
          if (s < 16) {
            l[k++] = static_cast<uint8_t>(s);
            continue;
          }
          int rep, val = 0;
          if (s == 16) {
            if (k == 0) fail("repeat with no previous length");
            val = l[k - 1];
            rep = 3 + get(2);
          } else if (s == 17) {
            rep = 3 + get(3);
          } else {
            rep = 11 + get(7);
          }
          if (k + rep > hlit + hdist) fail("code lengths overrun");
          while (rep--) l[k++] = static_cast<uint8_t>(val);
        }
        if (l[256] == 0) fail("no end-of-block code");
        build(lit, l, hlit);
        build(dist, l + hlit, hdist);
        codes(lit, dist);
      } else {
        fail("invalid block type 3");
      }
    }
    if (w != out.size()) fail("inflates to fewer bytes than the member declares");
  }
};

// ---- deflate ---------------------------------------------------------------

struct BitWriter {
  std::string out;
  uint64_t bits = 0;
  int n = 0;
  void put(uint32_t v, int k) {
    bits |= uint64_t(v) << n;
    n += k;
    while (n >= 8) {
      out += static_cast<char>(bits & 0xFF);
      bits >>= 8;
      n -= 8;
    }
  }
  void align() {
    if (n > 0) put(0, 8 - n);
  }
};

// Huffman code lengths (at most `limit` bits) for the frequencies; at least
// two symbols get a code so that every code is complete.
void code_lengths(std::vector<uint32_t> f, int limit, uint8_t* lens) {
  const int n = static_cast<int>(f.size());
  int used = 0;
  for (auto v : f) used += v > 0;
  for (int s = 0; used < 2 && s < n; ++s)
    if (!f[s]) f[s] = 1, ++used;
  while (true) {
    using Node = std::pair<uint64_t, int>;
    std::priority_queue<Node, std::vector<Node>, std::greater<Node>> q;
    std::vector<int> parent(2 * n, -1);
    for (int s = 0; s < n; ++s)
      if (f[s]) q.push({f[s], s});
    int next = n;
    while (q.size() > 1) {
      auto a = q.top();
      q.pop();
      auto b = q.top();
      q.pop();
      parent[a.second] = parent[b.second] = next;
      q.push({a.first + b.first, next++});
    }
    int maxlen = 0;
    for (int s = 0; s < n; ++s) {
      int d = 0;
      if (f[s])
        for (int p = s; parent[p] >= 0; p = parent[p]) ++d;
      lens[s] = static_cast<uint8_t>(d);
      maxlen = std::max(maxlen, d);
    }
    if (maxlen <= limit) return;
    for (auto& v : f)
      if (v) v = (v >> 1) | 1;
  }
}

void canonical(const uint8_t* lens, int n, uint16_t* codes) {
  int count[16] = {0};
  for (int s = 0; s < n; ++s) count[lens[s]]++;
  count[0] = 0;
  uint32_t code = 0, next[16];
  for (int l = 1; l < 16; ++l) {
    next[l] = code;
    code = (code + count[l]) << 1;
  }
  for (int s = 0; s < n; ++s)
    if (lens[s]) codes[s] = static_cast<uint16_t>(reverse_bits(next[lens[s]]++, lens[s]));
}

struct Sym {
  uint16_t lit;   // 0..255 literal, 257.. length symbol
  uint16_t dist;  // distance (0 for a literal)
  uint16_t len;   // match length
};

int len_symbol(int len) {
  int s = 0;
  while (s < 28 && kLenBase[s + 1] <= len) ++s;
  return s;
}
int dist_symbol(int d) {
  int s = 0;
  while (s < 29 && kDistBase[s + 1] <= d) ++s;
  return s;
}

void write_block(BitWriter& bw, const std::vector<Sym>& syms, const uint8_t* raw, size_t raw_n, bool last) {
  std::vector<uint32_t> lf(286, 0), df(30, 0);
  for (auto& s : syms) {
    if (s.dist == 0) {
      lf[s.lit]++;
    } else {
      lf[257 + len_symbol(s.len)]++;
      df[dist_symbol(s.dist)]++;
    }
  }
  lf[256] = 1;
  uint8_t ll[286], dl[30];
  code_lengths(lf, 15, ll);
  code_lengths(df, 15, dl);
  int hlit = 286, hdist = 30;
  while (hlit > 257 && ll[hlit - 1] == 0) --hlit;
  while (hdist > 1 && dl[hdist - 1] == 0) --hdist;
  // run-length code of the lengths
  std::vector<uint8_t> all(ll, ll + hlit);
  all.insert(all.end(), dl, dl + hdist);
  std::vector<std::pair<uint8_t, uint8_t>> rle;  // (symbol, extra value)
  for (size_t k = 0; k < all.size();) {
    size_t r = k;
    while (r < all.size() && all[r] == all[k]) ++r;
    size_t run = r - k;
    if (all[k] == 0 && run >= 3) {
      while (run >= 11) {
        size_t t = std::min<size_t>(run, 138);
        rle.push_back({18, static_cast<uint8_t>(t - 11)});
        run -= t;
      }
      if (run >= 3) rle.push_back({17, static_cast<uint8_t>(run - 3)}), run = 0;
      while (run--) rle.push_back({0, 0});
    } else {
      rle.push_back({all[k], 0});
      --run;
      while (run >= 3) {
        size_t t = std::min<size_t>(run, 6);
        rle.push_back({16, static_cast<uint8_t>(t - 3)});
        run -= t;
      }
      while (run--) rle.push_back({all[k], 0});
    }
    k = r;
  }
  std::vector<uint32_t> cf(19, 0);
  for (auto& e : rle) cf[e.first]++;
  uint8_t cl[19];
  code_lengths(cf, 7, cl);
  int hclen = 19;
  while (hclen > 4 && cl[kClOrder[hclen - 1]] == 0) --hclen;
  // sizes in bits of the three choices
  uint64_t dyn = 3 + 14 + 3 * hclen, fix = 3;
  for (auto& e : rle) dyn += cl[e.first] + (e.first == 16 ? 2 : e.first == 17 ? 3 : e.first == 18 ? 7 : 0);
  auto fixed_lit = [](int s) { return s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8; };
  for (int s = 0; s < 286; ++s) {
    uint64_t extra = s > 256 ? kLenExtra[s - 257] : 0;
    dyn += uint64_t(lf[s]) * (ll[s] + extra);
    fix += uint64_t(lf[s]) * (fixed_lit(s) + extra);
  }
  for (int s = 0; s < 30; ++s) {
    dyn += uint64_t(df[s]) * (dl[s] + kDistExtra[s]);
    fix += uint64_t(df[s]) * (5 + kDistExtra[s]);
  }
  uint64_t stored = (raw_n / 65535 + 1) * 40 + raw_n * 8 + 8;
  if (stored <= dyn && stored <= fix) {
    size_t k = 0;
    do {
      size_t t = std::min<size_t>(raw_n - k, 65535);
      bool fin = last && k + t == raw_n;
      bw.put(fin ? 1 : 0, 1);
      bw.put(0, 2);
      bw.align();
      bw.put(static_cast<uint32_t>(t), 16);
      bw.put(static_cast<uint32_t>(t ^ 0xFFFF), 16);
      bw.out.append(reinterpret_cast<const char*>(raw + k), t);
      k += t;
    } while (k < raw_n);
    return;
  }
  uint16_t lc[288] = {0}, dc[30] = {0};
  bw.put(last ? 1 : 0, 1);
  if (fix < dyn) {
    bw.put(1, 2);
    uint8_t fl[288], fd[30];
    for (int s = 0; s < 288; ++s) fl[s] = static_cast<uint8_t>(fixed_lit(s));
    std::fill(fd, fd + 30, 5);
    std::memcpy(ll, fl, 286);
    std::memcpy(dl, fd, 30);
    canonical(fl, 288, lc);
    canonical(fd, 30, dc);
  } else {
    bw.put(2, 2);
    bw.put(hlit - 257, 5);
    bw.put(hdist - 1, 5);
    bw.put(hclen - 4, 4);
    for (int k = 0; k < hclen; ++k) bw.put(cl[kClOrder[k]], 3);
    uint16_t cc[19] = {0};
    canonical(cl, 19, cc);
    for (auto& e : rle) {
      bw.put(cc[e.first], cl[e.first]);
      if (e.first == 16) bw.put(e.second, 2);
      if (e.first == 17) bw.put(e.second, 3);
      if (e.first == 18) bw.put(e.second, 7);
    }
    canonical(ll, 286, lc);
    canonical(dl, 30, dc);
  }
  for (auto& s : syms) {
    if (s.dist == 0) {
      bw.put(lc[s.lit], ll[s.lit]);
    } else {
      int ls = len_symbol(s.len), ds = dist_symbol(s.dist);
      bw.put(lc[257 + ls], ll[257 + ls]);
      bw.put(s.len - kLenBase[ls], kLenExtra[ls]);
      bw.put(dc[ds], dl[ds]);
      bw.put(s.dist - kDistBase[ds], kDistExtra[ds]);
    }
  }
  bw.put(lc[256], ll[256]);
}

}  // namespace

std::string inflate(const uint8_t* data, size_t n, size_t out_size, const std::string& what) {
  Inflater inf{data, n, 0, 0, 0, 0, std::string(out_size, '\0'), 0, what};
  inf.run();
  return std::move(inf.out);
}

std::string deflate(const uint8_t* data, size_t n) {
  constexpr int kWin = 32768, kHashBits = 15, kChain = 24, kBlock = 1 << 16;
  BitWriter bw;
  std::vector<int64_t> head(1 << kHashBits, -1), prev(kWin, -1);
  auto hash = [&](size_t i) {
    uint32_t v = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16);
    return (v * 2654435761u) >> (32 - kHashBits);
  };
  std::vector<Sym> syms;
  syms.reserve(kBlock);
  size_t i = 0, block_start = 0;
  auto insert = [&](size_t k) {
    if (k + 2 < n) {
      uint32_t h = hash(k);
      prev[k % kWin] = head[h];
      head[h] = static_cast<int64_t>(k);
    }
  };
  while (i < n) {
    int best = 0, best_d = 0;
    if (i + 2 < n) {
      uint32_t h = hash(i);
      int64_t cand = head[h];
      const size_t maxlen = std::min<size_t>(258, n - i);
      for (int chain = 0; cand >= 0 && chain < kChain && i - static_cast<size_t>(cand) <= kWin; ++chain) {
        const uint8_t* a = data + cand;
        const uint8_t* b = data + i;
        if (a[best] == b[best]) {
          size_t l = 0;
          while (l < maxlen && a[l] == b[l]) ++l;
          if (static_cast<int>(l) > best) {
            best = static_cast<int>(l);
            best_d = static_cast<int>(i - cand);
            if (l == maxlen) break;
          }
        }
        int64_t nx = prev[cand % kWin];
        if (nx >= cand) break;
        cand = nx;
      }
    }
    if (best >= 3) {
      syms.push_back({0, static_cast<uint16_t>(best_d), static_cast<uint16_t>(best)});
      for (int k = 0; k < best; ++k) insert(i + k);
      i += best;
    } else {
      syms.push_back({data[i], 0, 0});
      insert(i);
      ++i;
    }
    if (syms.size() >= static_cast<size_t>(kBlock)) {
      write_block(bw, syms, data + block_start, i - block_start, i == n);
      syms.clear();
      block_start = i;
    }
  }
  if (!syms.empty() || n == 0 || block_start != n) write_block(bw, syms, data + block_start, i - block_start, true);
  bw.align();
  return std::move(bw.out);
}

}  // namespace ember::io
