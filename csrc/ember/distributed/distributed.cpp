// The distributed ops (validate, build a node), their primitives' eval_cpu
// (through mpi.cpp) and their transform rules.
#include "ember/distributed/distributed.h"

#include <sstream>

#include "ember/backend/cpu/copy.h"
#include "ember/distributed/mpi.h"
#include "ember/transforms/transforms.h"

namespace ember::distributed {

using detail::fail;

namespace {

const char* reduce_name(ReduceKind k) {
  return k == ReduceKind::sum ? "all_sum" : k == ReduceKind::max ? "all_max" : "all_min";
}

std::string shape_str(const Shape& s) {
  std::ostringstream m;
  m << "(";
  for (size_t i = 0; i < s.size(); i++) m << (i ? ", " : "") << s[i];
  if (s.size() == 1) m << ",";
  m << ")";
  return m.str();
}

// Codes that tell the collectives apart in the agreement check.
enum Code : int { kSum = 1, kMax, kMin, kGather, kScatter, kP2P };

// The input's elements, dense: its own memory when it is, else a copy.
const void* dense(const array& in, std::shared_ptr<Buffer>& keep) {
  if (in.row_contiguous()) return in.raw_data();
  keep = allocator::malloc(static_cast<size_t>(in.nbytes()));
  cpu::copy_to_dense(in, keep->ptr());
  return keep->ptr();
}

Comm& comm_of(const Group& g, const char* op) {
  if (!g.comm()) throw std::logic_error(std::string("[") + op + "] node on the singleton group");
  return *g.comm();
}

// Runs an MPI call on the node's buffers. When it times out MPI still owns
// the request, which may yet read `in` and write `out`: their buffers are
// kept for the life of the process instead of going back to the allocator.
template <class F>
void guarded(const array& in, const array& out, const std::shared_ptr<Buffer>& scratch, F&& f) {
  try {
    f();
  } catch (const mpi::Timeout&) {
    for (const auto& b : {in.buffer(), out.buffer(), scratch}) mpi::abandon(b);
    throw;
  }
}

}  // namespace

// ---- ops ---------------------------------------------------------------------

array all_reduce(const array& x, ReduceKind kind, const Group& g, const StreamOrDevice& s) {
  if (g.size() == 1) return x;
  return make_node<AllReduce>(x.shape(), x.dtype(), {x}, to_stream(s), g, kind);
}
array all_sum(const array& x, const Group& g, const StreamOrDevice& s) { return all_reduce(x, ReduceKind::sum, g, s); }
array all_max(const array& x, const Group& g, const StreamOrDevice& s) { return all_reduce(x, ReduceKind::max, g, s); }
array all_min(const array& x, const Group& g, const StreamOrDevice& s) { return all_reduce(x, ReduceKind::min, g, s); }

array all_gather(const array& x, const Group& g, const StreamOrDevice& s) {
  if (g.size() == 1) return x;
  Shape shape = x.shape();
  if (shape.empty())
    shape.push_back(g.size());
  else
    shape[0] *= g.size();
  return make_node<AllGather>(std::move(shape), x.dtype(), {x}, to_stream(s), g);
}

array sum_scatter(const array& x, const Group& g, const StreamOrDevice& s) {
  if (g.size() == 1) return x;
  if (x.ndim() == 0) fail("sum_scatter", "needs an array of at least one dimension, got a 0-d array.");
  if (x.shape(0) % g.size() != 0)
    fail("sum_scatter", "the first dimension of the input (shape ", shape_str(x.shape()), ") must be divisible by the group size ",
         g.size(), ".");
  Shape shape = x.shape();
  shape[0] /= g.size();
  return make_node<SumScatter>(std::move(shape), x.dtype(), {x}, to_stream(s), g);
}

array send(const array& x, int dst, const Group& g, const StreamOrDevice& s) {
  if (g.size() == 1) fail("send", "Cannot send to a singleton group");
  if (dst < 0 || dst >= g.size())
    fail("send", "Invalid destination=", dst, " for a group of size ", g.size(), ".");
  return make_node<Send>(x.shape(), x.dtype(), {x}, to_stream(s), g, dst);
}

array recv(Shape shape, Dtype dtype, int src, const Group& g, const StreamOrDevice& s) {
  if (g.size() == 1) fail("recv", "Cannot recv from a singleton group");
  if (src < 0 || src >= g.size()) fail("recv", "Invalid source=", src, " for a group of size ", g.size(), ".");
  return make_node<Recv>(std::move(shape), dtype, {}, to_stream(s), g, src);
}

// ---- eval --------------------------------------------------------------------

const char* AllReduce::name() const {
  return kind_ == ReduceKind::sum ? "AllSum" : kind_ == ReduceKind::max ? "AllMax" : "AllMin";
}

void AllReduce::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  Comm& c = comm_of(group_, reduce_name(kind_));
  out.alloc();
  std::shared_ptr<Buffer> keep;
  const void* src = in.size() ? dense(in, keep) : nullptr;
  mpi::Op op{reduce_name(kind_), kSum + static_cast<int>(kind_), in.dtype(), &in.shape(), static_cast<int>(kind_)};
  bool done = false;
  guarded(in, out, keep, [&] { done = mpi::check_agree(c, op, src, out.raw_data()); });
  if (done || in.size() == 0) return;
  guarded(in, out, keep, [&] { mpi::all_reduce(c, src, out.raw_data(), in.size(), in.dtype(), kind_); });
}

void AllGather::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  Comm& c = comm_of(group_, "all_gather");
  mpi::check_agree(c, {"all_gather", kGather, in.dtype(), &in.shape()});
  out.alloc();
  if (in.size() == 0) return;
  std::shared_ptr<Buffer> keep;
  const void* src = dense(in, keep);
  guarded(in, out, keep, [&] { mpi::all_gather(c, src, out.raw_data(), in.size(), in.dtype()); });
}

void SumScatter::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  array& out = outputs[0];
  Comm& c = comm_of(group_, "sum_scatter");
  mpi::check_agree(c, {"sum_scatter", kScatter, in.dtype(), &in.shape()});
  out.alloc();
  if (in.size() == 0) return;
  std::shared_ptr<Buffer> keep;
  const void* src = dense(in, keep);
  guarded(in, out, keep, [&] { mpi::reduce_scatter(c, src, out.raw_data(), out.size(), in.dtype()); });
}

void Send::eval_cpu(const std::vector<array>& inputs, std::vector<array>& outputs) {
  const array& in = inputs[0];
  Comm& c = comm_of(group_, "send");
  std::shared_ptr<Buffer> keep;
  const void* src = dense(in, keep);
  guarded(in, in, keep, [&] { mpi::send(c, {"send", kP2P, in.dtype(), &in.shape()}, src, in.size(), dst_); });
  outputs[0].set_data(in.buffer(), in.strides(), in.offset());
}

void Recv::eval_cpu(const std::vector<array>&, std::vector<array>& outputs) {
  array& out = outputs[0];
  Comm& c = comm_of(group_, "recv");
  out.alloc();
  guarded(out, out, nullptr, [&] { mpi::recv(c, {"recv", kP2P, out.dtype(), &out.shape()}, out.raw_data(), out.size(), src_); });
}

// ---- rules ---------------------------------------------------------------------

namespace {
// For max/min: where this rank holds the extremum, shared evenly among ties.
std::pair<array, array> extremum_share(const array& x, const array& out, const Group& g, Stream s) {
  array mask = astype(equal(x, out, s), x.dtype(), s);
  array count = all_sum(mask, g, s);
  return {mask, count};
}
}  // namespace

std::vector<array> AllReduce::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  // MLX's convention: what follows a collective is replicated on every rank,
  // so the cotangent of the sum is each rank's own
  if (kind_ == ReduceKind::sum) return {cotangents[0]};
  auto [mask, count] = extremum_share(primals[0], outputs[0], group_, stream());
  return {divide(multiply(cotangents[0], mask, stream()), count, stream())};
}

std::vector<array> AllReduce::jvp(const std::vector<array>& primals, const std::vector<array>& tangents,
                                  const std::vector<int>&, const std::vector<array>& outputs) {
  if (kind_ == ReduceKind::sum) return {all_sum(tangents[0], group_, stream())};
  auto [mask, count] = extremum_share(primals[0], outputs[0], group_, stream());
  return {divide(all_sum(multiply(tangents[0], mask, stream()), group_, stream()), count, stream())};
}

std::pair<std::vector<array>, std::vector<int>> AllReduce::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  return {{all_reduce(inputs[0], kind_, group_, stream())}, {axes[0]}};
}

std::vector<array> AllGather::vjp(const std::vector<array>& primals, const std::vector<array>& cotangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  const array& x = primals[0];
  const array& ct = cotangents[0];
  int64_t n = x.ndim() == 0 ? 1 : x.shape(0);
  Shape start(ct.ndim(), 0), stop = ct.shape(), step(ct.ndim(), 1);
  start[0] = group_.rank() * n;
  stop[0] = start[0] + n;
  return {reshape(slice(ct, start, stop, step, stream()), x.shape(), stream())};
}

std::vector<array> AllGather::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                  const std::vector<int>&, const std::vector<array>&) {
  return {all_gather(tangents[0], group_, stream())};
}

std::pair<std::vector<array>, std::vector<int>> AllGather::vmap(const std::vector<array>& inputs,
                                                               const std::vector<int>& axes) {
  if (axes[0] < 0) return {{all_gather(inputs[0], group_, stream())}, {-1}};
  array x = moveaxis(inputs[0], axes[0], 0, stream());  // (B, ...)
  if (x.ndim() == 1)
    x = reshape(x, {1, x.shape(0)}, stream());
  else
    x = moveaxis(x, 0, 1, stream());
  return {{all_gather(x, group_, stream())}, {1}};
}

std::vector<array> SumScatter::vjp(const std::vector<array>&, const std::vector<array>& cotangents,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {all_gather(cotangents[0], group_, stream())};
}

std::vector<array> SumScatter::jvp(const std::vector<array>&, const std::vector<array>& tangents,
                                   const std::vector<int>&, const std::vector<array>&) {
  return {sum_scatter(tangents[0], group_, stream())};
}

std::pair<std::vector<array>, std::vector<int>> SumScatter::vmap(const std::vector<array>& inputs,
                                                                const std::vector<int>& axes) {
  if (axes[0] < 0) return {{sum_scatter(inputs[0], group_, stream())}, {-1}};
  if (inputs[0].ndim() < 2) fail("sum_scatter", "needs an array of at least one dimension, got a 0-d array.");
  array x = moveaxis(inputs[0], axes[0], 1, stream());
  return {{sum_scatter(x, group_, stream())}, {1}};
}

std::pair<std::vector<array>, std::vector<int>> Send::vmap(const std::vector<array>& inputs,
                                                          const std::vector<int>& axes) {
  return {{send(inputs[0], dst_, group_, stream())}, {axes[0]}};
}

}  // namespace ember::distributed
