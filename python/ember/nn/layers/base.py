"""``Module``: the base class of every layer.

A module is a dict. Setting an attribute to an array, a dict, a list or a
tuple stores it as an item (``self.weight = ...`` is ``self["weight"] =
...``), so the parameters and the child modules are the dict's contents and
a model is a pytree that ``ember.utils`` and ``ember.core.eval`` walk like any
nested dict. Other attributes (numbers, strings, functions, the module's
own settings) are ordinary attributes.

The traversals follow MLX: ``filter_and_map`` walks the items (through
nested dicts, lists and modules), calling ``filter_fn(module, key, value)``
with the dotted key relative to the module that owns the container; an
item a filter drops is left out at the top of a module and becomes ``{}``
inside a container, so positions in lists are kept.
"""

import textwrap
from typing import Any, Callable, Dict, List, Optional, Set, Tuple, Union

from ember import core as mx
from ember.utils import tree_flatten, tree_unflatten

__all__ = ["Module"]


def _default_is_leaf(module: "Module", key: str, value: Any) -> bool:
    return not isinstance(value, (Module, dict, list))


def _identity(x: Any) -> Any:
    return x


def _floating(dtype: mx.Dtype) -> bool:
    return mx.issubdtype(dtype, mx.floating)


def _unwrap(owner: "Module", key: str, value: Any, filter_fn: Callable[["Module", str, Any], bool],
            map_fn: Callable[[Any], Any], is_leaf_fn: Callable[["Module", str, Any], bool]) -> Any:
    """One item of ``owner`` (a dotted ``key`` below it) filtered and mapped."""
    if is_leaf_fn(owner, key, value):
        return map_fn(value)
    if isinstance(value, Module):
        return value.filter_and_map(filter_fn, map_fn, is_leaf_fn)
    if isinstance(value, dict):
        out: Any = {}
        for k, v in value.items():
            path = f"{key}.{k}"
            out[k] = _unwrap(owner, path, v, filter_fn, map_fn, is_leaf_fn) \
                if filter_fn(owner, path, v) else {}
        return out
    if isinstance(value, list):
        out = []
        for i, v in enumerate(value):
            path = f"{key}.{i}"
            out.append(_unwrap(owner, path, v, filter_fn, map_fn, is_leaf_fn)
                       if filter_fn(owner, path, v) else {})
        return out
    raise RuntimeError("Unexpected leaf found while traversing the module")


def _type_name(value: Any) -> str:
    return type(value).__name__


class Module(dict):
    """Base class of the layers and models.

    Subclasses call ``super().__init__()`` first, then assign their
    parameters (arrays) and sub-modules as attributes, and define
    ``__call__``. Parameters are the arrays held directly or in nested
    dicts and lists whose key does not start with an underscore.

    Example:
        >>> class MLP(Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.layers = [Linear(2, 8), Linear(8, 1)]
        ...     def __call__(self, x):
        ...         return self.layers[1](relu(self.layers[0](x)))
    """

    __call__: Callable

    def __init__(self) -> None:
        self._no_grad: set = set()
        self._training = True

    # -- attributes as items ------------------------------------------------

    def __getattr__(self, key: str) -> Any:
        if key in self:
            return self[key]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {key!r}")

    def __setattr__(self, key: str, val: Any) -> None:
        if isinstance(val, (mx.array, dict, list, tuple)):
            if key in self.__dict__:
                object.__delattr__(self, key)
            self[key] = val
        else:
            if key in self:
                del self[key]
            object.__setattr__(self, key, val)

    def __delattr__(self, name: str) -> None:
        if name in self:
            del self[name]
        else:
            object.__delattr__(self, name)

    # -- printing -----------------------------------------------------------

    def _extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        kids = tree_flatten(self.children(), is_leaf=self.is_module)
        text = f"{type(self).__name__}({self._extra_repr()}"
        for path, child in kids:
            text += "\n" + textwrap.indent(f"({path}): {child!r}", "  ")
        if kids:
            text += "\n"
        return text + ")"

    # -- state --------------------------------------------------------------

    @property
    def training(self) -> bool:
        """Whether the module is in training mode (Dropout and BatchNorm
        behave differently in evaluation mode)."""
        return self._training

    @property
    def state(self) -> "Module":
        """The module's state dict: the module itself (its parameters,
        children and other items); changing it changes the module."""
        return self

    @staticmethod
    def is_module(value: Any) -> bool:
        """Whether ``value`` is a :class:`Module`."""
        return isinstance(value, Module)

    @staticmethod
    def valid_child_filter(module: "Module", key: str, value: Any) -> bool:
        """The filter of :meth:`children`: containers (modules are dicts)."""
        return isinstance(value, (dict, list))

    @staticmethod
    def valid_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        """The filter of :meth:`parameters`: arrays and containers whose
        key does not start with an underscore."""
        return isinstance(value, (dict, list, mx.array)) and not key.startswith("_")

    @staticmethod
    def trainable_parameter_filter(module: "Module", key: str, value: Any) -> bool:
        """The filter of :meth:`trainable_parameters`: valid parameters
        that are not frozen."""
        return Module.valid_parameter_filter(module, key, value) and key not in module._no_grad

    # -- traversal ----------------------------------------------------------

    def filter_and_map(self, filter_fn: Callable[["Module", str, Any], bool], map_fn: Optional[Callable] = None,
                       is_leaf_fn: Optional[Callable[["Module", str, Any], bool]] = None) -> Dict[str, Any]:
        """The module's items that pass a filter, mapped, as nested dicts
        and lists.

        Args:
            filter_fn (Callable): ``filter_fn(module, key, value) -> bool``;
                ``key`` is dotted below the module that owns the container.
            map_fn (Callable, optional): applied to each leaf kept.
                Default: None, the identity.
            is_leaf_fn (Callable, optional): ``is_leaf_fn(module, key,
                value) -> bool``. Default: None, anything but modules, dicts
                and lists is a leaf.

        Returns:
            dict: the filtered and mapped tree.
        """
        map_fn = map_fn or _identity
        is_leaf_fn = is_leaf_fn or _default_is_leaf
        return {k: _unwrap(self, k, v, filter_fn, map_fn, is_leaf_fn)
                for k, v in self.items() if filter_fn(self, k, v)}

    def parameters(self) -> Dict[str, Any]:
        """All parameters (arrays) of the module and its children, as
        nested dicts and lists."""
        return self.filter_and_map(self.valid_parameter_filter)

    def trainable_parameters(self) -> Dict[str, Any]:
        """The parameters that are not frozen, as nested dicts and lists."""
        return self.filter_and_map(self.trainable_parameter_filter)

    def children(self) -> Dict[str, Any]:
        """The module's direct child modules, as nested dicts and lists."""
        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=lambda m, k, v: isinstance(v, Module))

    def leaf_modules(self) -> Dict[str, Any]:
        """The modules below this one that have no children, as nested
        dicts and lists."""

        def is_leaf_module(m: Module, k: str, v: Any) -> bool:
            return isinstance(v, Module) and not tree_flatten(v.children(), is_leaf=Module.is_module)

        return self.filter_and_map(self.valid_child_filter, is_leaf_fn=is_leaf_module)

    def named_modules(self) -> List[Tuple[str, "Module"]]:
        """``(path, module)`` for this module (path ``""``) and every
        module below it, depth first, later children first."""
        out: List[Tuple[str, Module]] = []
        stack: List[Tuple[str, Any]] = [("", self)]
        while stack:
            path, m = stack.pop()
            out.append((path, m))
            prefix = f".{path}" if path else ""
            stack.extend(tree_flatten(m.children(), prefix=prefix, is_leaf=Module.is_module))
        return out

    def modules(self) -> List["Module"]:
        """This module and every module below it (the order of
        :meth:`named_modules`)."""
        return [m for _, m in self.named_modules()]

    # -- updates ------------------------------------------------------------

    # (MLX's signature: a tree update, not dict.update; mypy flags the override)
    def update(self, parameters: dict, strict: bool = True) -> "Module":  # type: ignore[override]
        """Replaces parameters by the arrays of a tree of the same structure.

        Args:
            parameters (dict): nested dicts and lists of arrays, such as
                :meth:`parameters` returns (any part of it).
            strict (bool): raise ValueError for a key the module does not
                have, an index past a list's end or a value that is not an
                array where an array is. Default: True.

        Returns:
            Module: the module.
        """

        def put(dst: Any, new: Any) -> None:
            if isinstance(new, dict):
                for k, v in new.items():
                    if isinstance(dst, dict) and k in dst:
                        cur = dst[k]
                        if isinstance(cur, mx.array):
                            if strict and not isinstance(v, mx.array):
                                raise ValueError(f"Received invalid type: {_type_name(v)}.")
                            dst[k] = v
                        else:
                            put(cur, v)
                    elif strict:
                        raise ValueError(f'Module does not have parameter named "{k}".')
            elif isinstance(new, list):
                if not isinstance(dst, list):
                    if strict:
                        raise ValueError(f"Received invalid type: {_type_name(new)}.")
                    return
                for i, v in enumerate(new):
                    if i >= len(dst):
                        if strict:
                            raise ValueError(f"List index {i} is out of bounds for destination of "
                                             f"length {len(dst)}.")
                        continue
                    cur = dst[i]
                    if isinstance(cur, mx.array):
                        if strict and not isinstance(v, mx.array):
                            raise ValueError(f"Received invalid type: {_type_name(v)}.")
                        dst[i] = v
                    else:
                        put(cur, v)
            elif strict:
                raise ValueError(f"Received invalid type: {_type_name(new)}.")

        put(self, parameters)
        return self

    def update_modules(self, modules: dict, strict: bool = True) -> "Module":
        """Replaces child modules by the modules of a tree of the same
        structure.

        Args:
            modules (dict): nested dicts and lists of modules, such as
                :meth:`children` returns (any part of it).
            strict (bool): raise ValueError for a key the module does not
                have, an index past a list's end or a value that is not a
                module where a module is. Default: True.

        Returns:
            Module: the module.
        """

        def put(dst: Any, new: Any) -> None:
            if isinstance(new, dict):
                for k, v in new.items():
                    if isinstance(dst, dict) and k in dst:
                        cur = dst[k]
                        if isinstance(cur, Module) and isinstance(v, Module):
                            dst[k] = v
                        elif isinstance(cur, (dict, list)):
                            put(cur, v)
                        elif strict and v != {}:
                            raise ValueError(f"Received invalid type: {_type_name(v)}.")
                    elif strict:
                        raise ValueError(f'Module does not have sub-module named "{k}".')
            elif isinstance(new, list):
                if not isinstance(dst, list):
                    if strict:
                        raise ValueError(f"Received invalid type: {_type_name(new)}.")
                    return
                for i, v in enumerate(new):
                    if i >= len(dst):
                        if strict:
                            raise ValueError(f"List index {i} is out of bounds for destination of "
                                             f"length {len(dst)}.")
                        continue
                    cur = dst[i]
                    if isinstance(cur, Module) and isinstance(v, Module):
                        dst[i] = v
                    elif isinstance(cur, (dict, list)):
                        put(cur, v)
                    elif strict and v != {}:
                        raise ValueError(f"Received invalid type: {_type_name(v)}.")
            elif strict:
                raise ValueError(f"Received invalid type: {_type_name(new)}.")

        put(self, modules)
        return self

    def apply(self, map_fn: Callable[[mx.array], mx.array],
              filter_fn: Optional[Callable[["Module", str, Any], bool]] = None) -> "Module":
        """Maps the parameters (those ``filter_fn`` selects) in place.

        Args:
            map_fn (Callable): ``map_fn(array) -> array``.
            filter_fn (Callable, optional): which items to map, as in
                :meth:`filter_and_map`. Default: None, every parameter.

        Returns:
            Module: the module.
        """
        self.update(self.filter_and_map(filter_fn or self.valid_parameter_filter, map_fn))
        return self

    def apply_to_modules(self, apply_fn: Callable[[str, "Module"], Any]) -> "Module":
        """Calls ``apply_fn(path, module)`` for this module and every module
        below it (the order of :meth:`named_modules`).

        Args:
            apply_fn (Callable): ``apply_fn(path, module)``.

        Returns:
            Module: the module.
        """
        stack: List[Tuple[str, Any]] = [("", self)]
        while stack:
            path, m = stack.pop()
            apply_fn(path, m)
            prefix = f".{path}" if path else ""
            stack.extend(tree_flatten(m.children(), prefix=prefix, is_leaf=Module.is_module))
        return self

    # -- freezing -----------------------------------------------------------

    def _validate_keys(self, keys: Union[str, List[str]], strict: bool) -> List[str]:
        keys = keys if isinstance(keys, list) else [keys]
        if strict:
            for k in keys:
                if k not in self:
                    raise KeyError(f"Module doesn't contain member {k}.")
        return keys

    def _validate_keys_recursive(self, keys: Union[str, List[str]]) -> List[str]:
        keys = keys if isinstance(keys, list) else [keys]
        found: Set[str] = set()
        for _, m in self.named_modules():
            found.update(k for k in keys if k in m)
        for k in keys:
            if k not in found:
                raise KeyError(f"Module doesn't contain member {k}.")
        return keys

    def _own_parameter_keys(self) -> List[str]:
        own = self.filter_and_map(lambda m, k, v: not isinstance(v, Module) and m.valid_parameter_filter(m, k, v))
        return [k for k, _ in tree_flatten(own)]

    def _change_frozen(self, freeze: bool, recurse: bool, keys: Optional[Union[str, List[str]]],
                       strict: bool) -> "Module":
        if recurse and keys is not None and strict:
            self._validate_keys_recursive(keys)
            strict = False

        def change(_: str, m: Module) -> None:
            if freeze:
                m._no_grad.update(m._own_parameter_keys() if keys is None else m._validate_keys(keys, strict))
            elif keys is None:
                m._no_grad.clear()
            else:
                m._no_grad.difference_update(m._validate_keys(keys, strict))

        if recurse:
            self.apply_to_modules(change)
        else:
            change("", self)
        return self

    def freeze(self, *, recurse: bool = True, keys: Optional[Union[str, List[str]]] = None,
               strict: bool = False) -> "Module":
        """Freezes parameters: they are left out of
        :meth:`trainable_parameters` (and so of ``nn.value_and_grad``).

        Args:
            recurse (bool): freeze the parameters of the sub-modules too.
                Default: True.
            keys (str or list of str, optional): the keys to freeze in each
                module (``"weight"``, ``"bias"``, ...). Default: None, all
                parameters.
            strict (bool): raise KeyError for a key no module has.
                Default: False.

        Returns:
            Module: the module.
        """
        return self._change_frozen(True, recurse, keys, strict)

    def unfreeze(self, *, recurse: bool = True, keys: Optional[Union[str, List[str]]] = None,
                 strict: bool = False) -> "Module":
        """Unfreezes parameters (the inverse of :meth:`freeze`).

        Args:
            recurse (bool): unfreeze in the sub-modules too. Default: True.
            keys (str or list of str, optional): the keys to unfreeze.
                Default: None, all parameters.
            strict (bool): raise KeyError for a key no module has.
                Default: False.

        Returns:
            Module: the module.
        """
        return self._change_frozen(False, recurse, keys, strict)

    # -- modes and dtypes ---------------------------------------------------

    def _set_training_mode(self, mode: bool) -> None:
        self._training = mode

    def train(self, mode: bool = True) -> "Module":
        """Sets training mode on this module and every module below it.

        Args:
            mode (bool): True for training, False for evaluation.
                Default: True.

        Returns:
            Module: the module.
        """
        self.apply_to_modules(lambda _, m: m._set_training_mode(mode))
        return self

    def eval(self) -> "Module":
        """Sets evaluation mode (``train(False)``).

        Returns:
            Module: the module.
        """
        return self.train(False)

    def set_dtype(self, dtype: "mx.Dtype", predicate: Optional[Callable[["mx.Dtype"], bool]] = _floating) -> None:
        """Casts the parameters whose dtype satisfies ``predicate``.

        Args:
            dtype (Dtype): the new dtype.
            predicate (Callable, optional): ``predicate(dtype) -> bool``
                selects the parameters to cast. Default: real floating
                dtypes (integer parameters keep their dtype).

        Returns:
            None
        """
        pred = predicate or (lambda _: True)
        self.apply(lambda p: p.astype(dtype) if pred(p.dtype) else p)

    # -- weights ------------------------------------------------------------

    def load_weights(self, file_or_weights: Union[str, List[Tuple[str, "mx.array"]]],
                     strict: bool = True) -> "Module":
        """Loads parameters from a file (``.npz`` or ``.safetensors``, read
        with ``mx.load``) or from a list of ``(dotted name, array)`` pairs.

        Args:
            file_or_weights (str or list): the file, or the pairs.
            strict (bool): require exactly the module's parameters, each an
                array of the parameter's shape (ValueError naming the key and
                both shapes otherwise). Default: True.

        Returns:
            Module: the module.
        """
        weights = file_or_weights
        if isinstance(weights, str):
            weights = list(mx.load(weights).items())
        if strict:
            new = dict(weights)
            current = dict(tree_flatten(self.parameters()))
            extra = [k for k in new if k not in current]
            if extra:
                raise ValueError(f"Received {len(extra)} parameters not in model: \n" + ",\n".join(sorted(extra)) + ".")
            missing = [k for k in current if k not in new]
            if missing:
                raise ValueError(f"Missing {len(missing)} parameters: \n" + ",\n".join(sorted(missing)) + ".")
            for k, v in current.items():
                w = new[k]
                if not isinstance(w, mx.array):
                    raise ValueError(f"Expected mx.array but received {type(w)} for parameter {k}")
                if tuple(w.shape) != tuple(v.shape):
                    raise ValueError(f"Expected shape {tuple(v.shape)} but received shape {tuple(w.shape)} "
                                     f"for parameter {k}")
        if weights:
            self.update(tree_unflatten(list(weights)), strict=False)
        return self

    def save_weights(self, file: str) -> None:
        """Saves the parameters to ``file``: ``.npz`` (``mx.savez``) or
        ``.safetensors`` (``mx.save_safetensors``), keyed by dotted names.

        Args:
            file (str): the path; its extension picks the format.

        Returns:
            None
        """
        params = dict(tree_flatten(self.parameters()))
        if file.endswith(".npz"):
            mx.savez(file, **params)
        elif file.endswith(".safetensors"):
            mx.save_safetensors(file, params)
        else:
            raise ValueError(f"Unsupported file extension for {file}. Use '.npz' or '.safetensors'.")
