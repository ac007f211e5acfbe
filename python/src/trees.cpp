// Pytrees: the one definition of what is a node and what its children are,
// used by eval / async_eval here and, through ember.core._tree_children, by
// ember.utils (tree_flatten, tree_map, ...) and every transform.
//
// A node is, in this order: an instance of a class registered with
// ember.utils.register_pytree_node (exact type; the registry is
// ember.core._pytree_registry, class -> (flatten, unflatten)), a dict (keys
// in order), a named tuple, a list or a tuple. Anything else is a leaf.
#include <unordered_map>

#include "bindings.h"
#include "ember/compile/compile.h"

namespace ember::py_bind {

namespace {

// class -> (flatten_fn, unflatten_fn); lives as long as the interpreter
py::dict& registry() {
  static py::dict* r = new py::dict();
  return *r;
}

enum class Kind { Leaf, Registered, Dict, DictSubclass, NamedTuple, Sequence };

struct Node {
  Kind kind = Kind::Leaf;
  py::list keys;      // Dict kinds; indices otherwise
  py::list children;  // in order
  py::object aux;     // Registered: flatten's aux data
};

bool is_namedtuple(py::handle t) {
  // a plain tuple is not one (and looking up _fields on it raises and clears an AttributeError)
  return py::isinstance<py::tuple>(t) && !PyTuple_CheckExact(t.ptr()) && py::hasattr(py::type::handle_of(t), "_fields");
}

Kind kind_of(py::handle t) {
  py::handle type = py::type::handle_of(t);
  if (!registry().empty() && registry().contains(type)) return Kind::Registered;
  if (py::isinstance<py::dict>(t)) {
    return type.ptr() == reinterpret_cast<PyObject*>(&PyDict_Type) ? Kind::Dict : Kind::DictSubclass;
  }
  if (is_namedtuple(t)) return Kind::NamedTuple;
  if (py::isinstance<py::list>(t) || py::isinstance<py::tuple>(t)) return Kind::Sequence;
  return Kind::Leaf;
}

// The children of a node (keys only when with_keys).
Node node_of(py::handle h, bool with_keys) {
  auto t = py::reinterpret_borrow<py::object>(h);
  Node n;
  n.kind = kind_of(t);
  switch (n.kind) {
    case Kind::Leaf: return n;
    case Kind::Registered: {
      py::tuple fns = registry()[py::type::handle_of(t)];
      py::tuple r(fns[0](t));
      if (r.size() != 2) {
        throw type_error("[tree] The flatten function of " +
                         std::string(py::str(py::type::handle_of(t).attr("__name__"))) +
                         " must return (children, aux_data).");
      }
      n.children = py::list(r[0]);
      n.aux = r[1];
      break;
    }
    case Kind::Dict:
      for (auto kv : py::reinterpret_borrow<py::dict>(t)) {
        if (with_keys) n.keys.append(kv.first);
        n.children.append(kv.second);
      }
      return n;
    case Kind::DictSubclass:  // OrderedDict & co.: through keys() and [], which they may override
      for (auto k : t.attr("keys")()) {
        if (with_keys) n.keys.append(k);
        n.children.append(t[k]);
      }
      return n;
    case Kind::NamedTuple:
    case Kind::Sequence:
      n.children = py::list(t);
      break;
  }
  if (with_keys) {
    for (size_t i = 0; i < n.children.size(); ++i) n.keys.append(py::int_(i));
  }
  return n;
}

// The node rebuilt from new children, in the same order.
py::object rebuild(const Node& n, py::handle type, const py::object& new_children) {
  py::list kids(new_children);
  switch (n.kind) {
    case Kind::Registered: return py::tuple(registry()[type])[1](n.aux, kids);
    case Kind::Dict:
    case Kind::DictSubclass: {
      py::dict d;
      for (size_t i = 0; i < n.keys.size(); ++i) d[n.keys[i]] = kids[i];
      if (type.ptr() == reinterpret_cast<PyObject*>(&PyDict_Type)) return std::move(d);
      return type(d);
    }
    case Kind::NamedTuple: return type(*kids);
    case Kind::Sequence: return type(kids);
    case Kind::Leaf: break;
  }
  throw std::logic_error("[tree] A leaf has no children.");
}


// compile's walks (python/ember/_compile.py), in collect_arrays' order.
//
// flatten: the array leaves and a hashable description of everything else:
// one token per node (2, kind, type, child count, keys, aux) and per leaf:
// arrays (0, dtype, shape), or (0, dtype, rank) when shapeless; other leaves
// (1, type, value). For arguments (mode 0/1) only None, bool, int, float and
// str leaves are allowed (ValueError otherwise, as MLX); results (mode 2)
// keep any leaf; state (mode 3) records other leaves by their type only.
py::tuple compile_tokens(py::handle tree, int mode, std::vector<array>& arrays) {
  py::list tokens;
  const bool plain_ok = registry().empty();
  std::vector<py::handle> stack{tree};  // borrowed: every item is held by its parent (or the caller)
  std::vector<py::object> keep;         // children lists of registered / subclass nodes
  while (!stack.empty()) {
    py::handle t = stack.back();
    stack.pop_back();
    PyTypeObject* type = Py_TYPE(t.ptr());
    if (is_array(t)) {
      const array& a = t.cast<const array&>();
      py::object shape;
      if (mode == 1) {
        shape = py::int_(a.ndim());
      } else {
        py::tuple sh(a.ndim());
        for (int i = 0; i < a.ndim(); ++i) sh[i] = py::int_(a.shape(i));
        shape = sh;
      }
      tokens.append(py::make_tuple(0, static_cast<int>(a.dtype()), shape));
      arrays.push_back(a);
      continue;
    }
    // the common containers, exactly (the walker's kinds without its general lookups)
    bool exact = plain_ok || !registry().contains(reinterpret_cast<PyObject*>(type));
    if (exact && (type == &PyTuple_Type || type == &PyList_Type)) {
      Py_ssize_t n = PySequence_Fast_GET_SIZE(t.ptr());
      tokens.append(py::make_tuple(2, static_cast<int>(Kind::Sequence), py::handle(reinterpret_cast<PyObject*>(type)),
                                   n, py::none(), py::none()));
      PyObject** items = PySequence_Fast_ITEMS(t.ptr());
      for (Py_ssize_t i = n; i-- > 0;) stack.push_back(items[i]);
      continue;
    }
    if (exact && type == &PyDict_Type) {
      py::tuple keys(PyDict_Size(t.ptr()));
      std::vector<py::handle> vals;
      PyObject *k, *v;
      Py_ssize_t pos = 0, i = 0;
      while (PyDict_Next(t.ptr(), &pos, &k, &v)) {
        keys[i++] = py::reinterpret_borrow<py::object>(k);
        vals.push_back(v);
      }
      tokens.append(py::make_tuple(2, static_cast<int>(Kind::Dict), py::handle(reinterpret_cast<PyObject*>(type)),
                                   vals.size(), keys, py::none()));
      for (size_t j = vals.size(); j-- > 0;) stack.push_back(vals[j]);
      continue;
    }
    Node n = node_of(t, true);
    if (n.kind == Kind::Leaf) {
      if (mode == 3) {  // state: other leaves only by type
        tokens.append(py::make_tuple(1, py::type::handle_of(t)));
        continue;
      }
      if (mode != 2 && !(t.is_none() || py::isinstance<py::bool_>(t) || py::isinstance<py::int_>(t) ||
                         py::isinstance<py::float_>(t) || py::isinstance<py::str>(t))) {
        throw std::invalid_argument(
            "[compile] Function arguments must be trees of arrays or constants (floats, ints, strings, or None), "
            "but received type " + std::string(py::str(py::type::handle_of(t).attr("__name__"))) + ".");
      }
      tokens.append(py::make_tuple(1, py::type::handle_of(t), t));
      continue;
    }
    bool keyed = n.kind == Kind::Dict || n.kind == Kind::DictSubclass;
    tokens.append(py::make_tuple(2, static_cast<int>(n.kind), py::type::handle_of(t), n.children.size(),
                                 keyed ? py::object(py::tuple(n.keys)) : py::object(py::none()),
                                 n.aux ? n.aux : py::object(py::none())));
    for (size_t i = n.children.size(); i-- > 0;) stack.push_back(n.children[i]);
    keep.push_back(n.children);
  }
  return py::tuple(tokens);
}

py::tuple compile_flatten(py::handle tree, int mode) {
  std::vector<array> arrays;
  py::tuple tokens = compile_tokens(tree, mode, arrays);
  return py::make_tuple(py::cast(arrays), tokens);
}

// The tree of flatten's tokens with its array leaves taken from `arrays` in order.
py::object compile_unflatten(const py::tuple& tokens, const std::vector<array>& arrays) {
  size_t pos = 0, next_array = 0;
  // explicit stack of partially built nodes: (token, children so far)
  struct Frame {
    py::tuple token;
    size_t want;
    py::list kids;
  };
  std::vector<Frame> frames;
  py::object done;
  auto finish = [&](py::object value) {
    while (true) {
      if (frames.empty()) {
        done = std::move(value);
        return;
      }
      frames.back().kids.append(value);
      if (frames.back().kids.size() < frames.back().want) return;
      Frame f = std::move(frames.back());
      frames.pop_back();
      Node n;
      n.kind = static_cast<Kind>(f.token[1].cast<int>());
      if (!f.token[4].is_none()) n.keys = py::list(f.token[4]);
      n.aux = f.token[5];
      value = rebuild(n, f.token[2], f.kids);
    }
  };
  while (pos < tokens.size() && !done) {
    py::tuple tok = tokens[pos++];
    int tag = tok[0].cast<int>();
    if (tag == 0) {
      if (next_array >= arrays.size()) throw std::logic_error("[compile] Too few arrays to rebuild the tree.");
      finish(py::cast(arrays[next_array++]));
    } else if (tag == 1) {
      finish(tok[2]);
    } else {
      size_t want = tok[3].cast<size_t>();
      Node n;
      n.kind = static_cast<Kind>(tok[1].cast<int>());
      if (want == 0) {
        if (!tok[4].is_none()) n.keys = py::list(tok[4]);
        n.aux = tok[5];
        finish(rebuild(n, tok[2], py::list()));
      } else {
        frames.push_back(Frame{tok, want, py::list()});
      }
    }
  }
  return done;
}

// Replaces the array leaves of the mutable containers (lists, dicts) of
// `tree`, in collect_arrays' order: with `arrays` in order, or, when `from`
// is given, only the leaves that are one of `from` by the matching `arrays`
// item. An array leaf held by a tuple, a registered node or the tree itself
// cannot be replaced (TypeError).
void compile_fill(py::handle tree, const std::vector<array>& arrays, const std::optional<std::vector<array>>& from) {
  std::unordered_map<const ArrayDesc*, size_t> match;
  if (from) {
    for (size_t i = 0; i < from->size(); ++i) match.emplace((*from)[i].desc().get(), i);
  }
  size_t next = 0;
  struct Item {
    py::object parent, key, child;
  };
  std::vector<Item> stack{{py::none(), py::none(), py::reinterpret_borrow<py::object>(tree)}};
  while (!stack.empty()) {
    Item it = std::move(stack.back());
    stack.pop_back();
    if (is_array(it.child)) {
      size_t idx;
      if (from) {
        auto m = match.find(it.child.cast<array>().desc().get());
        if (m == match.end()) continue;
        idx = m->second;
      } else {
        idx = next++;
        if (idx >= arrays.size()) throw std::invalid_argument("[compile] The state has more arrays than the compiled function returns for it.");
      }
      bool mutable_parent = !it.parent.is_none() && (py::isinstance<py::list>(it.parent) || py::isinstance<py::dict>(it.parent));
      if (!mutable_parent) {
        throw type_error("[compile] State arrays must be held by lists or dicts (a model, an optimizer's state, "
                         "random.state), not by a " +
                         std::string(py::str(py::type::handle_of(it.parent.is_none() ? it.child : it.parent).attr("__name__"))) +
                         ", so that the compiled function can update them.");
      }
      it.parent[it.key] = py::cast(arrays[idx]);
      continue;
    }
    Node n = node_of(it.child, true);
    for (size_t i = n.children.size(); i-- > 0;) stack.push_back(Item{it.child, n.keys[i], n.children[i]});
  }
  if (!from && next != arrays.size()) {
    throw std::invalid_argument("[compile] The state has fewer arrays than the compiled function returns for it.");
  }
}

}  // namespace

void collect_arrays(py::handle tree, std::vector<array>& out) {
  std::vector<py::object> stack{py::reinterpret_borrow<py::object>(tree)};
  while (!stack.empty()) {
    py::object t = std::move(stack.back());
    stack.pop_back();
    if (is_array(t)) {
      out.push_back(t.cast<array>());
      continue;
    }
    Node n = node_of(t, false);
    for (size_t i = n.children.size(); i-- > 0;) stack.push_back(n.children[i]);
  }
}

namespace {
// eval's arguments: collect_arrays of the tuple, with array arguments (the
// common call, mx.eval(y)) taken straight away
void collect_args(const py::args& args, std::vector<array>& out) {
  out.reserve(args.size());
  for (py::handle a : args) {
    if (is_array(a))
      out.push_back(a.cast<array>());
    else
      collect_arrays(a, out);
  }
}
}  // namespace

void init_trees(py::module_& m) {
  // a thread that waits for the asynchronous worker lets go of the GIL: the
  // worker may need it to free a buffer borrowed from Python
  set_blocking_hook([](const std::function<void()>& wait) {
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      wait();
    } else {
      wait();
    }
  });
  m.attr("_pytree_registry") = registry();
  m.def(
      "_tree_children",
      [](py::handle tree) -> py::object {
        Node n = node_of(tree, true);
        if (n.kind == Kind::Leaf) return py::none();
        py::list pairs;
        for (size_t i = 0; i < n.children.size(); ++i) pairs.append(py::make_tuple(n.keys[i], n.children[i]));
        py::object type = py::reinterpret_borrow<py::object>(py::type::handle_of(tree));
        py::cpp_function rebuild_fn([n, type](const py::object& new_children) { return rebuild(n, type, new_children); });
        return py::make_tuple(pairs, rebuild_fn);
      },
      "tree"_a,
      "(key, child) pairs of a node and a function rebuilding the node from new\n"
      "children (in the same order); None for a leaf.");
  m.def("_compile_flatten", &compile_flatten, "tree"_a, "mode"_a,
        "compile: (array leaves, hashable tokens of the rest); mode 0: arguments, 1: arguments (shapeless), "
        "2: results, 3: state.");
  m.def("_compile_unflatten", &compile_unflatten, "tokens"_a, "arrays"_a,
        "compile: the tree of _compile_flatten's tokens with these array leaves.");
  m.def("_compile_fill", &compile_fill, "tree"_a, "arrays"_a, "replace"_a = py::none(),
        "compile: replace the array leaves of the tree's lists and dicts in place (all, in order; or those "
        "that are one of `replace`).");
  // compile's fast path: a call whose argument tokens are a key of `cache`
  // (tokens -> (tape, result tokens)) replayed without going through Python;
  // None on a miss (the Python path then traces and fills the cache).
  m.def("_compile_fast_call", [](py::dict cache, py::tuple args, py::dict kwargs, int mode) -> py::object {
        std::vector<array> arrays;
        py::tuple tokens = compile_tokens(py::make_tuple(args, kwargs), mode, arrays);
        PyObject* hit = PyDict_GetItemWithError(cache.ptr(), tokens.ptr());
        if (!hit) {
          if (PyErr_Occurred()) throw py::error_already_set();
          return py::none();
        }
        py::tuple entry = py::reinterpret_borrow<py::tuple>(hit);
        const auto& tape = entry[0].cast<const compiler::Tape&>();
        std::vector<array> outs = compiler::replay(tape, arrays);
        return py::make_tuple(compile_unflatten(entry[1].cast<py::tuple>(), outs));
      }, "cache"_a, "args"_a, "kwargs"_a, "mode"_a,
      "compile: the replayed result (in a 1-tuple) of a call whose key is in the cache; None on a miss.");
  m.def(
      "eval",
      [](py::args args) {
        std::vector<array> arrays;
        collect_args(args, arrays);
        eval_nogil(arrays);
      });
  // a job still running when the interpreter shuts down would compute while
  // Python and the engine's statics go away: wait for it first
  py::module_::import("atexit").attr("register")(py::cpp_function([] { wait_async(); }));
  m.def("_set_sibling_batches", &set_sibling_batches, "on"_a,
        "Turns eval's sibling batches (several products of one x as one kernel call) on or off (also "
        "EMBER_SIBLING_BATCHES=0); returns the setting before. For measuring what they give.");
  m.def(
      "_eval_stats",
      [] {
        EvalStats s = eval_stats();
        py::dict d;
        d["async_jobs"] = s.async_jobs;
        d["comm_offloaded"] = s.comm_offloaded;
        d["comm_inline"] = s.comm_inline;
        d["batched"] = s.batched;
        return d;
      },
      "Evaluation counters (for tests and benchmarks): async_jobs, the async_eval jobs handed to the "
      "asynchronous worker; comm_offloaded and comm_inline, the collectives run on the communication "
      "thread and on the evaluating thread; batched, the nodes run in a batch of siblings (one kernel "
      "call for several products of one x).");
  m.def(
      "async_eval",
      [](py::args args) {
        std::vector<array> arrays;
        collect_args(args, arrays);
        py::gil_scoped_release release;
        async_eval(arrays);
      });
}

}  // namespace ember::py_bind
