"""Sequential: modules (or functions) called one after the other."""

from typing import Any, Callable, Union

from ember.nn.layers.base import Module


class Sequential(Module):
    """Calls its layers in order, each on the previous one's output.

    The layers are kept in the list ``layers``; plain callables are
    allowed too (they have no parameters).

    Args:
        *modules: the layers.
    """

    def __init__(self, *modules: Union[Module, Callable[[Any], Any]]) -> None:
        super().__init__()
        self.layers = list(modules)

    def __call__(self, x: Any) -> Any:
        for layer in self.layers:
            x = layer(x)
        return x
