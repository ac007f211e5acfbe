// The parts of the C++ API (ember.h) that are more than a forwarding line:
// grad/value_and_grad on vjp, the one-array transform forms, compile's call
// cache over compiler::compile_graph/replay, and the file helpers over io.
#include "ember/ember.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <stdexcept>

namespace ember {

namespace api_detail {

void check_count(size_t n, const Shape& shape, const char* op) {
  int64_t want = checked_size(shape, op);
  if (static_cast<uint64_t>(want) != n) {
    detail::fail(op, "Got ", n, " elements for an array of shape ", shape_str(shape), ", which holds ", want, ".");
  }
}

array dense_as(const array& a, Dtype dtype) {
  if (!a.valid()) throw std::invalid_argument("[to_vector] The array is empty (default-constructed).");
  array d = a.dtype() == dtype ? a : astype(a, dtype);
  d.eval();
  if (!d.row_contiguous()) {
    d = contiguous(d);
    d.eval();
  }
  return d;
}

}  // namespace api_detail

namespace {

// Python's repr of a list of ints: [1, 0].
std::string int_list(const std::vector<int>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

// Python's repr of a shape tuple: (2, 3), (3,), ().
std::string shape_tuple(const Shape& s) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  if (s.size() == 1) os << ",";
  os << ")";
  return os.str();
}

// argnums checked and sorted with the Python layer's messages.
std::vector<int> normalize_argnums(std::vector<int> argnums, const char* tag) {
  if (argnums.empty()) detail::fail(tag, "Gradient with respect to no argument requested.");
  for (int a : argnums)
    if (a < 0) detail::fail(tag, "argnums cannot be negative; got ", int_list(argnums), ".");
  std::vector<int> sorted = argnums;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    detail::fail(tag, "Repeated argument index in argnums ", int_list(argnums), ".");
  return sorted;
}

// value and gradients of fun at args with respect to args[argnums].
std::pair<array, std::vector<array>> value_and_grads(const ScalarFun& fun, const std::vector<int>& argnums,
                                                     const std::vector<array>& args, const char* tag) {
  for (int a : argnums) {
    if (a >= static_cast<int>(args.size()))
      detail::fail(tag, "Can't compute the gradient of argument index ", a,
                   " because the function is called with only ", args.size(), " positional arguments.");
  }
  std::vector<array> primals;
  for (int a : argnums) primals.push_back(args[a]);
  Fun flat = [&](const std::vector<array>& xs) {
    std::vector<array> full = args;
    for (size_t i = 0; i < argnums.size(); ++i) full[argnums[i]] = xs[i];
    array loss = fun(full);
    if (!loss.valid())
      detail::fail(tag, "The return value of the function whose gradient we want to compute should be a scalar "
                        "array; but an empty (default-constructed) array was returned.");
    if (loss.ndim() != 0)
      detail::fail(tag, "The return value of the function whose gradient we want to compute should be a scalar "
                        "array; but an array of shape ", shape_tuple(loss.shape()), " was returned.");
    return std::vector<array>{loss};
  };
  auto [outs, grads] = vjp(flat, primals, {array(1.0f, Dtype::float32)});
  return {outs[0], grads};
}

ScalarFun unary_as_scalar(UnaryFun fun) {
  return [fun = std::move(fun)](const std::vector<array>& xs) { return fun(xs[0]); };
}

Fun unary_as_fun(UnaryFun fun) {
  return [fun = std::move(fun)](const std::vector<array>& xs) { return std::vector<array>{fun(xs[0])}; };
}

void check_callable(bool ok, const char* tag) {
  if (!ok) throw type_error(std::string("[") + tag + "] fun must be callable; got an empty std::function.");
}

}  // namespace

ValueAndGradFun value_and_grad(ScalarFun fun, std::vector<int> argnums) {
  check_callable(static_cast<bool>(fun), "value_and_grad");
  std::vector<int> nums = normalize_argnums(std::move(argnums), "value_and_grad");
  return [fun = std::move(fun), nums](const std::vector<array>& args) {
    return value_and_grads(fun, nums, args, "value_and_grad");
  };
}

std::function<std::pair<array, array>(const array&)> value_and_grad(UnaryFun fun) {
  check_callable(static_cast<bool>(fun), "value_and_grad");
  ScalarFun f = unary_as_scalar(std::move(fun));
  return [f](const array& x) {
    auto [v, g] = value_and_grads(f, {0}, {x}, "value_and_grad");
    return std::pair<array, array>{v, g[0]};
  };
}

Fun grad(ScalarFun fun, std::vector<int> argnums) {
  check_callable(static_cast<bool>(fun), "grad");
  std::vector<int> nums = normalize_argnums(std::move(argnums), "grad");
  return [fun = std::move(fun), nums](const std::vector<array>& args) {
    return value_and_grads(fun, nums, args, "grad").second;
  };
}

ScalarFun grad(ScalarFun fun, int argnum) {
  check_callable(static_cast<bool>(fun), "grad");
  std::vector<int> nums = normalize_argnums({argnum}, "grad");
  return [fun = std::move(fun), nums](const std::vector<array>& args) {
    return value_and_grads(fun, nums, args, "grad").second[0];
  };
}

UnaryFun grad(UnaryFun fun) {
  check_callable(static_cast<bool>(fun), "grad");
  ScalarFun f = unary_as_scalar(std::move(fun));
  return [f](const array& x) { return value_and_grads(f, {0}, {x}, "grad").second[0]; };
}

std::pair<array, array> vjp(const UnaryFun& fun, const array& primal, const array& cotangent) {
  check_callable(static_cast<bool>(fun), "vjp");
  auto [outs, cts] = vjp(unary_as_fun(fun), std::vector<array>{primal}, std::vector<array>{cotangent});
  return {outs[0], cts[0]};
}

std::pair<array, array> jvp(const UnaryFun& fun, const array& primal, const array& tangent) {
  check_callable(static_cast<bool>(fun), "jvp");
  auto [outs, tans] = jvp(unary_as_fun(fun), std::vector<array>{primal}, std::vector<array>{tangent});
  return {outs[0], tans[0]};
}

UnaryFun vmap(UnaryFun fun, int in_axis, int out_axis) {
  check_callable(static_cast<bool>(fun), "vmap");
  Fun g = vmap(unary_as_fun(std::move(fun)), std::vector<int>{in_axis}, std::vector<int>{out_axis});
  return [g](const array& x) { return g({x})[0]; };
}

// ---- compile ----

namespace {

// Pops the traced random key pushed for a trace, also when fun throws.
struct TracedKey {
  bool pushed = false;
  array pop() {
    pushed = false;
    return random::pop_traced_key();
  }
  ~TracedKey() {
    if (pushed) random::pop_traced_key();
  }
};

struct CompiledEntry {
  std::shared_ptr<compiler::Tape> tape;
  bool random = false;  // fun splits the global key: the tape takes it last and returns it last
};

struct CompiledFun {
  Fun fun;
  bool shapeless;
  std::recursive_mutex mu;  // held while tracing; fun may call other compiled functions
  std::map<std::vector<int64_t>, std::shared_ptr<CompiledEntry>> cache;

  std::vector<int64_t> key(const std::vector<array>& args) const {
    std::vector<int64_t> k;
    for (const array& a : args) {
      if (!a.valid()) throw std::invalid_argument("[compile] Argument is an empty (default-constructed) array.");
      k.push_back(static_cast<int64_t>(a.dtype()));
      k.push_back(a.ndim());
      if (!shapeless) k.insert(k.end(), a.shape().begin(), a.shape().end());
    }
    return k;
  }

  std::shared_ptr<CompiledEntry> trace(const std::vector<array>& args) {
    std::vector<array> placeholders;
    for (const array& a : args) placeholders.push_back(compiler::placeholder(a.shape(), a.dtype()));
    array key_in = compiler::placeholder({2}, Dtype::uint32);
    std::vector<array> outs;
    array key_out;
    {
      TracedKey guard;
      random::push_traced_key(key_in);
      guard.pushed = true;
      compiler::FunctionTrace scope;
      outs = fun(placeholders);
      key_out = guard.pop();
    }
    for (const array& o : outs)
      if (!o.valid()) throw std::invalid_argument("[compile] The function returned an empty (default-constructed) array.");
    auto e = std::make_shared<CompiledEntry>();
    e->random = key_out.id() != key_in.id();
    if (e->random) {
      placeholders.push_back(key_in);
      outs.push_back(key_out);
    }
    e->tape = compiler::compile_graph(placeholders, outs, shapeless);
    return e;
  }

  std::vector<array> call(const std::vector<array>& args) {
    // inside an enclosing compile's (or export's) trace: fun's ops join that
    // graph, where the fusion pass groups them with their neighbours
    if (compiler::tracing_function()) return fun(args);
    std::vector<int64_t> k = key(args);
    std::shared_ptr<CompiledEntry> e;
    {
      std::lock_guard<std::recursive_mutex> lock(mu);
      auto it = cache.find(k);
      if (it != cache.end()) {
        e = it->second;
      } else {
        e = trace(args);
        // a trace that captured an outer transform's traced value is good for this call only
        bool captures = std::any_of(e->tape->constants.begin(), e->tape->constants.end(),
                                    [](const array& c) { return c.desc()->tracer; });
        if (!captures) cache.emplace(k, e);
      }
    }
    std::vector<array> inputs = args;
    if (e->random) inputs.push_back(random::global_key());
    std::vector<array> outs = compiler::replay(*e->tape, inputs);
    if (e->random) {
      random::set_global_key(outs.back());
      outs.pop_back();
    }
    return outs;
  }
};

}  // namespace

Fun compile(Fun fun, bool shapeless) {
  check_callable(static_cast<bool>(fun), "compile");
  auto c = std::make_shared<CompiledFun>();
  c->fun = std::move(fun);
  c->shapeless = shapeless;
  return [c](const std::vector<array>& args) { return c->call(args); };
}

UnaryFun compile(UnaryFun fun, bool shapeless) {
  check_callable(static_cast<bool>(fun), "compile");
  Fun g = compile(unary_as_fun(std::move(fun)), shapeless);
  return [g](const array& x) { return g({x})[0]; };
}

// ---- files ----

namespace {

std::string with_suffix(const std::string& path, const std::string& suffix) {
  bool has = path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  return has ? path : path + suffix;
}

io::NamedArrays named(const ArrayMap& arrays, const char* op) {
  io::NamedArrays out;
  std::vector<array> all;
  for (const auto& [k, v] : arrays) {
    if (!v.valid()) detail::fail(op, "Array '", k, "' is empty (default-constructed).");
    out.emplace_back(k, v);
    all.push_back(v);
  }
  eval(all);
  return out;
}

ArrayMap to_map(const io::NamedArrays& a) {
  ArrayMap m;
  for (const auto& [k, v] : a) m.insert_or_assign(k, v);
  return m;
}

}  // namespace

void save(const std::string& path, const array& a) {
  if (!a.valid()) detail::fail("save", "The array is empty (default-constructed).");
  a.eval();
  io::write_file_atomic(with_suffix(path, ".npy"), [&](const io::Writer& w) { io::save_npy(a, w); }, "save");
}

void savez(const std::string& path, const ArrayMap& arrays, bool compressed) {
  const char* op = compressed ? "savez_compressed" : "savez";
  io::NamedArrays a = named(arrays, op);
  io::write_file_atomic(with_suffix(path, ".npz"), [&](const io::Writer& w) { io::save_npz(a, compressed, w); }, op);
}

void save_safetensors(const std::string& path, const ArrayMap& arrays, const StringMap& metadata) {
  io::NamedArrays a = named(arrays, "save_safetensors");
  io::StringMap meta(metadata.begin(), metadata.end());
  io::write_file_atomic(with_suffix(path, ".safetensors"),
                        [&](const io::Writer& w) { io::save_safetensors(a, meta, w); }, "save_safetensors");
}

array load(const std::string& path) { return io::load_npy(io::map_file(path, "load")); }

ArrayMap load_npz(const std::string& path) { return to_map(io::load_npz(io::map_file(path, "load"))); }

std::pair<ArrayMap, StringMap> load_safetensors(const std::string& path) {
  io::Safetensors st = io::load_safetensors(io::map_file(path, "load"));
  StringMap meta;
  for (const auto& [k, v] : st.metadata) meta.insert_or_assign(k, v);
  return {to_map(st.arrays), meta};
}

}  // namespace ember
