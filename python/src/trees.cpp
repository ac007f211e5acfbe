// Pytrees: the one definition of what is a node and what its children are,
// used by eval / async_eval here and, through ember.core._tree_children, by
// ember.utils (tree_flatten, tree_map, ...) and every transform.
//
// A node is, in this order: an instance of a class registered with
// ember.utils.register_pytree_node (exact type; the registry is
// ember.core._pytree_registry, class -> (flatten, unflatten)), a dict (keys
// in order), a named tuple, a list or a tuple. Anything else is a leaf.
#include "bindings.h"

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
  return py::isinstance<py::tuple>(t) && py::hasattr(py::type::handle_of(t), "_fields");
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

void init_trees(py::module_& m) {
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
  m.def(
      "eval",
      [](py::args args) {
        std::vector<array> arrays;
        collect_arrays(args, arrays);
        eval_nogil(arrays);
      });
  m.def(
      "async_eval",
      [](py::args args) {
        std::vector<array> arrays;
        collect_arrays(args, arrays);
        py::gil_scoped_release release;
        async_eval(arrays);
      });
}

}  // namespace ember::py_bind
