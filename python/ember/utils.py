"""Pytrees: nested lists, tuples (named tuples too), dicts and registered
classes whose leaves are arrays or any other values.

    params = {"w": mx.ones((2, 2)), "layers": [mx.zeros(3), mx.zeros(3)]}
    tree_flatten(params)     # [("w", ...), ("layers.0", ...), ("layers.1", ...)]
    tree_map(lambda p: p * 2, params)

``register_pytree_node(cls, flatten, unflatten)`` makes instances of a user
class a node (JAX's convention: ``flatten(obj) -> (children, aux)`` and
``unflatten(aux, children) -> obj``); every ``tree_*`` function and every
transform (grad, vmap, ...) then walks into it like into a list.
"""

import functools
from typing import Any, Callable, Dict, List, Optional, Tuple, Union, overload

from . import core as _core

__all__ = [
    "register_pytree_node",
    "tree_flatten",
    "tree_unflatten",
    "tree_map",
    "tree_map_with_path",
    "tree_reduce",
    "tree_merge",
]

# class -> (flatten_fn, unflatten_fn), read by the one pytree walker in the
# core (core._tree_children below, and mx.eval / mx.async_eval)
_registry: Dict[type, Tuple[Callable, Callable]] = _core._pytree_registry


def _compiled_on_arrays(fn: Callable) -> Callable:
    """``fn`` compiled with ``shapeless=True`` when its first argument is an
    array (its other non-array arguments static), else ``fn`` as it is (a
    Python number, a NumPy array): the fused helpers of ``nn`` (activations,
    cross entropy's logsumexp) and ``optimizers`` (Adam's step), as MLX
    compiles its activations. Inside an enclosing compiled function it is
    inlined and fused with its neighbours."""
    compiled = _core.compile(fn, shapeless=True)

    @functools.wraps(fn)
    def call(x, *args, **kwargs):
        if isinstance(x, _core.array):
            return compiled(x, *args, **kwargs)
        return fn(x, *args, **kwargs)
    return call


def register_pytree_node(cls: type, flatten_fn: Callable, unflatten_fn: Callable) -> None:
    """Registers a class as a pytree node.

    Afterwards every ``tree_*`` function, :func:`ember.core.eval` and every
    transform walk into instances of ``cls`` as they walk into lists. The
    convention is JAX's.

    Args:
        cls (type): the class; list, tuple and dict are nodes already
            (ValueError).
        flatten_fn (Callable): ``flatten_fn(obj) -> (children, aux_data)``:
            the children (a sequence of subtrees) and whatever else is
            needed to rebuild the object.
        unflatten_fn (Callable): ``unflatten_fn(aux_data, children) -> obj``.

    Returns:
        None

    Example:
        >>> class Pair:
        ...     def __init__(self, a, b):
        ...         self.a, self.b = a, b
        >>> register_pytree_node(Pair, lambda p: ((p.a, p.b), None), lambda aux, kids: Pair(*kids))
        >>> [v for _, v in tree_flatten(Pair(1, 2))]
        [1, 2]
    """
    if not isinstance(cls, type):
        raise TypeError(f"[register_pytree_node] Expected a class, got {type(cls).__name__}.")
    if cls in (list, tuple, dict):
        raise ValueError(f"[register_pytree_node] {cls.__name__} is already a pytree node.")
    _registry[cls] = (flatten_fn, unflatten_fn)


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


# (key, child) pairs of a node and a function rebuilding it from new children;
# None for a leaf. What a node is (registered classes, dicts, named tuples,
# lists, tuples) is defined once, in python/src/trees.cpp.
_children = _core._tree_children


def _node(tree: Any, is_leaf: Optional[Callable]) -> Any:
    if is_leaf is not None and is_leaf(tree):
        return None
    return _children(tree)


@overload
def tree_flatten(tree: Any, prefix: str = "", is_leaf: Optional[Callable] = None,
                 destination: Optional[List[Tuple[str, Any]]] = None) -> List[Tuple[str, Any]]: ...
@overload
def tree_flatten(tree: Any, prefix: str = "", is_leaf: Optional[Callable] = None, *,
                 destination: Dict[str, Any]) -> Dict[str, Any]: ...
@overload
def tree_flatten(tree: Any, prefix: str, is_leaf: Optional[Callable],
                 destination: Dict[str, Any]) -> Dict[str, Any]: ...


def tree_flatten(tree: Any, prefix: str = "", is_leaf: Optional[Callable] = None,
                 destination: Union[List[Tuple[str, Any]], Dict[str, Any], None] = None
                 ) -> Union[List[Tuple[str, Any]], Dict[str, Any]]:
    """The leaves of a tree with their dotted paths.

    A path joins the keys from the root with dots: list and tuple positions
    and dict keys (``"layers.0.w"``). The leaves come in depth-first order.

    Args:
        tree: the tree (lists, tuples, dicts, registered nodes; anything
            else is a leaf).
        prefix (str): prepended to every path; as in MLX it is written with a
            leading dot, which is dropped (``".model"`` gives
            ``"model.layers.0"``). Default: ``""``.
        is_leaf (Callable, optional): ``is_leaf(subtree) -> bool``; a subtree
            for which it is true is a leaf. Default: None.
        destination (list or dict, optional): where to add the pairs (a dict
            maps path to leaf). Default: None, a new list.

    Returns:
        list or dict: the ``(path, leaf)`` pairs (``destination`` when given).

    Example:
        >>> tree_flatten({"w": 1, "layers": [2, 3]})
        [('w', 1), ('layers.0', 2), ('layers.1', 3)]
    """
    out = destination if destination is not None else []
    add = out.__setitem__ if isinstance(out, dict) else (lambda k, v: out.append((k, v)))
    stack = [(prefix, tree)]
    while stack:
        path, t = stack.pop()
        node = _node(t, is_leaf)
        if node is None:
            add(path[1:], t)  # paths are built as prefix + "." + key: drop the first character
            continue
        kids, _ = node
        for k, child in reversed(kids):
            stack.append((f"{path}.{k}", child))
    return out


def tree_unflatten(tree: Union[List[Tuple[str, Any]], Dict[str, Any]]) -> Any:
    """Rebuilds a tree of lists and dicts from ``(path, value)`` pairs.

    The inverse of :func:`tree_flatten` for trees of lists and dicts: a node
    whose keys are all numbers becomes a list, any other a dict. A single
    pair with the empty path gives its value.

    Args:
        tree (list or dict): the ``(path, value)`` pairs, or a dict from path
            to value.

    Returns:
        the rebuilt tree.

    Example:
        >>> tree_unflatten([("a.0", 1), ("a.1", 2), ("b", 3)])
        {'a': [1, 2], 'b': 3}
        >>> tree_unflatten([("a.1", 2)])
        {'a': [{}, 2]}
    """
    items = list(tree.items()) if isinstance(tree, dict) else list(tree)
    if len(items) == 1 and items[0][0] == "":
        return items[0][1]
    root: Dict[str, Any] = {}
    for path, value in items:
        keys = path.split(".")
        d = root
        for k in keys[:-1]:
            d = d.setdefault(k, {})
        d[keys[-1]] = value

    def build(d: Any) -> Any:
        if not isinstance(d, dict):
            return d
        if d and all(k.isdigit() for k in d):
            # a list; positions no path names are empty dicts (as MLX), so
            # that a list split across several trees keeps its positions
            n = max(int(k) for k in d) + 1
            out: List[Any] = [{} for _ in range(n)]
            for k, v in d.items():
                out[int(k)] = build(v)
            return out
        return {k: build(v) for k, v in d.items()}

    return build(root)


def tree_map(fn: Callable, tree: Any, *rest: Any, is_leaf: Optional[Callable] = None) -> Any:
    """Applies a function to every leaf of a tree, keeping its structure.

    Args:
        fn (Callable): called as ``fn(leaf, *matching)`` for each leaf.
        tree: the tree that gives the structure.
        *rest: more trees, each with at least the structure of ``tree``; the
            subtree of each at a leaf's position is passed along with it.
        is_leaf (Callable, optional): ``is_leaf(subtree) -> bool``; a subtree
            for which it is true is a leaf. Default: None.

    Returns:
        a tree of the structure of ``tree`` holding ``fn``'s results.

    Example:
        >>> tree_map(lambda x, y: x + y, [1, 2], [10, 20])
        [11, 22]
    """
    node = _node(tree, is_leaf)
    if node is None:
        return fn(tree, *rest)
    kids, rebuild = node
    new = []
    for k, child in kids:
        new.append(tree_map(fn, child, *(_child_of(r, k, tree) for r in rest), is_leaf=is_leaf))
    return rebuild(new)


def _child_of(other: Any, key: Any, like: Any) -> Any:
    if type(like) in _registry:
        return _children(other)[0][key][1]
    return other[key]


def tree_map_with_path(fn: Callable, tree: Any, *rest: Any, is_leaf: Optional[Callable] = None,
                       path: Optional[Any] = None) -> Any:
    """Like :func:`tree_map`, passing each leaf's dotted path first.

    Args:
        fn (Callable): called as ``fn(path, leaf, *matching)``.
        tree: the tree that gives the structure.
        *rest: more trees, each with at least the structure of ``tree``.
        is_leaf (Callable, optional): ``is_leaf(subtree) -> bool``; a subtree
            for which it is true is a leaf. Default: None.
        path (str, optional): the path of ``tree`` itself, prepended to the
            leaves' paths. Default: None, the root.

    Returns:
        a tree of the structure of ``tree`` holding ``fn``'s results.

    Example:
        >>> tree_map_with_path(lambda p, x: p, {"a": [1, 2]})
        {'a': ['a.0', 'a.1']}
    """
    node = _node(tree, is_leaf)
    if node is None:
        return fn(path, tree, *rest)
    kids, rebuild = node
    new = []
    for k, child in kids:
        p = f"{path}.{k}" if path is not None else str(k)
        new.append(tree_map_with_path(fn, child, *(_child_of(r, k, tree) for r in rest), is_leaf=is_leaf,
                                      path=p))
    return rebuild(new)


_NO_INIT = object()


def tree_reduce(fn: Callable, tree: Any, initializer: Any = None, is_leaf: Optional[Callable] = None) -> Any:
    """Folds a function over the leaves of a tree, in order.

    Args:
        fn (Callable): ``fn(accumulator, leaf) -> accumulator``.
        tree: the tree.
        initializer (optional): the starting accumulator. Default: None, the
            first leaf starts the fold.
        is_leaf (Callable, optional): ``is_leaf(subtree) -> bool``; a subtree
            for which it is true is a leaf. Default: None.

    Returns:
        the final accumulator (None for a tree without leaves and no
        initializer).

    Example:
        >>> tree_reduce(lambda acc, x: acc + x, [1, [2, 3]])
        6
    """
    acc = _NO_INIT if initializer is None else initializer
    for _, leaf in tree_flatten(tree, is_leaf=is_leaf):
        acc = leaf if acc is _NO_INIT else fn(acc, leaf)
    return None if acc is _NO_INIT else acc


def tree_merge(tree_a: Any, tree_b: Any, merge_fn: Optional[Callable] = None) -> Any:
    """Merges two trees whose filled positions do not overlap.

    An empty position is None or an empty container; the other tree's
    subtree fills it. Dicts merge by key; lists and tuples, which must have
    the same length, position by position.

    Args:
        tree_a: the first tree.
        tree_b: the second tree.
        merge_fn (Callable, optional): ``merge_fn(a, b)`` resolves a position
            filled in both trees. Default: None, such a position raises
            ValueError.

    Returns:
        the merged tree.

    Example:
        >>> tree_merge({"a": 1}, {"b": 2})
        {'b': 2, 'a': 1}
    """

    def empty(t: Any) -> bool:
        return t is None or (isinstance(t, (list, tuple, dict)) and len(t) == 0)

    if empty(tree_a):
        return tree_b
    if empty(tree_b):
        return tree_a
    if isinstance(tree_a, dict) and isinstance(tree_b, dict):
        out = {}
        for k in list(tree_b.keys()) + [k for k in tree_a.keys() if k not in tree_b]:
            out[k] = tree_merge(tree_a.get(k), tree_b.get(k), merge_fn)
        return out
    if isinstance(tree_a, (list, tuple)) and isinstance(tree_b, (list, tuple)):
        if len(tree_a) != len(tree_b):
            raise ValueError("Trees contain sequences of different lengths at the same location "
                             f"({len(tree_a)} and {len(tree_b)}).")
        merged = [tree_merge(a, b, merge_fn) for a, b in zip(tree_a, tree_b)]
        return type(tree_a)(*merged) if _is_namedtuple(tree_a) else type(tree_a)(merged)
    if merge_fn is None:
        raise ValueError("Trees contain elements at the same locations but no merge function was provided.")
    return merge_fn(tree_a, tree_b)
