// Devices, streams, memory, evaluation, dtype info, printing options and
// module constants.
#include <cmath>
#include <limits>
#include <thread>

#include <unistd.h>

#include "bindings.h"
#include "ember/backend/cpu/isa.h"
#include "ember/version.h"

namespace ember::py_bind {

namespace {

struct StreamContext {
  Stream s;
  bool had_prev = false;
  Stream prev;
};

Stream stream_of(const StreamOrDevice& sd) {
  if (std::holds_alternative<std::monostate>(sd)) throw type_error("[stream] Expected a Stream or Device.");
  return to_stream(sd);
}

thread_local std::vector<Stream> t_stream_stack;

struct FInfo {
  Dtype dtype;
  double min, max, eps, tiny;
  int bits() const { return size_of(dtype) * 8; }
};
struct IInfo {
  Dtype dtype;
  py::int_ min, max;
};

}  // namespace

void init_device(py::module_& m) {
  py::enum_<Device::Type>(m, "DeviceType").value("cpu", Device::Type::cpu).value("gpu", Device::Type::gpu).export_values();
  py::class_<Device>(m, "Device")
      .def(py::init([](Device::Type t, int index) { return Device{t, index}; }), "type"_a, "index"_a = 0)
      .def_property_readonly("type", [](const Device& d) { return d.type; })
      .def_readonly("index", &Device::index)
      .def("__repr__", [](const Device& d) {
        return std::string("Device(") + (d.type == Device::Type::cpu ? "cpu" : "gpu") + ", " + std::to_string(d.index) + ")";
      })
      .def("__eq__", [](const Device& d, py::handle o) {
        if (py::isinstance<Device::Type>(o)) return d.type == o.cast<Device::Type>() && d.index == 0;
        return py::isinstance<Device>(o) && o.cast<Device>() == d;
      })
      .def("__hash__", [](const Device& d) { return static_cast<int>(d.type) * 1000 + d.index; });
  py::implicitly_convertible<Device::Type, Device>();
  py::class_<Stream>(m, "Stream")
      .def_readonly("device", &Stream::device)
      .def_readonly("index", &Stream::index)
      .def("__repr__", [](const Stream& s) {
        return std::string("Stream(Device(") + (s.device.type == Device::Type::cpu ? "cpu" : "gpu") + ", " +
               std::to_string(s.device.index) + "), " + std::to_string(s.index) + ")";
      })
      .def("__eq__", [](const Stream& s, py::handle o) { return py::isinstance<Stream>(o) && o.cast<Stream>() == s; })
      .def("__hash__", [](const Stream& s) { return s.index; });
  py::class_<ThreadLocalStream>(m, "ThreadLocalStream", "A stream that is a different Stream in each thread.")
      .def_readonly("device", &ThreadLocalStream::device)
      .def("__repr__", [](const ThreadLocalStream& s) {
        return std::string("ThreadLocalStream(Device(") + (s.device.type == Device::Type::cpu ? "cpu" : "gpu") +
               ", " + std::to_string(s.device.index) + "), " + std::to_string(s.index) + ")";
      })
      .def("__eq__", [](const ThreadLocalStream& s, py::handle o) {
        return py::isinstance<ThreadLocalStream>(o) && o.cast<ThreadLocalStream>() == s;
      })
      .def("__hash__", [](const ThreadLocalStream& s) { return s.index; });
  py::class_<StreamContext>(m, "StreamContext")
      .def("__enter__", [](StreamContext& c) {
        t_stream_stack.push_back(c.s);
        set_thread_stream(&c.s);
        return c.s;
      })
      .def("__exit__", [](StreamContext&, py::args) {
        if (!t_stream_stack.empty()) t_stream_stack.pop_back();
        set_thread_stream(t_stream_stack.empty() ? nullptr : &t_stream_stack.back());
      });

  m.def("default_device", []() { return default_device(); });
  m.def("set_default_device", &set_default_device, "device"_a);
  m.def("default_stream", &default_stream, "device"_a);
  m.def("set_default_stream", &set_default_stream, "stream"_a);
  m.def("new_stream", &new_stream, "device"_a);
  m.def("new_thread_local_stream", &new_thread_local_stream, "device"_a,
        "Make a stream that is a separate Stream in each thread that uses it.");
  m.def("new_thread_unsafe_stream", &new_thread_unsafe_stream, "device"_a,
        "Make a stream usable from any thread.");
  m.def("stream", [](StreamOrDevice s) { return StreamContext{stream_of(s), false, Stream{}}; }, "s"_a,
        "A context in which ops run on the given stream (or the device's default stream).");
  m.def("synchronize", [](StreamOrDevice s) {
        synchronize(std::holds_alternative<std::monostate>(s) ? current_stream() : to_stream(s));
      }, kStream);
  m.def("clear_streams", &clear_streams);
  m.def("is_available", &is_available, "device"_a);
  m.def("device_count", [](Device::Type t) { return device_count(t); }, "device_type"_a);
  m.def("device_info", [](const std::optional<Device>& d) {
        Device dev = d.value_or(default_device());
        py::dict info;
        if (!is_available(dev)) {
          info["device_name"] = "unavailable";
          info["memory_size"] = 0;
          return info;
        }
        info["device_name"] = "cpu";
        info["architecture"] = "x86_64";
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        info["memory_size"] = static_cast<int64_t>(pages) * page;
        info["num_threads"] = static_cast<int>(std::thread::hardware_concurrency());
        info["isa"] = cpu_config().isa;
        return info;
      }, "d"_a = py::none());
  m.def("__config__", []() {
        CpuConfig c = cpu_config();
        py::dict d;
        d["isa"] = c.isa;
        d["isa_supported"] = c.isa_supported;
        d["isa_levels"] = c.isa_levels;
        d["cpu_features"] = c.features;
        d["isa_dispatch"] = c.dispatch;
        d["amx"] = c.amx;
        d["num_threads"] = c.threads;
        d["version"] = ember::version();
        BlasInfo b = blas_info();
        d["blas"] = py::dict("name"_a = b.name, "config"_a = b.config, "core"_a = b.core,
                             "num_threads"_a = b.threads);
        return d;
      },
      "How this Ember runs on this machine: the kernels' instruction-set level in use\n"
      "(``isa``: baseline, avx2 or avx512; ``native`` for a -march=native build), the best\n"
      "one the CPU supports (``isa_supported``), the levels the build contains, the CPU\n"
      "features the kernels use, whether kernels are chosen at run time\n"
      "(``isa_dispatch``), whether kernels use the AMX tile unit (``amx``; the\n"
      "environment variable ``EMBER_AMX=0`` turns it off), the kernel thread count, Ember's ``version`` and the BLAS\n"
      "library the matrix kernels call (``blas``: name, build string, the kernel set it\n"
      "chose for this CPU, its own thread count). Set the environment variable\n"
      "``EMBER_ISA`` before import to cap the level.");
  m.def("_set_cpu_isa", [](const std::string& level) { return set_cpu_isa(level); }, "level"_a,
        "Cap the kernels' instruction-set level (testing: call it while nothing is evaluating).");
  m.def("_set_amx", [](bool on) { return cpu::set_amx(on); }, "on"_a,
        "Let kernels use the AMX tile unit where the CPU has it, or not; returns the previous\n"
        "setting (testing: call it while nothing is evaluating).");
  auto metal = m.def_submodule("metal", "Apple GPU backend (not available on this platform).");
  metal.def("is_available", []() { return false; });
  auto cuda = m.def_submodule("cuda", "CUDA backend (not available in this build).");
  cuda.def("is_available", []() { return false; });

  // ---- memory ----
  m.def("get_active_memory", []() { return allocator::active_memory(); });
  m.def("get_peak_memory", []() { return allocator::peak_memory(); });
  m.def("reset_peak_memory", []() { allocator::reset_peak_memory(); });
  m.def("get_cache_memory", []() { return allocator::cache_memory(); });
  m.def("clear_cache", []() { allocator::clear_cache(); });
  m.def("get_memory_limit", []() { return allocator::memory_limit(); });
  m.def("set_memory_limit", [](int64_t limit) {
        if (limit < 0) throw std::invalid_argument("[set_memory_limit] The limit must be non-negative.");
        return allocator::set_memory_limit(static_cast<size_t>(limit));
      }, "limit"_a);
  m.def("set_wired_limit", [](size_t limit) { return allocator::set_wired_limit(limit); }, "limit"_a,
        "Set how many bytes of Ember's buffers are locked in RAM (mlock); returns the previous limit.");
  m.def("set_cache_limit", [](int64_t limit) {
        if (limit < 0) throw std::invalid_argument("[set_cache_limit] The limit must be non-negative.");
        return allocator::set_cache_limit(static_cast<size_t>(limit));
      }, "limit"_a);
  m.def("get_array_buffer_size", [](py::args args) {
        wait_async();  // an async_eval job may still be computing them
        int64_t total = 0;
        for (auto a : args) {
          const array& x = a.cast<const array&>();
          if (!x.is_evaluated() || !x.buffer()) {
            throw std::invalid_argument("[get_array_buffer_size] The array is not evaluated.");
          }
          total += static_cast<int64_t>(x.buffer()->size());
        }
        return total;
      });

  // ---- evaluation (eval, async_eval) and the pytree walker ----
  init_trees(m);

  // ---- dtype info ----
  py::class_<FInfo>(m, "finfo")
      .def(py::init([](Dtype t) {
             switch (t) {
               case Dtype::float16: return FInfo{t, -65504.0, 65504.0, 0.0009765625, 6.103515625e-05};
               case Dtype::bfloat16:
                 return FInfo{t, -3.3895313892515355e38, 3.3895313892515355e38, 0.0078125, 1.1754943508222875e-38};
               case Dtype::float32:
               case Dtype::complex64:
                 return FInfo{Dtype::float32, -static_cast<double>(std::numeric_limits<float>::max()),
                              std::numeric_limits<float>::max(), std::numeric_limits<float>::epsilon(),
                              std::numeric_limits<float>::min()};
               case Dtype::float64:
                 return FInfo{t, -std::numeric_limits<double>::max(), std::numeric_limits<double>::max(),
                              std::numeric_limits<double>::epsilon(), std::numeric_limits<double>::min()};
               default:
                 throw std::invalid_argument(std::string("[finfo] dtype ") + dtype_name(t) + " is not inexact.");
             }
           }),
           "dtype"_a)
      .def_readonly("min", &FInfo::min)
      .def_readonly("max", &FInfo::max)
      .def_readonly("eps", &FInfo::eps)
      .def_readonly("tiny", &FInfo::tiny)
      .def_readonly("smallest_normal", &FInfo::tiny)
      .def_readonly("dtype", &FInfo::dtype)
      .def_property_readonly("bits", &FInfo::bits)
      .def("__repr__", [](const FInfo& f) {
        return std::string("finfo(min=") + std::to_string(f.min) + ", max=" + std::to_string(f.max) +
               ", dtype=" + dtype_name(f.dtype) + ")";
      });
  py::class_<IInfo>(m, "iinfo")
      .def(py::init([](Dtype t) {
             if (!is_integral(t)) {
               throw std::invalid_argument(std::string("[iinfo] dtype ") + dtype_name(t) + " is not an integer type.");
             }
             int bits = size_of(t) * 8;
             py::int_ one(1);
             py::object p = one.attr("__lshift__")(is_unsigned(t) ? bits : bits - 1);
             py::int_ mx = py::int_(p.attr("__sub__")(one));
             py::int_ mn = is_unsigned(t) ? py::int_(0) : py::int_(p.attr("__neg__")());
             return IInfo{t, mn, mx};
           }),
           "dtype"_a)
      .def_readonly("min", &IInfo::min)
      .def_readonly("max", &IInfo::max)
      .def_readonly("dtype", &IInfo::dtype)
      .def_property_readonly("bits", [](const IInfo& i) { return size_of(i.dtype) * 8; })
      .def("__repr__", [](const IInfo& i) {
        return std::string("iinfo(min=") + std::string(py::str(i.min)) + ", max=" + std::string(py::str(i.max)) +
               ", dtype=" + dtype_name(i.dtype) + ")";
      });

  // ---- printing ----
  struct PrintOptions {
    int precision;
  };
  py::class_<PrintOptions>(m, "PrintOptions").def_readonly("precision", &PrintOptions::precision);
  m.def("get_printoptions", []() { return PrintOptions{get_print_precision()}; });
  m.def("set_printoptions", [](int precision) { set_print_precision(precision); }, "precision"_a = -1);
  struct PrintOptionsContext {
    int precision, prev = -1;
  };
  py::class_<PrintOptionsContext>(m, "_PrintOptionsContext")
      .def("__enter__", [](PrintOptionsContext& c) {
        c.prev = get_print_precision();
        set_print_precision(c.precision);
      })
      .def("__exit__", [](PrintOptionsContext& c, py::args) { set_print_precision(c.prev); });
  m.def("printoptions", [](int precision) { return PrintOptionsContext{precision}; }, "precision"_a = -1);

  // ---- constants ----
  m.attr("pi") = M_PI;
  m.attr("e") = M_E;
  m.attr("euler_gamma") = 0.5772156649015329;
  m.attr("inf") = std::numeric_limits<double>::infinity();
  m.attr("nan") = std::numeric_limits<double>::quiet_NaN();
  m.attr("newaxis") = py::none();
}

}  // namespace ember::py_bind
