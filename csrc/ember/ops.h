// Ember's public ops. Each validates its arguments (raising with the op's
// name and the shapes/dtypes involved), promotes and broadcasts, then builds
// a graph node; nothing is computed here.
#pragma once

#include <optional>
#include <variant>

#include "ember/array.h"
#include "ember/ops/elementwise_table.h"
#include "ember/primitives/indexing.h"

namespace ember {

using Axes = std::vector<int>;
// The stream an op runs on: the thread's default when not given.
using StreamOrDevice = std::variant<std::monostate, Stream, Device>;
Stream to_stream(const StreamOrDevice& s);
#define EMBER_S const StreamOrDevice& s = {}

// ---- creation ----
array zeros(const Shape& shape, Dtype dtype = Dtype::float32, EMBER_S);
array ones(const Shape& shape, Dtype dtype = Dtype::float32, EMBER_S);
array full(const Shape& shape, const array& vals, std::optional<Dtype> dtype = {}, EMBER_S);
array zeros_like(const array& a, std::optional<Dtype> dtype = {}, EMBER_S);
array ones_like(const array& a, std::optional<Dtype> dtype = {}, EMBER_S);
array arange(double start, double stop, double step, Dtype dtype, EMBER_S);
array linspace(double start, double stop, int64_t num, bool endpoint, Dtype dtype, EMBER_S);
array eye(int64_t n, int64_t m, int64_t k, Dtype dtype, EMBER_S);
array tri(int64_t n, int64_t m, int64_t k, Dtype dtype, EMBER_S);
array tril(const array& x, int64_t k = 0, EMBER_S);
array triu(const array& x, int64_t k = 0, EMBER_S);
// window functions (float32, M < 1 gives an empty window)
array bartlett(int64_t M, EMBER_S);
array blackman(int64_t M, EMBER_S);
array hamming(int64_t M, EMBER_S);
array hanning(int64_t M, EMBER_S);

// ---- dtype ----
array astype(const array& a, Dtype dtype, EMBER_S);
array view(const array& a, Dtype dtype, EMBER_S);
// fp8 (e4m3fn) codes as uint8: to_fp8 rounds a real floating array to the
// nearest code (ties to even; beyond +-448, infinities and NaN saturate to
// +-448); from_fp8 decodes uint8 codes to the real floating `dtype`.
array to_fp8(const array& x, EMBER_S);
array from_fp8(const array& x, Dtype dtype = Dtype::bfloat16, EMBER_S);

// ---- elementwise ----
// (one line each in ops/elementwise_table.h)
#define EMBER_DECL_UNARY(fn, Prim, In, Sig) array fn(const array& a, EMBER_S);
EMBER_UNARY_FUNCTIONS(EMBER_DECL_UNARY)
#undef EMBER_DECL_UNARY
array round(const array& a, int decimals = 0, EMBER_S);

#define EMBER_DECL_BINARY(fn, Prim, In, Sig) array fn(const array& a, const array& b, EMBER_S);
EMBER_BINARY_FUNCTIONS(EMBER_DECL_BINARY)
#undef EMBER_DECL_BINARY
std::vector<array> divmod(const array& a, const array& b, EMBER_S);
array where(const array& cond, const array& x, const array& y, EMBER_S);
array clip(const array& a, const std::optional<array>& lo, const std::optional<array>& hi, EMBER_S);
array isclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
              EMBER_S);
array allclose(const array& a, const array& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false,
               EMBER_S);
array array_equal(const array& a, const array& b, bool equal_nan = false, EMBER_S);
array nan_to_num(const array& a, double nan = 0, std::optional<double> posinf = {},
                 std::optional<double> neginf = {}, EMBER_S);

// ---- reductions (axes empty + all_axes: reduce everything) ----
array sum(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array prod(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array max(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array min(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array all(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array any(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array mean(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array var(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, int ddof = 0, EMBER_S);
array std(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, int ddof = 0, EMBER_S);
array logsumexp(const array& a, std::optional<Axes> axes = {}, bool keepdims = false, EMBER_S);
array argmax(const array& a, std::optional<int> axis = {}, bool keepdims = false, EMBER_S);
array argmin(const array& a, std::optional<int> axis = {}, bool keepdims = false, EMBER_S);
array softmax(const array& a, std::optional<Axes> axes = {}, bool precise = false, EMBER_S);

// ---- shape ----
array reshape(const array& a, Shape shape, EMBER_S);
array flatten(const array& a, int start_axis = 0, int end_axis = -1, EMBER_S);
array unflatten(const array& a, int axis, const Shape& shape, EMBER_S);
array squeeze(const array& a, std::optional<Axes> axes = {}, EMBER_S);
array expand_dims(const array& a, const Axes& axes, EMBER_S);
array transpose(const array& a, std::optional<Axes> axes = {}, EMBER_S);
array swapaxes(const array& a, int axis1, int axis2, EMBER_S);
array moveaxis(const array& a, int source, int destination, EMBER_S);
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op = "broadcast_shapes");
array broadcast_to(const array& a, const Shape& shape, EMBER_S);
std::vector<array> broadcast_arrays(const std::vector<array>& arrays, EMBER_S);
array concatenate(const std::vector<array>& arrays, std::optional<int> axis = 0, EMBER_S);
array stack(const std::vector<array>& arrays, int axis = 0, EMBER_S);
std::vector<array> split(const array& a, int64_t sections, int axis = 0, EMBER_S);
std::vector<array> split(const array& a, const Shape& indices, int axis = 0, EMBER_S);
array repeat(const array& a, int64_t repeats, std::optional<int> axis = {}, EMBER_S);
array tile(const array& a, const Shape& reps, EMBER_S);
array pad(const array& a, const std::vector<std::pair<int64_t, int64_t>>& widths, const std::string& mode,
          const array& value, EMBER_S);
array slice(const array& a, Shape start, Shape stop, Shape step, EMBER_S);
array as_strided(const array& a, std::optional<Shape> shape, std::optional<Strides> strides, int64_t offset,
                 EMBER_S);
array contiguous(const array& a, bool allow_col_major = false, EMBER_S);
array atleast_nd(const array& a, int n, EMBER_S);
array matrix_transpose(const array& a, EMBER_S);
array permute_dims(const array& a, std::optional<Axes> axes = {}, EMBER_S);
std::vector<array> unstack(const array& a, int axis = 0, EMBER_S);
// Reverses the given axes (all when not given): a negative-stride view.
array flip(const array& a, std::optional<Axes> axes = {}, EMBER_S);
// n-th discrete difference along `axis`.
array diff(const array& a, int n = 1, int axis = -1, EMBER_S);
// roll of the flattened array, restored to a's shape
array roll(const array& a, int64_t shift, EMBER_S);
array roll(const array& a, int64_t shift, int axis, EMBER_S);
// axes[i] rolled by shift[i] (shift may be longer; extra values are ignored,
// repeated axes add up)
array roll(const array& a, const Shape& shift, const Axes& axes, EMBER_S);

// ---- indexing (gather / scatter) ----
// Index arrays hold any integer dtype; negative values count from the end.
// An index out of range raises IndexError when the result is evaluated.

// IndexView (a strided window) and ScatterKind are the Scatter primitive's
// parameters (primitives/indexing.h).

// a[..., indices[0], ..., indices[k-1], ...] on `axes`: the index arrays
// broadcast to a shape I; the result is I ++ (a's other dims, in order).
array gather(const array& a, const std::vector<array>& indices, const std::vector<int>& axes, EMBER_S);
// The inverse: updates (shape I ++ the other dims, broadcast) written to a
// copy of `a` (Assign: last write wins) or combined with what is there.
array scatter(const array& a, const std::vector<array>& indices, const array& updates, const std::vector<int>& axes,
              ScatterKind kind = ScatterKind::Assign, EMBER_S);
// Scatter through a window of `a`; `axes` index the window's dims.
array scatter(const array& a, const IndexView& view, const std::vector<array>& indices, const array& updates,
              const std::vector<int>& axes, ScatterKind kind, EMBER_S);
array take(const array& a, const array& indices, std::optional<int> axis = {}, EMBER_S);
array take_along_axis(const array& a, const array& indices, std::optional<int> axis, EMBER_S);
array put_along_axis(const array& a, const array& indices, const array& values, std::optional<int> axis, EMBER_S);
// Dynamic slices: start holds one start per axis in `axes`.
array slice(const array& a, const array& start, const std::vector<int>& axes, const Shape& sizes, EMBER_S);
array slice_update(const array& a, const array& update, const array& start, const std::vector<int>& axes, EMBER_S);
array diagonal(const array& a, int64_t offset = 0, int axis1 = 0, int axis2 = 1, EMBER_S);
array diag(const array& a, int64_t k = 0, EMBER_S);
array trace(const array& a, int64_t offset = 0, int axis1 = 0, int axis2 = 1, std::optional<Dtype> dtype = {},
            EMBER_S);

// ---- linear algebra ----
array matmul(const array& a, const array& b, EMBER_S);

#undef EMBER_S

// Normalizes a possibly negative axis for an op; raises naming `op`.
int normalize_axis(int axis, int ndim, const char* op);

}  // namespace ember

// Op families declared in their own headers (same conventions as above).
#include "ember/ops/contract.h"  // einsum, tensordot, inner, outer, kron, vecdot
#include "ember/ops/sort.h"      // sort, partition, topk, searchsorted, unique, scans, ...
