// Random sampling with counter-based keys (JAX's design, MLX's API): a key is
// a uint32 array of shape (2,); every sampler hashes counters under it with
// Threefry-2x32 (primitives/random.h), so the same key gives the same values
// on every run, thread and process. Without a key, samplers split the global
// key (set by seed()) under a lock. Samplers build lazy graph nodes like any
// op; their derivatives flow through loc/scale/bounds (never the key).
#pragma once

#include <optional>

#include "ember/ops.h"

namespace ember::random {

#define EMBER_S const StreamOrDevice& s = {}
using Key = std::optional<array>;

array key(uint64_t seed);
void seed(uint64_t seed);
// The global key now (a copy): what the next keyless sampler splits.
array global_key();
// The global key set from an array (uint32, shape (2,); evaluated now).
void set_global_key(const array& key);
// compile: while a compiled function that captures random.state is traced,
// the calling thread's global key is an array of the trace (push), which
// keyless samplers split with ops, giving the bits the host split gives;
// pop returns the key as the trace leaves it.
void push_traced_key(const array& key);
array pop_traced_key();
// The key a sampler uses: `k` (checked: uint32, shape (2,)) or the next one
// split off the global key.
array get_key(const Key& k, const char* op = "bits");
array split(const array& key, int num = 2, EMBER_S);
// Raw bits: unsigned integers of `width` bytes (1, 2 or 4).
array bits(const Shape& shape, int width = 4, const Key& key = {}, EMBER_S);
array uniform(const array& low, const array& high, const Shape& shape, Dtype dtype = Dtype::float32,
              const Key& key = {}, EMBER_S);
array normal(const Shape& shape, Dtype dtype = Dtype::float32, const std::optional<array>& loc = {},
             const std::optional<array>& scale = {}, const Key& key = {}, EMBER_S);
array truncated_normal(const array& lower, const array& upper, const std::optional<Shape>& shape,
                       Dtype dtype = Dtype::float32, const Key& key = {}, EMBER_S);
array randint(const array& low, const array& high, const Shape& shape, Dtype dtype = Dtype::int32,
              const Key& key = {}, EMBER_S);
array bernoulli(const array& p, const std::optional<Shape>& shape, const Key& key = {}, EMBER_S);
array categorical(const array& logits, int axis = -1, const std::optional<Shape>& shape = {},
                  std::optional<int64_t> num_samples = {}, const Key& key = {}, EMBER_S);
array gumbel(const Shape& shape, Dtype dtype = Dtype::float32, const Key& key = {}, EMBER_S);
array laplace(const Shape& shape, Dtype dtype = Dtype::float32, double loc = 0.0, double scale = 1.0,
              const Key& key = {}, EMBER_S);
array multivariate_normal(const array& mean, const array& cov, const Shape& shape, Dtype dtype = Dtype::float32,
                          const Key& key = {}, EMBER_S);
// A random ordering of arange(n) (uint32), or of x along `axis`.
array permutation(int64_t n, const Key& key = {}, EMBER_S);
array permutation(const array& x, int axis = 0, const Key& key = {}, EMBER_S);

#undef EMBER_S

}  // namespace ember::random
