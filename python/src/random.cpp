// The `random` submodule of ember.core (ember/random/random.h) with MLX's
// argument names and defaults.
#include "bindings.h"
#include "ember/random/random.h"

namespace ember::py_bind {

namespace {
const auto kKey = "key"_a = py::none();
using OptArray = std::optional<ArrayLike>;

// A bound of a sampler: Python scalars stay weakly typed (float32).
array bound(const ArrayLike& v) { return v.next_to(Dtype::float32); }
}  // namespace

void init_random(py::module_& parent) {
  py::module_ m = parent.def_submodule("random", "Random sampling with counter-based (Threefry) keys.");
  m.def("key", [](uint64_t seed) { return random::key(seed); }, "seed"_a,
        "A PRNG key (uint32 array of shape (2,)) from an integer seed: (seed >> 32, seed & 0xffffffff).");
  m.def("seed", [](uint64_t seed) { random::seed(seed); }, "seed"_a,
        "Seed the global key that samplers split when called without a key.");
  // random.state: MLX's read-only sequence of one item, the global key
  // (what mx.compile's inputs/outputs name to capture the sampler state)
  struct RandomState {};
  py::class_<RandomState>(m, "_RandomState", "The global random state: a sequence whose one item is the key.")
      .def("__len__", [](const RandomState&) { return 1; })
      .def("__getitem__", [](const RandomState&, int64_t i) {
        if (i != 0 && i != -1) throw py::index_error("[random.state] index out of range");
        return random::global_key();
      })
      .def("__iter__", [](const RandomState&) {
        return py::iter(py::make_tuple(random::global_key()));
      })
      .def("__repr__", [](const RandomState&) {
        return "[" + py::repr(py::cast(random::global_key())).cast<std::string>() + "]";
      });
  m.attr("state") = RandomState{};
  m.def("split", [](const ArrayLike& key, int num, StreamOrDevice s) {
        return random::split(key, num, s);
      }, "key"_a, "num"_a = 2, kStream,
      "Split a key into `num` new keys (uint32 array of shape (num, 2)).");
  m.def("bits", [](const ShapeArg& shape, int width, const OptArray& key, StreamOrDevice s) {
        return random::bits(shape, width, opt(key), s);
      }, "shape"_a = py::list(), "width"_a = 4, kKey, kStream,
      "Random unsigned integers of `width` bytes (1, 2 or 4: uint8/uint16/uint32) from Threefry-2x32.");
  m.def("uniform", [](const ArrayLike& low, const ArrayLike& high, const ShapeArg& shape, std::optional<Dtype> dtype, const OptArray& key,
                      StreamOrDevice s) {
        return random::uniform(bound(low), bound(high), shape, dtype.value_or(Dtype::float32),
                               opt(key), s);
      }, "low"_a = 0, "high"_a = 1, "shape"_a = py::list(), "dtype"_a = Dtype::float32, kKey, kStream,
      "Uniform samples in [low, high) (low and high broadcast against `shape`); never equal to `high`, "
      "also after rounding to `dtype`.");
  m.def("normal", [](const ShapeArg& shape, std::optional<Dtype> dtype, const OptArray& loc, const OptArray& scale, const OptArray& key,
                     StreamOrDevice s) {
        return random::normal(shape, dtype.value_or(Dtype::float32), opt(loc),
                              opt(scale), opt(key), s);
      }, "shape"_a = py::list(), "dtype"_a = Dtype::float32, "loc"_a = py::none(), "scale"_a = py::none(), kKey,
      kStream, "Normal samples with mean `loc` (default 0) and standard deviation `scale` (default 1).");
  m.def("truncated_normal", [](const ArrayLike& lower, const ArrayLike& upper, const std::optional<ShapeArg>& shape, std::optional<Dtype> dtype,
                               const OptArray& key, StreamOrDevice s) {
        return random::truncated_normal(bound(lower), bound(upper), opt(shape),
                                        dtype.value_or(Dtype::float32), opt(key), s);
      }, "lower"_a, "upper"_a, "shape"_a = py::none(), "dtype"_a = Dtype::float32, kKey, kStream,
      "Standard normal samples truncated to [lower, upper] (shape: the bounds' broadcast shape by default).");
  m.def("randint", [](const ArrayLike& low, const ArrayLike& high, const ShapeArg& shape, std::optional<Dtype> dtype, const OptArray& key,
                      StreamOrDevice s) {
        return random::randint(low, high, shape,
                               dtype.value_or(Dtype::int32), opt(key), s);
      }, "low"_a, "high"_a, "shape"_a = py::list(), "dtype"_a = Dtype::int32, kKey, kStream,
      "Random integers in [low, high).");
  m.def("bernoulli", [](const ArrayLike& p, const std::optional<ShapeArg>& shape, const OptArray& key, StreamOrDevice s) {
        return random::bernoulli(p, opt(shape), opt(key), s);
      }, "p"_a = 0.5, "shape"_a = py::none(), kKey, kStream,
      "Boolean samples that are True with probability p (shape: p's by default).");
  m.def("categorical", [](const ArrayLike& logits, int axis, const std::optional<ShapeArg>& shape, std::optional<int64_t> num_samples,
                          const OptArray& key, StreamOrDevice s) {
        return random::categorical(logits, axis, opt(shape), num_samples,
                                   opt(key), s);
      }, "logits"_a, "axis"_a = -1, "shape"_a = py::none(), "num_samples"_a = py::none(), kKey, kStream,
      "Indices (uint32) sampled from the categorical distributions given by unnormalized log-probabilities "
      "along `axis`; `shape` or `num_samples` (not both) sets the number of samples.");
  m.def("gumbel", [](const ShapeArg& shape, std::optional<Dtype> dtype, const OptArray& key, StreamOrDevice s) {
        return random::gumbel(shape, dtype.value_or(Dtype::float32), opt(key),
                              s);
      }, "shape"_a = py::list(), "dtype"_a = Dtype::float32, kKey, kStream,
      "Samples from the standard Gumbel distribution (always finite).");
  m.def("laplace", [](const ShapeArg& shape, std::optional<Dtype> dtype, double loc, double scale, const OptArray& key,
                      StreamOrDevice s) {
        return random::laplace(shape, dtype.value_or(Dtype::float32), loc, scale,
                               opt(key), s);
      }, "shape"_a = py::list(), "dtype"_a = Dtype::float32, "loc"_a = 0.0, "scale"_a = 1.0, kKey, kStream,
      "Samples from the Laplace distribution with location `loc` and scale `scale`.");
  m.def("multivariate_normal", [](const ArrayLike& mean, const ArrayLike& cov, const ShapeArg& shape, std::optional<Dtype> dtype,
                                  const OptArray& key, StreamOrDevice s) {
        return random::multivariate_normal(mean, cov, shape,
                                           dtype.value_or(Dtype::float32), opt(key), s);
      }, "mean"_a, "cov"_a, "shape"_a = py::list(), "dtype"_a = Dtype::float32, kKey, kStream,
      "Multivariate normal samples of shape shape + (n,), through the Cholesky factor of `cov` "
      "(float32 or float64; a covariance that is not symmetric positive semi-definite raises ValueError "
      "on evaluation).");
  m.def("permutation", [](py::handle x, int axis, const OptArray& key, StreamOrDevice s) {
        // an int is a length, anything else an array to permute
        if (py::isinstance<py::int_>(x)) return random::permutation(x.cast<int64_t>(), opt(key), s);
        return random::permutation(ArrayLike::from(x), axis, opt(key), s);
      }, "x"_a, "axis"_a = 0, kKey, kStream,
      "A random permutation of arange(x) (uint32) for an int, or of the array x along `axis`.");
}

}  // namespace ember::py_bind
