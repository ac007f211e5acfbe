// Matrix products: NumPy's matmul rules (1-D operands promoted and the added
// dim removed; batch dims broadcast).
#include "ember/ops/common.h"
#include "ember/primitives/linalg.h"

namespace ember {

using detail::fail;

array matmul(const array& a_in, const array& b_in, const StreamOrDevice& s) {
  if (a_in.ndim() == 0 || b_in.ndim() == 0) {
    fail("matmul", "Got 0-dimension input; inputs must have at least one dimension (shapes ",
         shape_str(a_in.shape()), " and ", shape_str(b_in.shape()), ").");
  }
  array a = a_in.ndim() == 1 ? reshape(a_in, {1, a_in.shape()[0]}, s) : a_in;
  array b = b_in.ndim() == 1 ? reshape(b_in, {b_in.shape()[0], 1}, s) : b_in;
  if (a.shape(-1) != b.shape(-2)) {
    fail("matmul", "Last dimension of first input with shape ", shape_str(a_in.shape()),
         " must match second to last dimension of second input with shape ", shape_str(b_in.shape()), ".");
  }
  Dtype t = promote_types(a.dtype(), b.dtype());
  // half types compute in float32 and round once at the end
  Dtype compute = (t == Dtype::float16 || t == Dtype::bfloat16) ? Dtype::float32 : t;
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(ba, bb, "matmul");
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {a.shape(-2), a.shape(-1)});
  sb.insert(sb.end(), {b.shape(-2), b.shape(-1)});
  a = broadcast_to(astype(a, compute, s), sa, s);
  b = broadcast_to(astype(b, compute, s), sb, s);
  Shape out = batch;
  out.insert(out.end(), {a.shape(-2), b.shape(-1)});
  array r(out, compute, std::make_shared<Matmul>(to_stream(s)), {a, b});
  if (a_in.ndim() == 1 || b_in.ndim() == 1) {
    Shape final_shape = batch;
    if (a_in.ndim() > 1) final_shape.push_back(a_in.shape(-2));
    if (b_in.ndim() > 1) final_shape.push_back(b_in.shape(-1));
    r = reshape(r, final_shape, s);
  }
  return astype(r, t, s);
}

}  // namespace ember
