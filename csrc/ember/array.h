// The array: a shared handle to a descriptor (shape, strides, dtype, data)
// that, until evaluated, also points at the Node that will compute it
// (primitive + inputs). Evaluation fills the data and drops the Node, so the
// graph above an evaluated array is freed as soon as nothing else needs it.
//
//   array a = ember::ones({2, 3});          // a node, nothing computed yet
//   array b = ember::add(a, a);             // another node
//   ember::eval({b});                       // computes a then b
//   float v = b.data<float>()[0];           // 2.0f
#pragma once

#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ember/allocator.h"
#include "ember/device.h"
#include "ember/dtype.h"

namespace ember {

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;

// TypeError in Python.
class type_error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The engine's errors name the op: "[op] message". fail raises ValueError
// (std::invalid_argument), fail_index IndexError (std::out_of_range).
namespace detail {
template <class... Args>
std::string msg(const char* op, Args&&... args) {
  std::ostringstream os;
  os << "[" << op << "] ";
  (os << ... << args);
  return os.str();
}
template <class... Args>
[[noreturn]] void fail(const char* op, Args&&... args) {
  throw std::invalid_argument(msg(op, std::forward<Args>(args)...));
}
template <class... Args>
[[noreturn]] void fail_index(const char* op, Args&&... args) {
  throw std::out_of_range(msg(op, std::forward<Args>(args)...));
}
}  // namespace detail

class Primitive;
class array;
struct ArrayDesc;

// The computation behind one or more outputs (siblings share one Node).
struct Node {
  std::shared_ptr<Primitive> prim;
  std::vector<array> inputs;
  std::vector<std::weak_ptr<ArrayDesc>> outputs;
  // Shapes/dtypes of the outputs, kept only for multi-output nodes so that an
  // output nobody holds any more can still be given scratch storage.
  std::vector<Shape> out_shapes;
  std::vector<Dtype> out_dtypes;
  uint64_t mark = 0;  // scratch for graph walks (under the eval lock)
  ~Node();            // frees long input chains iteratively
};

struct ArrayDesc {
  Shape shape;
  Strides strides;  // in elements
  int64_t offset = 0;  // in elements, from the buffer start
  int64_t size = 1;
  Dtype dtype = Dtype::float32;
  bool row_contiguous = true;  // data is dense row-major from offset
  int position = 0;            // which output of its node
  std::shared_ptr<Buffer> buf;
  // null once evaluated (or for constants); a tracer keeps it after eval
  std::shared_ptr<Node> node;
  bool tracer = false;  // depends on the inputs of a transform being traced
};

// Tracing: while a transform (vjp, jvp, vmap, ...) runs a user function,
// arrays built from its inputs are tracers. Evaluating a tracer keeps its
// node so that the transform can still walk the graph behind it.
bool in_tracing();
struct TraceScope {
  TraceScope();
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
};

Strides row_strides(const Shape& shape);
// Product of the dims, checked: throws std::invalid_argument on overflow or
// negative dims (op names the caller).
int64_t checked_size(const Shape& shape, const char* op);
// The lowest and highest element offsets (relative to element 0) that a
// non-empty array of this shape and strides addresses, checked: throws
// std::invalid_argument naming `op` when they do not fit in 64 bits.
std::pair<int64_t, int64_t> element_range(const Shape& shape, const Strides& strides, const char* op);

class array {
 public:
  array() = default;
  explicit array(std::shared_ptr<ArrayDesc> d) : desc_(std::move(d)) {}

  // Constants (evaluated at construction).
  template <class T>
  array(T value, Dtype dtype);  // scalar of `dtype` converted from value
  array(const void* data, const Shape& shape, Dtype dtype);  // copies dense data
  static array empty_evaluated(const Shape& shape, Dtype dtype);
  // An evaluated array on an existing buffer (typically Buffer::borrowed):
  // element i has the address buf->ptr() + (offset + sum_k i_k * strides[k])
  // * itemsize; strides (in elements) may be negative or zero. Throws
  // std::invalid_argument naming `op` unless every addressed element lies
  // within the buffer's size() bytes.
  static array from_buffer(std::shared_ptr<Buffer> buf, const Shape& shape, Dtype dtype, const Strides& strides,
                           int64_t offset, const char* op);

  const Shape& shape() const { return desc_->shape; }
  int64_t shape(int dim) const { return desc_->shape.at(dim < 0 ? dim + ndim() : dim); }
  const Strides& strides() const { return desc_->strides; }
  int64_t offset() const { return desc_->offset; }
  int ndim() const { return static_cast<int>(desc_->shape.size()); }
  int64_t size() const { return desc_->size; }
  Dtype dtype() const { return desc_->dtype; }
  int itemsize() const { return size_of(desc_->dtype); }
  int64_t nbytes() const { return size() * itemsize(); }
  bool row_contiguous() const { return desc_->row_contiguous; }

  bool is_evaluated() const { return desc_->buf || !desc_->node; }
  bool is_tracer() const { return desc_->tracer && in_tracing(); }
  void set_tracer(bool t) { desc_->tracer = t; }
  void detach() const { desc_->node.reset(); }  // forget the graph (evaluated arrays)
  bool has_primitive() const { return static_cast<bool>(desc_->node); }
  Primitive& primitive() const { return *desc_->node->prim; }
  int position() const { return desc_->position; }

  void eval() const;  // evaluate this array (and what it needs)

  // Data access (evaluated arrays only).
  const std::shared_ptr<Buffer>& buffer() const { return desc_->buf; }
  template <class T>
  T* data() const {
    return reinterpret_cast<T*>(static_cast<char*>(desc_->buf->ptr()) + desc_->offset * itemsize());
  }
  void* raw_data() const { return data<char>(); }

  // Kernels: give an output its storage.
  void set_data(std::shared_ptr<Buffer> buf);  // dense row-major, offset 0
  void set_data(std::shared_ptr<Buffer> buf, Strides strides, int64_t offset);
  void alloc();  // set_data(allocator::malloc(nbytes()))
  // Replace this handle's descriptor with another's (in-place Python ops).
  void overwrite_descriptor(const array& other) { desc_ = other.desc_; }

  uintptr_t id() const { return reinterpret_cast<uintptr_t>(desc_.get()); }
  const std::shared_ptr<ArrayDesc>& desc() const { return desc_; }
  bool valid() const { return static_cast<bool>(desc_); }

  // Scalar read of an evaluated 0-d or one-element array, converted to T.
  template <class T>
  T item() const;

 private:
  // Graph nodes: only make_node / make_nodes (primitive.h) build them, through
  // these constructors, which check the node (see there).
  template <class P, class... Args>
  friend array make_node(Shape shape, Dtype dtype, std::vector<array> inputs, Args&&... args);
  template <class P, class... Args>
  friend std::vector<array> make_nodes(std::vector<Shape> shapes, std::vector<Dtype> dtypes,
                                       std::vector<array> inputs, Args&&... args);
  array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> prim, std::vector<array> inputs);
  static std::vector<array> make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                        std::shared_ptr<Primitive> prim, std::vector<array> inputs);

  std::shared_ptr<ArrayDesc> desc_;
};

}  // namespace ember
