"""The layers of ``ember.nn``, one module per family."""

from ember.nn.layers.activations import (CELU, ELU, GELU, GLU, SELU, HardShrink, HardTanh, Hardswish, LeakyReLU,
                                         LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU2, ReLU6, Sigmoid, SiLU,
                                         Softmax, Softmin, Softplus, Softshrink, Softsign, Step, Tanh, celu, elu,
                                         gelu, gelu_approx, gelu_fast_approx, glu, hard_shrink, hard_tanh,
                                         hardswish, leaky_relu, log_sigmoid, log_softmax, mish, prelu, relu, relu2,
                                         relu6, selu, sigmoid, silu, softmax, softmin, softplus, softshrink,
                                         softsign, step, tanh)
from ember.nn.layers.base import Module
from ember.nn.layers.containers import Sequential
from ember.nn.layers.convolution import Conv1d, Conv2d, Conv3d
from ember.nn.layers.convolution_transpose import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ember.nn.layers.distributed import (AllToShardedLinear, FullyShardedModule, QuantizedAllToShardedLinear,
                                         QuantizedShardedToAllLinear, ShardedToAllLinear, fully_shard)
from ember.nn.layers.dropout import Dropout, Dropout2d, Dropout3d
from ember.nn.layers.embedding import Embedding
from ember.nn.layers.linear import Bilinear, Identity, Linear
from ember.nn.layers.normalization import BatchNorm, GroupNorm, InstanceNorm, LayerNorm, RMSNorm
from ember.nn.layers.pooling import AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d, MaxPool3d
from ember.nn.layers.positional_encoding import ALiBi, RoPE, SinusoidalPositionalEncoding
from ember.nn.layers.quantized import QQLinear, QuantizedEmbedding, QuantizedLinear, quantize
from ember.nn.layers.recurrent import GRU, LSTM, RNN
from ember.nn.layers.transformer import (MultiHeadAttention, Transformer, TransformerDecoder,
                                         TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer)
from ember.nn.layers.upsample import Upsample, upsample_cubic, upsample_linear, upsample_nearest
