// Tests of Ember's C++ API (ember/ember.h) against the installed package:
// arrays from vectors and pointers (copied and borrowed), ops against values
// worked out by hand, grad against central differences in float64, vmap
// against a loop, compile against the eager function, exceptions and their
// messages (the texts Python shows), and save/load round trips.
//
//   test_api [group...]   groups: arrays ops grad vmap compile errors io export (default: all)
//
// Prints each failed check and exits 1 if any failed.
#include <ember/ember.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

using namespace ember;

namespace {

int failures = 0;

void check(bool ok, const std::string& what, int line) {
  if (!ok) {
    std::printf("FAILED (line %d): %s\n", line, what.c_str());
    ++failures;
  }
}
#define CHECK(cond) check((cond), #cond, __LINE__)

bool close(double a, double b, double tol = 1e-5) { return std::fabs(a - b) <= tol * (1 + std::fabs(b)); }

template <class T>
bool all_close(const std::vector<T>& a, const std::vector<T>& b, double tol = 1e-5) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!close(static_cast<double>(a[i]), static_cast<double>(b[i]), tol)) return false;
  return true;
}

// Runs f, which must throw E whose message contains every fragment.
template <class E, class F>
void check_throws(F&& f, std::vector<std::string> fragments, int line) {
  try {
    f();
  } catch (const E& e) {
    std::string msg = e.what();
    for (const auto& frag : fragments)
      check(msg.find(frag) != std::string::npos, "message '" + msg + "' contains '" + frag + "'", line);
    return;
  } catch (const std::exception& e) {
    check(false, std::string("wrong exception type, message: ") + e.what(), line);
    return;
  }
  check(false, "no exception", line);
}
#define CHECK_THROWS(E, expr, ...) check_throws<E>([&] { (void)(expr); }, {__VA_ARGS__}, __LINE__)

std::string tmp_path(const std::string& name) {
  const char* t = std::getenv("TMPDIR");
  return std::string(t && *t ? t : "/tmp") + "/ember_cpp_api_" + std::to_string(::getpid()) + "_" + name;
}

// ---- arrays ----
void test_arrays() {
  array a = from_vector({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  CHECK(a.shape() == (Shape{2, 3}));
  CHECK(a.dtype() == Dtype::float32);
  CHECK(to_vector<float>(a) == (std::vector<float>{1, 2, 3, 4, 5, 6}));

  std::vector<int32_t> iv = {3, -1, 7};
  array b = from_vector(iv);
  CHECK(b.shape() == (Shape{3}));
  CHECK(b.dtype() == Dtype::int32);
  iv[0] = 100;  // copied: the array keeps its values
  CHECK(to_vector<int32_t>(b) == (std::vector<int32_t>{3, -1, 7}));
  CHECK(to_vector<double>(b) == (std::vector<double>{3, -1, 7}));  // converted

  double raw[4] = {0.5, 1.5, 2.5, 3.5};
  array c = from_data(raw, {2, 2});
  raw[0] = -9;
  CHECK(c.dtype() == Dtype::float64);
  CHECK(to_vector<double>(c) == (std::vector<double>{0.5, 1.5, 2.5, 3.5}));

  // a transposed (non-contiguous) view reads back in row-major order
  CHECK(to_vector<float>(transpose(a)) == (std::vector<float>{1, 4, 2, 5, 3, 6}));
  CHECK(to_vector<float>(flip(a, Axes{1})) == (std::vector<float>{3, 2, 1, 6, 5, 4}));  // negative strides

  // borrowed: no copy, the release runs once when the last user goes
  int released = 0;
  std::vector<float> mem = {1, 2, 3, 4};
  {
    array v = borrow(mem.data(), {4}, [&] { ++released; });
    mem[1] = 20;  // seen: the array reads the memory in place
    array w = multiply(v, scalar(2.0f));
    CHECK(to_vector<float>(w) == (std::vector<float>{2, 40, 6, 8}));
    CHECK(v.buffer()->is_borrowed());
    CHECK(!v.buffer()->readonly());
    CHECK(released == 0);
  }
  CHECK(released == 1);
  const int64_t cmem[3] = {5, 6, 7};
  array r = borrow(cmem, {3});
  CHECK(r.buffer()->readonly());
  CHECK(r.dtype() == Dtype::int64);
  CHECK(item<int64_t>(sum(r)) == 18);

  array s = scalar(2.5);
  CHECK(s.ndim() == 0 && s.dtype() == Dtype::float64);
  CHECK(item<double>(s) == 2.5);
  CHECK(item<int>(scalar<int16_t>(-3)) == -3);
  CHECK(dtype_of<uint8_t>() == Dtype::uint8);

  array e = from_vector(std::vector<float>{}, {0, 3});
  CHECK(e.size() == 0 && to_vector<float>(e).empty());
  CHECK(to_vector<float>(sum(e, Axes{0})) == (std::vector<float>{0, 0, 0}));
}

// ---- ops ----
void test_ops() {
  array a = from_vector({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f}, {2, 3});
  array row = from_vector({10.0f, 20.0f, 30.0f});
  CHECK(to_vector<float>(a + row) == (std::vector<float>{11, 22, 33, 14, 25, 36}));  // broadcast
  CHECK(to_vector<float>(a * 2 - 1) == (std::vector<float>{1, 3, 5, 7, 9, 11}));
  CHECK(to_vector<float>(1.0f / from_vector({2.0f, 4.0f})) == (std::vector<float>{0.5f, 0.25f}));
  CHECK(to_vector<float>(-a) == (std::vector<float>{-1, -2, -3, -4, -5, -6}));
  CHECK(to_vector<bool>(a > 3.5) == (std::vector<bool>{false, false, false, true, true, true}));
  CHECK(to_vector<float>(sum(a, Axes{1})) == (std::vector<float>{6, 15}));
  CHECK(to_vector<float>(mean(a)) == (std::vector<float>{3.5f}));
  CHECK(to_vector<uint32_t>(argmax(a, 1)) == (std::vector<uint32_t>{2, 2}));

  // weak scalars keep the array's dtype as in Python
  array h = astype(a, Dtype::float16);
  CHECK((h + 1).dtype() == Dtype::float16);
  CHECK((h * 0.5).dtype() == Dtype::float16);
  array i = from_vector({1, 2, 3});
  CHECK((i + 1).dtype() == Dtype::int32);
  CHECK((i * 1.5).dtype() == Dtype::float32);
  CHECK(to_vector<float>(i * 1.5) == (std::vector<float>{1.5f, 3.0f, 4.5f}));
  CHECK((i + i).dtype() == Dtype::int32);
  CHECK(to_vector<float>(i + a) == (std::vector<float>{2, 4, 6, 5, 7, 9}));  // int32 (3) + float32 (2, 3)
  CHECK(to_vector<int32_t>(i % 2) == (std::vector<int32_t>{1, 0, 1}));

  // matmul: [[1,2,3],[4,5,6]] @ [[1,0],[0,1],[1,1]]
  array m = from_vector({1.0f, 0.0f, 0.0f, 1.0f, 1.0f, 1.0f}, {3, 2});
  CHECK(to_vector<float>(matmul(a, m)) == (std::vector<float>{4, 5, 10, 11}));
  CHECK(to_vector<float>(reshape(a, {3, 2})) == (std::vector<float>{1, 2, 3, 4, 5, 6}));
  CHECK(to_vector<float>(concatenate({a, a}, 0)).size() == 12);

  // linalg: inv of [[4, 7], [2, 6]] is [[0.6, -0.7], [-0.2, 0.4]]
  array sq = from_vector({4.0f, 7.0f, 2.0f, 6.0f}, {2, 2});
  CHECK(all_close(to_vector<float>(linalg::inv(sq)), {0.6f, -0.7f, -0.2f, 0.4f}));
  CHECK(close(item<float>(linalg::det(sq)), 10.0));

  // fft of [1, 0, 0, 0] is all ones; of [0, 1, 0, 0] is [1, -i, -1, i]
  auto f = to_vector<complex64_t>(fft::fft(from_vector({0.0f, 1.0f, 0.0f, 0.0f})));
  CHECK(f.size() == 4 && close(f[1].imag(), -1.0) && close(f[2].real(), -1.0) && close(f[3].imag(), 1.0));
  CHECK(all_close(to_vector<float>(fft::irfft(fft::rfft(from_vector({1.0f, 2.0f, 3.0f, 4.0f})))), {1, 2, 3, 4}));

  // random keys: the same key gives the same values, split keys differ
  array k = random::key(7);
  auto u1 = to_vector<float>(random::uniform(scalar(0.0f), scalar(1.0f), {5}, Dtype::float32, k));
  auto u2 = to_vector<float>(random::uniform(scalar(0.0f), scalar(1.0f), {5}, Dtype::float32, k));
  CHECK(u1 == u2);
  for (float v : u1) CHECK(v >= 0 && v < 1);
  array ks = random::split(k);
  CHECK(ks.shape() == (Shape{2, 2}));
  auto u3 = to_vector<float>(random::uniform(scalar(0.0f), scalar(1.0f), {5}, Dtype::float32, take(ks, scalar(0), 0)));
  CHECK(u3 != u1);
  random::seed(3);
  auto n1 = to_vector<float>(random::normal({4}));
  random::seed(3);
  auto n2 = to_vector<float>(random::normal({4}));
  CHECK(n1 == n2);

  // eval of several arrays; async_eval
  array x = exp(a), y = log(a);
  eval(x, y);
  CHECK(x.is_evaluated() && y.is_evaluated());
  CHECK(close(to_vector<float>(y)[1], std::log(2.0)));
}

// ---- grad ----
double fd(const std::function<double(double)>& f, double x, double h = 1e-6) {
  return (f(x + h) - f(x - h)) / (2 * h);
}

void test_grad() {
  // f(x) = sum(sin(x) * x^2): checked against central differences, element by element
  std::vector<double> xs = {-1.3, 0.2, 0.9, 2.4};
  auto f = [](const array& x) { return sum(sin(x) * square(x)); };
  auto g = to_vector<double>(grad(UnaryFun(f))(from_vector(xs)));
  for (size_t i = 0; i < xs.size(); ++i) {
    auto fi = [&](double t) {
      std::vector<double> p = xs;
      p[i] = t;
      return item<double>(f(from_vector(p)));
    };
    CHECK(close(g[i], fd(fi, xs[i]), 1e-6));
  }

  // two arguments: value and both gradients of sum(a * exp(b))
  ScalarFun h = [](const std::vector<array>& p) { return sum(p[0] * exp(p[1])); };
  array a = from_vector({1.0, 2.0}), b = from_vector({0.5, -0.5});
  auto [value, grads] = value_and_grad(h, {0, 1})({a, b});
  CHECK(close(item<double>(value), std::exp(0.5) + 2 * std::exp(-0.5), 1e-12));
  CHECK(grads.size() == 2);
  CHECK(all_close(to_vector<double>(grads[0]), {std::exp(0.5), std::exp(-0.5)}, 1e-12));
  CHECK(all_close(to_vector<double>(grads[1]), {std::exp(0.5), 2 * std::exp(-0.5)}, 1e-12));
  // argnums sorted as Python does; one int gives that gradient alone
  auto g10 = grad(h, std::vector<int>{1, 0})({a, b});
  CHECK(all_close(to_vector<double>(g10[0]), to_vector<double>(grads[0])));
  CHECK(all_close(to_vector<double>(grad(h, 1)({a, b})), to_vector<double>(grads[1])));
  auto [v1, g1] = value_and_grad(UnaryFun(f))(from_vector(xs));
  CHECK(close(item<double>(v1), item<double>(f(from_vector(xs)))) && all_close(to_vector<double>(g1), g));

  // grad of grad: d2/dx2 sum(x^3) = 6x
  UnaryFun cube = [](const array& x) { return sum(x * x * x); };
  UnaryFun d1 = grad(cube);
  UnaryFun d2 = grad(UnaryFun([d1](const array& x) { return sum(d1(x)); }));
  CHECK(all_close(to_vector<double>(d2(from_vector({1.0, -2.0}))), {6.0, -12.0}, 1e-12));

  // vjp and jvp agree with the gradient
  array x0 = from_vector(xs);
  auto [out, ct] = vjp(UnaryFun(f), x0, scalar(1.0));
  CHECK(all_close(to_vector<double>(ct), g, 1e-12));
  auto [out2, tan] = jvp(UnaryFun(f), x0, from_vector({1.0, 0.0, 0.0, 0.0}));
  CHECK(close(item<double>(tan), g[0], 1e-12));
  CHECK(close(item<double>(out), item<double>(out2)));
  // the flat forms of transforms.h
  auto [outs, cts] = vjp([](const std::vector<array>& p) { return std::vector<array>{p[0] * p[1]}; },
                         {from_vector({2.0}), from_vector({3.0})}, {from_vector({1.0})});
  CHECK(item<double>(cts[0]) == 3.0 && item<double>(cts[1]) == 2.0);
}

// ---- vmap ----
void test_vmap() {
  array w = from_vector({1.0f, -1.0f, 2.0f, 0.5f, 0.0f, 3.0f}, {3, 2});
  UnaryFun f = [w](const array& x) { return matmul(x, w) + sum(x); };  // x: (3,) -> (2,)
  array batch = from_vector({1.0f, 2.0f, 3.0f, -1.0f, 0.0f, 4.0f, 0.5f, 0.5f, 0.5f, 2.0f, 1.0f, 0.0f}, {4, 3});
  auto got = to_vector<float>(vmap(f)(batch));
  std::vector<float> want;
  for (int i = 0; i < 4; ++i) {
    auto r = to_vector<float>(f(take(batch, scalar(i), 0)));
    want.insert(want.end(), r.begin(), r.end());
  }
  CHECK(all_close(got, want));
  // batch on axis 1, output batch on axis 1
  auto got_t = to_vector<float>(transpose(vmap(f, 1, 1)(transpose(batch))));
  CHECK(all_close(got_t, want));
  // the flat form: the second input unbatched
  Fun g = vmap([](const std::vector<array>& p) { return std::vector<array>{p[0] * p[1]}; }, {0, -1}, {0});
  auto prod = to_vector<float>(g({batch, from_vector({1.0f, 10.0f, 100.0f})})[0]);
  CHECK(prod[0] == 1 && prod[1] == 20 && prod[2] == 300 && prod[5] == 400);
  // vmap of grad against a loop of grads
  UnaryFun loss = [](const array& x) { return sum(sin(x) * x); };
  auto vg = to_vector<float>(vmap(grad(loss))(batch));
  std::vector<float> lg;
  for (int i = 0; i < 4; ++i) {
    auto r = to_vector<float>(grad(loss)(take(batch, scalar(i), 0)));
    lg.insert(lg.end(), r.begin(), r.end());
  }
  CHECK(all_close(vg, lg));
}

// ---- compile ----
void test_compile() {
  int traces = 0;
  Fun f = [&traces](const std::vector<array>& p) {
    ++traces;
    return std::vector<array>{exp(p[0]) * p[1] + 1, sum(p[0])};
  };
  Fun cf = compile(f);
  array a = from_vector({0.0f, 1.0f, 2.0f}), b = from_vector({2.0f, 3.0f, 4.0f});
  auto eager = f({a, b});
  traces = 0;
  auto c1 = cf({a, b});
  auto c2 = cf({b, a});
  CHECK(traces == 1);  // one trace for one kind of call
  CHECK(all_close(to_vector<float>(c1[0]), to_vector<float>(eager[0])));
  CHECK(close(item<float>(c1[1]), 3.0));
  CHECK(all_close(to_vector<float>(c2[0]), to_vector<float>(f({b, a})[0])));
  traces = 0;
  cf({from_vector({1.0f, 2.0f}), from_vector({1.0f, 2.0f})});  // a new shape: traced again
  CHECK(traces == 1);
  Fun sf = compile(f, true);
  traces = 0;
  sf({a, b});
  auto s2 = sf({from_vector({1.0f, 2.0f}), from_vector({5.0f, 6.0f})});
  CHECK(traces == 1);  // shapeless: one trace for the same ranks and dtypes
  CHECK(all_close(to_vector<float>(s2[0]), {static_cast<float>(std::exp(1.0) * 5 + 1), static_cast<float>(std::exp(2.0) * 6 + 1)}));

  // compile composes with grad
  UnaryFun sq = compile(UnaryFun([](const array& x) { return sum(square(x)); }));
  CHECK(all_close(to_vector<float>(grad(sq)(a)), {0, 2, 4}));

  // keyless random inside compile advances the global key as eager code does
  UnaryFun noisy = [](const array& x) { return x + random::uniform(scalar(0.0f), scalar(1.0f), {3}); };
  random::seed(11);
  auto e1 = to_vector<float>(noisy(a));
  auto e2 = to_vector<float>(noisy(a));
  UnaryFun cn = compile(noisy);
  random::seed(11);
  auto r1 = to_vector<float>(cn(a));
  auto r2 = to_vector<float>(cn(a));
  CHECK(all_close(r1, e1) && all_close(r2, e2) && r1 != r2);
}

// ---- errors ----
void test_errors() {
  array a = ones({2, 3}), b = ones({4});
  // the messages Python shows (ValueError, IndexError), from the same C++ ops
  CHECK_THROWS(std::invalid_argument, add(a, b), "[add] Shapes (2,3) and (4) cannot be broadcast.");
  CHECK_THROWS(std::invalid_argument, a + b, "[add] Shapes (2,3) and (4) cannot be broadcast.");
  CHECK_THROWS(std::invalid_argument, matmul(a, a),
               "[matmul] Last dimension of first input with shape (2,3) must match second to last dimension of "
               "second input with shape (2,3).");
  CHECK_THROWS(std::invalid_argument, reshape(a, {4}),
               "[reshape] Cannot reshape array of size 6 (shape (2,3)) into shape (4).");
  CHECK_THROWS(std::invalid_argument, bitwise_and(ones({2}), ones({2})),
               "[bitwise_and] Bitwise operations are only allowed on integer and boolean types; got float32 and "
               "float32.");
  CHECK_THROWS(std::invalid_argument, from_vector({1.0f, 2.0f, 3.0f}, {2, 2}), "[from_vector]", "3 elements",
               "(2,2)");
  CHECK_THROWS(std::invalid_argument, item<float>(a), "[item]");
  CHECK_THROWS(std::out_of_range, transpose(a, Axes{0, 5}), "[transpose] Invalid axis 5 for array with 2 dimensions.");

  // grad's errors, worded as in Python
  ScalarFun vec = [](const std::vector<array>& p) { return p[0] * 2; };
  CHECK_THROWS(std::invalid_argument, grad(vec)({ones({3})}), "[grad] The return value of the function whose gradient",
               "should be a scalar array; but an array of shape (3,) was returned.");
  ScalarFun s = [](const std::vector<array>& p) { return sum(p[0]); };
  CHECK_THROWS(std::invalid_argument, grad(s, std::vector<int>{}), "[grad] Gradient with respect to no argument requested.");
  CHECK_THROWS(std::invalid_argument, grad(s, -1), "[grad] argnums cannot be negative; got [-1].");
  CHECK_THROWS(std::invalid_argument, value_and_grad(s, {0, 0}), "[value_and_grad] Repeated argument index in argnums [0, 0].");
  CHECK_THROWS(std::invalid_argument, grad(s, 2)({ones({1})}),
               "[grad] Can't compute the gradient of argument index 2 because the function is called with only 1 "
               "positional arguments.");
  CHECK_THROWS(type_error, grad(ScalarFun{}), "[grad] fun must be callable");

  // files
  CHECK_THROWS(io::os_error, load(tmp_path("missing.npy")), "[load] Failed to open file ", "missing.npy: No such file or directory");
  std::string bad = tmp_path("bad.npy");
  if (FILE* fp = std::fopen(bad.c_str(), "wb")) {
    std::fputs("not an npy file", fp);
    std::fclose(fp);
  }
  try {
    load(bad);
    CHECK(false);
  } catch (const std::invalid_argument&) {
  }
  std::remove(bad.c_str());
}

// ---- io ----
void test_io() {
  array a = from_vector({1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1.0f}, {3, 2});
  array i = from_vector(std::vector<int64_t>{1, 2, 3});
  std::string npy = tmp_path("a");
  save(npy, transpose(a));  // ".npy" added; a non-contiguous array written in order
  array back = load(npy + ".npy");
  CHECK(back.shape() == (Shape{2, 3}));
  CHECK(to_vector<float>(back) == to_vector<float>(transpose(a)));
  std::remove((npy + ".npy").c_str());

  std::string st = tmp_path("w.safetensors");
  save_safetensors(st, {{"weight", a}, {"ids", i}, {"half", astype(a, Dtype::bfloat16)}}, {{"format", "ember"}});
  auto [arrays, meta] = load_safetensors(st);
  CHECK(arrays.size() == 3 && meta.at("format") == "ember");
  CHECK(arrays.at("weight").dtype() == Dtype::float32 && arrays.at("weight").shape() == (Shape{3, 2}));
  CHECK(to_vector<float>(arrays.at("weight")) == to_vector<float>(a));
  CHECK(to_vector<int64_t>(arrays.at("ids")) == (std::vector<int64_t>{1, 2, 3}));
  CHECK(arrays.at("half").dtype() == Dtype::bfloat16);
  CHECK(to_vector<float>(arrays.at("half")) == to_vector<float>(a));  // these values are exact in bfloat16
  std::remove(st.c_str());

  for (bool compressed : {false, true}) {
    std::string npz = tmp_path(compressed ? "c.npz" : "u.npz");
    savez(npz, {{"x", a}, {"y", i}}, compressed);
    ArrayMap z = load_npz(npz);
    CHECK(z.size() == 2 && to_vector<float>(z.at("x")) == to_vector<float>(a));
    CHECK(to_vector<int64_t>(z.at("y")) == (std::vector<int64_t>{1, 2, 3}));
    std::remove(npz.c_str());
  }
}

// ---- export / import (when this Ember has compile/export.h) ----
void test_export() {
#if EMBER_HAS_EXPORT
  std::string path = tmp_path("fn.mlxfn");
  array w = from_vector({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  auto fun = [w](const std::vector<array>& p) { return std::vector<array>{matmul(p[0], w) + p[1]}; };
  array x = from_vector({1.0f, 1.0f, 0.5f, -1.0f}, {2, 2}), y = from_vector({0.5f, 0.25f});
  export_function(path, fun, {x, y});
  ImportedFunction imported = import_function(path);
  auto out = imported({x, y});
  CHECK(out.size() == 1 && all_close(to_vector<float>(out[0]), to_vector<float>(fun({x, y})[0])));
  std::remove(path.c_str());
#else
  std::printf("export: skipped (this Ember has no compile/export.h)\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, void (*)()> groups = {
      {"arrays", test_arrays}, {"ops", test_ops},       {"grad", test_grad}, {"vmap", test_vmap},
      {"compile", test_compile}, {"errors", test_errors}, {"io", test_io},     {"export", test_export}};
  std::vector<std::string> run;
  for (int i = 1; i < argc; ++i) run.push_back(argv[i]);
  if (run.empty())
    for (const auto& [name, fn] : groups) run.push_back(name);
  for (const auto& name : run) {
    auto it = groups.find(name);
    if (it == groups.end()) {
      std::printf("unknown group %s\n", name.c_str());
      return 2;
    }
    int before = failures;
    try {
      it->second();
    } catch (const std::exception& e) {
      std::printf("FAILED: group %s threw: %s\n", name.c_str(), e.what());
      ++failures;
    }
    std::printf("%s: %s\n", name.c_str(), failures == before ? "ok" : "FAILED");
  }
  return failures ? 1 : 0;
}
