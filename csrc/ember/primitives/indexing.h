// Indexing by integer arrays: Gather reads, Scatter writes (assigning or
// accumulating). Both take k index arrays of one common shape I (any integer
// dtype; negative values count from the end) for k chosen axes; the other
// axes come along whole. An index out of range raises IndexError when the
// node is evaluated: nothing is read or written out of bounds. The transform
// rules are in primitives/indexing.cpp.
#pragma once

#include <optional>

#include "ember/primitive.h"

namespace ember {

// A strided window on an array: window dim i is the array's dim dims[i]
// taken at start[i] + step[i] * j for j < size[i], or (dims[i] == -1) an
// inserted dim of size 1. full_view(shape) is the whole array.
struct IndexView {
  std::vector<int> dims;
  Shape start, step, size;
  bool operator==(const IndexView& o) const {
    return dims == o.dims && start == o.start && step == o.step && size == o.size;
  }
};
inline IndexView full_view(const Shape& shape) {
  IndexView v;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    v.dims.push_back(d);
    v.start.push_back(0);
    v.step.push_back(1);
    v.size.push_back(shape[d]);
  }
  return v;
}
// How Scatter combines an update with what is there.
enum class ScatterKind { Assign, Add, Prod, Max, Min };

// inputs: src, idx_0 .. idx_{k-1}
// output: I ++ (src's dims not in axes, in order)
class Gather final : public Primitive {
 public:
  Gather(Stream s, std::vector<int> axes) : Primitive(s), axes_(std::move(axes)) {}
  const char* name() const override { return "Gather"; }
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  const std::vector<int>& axes() const { return axes_; }

 private:
  std::vector<int> axes_;
};

// inputs: dst, idx_0 .. idx_{k-1}, updates (dst's dtype, shape I ++ the
// view's dims not in axes)
// output: dst with the updates combined into view(dst)[idx...] by `kind`;
// with kind Assign and a repeated index the last update wins.
// The axes index `view`, a strided window on dst (IndexView above).
class Scatter final : public Primitive {
 public:
  Scatter(Stream s, IndexView view, std::vector<int> axes, ScatterKind kind)
      : Primitive(s), view_(std::move(view)), axes_(std::move(axes)), kind_(kind) {}
  const char* name() const override;
  void eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) override;
  bool is_equivalent(const Primitive& o) const override;
  EMBER_TRANSFORM_RULES
  const IndexView& view() const { return view_; }
  const std::vector<int>& axes() const { return axes_; }
  ScatterKind kind() const { return kind_; }
  std::optional<array> sum_with(const array& mine, const array& other) const override;

 private:
  IndexView view_;
  std::vector<int> axes_;
  ScatterKind kind_;
};

}  // namespace ember
