"""ember.nn.Module: the parameter tree, traversal order, updates and their
strict errors, freezing, modes, dtypes, weights, repr, nn.value_and_grad.

Runs against MLX too (``EMBER_TEST_BACKEND=mlx``): ``nn`` is the backend's.
"""

import importlib

import numpy as np
import pytest

from conftest import IS_MLX, ember_only, mx, raises

nn = importlib.import_module("mlx.nn" if IS_MLX else "ember.nn")
utils = importlib.import_module("mlx.utils" if IS_MLX else "ember.utils")
tree_flatten = utils.tree_flatten


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.l = [nn.Linear(2, 3), {"x": nn.ReLU(), "w": mx.zeros(2), "_p": mx.ones(1)}]
        self.t = (mx.ones(1),)
        self._hidden = mx.zeros(1)
        self.n = 3

    def __call__(self, x):
        return self.l[0](self.l[1]["x"](self.a(x)))


def keys(tree):
    return [k for k, _ in tree_flatten(tree)]


def test_items_and_attributes():
    m = Net()
    assert list(m.keys()) == ["a", "l", "t", "_hidden"]
    assert m.n == 3 and "n" not in m
    assert m.a is m["a"]
    m.n = mx.zeros(2)  # an array replaces the plain attribute
    assert "n" in m and "n" not in vars(m)
    m.n = None  # and a plain value the item
    assert "n" not in m and m.n is None
    del m.a
    assert "a" not in m
    with pytest.raises(AttributeError):
        m.missing
    with pytest.raises(TypeError):
        nn.Module()(mx.zeros(1))


def test_parameters_children_leaves():
    m = Net()
    assert keys(m.parameters()) == ["a.weight", "a.bias", "l.0.weight", "l.0.bias", "l.1.w", "l.1._p"]
    assert keys(m.trainable_parameters()) == keys(m.parameters())
    kids = m.children()
    assert list(kids) == ["a", "l"] and kids["a"] is m.a and kids["l"][1]["x"] is m.l[1]["x"]
    assert kids["l"][1]["w"] == {}  # non-modules in containers keep their place as {}
    leaves = [k for k, _ in tree_flatten(m.leaf_modules(), is_leaf=nn.Module.is_module)]
    assert leaves == ["a", "l.0", "l.1.x"]
    assert m.state is m


def test_named_modules_order():
    m = nn.Sequential(nn.Sequential(nn.Linear(1, 1), nn.ReLU()), nn.Linear(1, 2))
    names = [k for k, _ in m.named_modules()]
    assert names == ["", "layers.1", "layers.0", "layers.0.layers.1", "layers.0.layers.0"]
    assert [type(x).__name__ for x in m.modules()] == ["Sequential", "Linear", "Sequential", "ReLU", "Linear"]
    seen = []
    assert m.apply_to_modules(lambda k, mod: seen.append(k)) is m
    assert seen == names
    assert [k for k, _ in Net().named_modules()] == ["", "l.1.x", "l.0", "a"]


def test_filter_and_map():
    m = Net()
    calls = []

    def f(mod, k, v):
        calls.append(k)
        return not isinstance(v, nn.Module)

    out = m.filter_and_map(f, map_fn=lambda v: "leaf")
    assert calls == ["a", "l", "l.0", "l.1", "l.1.x", "l.1.w", "l.1._p", "t", "_hidden"]
    assert out == {"l": [{}, {"x": {}, "w": "leaf", "_p": "leaf"}], "t": "leaf", "_hidden": "leaf"}
    with pytest.raises(RuntimeError):
        m.filter_and_map(lambda *a: True, is_leaf_fn=lambda m, k, v: isinstance(v, nn.Module))


def test_update_and_strict_errors():
    m = Net()
    w = mx.ones((2, 2))
    assert m.update({"a": {"weight": w}}) is m
    assert m.a.weight is w
    m.update({"l": [{}, {"w": mx.ones(2)}]})
    np.testing.assert_array_equal(np.array(m.l[1]["w"]), [1, 1])
    with raises(ValueError, 'does not have parameter named "zz"', mlx_msg=True):
        m.update({"zz": mx.zeros(1)})
    with raises(ValueError, "Received invalid type: int", mlx_msg=True):
        m.update({"a": {"weight": 3}})
    with raises(ValueError, "Received invalid type: array", mlx_msg=True):
        m.update({"a": mx.zeros(2)})
    with raises(ValueError, "List index 2 is out of bounds for destination of length 2", mlx_msg=True):
        m.update({"l": [{}, {}, {}]})
    with raises(ValueError, 'parameter named "q"', mlx_msg=True):
        m.update({"l": [{}, {"x": {"q": mx.zeros(1)}}]})
    m.update({"zz": mx.zeros(1), "l": [{}, {}, {}]}, strict=False)
    assert "zz" not in m


def test_update_modules():
    m = Net()
    r = nn.ReLU()
    m.update_modules({"a": r, "l": [nn.Identity()]})
    assert m.a is r and isinstance(m.l[0], nn.Identity)
    with raises(ValueError, 'sub-module named "zz"', mlx_msg=True):
        m.update_modules({"zz": nn.ReLU()})
    with raises(ValueError, "Received invalid type: int", mlx_msg=True):
        m.update_modules({"a": 3})


def test_apply_and_set_dtype():
    m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    m.apply(lambda p: p * 0)
    assert all(float(mx.abs(p).max()) == 0 for _, p in tree_flatten(m.parameters()))
    m.apply(lambda p: p.astype(mx.float16), filter_fn=lambda mod, k, v: k == "weight")
    assert [p.dtype for _, p in tree_flatten(m.parameters())] == [mx.float32] * 4  # top key is "layers"
    lin = nn.Linear(2, 3)
    lin.weight = mx.zeros((3, 2), dtype=mx.int32)
    assert lin.set_dtype(mx.bfloat16) is None
    assert lin.weight.dtype == mx.int32 and lin.bias.dtype == mx.bfloat16  # the default predicate: floats only
    lin.set_dtype(mx.float16, lambda d: False)
    assert lin.bias.dtype == mx.bfloat16


def test_freeze_unfreeze():
    m = Net()
    assert m.freeze(keys="weight") is m
    assert keys(m.trainable_parameters()) == ["a.bias", "l.0.bias", "l.1.w", "l.1._p"]
    m.unfreeze()
    assert keys(m.trainable_parameters()) == keys(m.parameters())
    m.freeze(recurse=False)  # only the module's own (non-module) parameters
    assert keys(m.trainable_parameters()) == ["a.weight", "a.bias", "l.0.weight", "l.0.bias"]
    m.unfreeze()
    m.freeze()
    assert keys(m.trainable_parameters()) == []
    m.unfreeze(keys=["bias"])
    assert keys(m.trainable_parameters()) == ["a.bias", "l.0.bias"]
    with raises(KeyError, "doesn't contain member nope", mlx_msg=True):
        m.freeze(keys="nope", strict=True)
    m.freeze(keys=["weight"], strict=True)  # some module has it
    with raises(KeyError, "member zz", mlx_msg=True):
        m.a.unfreeze(keys=["zz"], strict=True)
    m = Net()
    m.freeze(keys="l", recurse=False)
    assert keys(m.trainable_parameters()) == ["a.weight", "a.bias"]


def test_batchnorm_stats_stay_frozen():
    b = nn.BatchNorm(3)
    assert keys(b.trainable_parameters()) == ["weight", "bias"]
    b.freeze()
    b.unfreeze()
    assert keys(b.trainable_parameters()) == ["weight", "bias"]
    assert keys(b.parameters()) == ["weight", "bias", "running_mean", "running_var"]


def test_train_eval():
    m = nn.Sequential(nn.Dropout(0.5), nn.Sequential(nn.BatchNorm(2)))
    assert m.training and m.layers[1].layers[0].training
    assert m.eval() is m
    assert not m.training and not m.layers[1].layers[0].training
    m.train()
    assert m.layers[0].training
    m.train(False)
    assert not m.layers[0].training


def test_repr():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2, bias=False))
    assert repr(m) == ("Sequential(\n  (layers.0): Linear(input_dims=3, output_dims=4, bias=True)\n"
                       "  (layers.1): ReLU()\n  (layers.2): Linear(input_dims=4, output_dims=2, bias=False)\n)")
    assert repr(Net()) == ("Net(\n  (a): Linear(input_dims=2, output_dims=2, bias=True)\n"
                           "  (l.0): Linear(input_dims=2, output_dims=3, bias=True)\n  (l.1.x): ReLU()\n)")
    nested = nn.Sequential(nn.Sequential(nn.ReLU()))
    assert repr(nested) == "Sequential(\n  (layers.0): Sequential(\n    (layers.0): ReLU()\n  )\n)"
    assert repr(nn.Sequential()) == "Sequential()"


REPRS = [
    (lambda: nn.Conv1d(2, 3, 3), "Conv1d(2, 3, kernel_size=3, stride=1, padding=0, dilation=1, groups=1, bias=True)"),
    (lambda: nn.Conv2d(4, 4, 3, groups=2, bias=False),
     "Conv2d(4, 4, kernel_size=(3, 3), stride=(1, 1), padding=(0, 0), dilation=1, groups=2, bias=False)"),
    (lambda: nn.Conv3d(2, 3, 3), "Conv3d(2, 3, kernel_size=(3, 3, 3), stride=(1, 1, 1), padding=(0, 0, 0), "
                                 "dilation=1, bias=True)"),
    (lambda: nn.ConvTranspose1d(2, 3, 3), "ConvTranspose1d(2, 3, kernel_size=3, stride=1, padding=0, dilation=1, "
                                          "output_padding=0, bias=True)"),
    (lambda: nn.ConvTranspose2d(2, 3, 3), "ConvTranspose2d(2, 3, kernel_size=(3, 3), stride=(1, 1), "
                                          "padding=(0, 0), dilation=1, output_padding=(0, 0), bias=True)"),
    (lambda: nn.LayerNorm(4), "LayerNorm(4, eps=1e-05, affine=True)"),
    (lambda: nn.RMSNorm(4), "RMSNorm(4, eps=1e-05)"),
    (lambda: nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True, pytorch_compatible=False)"),
    (lambda: nn.InstanceNorm(4), "InstanceNorm(4, eps=1e-05, affine=False)"),
    (lambda: nn.BatchNorm(4), "BatchNorm(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"),
    (lambda: nn.Dropout(0.3), "Dropout(p=0.30000000000000004)"),
    (lambda: nn.Dropout2d(), "Dropout2d(p=0.5)"),
    (lambda: nn.Embedding(3, 4), "Embedding(3, 4)"),
    (lambda: nn.Bilinear(2, 3, 4), "Bilinear(input1_dims=2, input2_dims=3, output_dims=4, bias=True)"),
    (lambda: nn.MaxPool2d(2), "MaxPool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"),
    (lambda: nn.AvgPool1d(2, 1, 1), "AvgPool1d(kernel_size=(2,), stride=(1,), padding=(1,))"),
    (lambda: nn.Upsample((2, 3), mode="linear", align_corners=True),
     "Upsample(scale_factor=(2.0, 3.0), mode='linear', align_corners=True)"),
    (lambda: nn.GELU("tanh"), "GELU()"),
    (lambda: nn.Identity(1, x=2), "Identity()"),
    (lambda: nn.PReLU(), "PReLU()"),
]


@pytest.mark.parametrize("make,text", REPRS, ids=[t.split("(")[0] + str(i) for i, (_, t) in enumerate(REPRS)])
def test_layer_repr(make, text):
    assert repr(make()) == text


def test_load_weights_list():
    lin = nn.Linear(2, 3)
    w, b = mx.ones((3, 2)), mx.zeros(3)
    assert lin.load_weights([("weight", w), ("bias", b)]) is lin
    assert lin.weight is w and lin.bias is b
    with raises(ValueError, r"Missing 1 parameters: \nbias\.", mlx_msg=True):
        lin.load_weights([("weight", w)])
    with raises(ValueError, r"Received 1 parameters not in model: \nx\.", mlx_msg=True):
        lin.load_weights([("weight", w), ("bias", b), ("x", b)])
    with raises(ValueError, r"Expected shape \(3, 2\) but received shape \(2, 2\) for parameter weight",
                mlx_msg=True):
        lin.load_weights([("weight", mx.zeros((2, 2))), ("bias", b)])
    with raises(ValueError, "Expected mx.array but received <class 'int'> for parameter weight", mlx_msg=True):
        lin.load_weights([("weight", 3), ("bias", b)])
    lin.load_weights([("weight", mx.zeros((2, 2))), ("x", b)], strict=False)
    assert lin.weight.shape == (2, 2) and "x" not in lin
    f16 = mx.zeros((3, 2), dtype=mx.float16)
    nn.Linear(2, 3).load_weights([("weight", f16), ("bias", b)])  # dtypes are not checked


def test_save_weights_extension():
    with raises(ValueError, "Unsupported file extension for a.txt", mlx_msg=True):
        nn.Linear(2, 3).save_weights("a.txt")


@pytest.mark.skipif(not hasattr(mx, "load"), reason="blocked on io (mx.load/savez/save_safetensors)")
@pytest.mark.parametrize("ext", [".npz", ".safetensors"])
def test_weights_file_roundtrip(tmp_path, ext):
    a = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    path = str(tmp_path / f"w{ext}")
    a.save_weights(path)
    b = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    b.load_weights(path)
    for (ka, va), (kb, vb) in zip(tree_flatten(a.parameters()), tree_flatten(b.parameters())):
        assert ka == kb
        np.testing.assert_array_equal(np.array(va), np.array(vb))


def test_value_and_grad():
    lin = nn.Linear(2, 1)
    lin.update({"weight": mx.array([[1.0, 2.0]]), "bias": mx.array([0.5])})

    def loss(x):
        return lin(x).sum()

    v, g = nn.value_and_grad(lin, loss)(mx.ones((3, 2)))
    assert float(v) == pytest.approx(3 * 3.5)
    np.testing.assert_allclose(np.array(g["weight"]), [[3, 3]])
    np.testing.assert_allclose(np.array(g["bias"]), [3])
    lin.freeze(keys="bias")
    v, g = nn.value_and_grad(lin, lambda x: (lin(x).sum(), 7))(mx.ones((3, 2)))
    assert list(g) == ["weight"] and v[1] == 7
    # the model keeps usable parameters afterwards
    np.testing.assert_allclose(np.array(lin(mx.ones((1, 2)))), [[3.5]])


def test_checkpoint_matches_plain_grad():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    x = mx.array(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
    ck = nn.utils.checkpoint(model)
    v1, g1 = nn.value_and_grad(model, lambda x: model(x).sum())(x)
    v2, g2 = nn.value_and_grad(model, lambda x: ck(x).sum())(x)
    np.testing.assert_allclose(np.array(v1), np.array(v2), rtol=1e-6)
    for (k1, a), (k2, b) in zip(tree_flatten(g1), tree_flatten(g2)):
        assert k1 == k2
        np.testing.assert_allclose(np.array(a), np.array(b), rtol=1e-5, atol=1e-6)


def test_module_is_a_pytree():
    m = nn.Sequential(nn.Linear(2, 2))
    mx.eval(m)
    mx.eval(m.parameters())
    assert keys(m) == ["layers.0.weight", "layers.0.bias"]


def test_nn_namespace():
    names = ["relu", "gelu", "gelu_approx", "gelu_fast_approx", "silu", "glu", "prelu", "selu", "celu", "elu",
             "mish", "hardswish", "hard_tanh", "hard_shrink", "softshrink", "softsign", "softplus",
             "log_sigmoid", "log_softmax", "softmax", "softmin", "relu2", "relu6", "leaky_relu", "sigmoid", "tanh",
             "step", "value_and_grad", "Module", "Sequential", "Upsample"]
    assert all(callable(getattr(nn, n)) for n in names)
    assert callable(nn.utils.checkpoint)


@ember_only
def test_lazy_init_and_half_update_never_materialise_float32():
    """Building a big Linear allocates nothing; replacing its parameters by
    float16 ones before evaluating never computes the float32 init."""
    mx.eval(mx.zeros(1))
    mx.clear_cache()
    base = mx.get_active_memory()
    mx.reset_peak_memory()
    n = 2048
    lin = nn.Linear(n, n)
    assert mx.get_active_memory() - base < 1 << 16
    lin.update({"weight": mx.zeros((n, n), dtype=mx.float16), "bias": mx.zeros((n,), dtype=mx.float16)})
    mx.eval(lin.parameters())
    half = n * n * 2
    assert mx.get_peak_memory() - base < half + (1 << 20), "the float32 initialisation was computed"
    assert lin.weight.dtype == mx.float16
