// Indexing by integer arrays: Gather reads, Scatter writes (assigning or
// accumulating). Both take k index arrays of one common shape I (any integer
// dtype; negative values count from the end) for k chosen axes; the other
// axes come along whole. An index out of range raises IndexError when the
// node is evaluated: nothing is read or written out of bounds. The transform
// rules are in primitives/indexing.cpp.
#pragma once

#include "ember/ops.h"
#include "ember/primitive.h"

namespace ember {

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
// The axes index `view`, a strided window on dst (see IndexView in ops.h).
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

 private:
  IndexView view_;
  std::vector<int> axes_;
  ScatterKind kind_;
};

}  // namespace ember
