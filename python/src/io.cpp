// Saving and loading (the io area): mx.save, savez, savez_compressed,
// save_safetensors, save_gguf and load over csrc/ember/io/. Paths are mapped
// and written atomically by the engine; Python file objects are read whole
// (load) or written chunk by chunk through their write() (save).
#include <Python.h>

#include "bindings.h"
#include "ember/io/io.h"

namespace ember::py_bind {

namespace {

std::optional<std::string> as_path(py::handle f) {
  if (py::isinstance<py::str>(f) || py::hasattr(f, "__fspath__")) {
    py::object p = py::module_::import("os").attr("fspath")(f);
    if (py::isinstance<py::str>(p)) return p.cast<std::string>();
  }
  return std::nullopt;
}

// The descriptor of a binary file object positioned at the start of a
// regular file (mapped instead of read), if it is one.
std::optional<int> mappable_fd(py::handle f) {
  try {
    if (!py::hasattr(f, "fileno") || !py::hasattr(f, "tell") || !py::hasattr(f, "seek")) return std::nullopt;
    if (py::hasattr(f, "mode") && py::str(f.attr("mode")).cast<std::string>().find('b') == std::string::npos)
      return std::nullopt;
    if (f.attr("tell")().cast<int64_t>() != 0) return std::nullopt;
    int fd = f.attr("fileno")().cast<int>();
    py::object st = py::module_::import("os").attr("fstat")(fd);
    if (!py::module_::import("stat").attr("S_ISREG")(st.attr("st_mode")).cast<bool>()) return std::nullopt;
    return fd;
  } catch (py::error_already_set&) {  // io.UnsupportedOperation and the like: read it instead
    return std::nullopt;
  }
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The format a name's extension gives ("" without one).
std::string extension(const std::string& name) {
  size_t slash = name.find_last_of('/');
  size_t dot = name.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  return name.substr(dot + 1);
}

// Runs `save` into the file: a path (suffix added as MLX does) or an object
// with write().
void save_to(py::handle file, const std::string& suffix, const char* op, const std::vector<array>& arrays,
             const std::function<void(const io::Writer&)>& save) {
  eval_nogil(arrays);
  if (auto path = as_path(file)) {
    std::string p = ends_with(*path, suffix) ? *path : *path + suffix;
    py::gil_scoped_release nogil;
    io::write_file_atomic(p, save, op);
    return;
  }
  if (!py::hasattr(file, "write"))
    throw std::invalid_argument(std::string("[") + op + "] Input must be a file-like object, or string");
  py::object write = file.attr("write");
  io::Writer w = [&](const void* data, size_t n) {
    if (n == 0) return;
    write(py::memoryview::from_memory(const_cast<void*>(data), static_cast<py::ssize_t>(n), true));
  };
  save(w);
}

array as_array_arg(py::handle v, const char* op, const std::string& name) {
  if (!is_array(v))
    throw type_error(std::string("[") + op + "] '" + name + "' is not an array (got " +
                     py::str(py::type::of(v).attr("__name__")).cast<std::string>() + ")");
  return v.cast<array>();
}

io::NamedArrays npz_arrays(const py::args& args, const py::kwargs& kwargs, const char* op) {
  io::NamedArrays out;
  for (size_t k = 0; k < args.size(); ++k) {
    std::string name = "arr_" + std::to_string(k);
    out.emplace_back(name, as_array_arg(args[k], op, name));
  }
  for (auto [key, v] : kwargs) {
    std::string name = key.cast<std::string>();
    for (auto& e : out)
      if (e.first == name)
        throw std::invalid_argument(std::string("[") + op + "] Cannot use un-named variables and keyword " + name);
    out.emplace_back(name, as_array_arg(v, op, name));
  }
  return out;
}

io::NamedArrays dict_arrays(const py::dict& d, const char* op) {
  io::NamedArrays out;
  for (auto [k, v] : d) {
    if (!py::isinstance<py::str>(k)) throw type_error(std::string("[") + op + "] array names must be strings");
    std::string name = k.cast<std::string>();
    out.emplace_back(name, as_array_arg(v, op, name));
  }
  return out;
}

std::vector<array> values(const io::NamedArrays& a) {
  std::vector<array> out;
  for (auto& e : a) out.push_back(e.second);
  return out;
}

py::dict to_dict(const io::NamedArrays& a) {
  py::dict d;
  for (auto& [k, v] : a) d[py::str(k)] = py::cast(v);
  return d;
}

}  // namespace

void init_io(py::module_& m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const io::os_error& e) {
      // OSError(errno, message) becomes the matching subclass (FileNotFoundError, ...)
      PyObject* args = Py_BuildValue("(is)", e.err(), e.what());
      PyErr_SetObject(PyExc_OSError, args);
      Py_XDECREF(args);
    }
  });

  m.def(
      "save",
      [](py::object file, const array& arr) {
        save_to(file, ".npy", "save", {arr}, [&](const io::Writer& w) { io::save_npy(arr, w); });
      },
      "file"_a, "arr"_a);

  auto savez = [](bool compressed) {
    return [compressed](py::object file, py::args args, py::kwargs kwargs) {
      const char* op = compressed ? "savez_compressed" : "savez";
      io::NamedArrays arrays = npz_arrays(args, kwargs, op);
      save_to(file, ".npz", op, values(arrays),
              [&](const io::Writer& w) { io::save_npz(arrays, compressed, w); });
    };
  };
  m.def("savez", savez(false), "file"_a);
  m.def("savez_compressed", savez(true), "file"_a);

  m.def(
      "save_safetensors",
      [](py::object file, py::dict arrays, std::optional<py::object> metadata) {
        io::NamedArrays a = dict_arrays(arrays, "save_safetensors");
        io::StringMap meta;
        if (metadata && !metadata->is_none()) {
          const char* bad = "[save_safetensors] Metadata must be a dictionary with string keys and values";
          if (!py::isinstance<py::dict>(*metadata)) throw std::invalid_argument(bad);
          for (auto [k, v] : py::reinterpret_borrow<py::dict>(*metadata)) {
            if (!py::isinstance<py::str>(k) || !py::isinstance<py::str>(v)) throw std::invalid_argument(bad);
            meta.emplace_back(k.cast<std::string>(), v.cast<std::string>());
          }
        }
        save_to(file, ".safetensors", "save_safetensors", values(a),
                [&](const io::Writer& w) { io::save_safetensors(a, meta, w); });
      },
      "file"_a, "arrays"_a, "metadata"_a = py::none());

  m.def(
      "save_gguf",
      [](py::object file, py::dict arrays, py::dict metadata) {
        io::NamedArrays a = dict_arrays(arrays, "save_gguf");
        io::GgufMetadata meta;
        std::vector<array> all = values(a);
        for (auto [k, v] : metadata) {
          if (!py::isinstance<py::str>(k)) throw type_error("[save_gguf] metadata keys must be strings");
          std::string key = k.cast<std::string>();
          io::GgufValue gv;
          if (py::isinstance<py::str>(v)) {
            gv.kind = io::GgufValue::String;
            gv.str = v.cast<std::string>();
          } else if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
            gv.kind = io::GgufValue::Strings;
            for (auto s : py::reinterpret_borrow<py::sequence>(v)) {
              if (!py::isinstance<py::str>(s))
                throw type_error("[save_gguf] metadata '" + key + "': a list must hold only strings");
              gv.strs.push_back(s.cast<std::string>());
            }
          } else if (is_array(v)) {
            gv.arr = v.cast<array>();
            all.push_back(gv.arr);
          } else {
            throw type_error("[save_gguf] metadata '" + key + "' must be an array, a string or a list of strings");
          }
          meta.emplace_back(std::move(key), std::move(gv));
        }
        save_to(file, ".gguf", "save_gguf", all, [&](const io::Writer& w) { io::save_gguf(a, meta, w); });
      },
      "file"_a, "arrays"_a, "metadata"_a);

  m.def(
      "load",
      [](py::object file, std::optional<std::string> format, bool return_metadata, StreamOrDevice) -> py::object {
        io::Source src;
        std::string name;
        auto path = as_path(file);
        if (path) {
          name = *path;
        } else if (py::hasattr(file, "read")) {
          if (py::hasattr(file, "name") && py::isinstance<py::str>(file.attr("name")))
            name = file.attr("name").cast<std::string>();
        } else {
          throw std::invalid_argument("[load] Input must be a file-like object opened in binary mode, or string");
        }
        std::string fmt = format ? *format : extension(name);
        if (fmt.empty()) throw std::invalid_argument("[load] Could not infer file format from extension");
        if (fmt != "npy" && fmt != "npz" && fmt != "safetensors" && fmt != "gguf")
          throw std::invalid_argument("[load] Unknown file format " + fmt);
        if (return_metadata && (fmt == "npy" || fmt == "npz"))
          throw std::invalid_argument("[load] metadata not supported for format " + fmt);
        if (path) {
          py::gil_scoped_release nogil;
          src = io::map_file(*path, "load");
        } else if (auto fd = mappable_fd(file)) {
          // a regular file at its start: mapped like a path, read to its end
          src = io::map_fd(*fd, name.empty() ? "<file object>" : name, "load");
          file.attr("seek")(0, 2);
        } else {
          py::object data = file.attr("read")();
          if (!py::isinstance<py::bytes>(data))
            throw std::invalid_argument("[load] Input must be a file-like object opened in binary mode, or string");
          src = io::memory_source(data.cast<std::string>(), name.empty() ? "<file object>" : name);
        }
        if (fmt == "npy") {
          array a;
          {
            py::gil_scoped_release nogil;
            a = io::load_npy(src);
          }
          return py::cast(a);
        }
        if (fmt == "npz") {
          io::NamedArrays a;
          {
            py::gil_scoped_release nogil;
            a = io::load_npz(src);
          }
          return to_dict(a);
        }
        if (fmt == "safetensors") {
          io::Safetensors st;
          {
            py::gil_scoped_release nogil;
            st = io::load_safetensors(src);
          }
          py::dict arrays = to_dict(st.arrays);
          if (!return_metadata) return arrays;
          py::dict meta;
          for (auto& [k, v] : st.metadata) meta[py::str(k)] = py::str(v);
          return py::make_tuple(arrays, meta);
        }
        io::Gguf g;
        {
          py::gil_scoped_release nogil;
          g = io::load_gguf(src);
        }
        py::dict arrays = to_dict(g.arrays);
        if (!return_metadata) return arrays;
        py::dict meta;
        for (auto& [k, v] : g.metadata) {
          if (v.kind == io::GgufValue::String) meta[py::str(k)] = py::str(v.str);
          else if (v.kind == io::GgufValue::Strings) meta[py::str(k)] = py::cast(v.strs);
          else meta[py::str(k)] = py::cast(v.arr);
        }
        return py::make_tuple(arrays, meta);
      },
      "file"_a, py::pos_only(), "format"_a = py::none(), "return_metadata"_a = false, py::kw_only(), kStream);
}

}  // namespace ember::py_bind
