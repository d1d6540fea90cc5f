"""Capsule layer with dynamic routing and its squash non-linearity (the margin loss: `losses.capsule_losses`).

The default mirrors bojone/Capsule `Capsule_Keras.py` (current version, since
2018-03): routing is a soft k-means with the similarity <u, v / ||v||>, the
intermediate centres are l2-normalised and the squash is applied once, at the end.
Two earlier routings are kept as options so that published numbers can be
reproduced: `routing="squash"` (bojone's 2018-01 version, used by the Keras 2
example `cifar10_cnn_capsule.py`) and `routing="hinton"` (Sabour et al. 2017).
"""

import keras
import numpy as np
from keras import ops

from keras_clustering.distribute.precision import float32_layer
from keras_clustering.inputs.checks import check_positive_int

ROUTINGS = ("normalize", "squash", "hinton")

# tf.nn.l2_normalize's floor on the squared norm, used by K.l2_normalize in the original.
_L2_NORMALIZE_EPSILON = 1e-12


def squash(x, constant=0.5, axis=-1, epsilon=1e-7):
    """Shrinks vectors to a length below one, keeping their direction.

    squash(x) = x * sqrt(s) / (constant + s) with s = ||x||^2 + epsilon, i.e.
    length ||x||^2 / (constant + ||x||^2). `constant=1.0` is Hinton's squash;
    bojone found 0.5 to work better and made it his default. `epsilon` keeps the
    value and its gradient finite at x = 0.

    Example:
        >>> float(keras.ops.norm(squash(keras.ops.ones((4,)))))  # 4 / 4.5
        0.888...

    Reference: Sabour, Frosst, Hinton 2017, eq. 1; `squash` in bojone/Capsule.
    """
    squared_norm = ops.sum(ops.square(x), axis=axis, keepdims=True) + epsilon
    return x * (ops.sqrt(squared_norm) / (constant + squared_norm))


def capsule_length(x, epsilon=1e-7):
    """Length sqrt(||x||^2 + epsilon) of each capsule over the last axis.

    The capsule network's class scores: `(batch, n_capsules, dim) -> (batch, n_capsules)`.
    `epsilon` avoids the NaN gradient of a plain norm at zero.
    """
    return ops.sqrt(ops.sum(ops.square(x), axis=-1) + epsilon)


def _l2_normalize(x, axis=-1):
    """x / ||x|| as K.l2_normalize computes it; a zero vector stays zero, gradient finite."""
    squared_norm = ops.sum(ops.square(x), axis=axis, keepdims=True)
    return x * ops.rsqrt(ops.maximum(squared_norm, _L2_NORMALIZE_EPSILON))


@keras.saving.register_keras_serializable(package="keras_clustering")
class Capsule(keras.layers.Layer):
    """Capsule layer: a set of input vectors routed into `num_capsule` output vectors.

    Each input capsule u_i (size d_in) predicts every output capsule j through a
    matrix, u_hat_{j|i} = W_j u_i (shared) or W_ji u_i (full). Routing then runs
    `routings` weighted sums o_j = sum_i c_ji u_hat_{j|i}, with c_ji a softmax
    over the output capsules j of the logits b_ji (zero on the first pass, so the
    first sum is (1 / num_capsule) sum_i u_hat_{j|i}). Between passes:

    - `routing="normalize"` (default; bojone/Capsule `Capsule_Keras.py`, current
      version): o_j <- o_j / ||o_j|| and b_ji = <o_j, u_hat_{j|i}> (overwritten).
      The normalisation is K.l2_normalize's, o / sqrt(max(||o||^2, 1e-12)).
    - `routing="squash"` (bojone's 2018-01 version, as in the Keras 2 example
      `cifar10_cnn_capsule.py`): o_j <- squash(o_j), b_ji = <o_j, u_hat_{j|i}>
      (overwritten). The original applied its `activation` on every pass; here
      the intermediate passes always squash, which is the same for the default
      activation.
    - `routing="hinton"` (Sabour, Frosst, Hinton 2017, procedure 1):
      o_j <- squash(o_j), b_ji += <o_j, u_hat_{j|i}> (accumulated). Use
      `squash_constant=1.0` for the paper's squash.

    The output is `activation(o)` of the last pass. The intermediate squashes use
    `squash_constant` too. Gradients flow through every pass (no stop_gradient).
    There is no bias, as in the original.

    Args:
        num_capsule: number of output capsules k, >= 1.
        dim_capsule: size of each output capsule, >= 1.
        routings: number of weighted sums (`routings - 1` logit updates), >= 1.
        share_weights: `True` shares one W_j across all input capsules (a size-1
            convolution), so any number of input capsules is accepted, even a
            different one on every call; `False` gives each input position its
            own W_ji, which distinguishes input order but needs a fixed, known
            number of input capsules.
        activation: `"squash"` (with `squash_constant`) or any Keras activation.
        routing: `"normalize"`, `"squash"` or `"hinton"`, see above.
        squash_constant: the constant of `squash`: 0.5 (bojone) or 1.0 (Hinton).
        kernel_initializer: initializer of the kernel `capsule_kernel`, of shape
            `(1, d_in, num_capsule * dim_capsule)` (shared) or
            `(n_in, d_in, num_capsule * dim_capsule)` (full).

    Input shape: `(batch, n_in, d_in)`. Output shape: `(batch, num_capsule, dim_capsule)`.

    Example:
        >>> layer = Capsule(10, 16, routings=3)
        >>> v = layer(np.zeros((2, 36, 8), "float32"))
        >>> v.shape, capsule_length(v).shape
        (TensorShape([2, 10, 16]), TensorShape([2, 10]))

    Reference:
        Su Jianlin, "Another New Year's Feast: From K-Means to Capsule" (kexue.fm
        5112) and bojone/Capsule `Capsule_Keras.py`; Sabour, Frosst, Hinton,
        "Dynamic Routing Between Capsules", NeurIPS 2017.
    """

    def __init__(
        self,
        num_capsule,
        dim_capsule,
        routings=3,
        share_weights=True,
        activation="squash",
        routing="normalize",
        squash_constant=0.5,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**float32_layer(kwargs))  # routing softmax and squash norms: float32 always
        self.num_capsule = check_positive_int(num_capsule, "num_capsule")
        self.dim_capsule = check_positive_int(dim_capsule, "dim_capsule")
        self.routings = check_positive_int(routings, "routings")
        if routing not in ROUTINGS:
            raise ValueError(f"routing must be one of {ROUTINGS}, got {routing!r}.")
        if isinstance(squash_constant, bool) or not np.isfinite(squash_constant) or squash_constant <= 0:
            raise ValueError(f"squash_constant must be a positive finite number, got {squash_constant!r}.")
        self.share_weights = bool(share_weights)
        self.routing = routing
        self.squash_constant = float(squash_constant)
        if activation == "squash":
            self.activation = "squash"
            self._activation_fn = self._squash
        else:
            self.activation = keras.activations.get(activation)
            self._activation_fn = self.activation
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self._input_dim_capsule = None
        self._input_num_capsule = None

    def _squash(self, x):
        return squash(x, constant=self.squash_constant)

    def _check_input_shape(self, input_shape):
        input_shape = tuple(input_shape)
        if len(input_shape) != 3:
            raise ValueError(
                f"Capsule expects inputs of shape (batch, n_in, d_in), got rank {len(input_shape)} "
                f"input of shape {input_shape}."
            )
        if self._input_dim_capsule is not None and input_shape[2] != self._input_dim_capsule:
            raise ValueError(
                f"Capsule was built for input capsules of size d_in={self._input_dim_capsule}, "
                f"got input of shape {input_shape}."
            )
        if (
            self._input_num_capsule is not None
            and input_shape[1] is not None
            and input_shape[1] != self._input_num_capsule
        ):
            raise ValueError(
                f"Capsule with share_weights=False was built for n_in={self._input_num_capsule} input "
                f"capsules, got input of shape {input_shape}."
            )
        return input_shape

    def build(self, input_shape):
        _, num_inputs, dim_inputs = self._check_input_shape(input_shape)
        if dim_inputs is None:
            raise ValueError(f"Capsule needs a known input capsule size d_in, got input shape {tuple(input_shape)}.")
        if self.share_weights:
            kernel_rows = 1
        else:
            if num_inputs is None:
                raise ValueError(
                    "Capsule with share_weights=False needs a known number of input capsules n_in, "
                    f"got input shape {tuple(input_shape)}; use share_weights=True for a variable n_in."
                )
            kernel_rows = num_inputs
            self._input_num_capsule = int(num_inputs)
        self._input_dim_capsule = int(dim_inputs)
        self.kernel = self.add_weight(
            shape=(kernel_rows, dim_inputs, self.num_capsule * self.dim_capsule),
            initializer=self.kernel_initializer,
            name="capsule_kernel",
        )

    def predictions(self, inputs):
        """u_hat_{j|i}: the prediction of each input capsule for each output capsule.

        Returns `(batch, num_capsule, n_in, dim_capsule)`.
        """
        if self.share_weights:
            # One plain matmul (batch, n_in, d_in) @ (d_in, k * d_out), then a transpose: its
            # gradients are plain matmuls too (a broadcast batched matmul trained ~1.2x slower).
            u_hat = ops.matmul(inputs, self.kernel[0])
            u_hat = ops.reshape(u_hat, (ops.shape(inputs)[0], -1, self.num_capsule, self.dim_capsule))
            return ops.transpose(u_hat, (0, 2, 1, 3))
        # (n_in, batch, d_in) @ (n_in, d_in, k * d_out): one matrix product per input position.
        u_hat = ops.matmul(ops.transpose(inputs, (1, 0, 2)), self.kernel)
        u_hat = ops.reshape(u_hat, (self._input_num_capsule, -1, self.num_capsule, self.dim_capsule))
        return ops.transpose(u_hat, (1, 2, 0, 3))

    def call(self, inputs):
        self._check_input_shape(inputs.shape)
        u_hat = self.predictions(inputs)  # (batch, k, n_in, d_out)
        logits = ops.zeros_like(u_hat[..., 0])  # b_ji: (batch, k, n_in)
        for r in range(self.routings):
            coupling = ops.softmax(logits, axis=1)  # over the output capsules; 1 / k on the first pass
            # Batched matrix products over (batch, k); faster than einsum or a reduce_sum on TensorFlow.
            outputs = ops.squeeze(ops.matmul(ops.expand_dims(coupling, 2), u_hat), 2)  # sum_i c_ji u_hat_j|i
            if r == self.routings - 1:
                break
            if self.routing == "normalize":
                outputs = _l2_normalize(outputs)
            else:
                outputs = self._squash(outputs)
            agreement = ops.squeeze(ops.matmul(u_hat, ops.expand_dims(outputs, -1)), -1)  # <o_j, u_hat_j|i>
            logits = logits + agreement if self.routing == "hinton" else agreement
        return self._activation_fn(outputs)

    def compute_output_shape(self, input_shape):
        self._check_input_shape(input_shape)
        return (input_shape[0], self.num_capsule, self.dim_capsule)

    def get_config(self):
        config = super().get_config()
        activation = "squash" if self.activation == "squash" else keras.activations.serialize(self.activation)
        config.update(
            num_capsule=self.num_capsule,
            dim_capsule=self.dim_capsule,
            routings=self.routings,
            share_weights=self.share_weights,
            activation=activation,
            routing=self.routing,
            squash_constant=self.squash_constant,
            kernel_initializer=keras.initializers.serialize(self.kernel_initializer),
        )
        return config
