// Contractions, built from the public ops (no primitives of their own):
//
//   einsum        parse -> broadcast/diagonal/single-operand sums per operand
//                 -> pairwise contractions in einsum_path's order, each one
//                 a batched matmul (or a broadcast multiply when nothing is
//                 summed) -> transpose to the output order
//   tensordot ... matmul of permuted, reshaped operands
#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "ember/ops/common.h"

namespace ember {

using detail::fail;

namespace {

// ===========================================================================
// einsum: parsing
// ===========================================================================

// Labels are small ints: 'A'..'Z' -> 0..25, 'a'..'z' -> 26..51 (ASCII order,
// which is how the implicit output is sorted), then one label per ellipsis
// dim: kEllipsis + j for the j-th of the longest ellipsis, so shorter
// ellipses share the trailing labels (right-aligned broadcasting).
constexpr int kEllipsis = 52;

using Labels = std::vector<int>;    // one label per dim, repeats allowed
using LabelSet = std::vector<int>;  // sorted, unique

int letter_label(char c) { return c <= 'Z' ? c - 'A' : 26 + (c - 'a'); }

std::string label_str(int l) {
  if (l >= kEllipsis) return "...";
  return std::string(1, static_cast<char>(l < 26 ? 'A' + l : 'a' + (l - 26)));
}

bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Subscripts as they may appear in a message: bytes outside printable ASCII
// escaped (the message must stay valid UTF-8).
std::string printable(const std::string& t) {
  std::string r;
  for (unsigned char c : t) {
    if (c >= 0x20 && c < 0x7f) {
      r += static_cast<char>(c);
    } else {
      const char* hex = "0123456789abcdef";
      r += "\\x";
      r += hex[c >> 4];
      r += hex[c & 15];
    }
  }
  return r;
}

// A term split at its ellipsis: letters before and after, whether it has one.
struct Term {
  std::string text;
  Labels before, after;
  bool ellipsis = false;
};

Term tokenize(const std::string& t, const char* op) {
  Term out;
  out.text = t;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if (is_letter(c)) {
      (out.ellipsis ? out.after : out.before).push_back(letter_label(c));
      continue;
    }
    if (c != '.' || t.compare(i, 3, "...") != 0) {
      fail(op, "Subscripts must be letters, but got '", printable(std::string(1, c)), "' in '", printable(t), "'.");
    }
    if (out.ellipsis) fail(op, "Only one ellipsis per subscript is allowed; got '", printable(t), "'.");
    out.ellipsis = true;
    i += 2;
  }
  return out;
}

LabelSet to_set(Labels l) {
  std::sort(l.begin(), l.end());
  l.erase(std::unique(l.begin(), l.end()), l.end());
  return l;
}

bool contains(const LabelSet& s, int l) { return std::binary_search(s.begin(), s.end(), l); }

LabelSet set_union(const LabelSet& a, const LabelSet& b) {
  LabelSet r;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(r));
  return r;
}

LabelSet set_inter(const LabelSet& a, const LabelSet& b) {
  LabelSet r;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(r));
  return r;
}

struct Einsum {
  std::vector<Labels> inputs;
  Labels output;
  std::vector<int64_t> sizes;  // per label: the broadcast size (-1: unused)
};

Einsum parse_einsum(const std::string& subscripts, const std::vector<array>& ops, const char* op) {
  if (ops.empty()) fail(op, "At least one operand is required.");
  std::string sub;
  for (char c : subscripts) {
    if (c != ' ') sub += c;
  }
  std::string lhs = sub, rhs;
  bool explicit_out = false;
  if (auto p = sub.find("->"); p != std::string::npos) {
    lhs = sub.substr(0, p);
    rhs = sub.substr(p + 2);
    explicit_out = true;
  }
  std::vector<std::string> texts;
  for (size_t start = 0;;) {
    size_t p = lhs.find(',', start);
    texts.push_back(lhs.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  if (texts.size() != ops.size()) {
    fail(op, "Number of operands, ", ops.size(), ", does not match number of input subscripts, ", texts.size(),
         " (in '", printable(subscripts), "').");
  }

  std::vector<Term> terms;
  int max_ell = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    terms.push_back(tokenize(texts[i], op));
    const Term& t = terms.back();
    int named = static_cast<int>(t.before.size() + t.after.size());
    int nd = ops[i].ndim();
    if (t.ellipsis) {
      if (nd < named) {
        fail(op, "Operand ", i, " with shape ", shape_str(ops[i].shape()),
             " has insufficient dimensions for subscript '", t.text, "': it names ", named,
             " dims besides the ellipsis.");
      }
      max_ell = std::max(max_ell, nd - named);
    } else if (nd != named) {
      fail(op, "Operand ", i, " has ", nd, " dims but subscripts '", t.text, "' name ", named, ".");
    }
  }

  Einsum e;
  e.sizes.assign(kEllipsis + max_ell, -1);
  auto expand = [&](const Term& t, int ell_dims) {
    Labels l = t.before;
    if (t.ellipsis) {
      for (int j = max_ell - ell_dims; j < max_ell; ++j) l.push_back(kEllipsis + j);
    }
    l.insert(l.end(), t.after.begin(), t.after.end());
    return l;
  };
  std::vector<int> count(e.sizes.size(), 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    int named = static_cast<int>(terms[i].before.size() + terms[i].after.size());
    Labels l = expand(terms[i], ops[i].ndim() - named);
    const Shape& shape = ops[i].shape();
    for (size_t j = 0; j < l.size(); ++j) {
      int64_t d = shape[j];
      for (size_t k = 0; k < j; ++k) {
        if (l[k] == l[j] && shape[k] != d) {
          fail(op, "Dimensions of repeated subscripts do not have the same size (", shape[k], " != ", d,
               ") for '", label_str(l[j]), "' in operand ", i, " with shape ", shape_str(shape), ".");
        }
      }
      int64_t& g = e.sizes[l[j]];
      if (g == -1 || g == 1) {
        g = d;
      } else if (d != 1 && d != g) {
        fail(op, "Cannot broadcast dimension ", j, " of input ", i, " with shape ", shape_str(shape), " to size ", g,
             " (subscript '", label_str(l[j]), "').");
      }
      count[l[j]]++;
    }
    e.inputs.push_back(std::move(l));
  }

  if (explicit_out) {
    Term t = tokenize(rhs, op);
    e.output = expand(t, max_ell);
    for (size_t j = 0; j < e.output.size(); ++j) {
      int l = e.output[j];
      if (std::find(e.output.begin(), e.output.begin() + j, l) != e.output.begin() + j) {
        fail(op, "Repeat indices not allowed in output; got '", rhs, "'.");
      }
      if (count[l] == 0) fail(op, "Output subscript '", label_str(l), "' does not appear in any input.");
    }
  } else {
    // "..." first, then the letters used exactly once, in ASCII order
    for (int j = 0; j < max_ell; ++j) e.output.push_back(kEllipsis + j);
    for (int l = 0; l < kEllipsis; ++l) {
      if (count[l] == 1) e.output.push_back(l);
    }
  }
  return e;
}

// ===========================================================================
// einsum: the contraction path (MLX's greedy search)
// ===========================================================================

// Costs in wrapping 64-bit arithmetic, like MLX's size_t.
uint64_t term_size(const std::vector<int>& labels, const std::vector<int64_t>& sizes) {
  uint64_t n = 1;
  for (int l : labels) n *= static_cast<uint64_t>(sizes[l]);
  return n;
}

uint64_t flop_count(const LabelSet& labels, bool inner, size_t terms, const std::vector<int64_t>& sizes) {
  uint64_t factor = std::max<uint64_t>(1, terms - 1) + (inner ? 1 : 0);
  return term_size(labels, sizes) * factor;
}

struct Path {
  std::vector<std::vector<int>> steps;  // positions in the current operand list
  uint64_t naive_cost = 0, opt_cost = 0;
  size_t naive_scaling = 0, opt_scaling = 0;
};

// Greedy pairwise order: at each step take the pair whose contraction shrinks
// the total size most (ties: fewest flops, then the earliest candidate), among
// pairs whose result fits the largest input/output and whose cost keeps the
// total under the naive cost. Pairs sharing no label are considered only
// when nothing else is left. After the first step only pairs with the newest
// intermediate are added; earlier candidates are kept with their old costs.
// When no pair qualifies, the remaining operands form one final step.
Path greedy_path(const Einsum& e) {
  std::vector<LabelSet> sets;
  for (auto& in : e.inputs) sets.push_back(to_set(in));
  LabelSet out = to_set(e.output);
  const auto& sizes = e.sizes;

  Path p;
  LabelSet all;
  for (auto& s : sets) all = set_union(all, s);
  bool inner = set_inter(all, out).size() < all.size();
  p.naive_cost = flop_count(all, inner, sets.size(), sizes);
  p.naive_scaling = all.size();
  if (sets.size() <= 2) {
    std::vector<int> step(sets.size());
    std::iota(step.begin(), step.end(), 0);
    p.steps.push_back(step);
    p.opt_cost = p.naive_cost;
    p.opt_scaling = p.naive_scaling;
    return p;
  }

  uint64_t memory_limit = term_size(e.output, sizes);
  for (auto& in : e.inputs) memory_limit = std::max(memory_limit, term_size(in, sizes));

  struct Candidate {
    int64_t removed;  // input sizes minus result size (may be negative)
    uint64_t cost;
    LabelSet result;
    size_t dims;
    int x, y;
  };
  std::vector<Candidate> cands;
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < static_cast<int>(sets.size()); ++i) {
    for (int j = i + 1; j < static_cast<int>(sets.size()); ++j) pairs.emplace_back(i, j);
  }
  auto consider = [&](int x, int y) {
    LabelSet both = set_union(sets[x], sets[y]);
    LabelSet needed = out;
    for (int k = 0; k < static_cast<int>(sets.size()); ++k) {
      if (k != x && k != y) needed = set_union(needed, sets[k]);
    }
    LabelSet result = set_inter(both, needed);
    uint64_t new_size = term_size(result, sizes);
    if (new_size > memory_limit) return;
    auto removed = static_cast<int64_t>(term_size(sets[x], sizes) + term_size(sets[y], sizes) - new_size);
    uint64_t cost = flop_count(both, both.size() > result.size(), 2, sizes);
    if (p.opt_cost + cost > p.naive_cost) return;
    cands.push_back({removed, cost, std::move(result), both.size(), x, y});
  };

  size_t n_inputs = sets.size();
  for (size_t it = 0; it + 1 < n_inputs; ++it) {
    for (auto [x, y] : pairs) {
      if (!set_inter(sets[x], sets[y]).empty()) consider(x, y);
    }
    if (cands.empty()) {
      for (auto [x, y] : pairs) consider(x, y);
    }
    if (cands.empty()) {
      std::vector<int> step(sets.size());
      std::iota(step.begin(), step.end(), 0);
      LabelSet rest;
      for (auto& s : sets) rest = set_union(rest, s);
      bool rest_inner = set_inter(rest, out).size() < rest.size();
      p.steps.push_back(step);
      p.opt_cost += flop_count(rest, rest_inner, sets.size(), sizes);
      p.opt_scaling = std::max(p.opt_scaling, rest.size());
      break;
    }
    size_t best = 0;
    for (size_t k = 1; k < cands.size(); ++k) {
      const Candidate& c = cands[k];
      if (c.removed > cands[best].removed || (c.removed == cands[best].removed && c.cost < cands[best].cost)) {
        best = k;
      }
    }
    Candidate chosen = cands[best];
    p.opt_scaling = std::max(p.opt_scaling, chosen.dims);
    p.opt_cost += chosen.cost;
    p.steps.push_back({chosen.x, chosen.y});
    sets.erase(sets.begin() + chosen.y);
    sets.erase(sets.begin() + chosen.x);
    sets.push_back(chosen.result);
    std::vector<Candidate> kept;
    for (auto& c : cands) {
      if (c.x == chosen.x || c.x == chosen.y || c.y == chosen.x || c.y == chosen.y) continue;
      c.x -= (c.x > chosen.x) + (c.x > chosen.y);
      c.y -= (c.y > chosen.x) + (c.y > chosen.y);
      kept.push_back(std::move(c));
    }
    cands = std::move(kept);
    pairs.clear();
    int last = static_cast<int>(sets.size()) - 1;
    for (int k = 0; k < last; ++k) pairs.emplace_back(k, last);
  }
  return p;
}

// ===========================================================================
// einsum: evaluation
// ===========================================================================

struct Operand {
  array a;
  Labels labels;  // one per dim, unique after prepare()
};

Axes positions_of(const Labels& have, const std::vector<int>& want) {
  Axes ax;
  for (int l : want) ax.push_back(static_cast<int>(std::find(have.begin(), have.end(), l) - have.begin()));
  return ax;
}

// Sums the labels of `x` that are not in `keep`.
Operand sum_out(Operand x, const LabelSet& keep, const StreamOrDevice& s) {
  Axes ax;
  Labels rest;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (contains(keep, x.labels[i])) {
      rest.push_back(x.labels[i]);
    } else {
      ax.push_back(static_cast<int>(i));
    }
  }
  if (ax.empty()) return x;
  return {sum(x.a, ax, false, s), rest};
}

// Drops size-1 dims that broadcast against a larger size (the operand is
// constant along them) and takes the diagonal of repeated labels as a strided
// view: one dim per label whose stride is the sum of the repeated dims'.
Operand prepare(const array& a, const Labels& labels, const std::vector<int64_t>& sizes, const StreamOrDevice& s) {
  Operand x{a, {}};
  Shape shape;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (a.shape()[i] == 1 && sizes[labels[i]] != 1) continue;
    x.labels.push_back(labels[i]);
    shape.push_back(a.shape()[i]);
  }
  if (shape.size() != labels.size()) x.a = reshape(a, shape, s);
  if (to_set(x.labels).size() == x.labels.size()) return x;
  Strides rs = row_strides(shape);
  Labels uniq;
  Shape dshape;
  Strides dstrides;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    auto it = std::find(uniq.begin(), uniq.end(), x.labels[i]);
    if (it == uniq.end()) {
      uniq.push_back(x.labels[i]);
      dshape.push_back(shape[i]);
      dstrides.push_back(rs[i]);
    } else {
      dstrides[it - uniq.begin()] += rs[i];
    }
  }
  x.a = as_strided(x.a, dshape, dstrides, 0, s);
  x.labels = uniq;
  return x;
}

Shape sizes_of(const std::vector<int>& labels, const std::vector<int64_t>& sizes) {
  Shape sh;
  for (int l : labels) sh.push_back(sizes[l]);
  return sh;
}

// One pairwise step: labels of x and y outside `keep` are summed. Shared
// labels in `keep` are batch dims, shared labels outside it are contracted
// by a matmul of [batch, M, K] x [batch, K, N]; with nothing to contract
// the step is a broadcast multiply (an outer/elementwise product, whose work
// is the size of its result).
Operand contract_pair(Operand x, Operand y, const LabelSet& keep, const std::vector<int64_t>& sizes,
                      const StreamOrDevice& s) {
  LabelSet sx = to_set(x.labels), sy = to_set(y.labels);
  x = sum_out(std::move(x), set_union(keep, sy), s);
  y = sum_out(std::move(y), set_union(keep, sx), s);
  sy = to_set(y.labels);
  sx = to_set(x.labels);
  std::vector<int> batch, contract, free_x, free_y;
  for (int l : x.labels) {
    if (!contains(sy, l)) {
      free_x.push_back(l);
    } else if (contains(keep, l)) {
      batch.push_back(l);
    } else {
      contract.push_back(l);
    }
  }
  for (int l : y.labels) {
    if (!contains(sx, l)) free_y.push_back(l);
  }
  auto cat = [](std::initializer_list<const std::vector<int>*> parts) {
    std::vector<int> r;
    for (auto* p : parts) r.insert(r.end(), p->begin(), p->end());
    return r;
  };
  Labels result = cat({&batch, &free_x, &free_y});
  Shape bshape = sizes_of(batch, sizes);
  if (contract.empty()) {
    array a = transpose(x.a, positions_of(x.labels, cat({&batch, &free_x})), s);
    array b = transpose(y.a, positions_of(y.labels, cat({&batch, &free_y})), s);
    Shape sa = bshape, sb = bshape;
    Shape fx = sizes_of(free_x, sizes), fy = sizes_of(free_y, sizes);
    sa.insert(sa.end(), fx.begin(), fx.end());
    sa.insert(sa.end(), free_y.size(), 1);
    sb.insert(sb.end(), free_x.size(), 1);
    sb.insert(sb.end(), fy.begin(), fy.end());
    return {multiply(reshape(a, sa, s), reshape(b, sb, s), s), result};
  }
  auto prod = [&](const std::vector<int>& ls) {
    int64_t n = 1;
    for (int l : ls) n *= sizes[l];
    return n;
  };
  int64_t M = prod(free_x), K = prod(contract), N = prod(free_y);
  array a = transpose(x.a, positions_of(x.labels, cat({&batch, &free_x, &contract})), s);
  array b = transpose(y.a, positions_of(y.labels, cat({&batch, &contract, &free_y})), s);
  Shape sa = bshape, sb = bshape;
  sa.insert(sa.end(), {M, K});
  sb.insert(sb.end(), {K, N});
  array r = matmul(reshape(a, sa, s), reshape(b, sb, s), s);
  return {reshape(r, sizes_of(result, sizes), s), result};
}

}  // namespace

std::pair<std::vector<std::vector<int>>, std::string> einsum_path(const std::string& subscripts,
                                                                  const std::vector<array>& operands) {
  Einsum e = parse_einsum(subscripts, operands, "einsum_path");
  Path p = greedy_path(e);
  std::ostringstream os;
  os << "  Complete contraction:  " << subscripts << "\n"
     << "         Naive scaling:  " << p.naive_scaling << "\n"
     << "     Optimized scaling:  " << p.opt_scaling << "\n"
     << "      Naive FLOP count:  " << p.naive_cost << "\n"
     << "  Optimized FLOP count:  " << p.opt_cost << "\n";
  return {p.steps, os.str()};
}

array einsum(const std::string& subscripts, const std::vector<array>& operands, const StreamOrDevice& s) {
  Einsum e = parse_einsum(subscripts, operands, "einsum");
  Path path = greedy_path(e);
  LabelSet out = to_set(e.output);

  std::vector<Operand> cur;
  for (size_t i = 0; i < operands.size(); ++i) cur.push_back(prepare(operands[i], e.inputs[i], e.sizes, s));
  // labels held by one operand only and not in the output are summed first
  for (size_t i = 0; i < cur.size(); ++i) {
    LabelSet others = out;
    for (size_t k = 0; k < cur.size(); ++k) {
      if (k != i) others = set_union(others, to_set(cur[k].labels));
    }
    cur[i] = sum_out(std::move(cur[i]), others, s);
  }

  auto needed_except = [&](const std::vector<Operand>& ops, const std::vector<Operand>& extra) {
    LabelSet keep = out;
    for (auto& o : ops) keep = set_union(keep, to_set(o.labels));
    for (auto& o : extra) keep = set_union(keep, to_set(o.labels));
    return keep;
  };
  for (const auto& step : path.steps) {
    if (step.size() < 2) continue;
    // the step's operands leave the list (positions are increasing); the
    // result goes at its end. A step of more than two operands (the greedy
    // search's fallback) is contracted pairwise from the left.
    std::vector<Operand> group;
    for (int pos : step) group.push_back(cur[pos]);
    for (auto it = step.rbegin(); it != step.rend(); ++it) cur.erase(cur.begin() + *it);
    Operand acc = group[0];
    for (size_t k = 1; k < group.size(); ++k) {
      std::vector<Operand> later(group.begin() + k + 1, group.end());
      acc = contract_pair(std::move(acc), group[k], needed_except(cur, later), e.sizes, s);
    }
    cur.push_back(std::move(acc));
  }
  Operand r = sum_out(std::move(cur[0]), out, s);
  return transpose(r.a, positions_of(r.labels, e.output), s);
}

// ===========================================================================
// products
// ===========================================================================

array tensordot(const array& a, const array& b, int axes, const StreamOrDevice& s) {
  if (axes < 0) fail("tensordot", "axes must be non-negative; got ", axes, ".");
  if (axes > a.ndim() || axes > b.ndim()) {
    fail("tensordot", "Cannot contract ", axes, " axes of arrays with shapes ", shape_str(a.shape()), " and ",
         shape_str(b.shape()), ".");
  }
  Axes xa, xb;
  for (int i = 0; i < axes; ++i) {
    xa.push_back(a.ndim() - axes + i);
    xb.push_back(i);
  }
  return tensordot(a, b, xa, xb, s);
}

array tensordot(const array& a, const array& b, const Axes& axes_a, const Axes& axes_b, const StreamOrDevice& s) {
  if (axes_a.size() != axes_b.size()) {
    fail("tensordot", "axes must have the same size for both arrays; got ", axes_a.size(), " and ", axes_b.size(),
         ".");
  }
  auto norm = [](const array& x, const Axes& ax) {
    Axes r;
    for (int v : ax) {
      int n = normalize_axis(v, x.ndim(), "tensordot");
      if (std::find(r.begin(), r.end(), n) != r.end()) {
        fail("tensordot", "Repeated axis ", v, " for array with shape ", shape_str(x.shape()), ".");
      }
      r.push_back(n);
    }
    return r;
  };
  Axes ca = norm(a, axes_a), cb = norm(b, axes_b);
  int64_t K = 1;
  for (size_t i = 0; i < ca.size(); ++i) {
    if (a.shape()[ca[i]] != b.shape()[cb[i]]) {
      fail("tensordot", "a and b must have the same shape on the contracted axes; got shapes ",
           shape_str(a.shape()), " and ", shape_str(b.shape()), " with axes ", shape_str(Shape(ca.begin(), ca.end())),
           " and ", shape_str(Shape(cb.begin(), cb.end())), ".");
    }
    K *= a.shape()[ca[i]];
  }
  auto rest = [](const array& x, const Axes& c) {
    Axes r;
    for (int i = 0; i < x.ndim(); ++i) {
      if (std::find(c.begin(), c.end(), i) == c.end()) r.push_back(i);
    }
    return r;
  };
  Axes fa = rest(a, ca), fb = rest(b, cb);
  Shape out;
  int64_t M = 1, N = 1;
  for (int i : fa) {
    out.push_back(a.shape()[i]);
    M *= a.shape()[i];
  }
  for (int i : fb) {
    out.push_back(b.shape()[i]);
    N *= b.shape()[i];
  }
  Axes pa = fa, pb = cb;
  pa.insert(pa.end(), ca.begin(), ca.end());
  pb.insert(pb.end(), fb.begin(), fb.end());
  array x = reshape(transpose(a, pa, s), {M, K}, s);
  array y = reshape(transpose(b, pb, s), {K, N}, s);
  return reshape(matmul(x, y, s), out, s);
}

array inner(const array& a, const array& b, const StreamOrDevice& s) {
  if (a.ndim() == 0 || b.ndim() == 0) return multiply(a, b, s);
  if (a.shape(-1) != b.shape(-1)) {
    fail("inner", "a and b must have the same last dimension; got shapes ", shape_str(a.shape()), " and ",
         shape_str(b.shape()), ".");
  }
  return tensordot(a, b, {-1}, {-1}, s);
}

array outer(const array& a, const array& b, const StreamOrDevice& s) {
  return multiply(reshape(a, {a.size(), 1}, s), reshape(b, {b.size()}, s), s);
}

array kron(const array& a, const array& b, const StreamOrDevice& s) {
  if (a.size() == 0 || b.size() == 0) {
    fail("kron", "Input arrays cannot be empty; got shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
         ".");
  }
  int nd = std::max(a.ndim(), b.ndim());
  Shape ea(nd - a.ndim(), 1), eb(nd - b.ndim(), 1);
  ea.insert(ea.end(), a.shape().begin(), a.shape().end());
  eb.insert(eb.end(), b.shape().begin(), b.shape().end());
  // a as (a0, 1, a1, 1, ...) times b as (1, b0, 1, b1, ...), then merged pairs
  Shape sa, sb, out;
  for (int i = 0; i < nd; ++i) {
    sa.insert(sa.end(), {ea[i], 1});
    sb.insert(sb.end(), {1, eb[i]});
    out.push_back(ea[i] * eb[i]);
  }
  return reshape(multiply(reshape(a, sa, s), reshape(b, sb, s), s), out, s);
}

array vecdot(const array& a, const array& b, int axis, const StreamOrDevice& s) {
  if (a.ndim() == 0 || b.ndim() == 0) {
    fail("vecdot", "inputs must be at least 1D; got shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
         ".");
  }
  int xa = normalize_axis(axis, a.ndim(), "vecdot"), xb = normalize_axis(axis, b.ndim(), "vecdot");
  if (a.shape()[xa] != b.shape()[xb]) {
    fail("vecdot", "a and b must have the same size along axis ", axis, "; got shapes ", shape_str(a.shape()),
         " and ", shape_str(b.shape()), ".");
  }
  Dtype t = promote_types(a.dtype(), b.dtype());
  bool half = t == Dtype::float16 || t == Dtype::bfloat16;
  array x = moveaxis(a, xa, -1, s), y = moveaxis(b, xb, -1, s);
  if (half) {
    // products and their sum in float32, rounded once
    x = astype(x, Dtype::float32, s);
    y = astype(y, Dtype::float32, s);
  }
  if (is_complex(x.dtype())) x = conjugate(x, s);
  array r = sum(multiply(x, y, s), Axes{-1}, false, s);
  return half ? astype(r, t, s) : r;
}

}  // namespace ember
