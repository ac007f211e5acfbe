// Transform rules of the random primitives. The bits depend only on integer
// keys, so their derivatives are zero; vmap over keys hashes every key of
// the batch in one node (batched keys -> batched bits).
#include "ember/primitives/random.h"

#include "ember/ops.h"

namespace ember {

bool RandomBits::is_equivalent(const Primitive& o) const {
  auto* p = dynamic_cast<const RandomBits*>(&o);
  return p && p->shape_ == shape_ && p->width_ == width_ && p->kind_ == kind_;
}

std::vector<array> RandomBits::vjp(const std::vector<array>& primals, const std::vector<array>&,
                                   const std::vector<int>& argnums, const std::vector<array>&) {
  std::vector<array> out;
  for (int i : argnums) out.push_back(zeros_like(primals[i], std::nullopt, stream()));
  return out;
}

std::vector<array> RandomBits::jvp(const std::vector<array>&, const std::vector<array>&,
                                   const std::vector<int>&, const std::vector<array>& outputs) {
  return {zeros_like(outputs[0], std::nullopt, stream())};
}

std::pair<std::vector<array>, std::vector<int>> RandomBits::vmap(const std::vector<array>& inputs,
                                                                 const std::vector<int>& axes) {
  array keys = inputs[0];
  int ax = axes[0];
  if (ax >= 0 && ax != 0) keys = moveaxis(keys, ax, 0, stream());
  Shape out_shape(keys.shape().begin(), keys.shape().end() - 1);
  out_shape.insert(out_shape.end(), shape_.begin(), shape_.end());
  Dtype dt = kind_ == Bits ? (width_ == 1 ? Dtype::uint8 : width_ == 2 ? Dtype::uint16 : Dtype::uint32)
                           : Dtype::float32;
  array out(out_shape, dt, std::make_shared<RandomBits>(stream(), shape_, width_, kind_), {keys});
  return {{out}, {ax >= 0 ? 0 : -1}};
}

std::pair<std::vector<array>, std::vector<int>> RandomCholesky::vmap(const std::vector<array>& inputs,
                                                                     const std::vector<int>& axes) {
  // Batched matrices: the batch axis joins the leading batch dims.
  array a = inputs[0];
  int ax = axes[0];
  if (ax > 0) a = moveaxis(a, ax, 0, stream());
  array out(a.shape(), a.dtype(), std::make_shared<RandomCholesky>(stream()), {a});
  return {{out}, {ax >= 0 ? 0 : -1}};
}

}  // namespace ember
