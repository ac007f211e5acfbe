#include "ember/array.h"

#include <atomic>
#include <cstring>
#include <sstream>

#include "ember/eval.h"
#include "ember/primitive.h"

namespace ember {

namespace {
void fill_row_strides(const Shape& shape, Strides& s) {
  s.resize(shape.size());
  int64_t acc = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape[i] > 0 ? shape[i] : 1;
  }
}
}  // namespace

Strides row_strides(const Shape& shape) {
  Strides s;
  fill_row_strides(shape, s);
  return s;
}

int64_t checked_size(const Shape& shape, const char* op) {
  int64_t n = 1;
  bool zero = false;
  for (auto d : shape) {
    if (d < 0) {
      std::ostringstream os;
      os << "[" << op << "] Negative dimension in shape " << shape_str(shape) << ".";
      throw std::invalid_argument(os.str());
    }
    if (d == 0) zero = true;
  }
  if (zero) return 0;
  for (auto d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) {
      std::ostringstream os;
      os << "[" << op << "] Shape " << shape_str(shape) << " has more elements than fit in 64 bits.";
      throw std::invalid_argument(os.str());
    }
  }
  return n;
}

std::pair<int64_t, int64_t> element_range(const Shape& shape, const Strides& strides, const char* op) {
  if (strides.size() != shape.size()) {
    throw std::invalid_argument(std::string("[") + op + "] " + std::to_string(strides.size()) +
                                " strides given for a shape of " + std::to_string(shape.size()) + " dimensions.");
  }
  int64_t lo = 0, hi = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t span;
    if (shape[i] <= 0) continue;  // 0: an empty array addresses nothing; < 0 fails in checked_size
    bool over = __builtin_mul_overflow(shape[i] - 1, strides[i], &span);
    over = over || (span < 0 ? __builtin_add_overflow(lo, span, &lo) : __builtin_add_overflow(hi, span, &hi));
    if (over) {
      std::ostringstream os;
      os << "[" << op << "] The strides of an array of shape " << shape_str(shape)
         << " address elements beyond 64-bit offsets.";
      throw std::invalid_argument(os.str());
    }
  }
  return {lo, hi};
}

namespace {
std::shared_ptr<ArrayDesc> new_desc(Shape shape, Dtype dtype) {
  auto d = std::make_shared<ArrayDesc>();
  d->size = checked_size(shape, "array");
  int64_t bytes;
  if (__builtin_mul_overflow(d->size, static_cast<int64_t>(size_of(dtype)), &bytes)) {
    throw std::invalid_argument("[array] An array of shape " + shape_str(shape) + " and dtype " +
                                dtype_name(dtype) + " needs more bytes than fit in 64 bits.");
  }
  d->strides = row_strides(shape);
  d->shape = std::move(shape);
  d->dtype = dtype;
  return d;
}
}  // namespace

Node::~Node() {
  // Release the inputs without recursion: any input whose descriptor and node
  // we hold alone has its own inputs moved onto our stack before it dies.
  std::vector<array> stack = std::move(inputs);
  while (!stack.empty()) {
    array a = std::move(stack.back());
    stack.pop_back();
    auto& d = a.desc();
    if (d.use_count() == 1 && d->node && d->node.use_count() == 1) {
      for (auto& in : d->node->inputs) stack.push_back(std::move(in));
      d->node->inputs.clear();
    }
  }
}

template <class T>
array::array(T value, Dtype dtype) : desc_(new_desc({}, dtype)) {
  alloc();
  dispatch_all(dtype, [&](auto tag) {
    using U = typename decltype(tag)::type;
    *data<U>() = scalar_cast<U>(value);
  });
}
template array::array(bool, Dtype);
template array::array(int, Dtype);
template array::array(int64_t, Dtype);
template array::array(uint64_t, Dtype);
template array::array(float, Dtype);
template array::array(double, Dtype);
template array::array(complex64_t, Dtype);

array::array(const void* src, const Shape& shape, Dtype dtype) : desc_(new_desc(shape, dtype)) {
  alloc();
  if (nbytes()) std::memcpy(raw_data(), src, nbytes());
}

array array::empty_evaluated(const Shape& shape, Dtype dtype) {
  array a(new_desc(shape, dtype));
  a.alloc();
  return a;
}

array array::from_buffer(std::shared_ptr<Buffer> buf, const Shape& shape, Dtype dtype, const Strides& strides,
                         int64_t offset, const char* op) {
  if (!buf) throw std::invalid_argument(std::string("[") + op + "] No buffer given.");
  int64_t n = checked_size(shape, op);
  auto [lo, hi] = element_range(shape, strides, op);
  if (n > 0) {
    // the first and one past the last addressed byte, from the buffer start
    int64_t first, last, first_b, end_b;
    const int64_t item = size_of(dtype);
    bool over = __builtin_add_overflow(offset, lo, &first) || __builtin_add_overflow(offset, hi, &last) ||
                __builtin_mul_overflow(first, item, &first_b) || __builtin_add_overflow(last, int64_t(1), &end_b) ||
                __builtin_mul_overflow(end_b, item, &end_b);
    if (over || first_b < 0 || static_cast<uint64_t>(end_b) > buf->size()) {
      std::ostringstream os;
      os << "[" << op << "] An array of shape " << shape_str(shape) << ", strides " << shape_str(strides)
         << " and offset " << offset << " (" << dtype_name(dtype) << ") addresses memory outside its buffer of "
         << buf->size() << " bytes.";
      throw std::invalid_argument(os.str());
    }
  }
  array a(new_desc(shape, dtype));
  a.set_data(std::move(buf), strides, offset);
  return a;
}

namespace {
std::atomic<int> g_tracing{0};
bool any_tracer(const std::vector<array>& inputs) {
  if (!in_tracing()) return false;
  for (auto& a : inputs)
    if (a.desc()->tracer) return true;
  return false;
}
}  // namespace

bool in_tracing() { return g_tracing.load(std::memory_order_relaxed) > 0; }
namespace {
std::atomic<void (*)()> g_before_trace{nullptr};
}
void set_before_trace(void (*fn)()) { g_before_trace.store(fn); }
TraceScope::TraceScope() {
  // the asynchronous worker must not detach the graph being traced
  if (auto f = g_before_trace.load()) f();
  ++g_tracing;
}
TraceScope::~TraceScope() { --g_tracing; }

namespace {
// What every node needs of its primitive and inputs (a failure is a bug in
// the code building the node, not in the user's arguments).
void check_node(const Primitive* prim, const std::vector<array>& inputs, size_t n_shapes, size_t n_dtypes) {
  if (!prim) throw std::logic_error("[array] A graph node needs a primitive.");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].valid()) {
      throw std::logic_error(detail::msg(prim->name(), "Input ", i, " of the node is not an array."));
    }
  }
  if (n_shapes == 0 || n_shapes != n_dtypes) {
    throw std::logic_error(detail::msg(prim->name(), "A node needs one dtype per output shape and at least one "
                                       "output; got ", n_shapes, " shapes and ", n_dtypes, " dtypes."));
  }
}
}  // namespace

array::array(Shape shape, Dtype dtype, std::shared_ptr<Primitive> prim, std::vector<array> inputs) {
  check_node(prim.get(), inputs, 1, 1);
  desc_ = new_desc(std::move(shape), dtype);
  desc_->tracer = any_tracer(inputs);
  auto node = std::make_shared<Node>();
  node->prim = std::move(prim);
  node->inputs = std::move(inputs);
  node->outputs.push_back(desc_);
  desc_->node = std::move(node);
}

std::vector<array> array::make_arrays(std::vector<Shape> shapes, const std::vector<Dtype>& dtypes,
                                      std::shared_ptr<Primitive> prim, std::vector<array> inputs) {
  check_node(prim.get(), inputs, shapes.size(), dtypes.size());
  auto node = std::make_shared<Node>();
  node->prim = std::move(prim);
  node->inputs = std::move(inputs);
  if (shapes.size() > 1) {  // (a single output lives as long as its node)
    node->out_shapes = shapes;
    node->out_dtypes = dtypes;
  }
  bool tracer = any_tracer(node->inputs);
  std::vector<array> outs;
  outs.reserve(shapes.size());
  node->outputs.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto d = new_desc(std::move(shapes[i]), dtypes[i]);
    d->position = static_cast<int>(i);
    d->tracer = tracer;
    d->node = node;
    node->outputs.push_back(d);
    outs.emplace_back(std::move(d));
  }
  return outs;
}

void array::eval() const { ember::eval({*this}); }

void array::set_data(std::shared_ptr<Buffer> buf) {
  desc_->buf = std::move(buf);
  fill_row_strides(desc_->shape, desc_->strides);  // in place: no allocation per kernel output
  desc_->offset = 0;
  desc_->row_contiguous = true;
}

void array::set_data(std::shared_ptr<Buffer> buf, Strides strides, int64_t offset) {
  desc_->buf = std::move(buf);
  desc_->offset = offset;
  bool contig = true;
  int64_t acc = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (desc_->shape[i] != 1 && strides[i] != acc) contig = false;
    acc *= desc_->shape[i];
  }
  desc_->row_contiguous = contig || desc_->size == 0;
  desc_->strides = std::move(strides);
}

void array::alloc() { set_data(allocator::malloc(static_cast<size_t>(nbytes()))); }

template <class T>
T array::item() const {
  if (size() != 1) {
    throw std::invalid_argument("[item] Only one-element arrays can be converted to scalars; got shape " +
                                shape_str(shape()) + ".");
  }
  eval();
  return dispatch_all(dtype(), [&](auto tag) -> T {
    using U = typename decltype(tag)::type;
    return scalar_cast<T>(*data<U>());
  });
}
template bool array::item<bool>() const;
template int64_t array::item<int64_t>() const;
template uint64_t array::item<uint64_t>() const;
template double array::item<double>() const;
template float array::item<float>() const;
template complex64_t array::item<complex64_t>() const;

}  // namespace ember
