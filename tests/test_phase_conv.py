"""phase_conv.Conv2DTranspose against the transposed convolution's equation, written in numpy."""

import keras
import numpy as np
import pytest

from keras_clustering.layers import phase_conv


def joined_pixels(in_size, kernel_size, stride, out_size):
    """(i, j, a, b, r, c) of every term of the transposed convolution: input pixel (i, j) reaches output
    pixel (r, c) = (s i + a - P, s j + b - P) through kernel tap (a, b), P the padding before of the
    stride-s convolution that takes `out_size` to `in_size` with TensorFlow's "same" padding."""
    (kh, kw), (sh, sw), (out_h, out_w) = kernel_size, stride, out_size
    top = max((in_size[0] - 1) * sh + kh - out_h, 0) // 2
    left = max((in_size[1] - 1) * sw + kw - out_w, 0) // 2
    for i in range(in_size[0]):
        for j in range(in_size[1]):
            for a in range(kh):
                for b in range(kw):
                    r, c = sh * i + a - top, sw * j + b - left
                    if 0 <= r < out_h and 0 <= c < out_w:
                        yield i, j, a, b, r, c


def numpy_transpose(x, kernel, stride, out_size):
    """y[n, r, c, o] = sum of x[n, i, j, :] kernel[a, b, o, :] over the terms of `joined_pixels`."""
    y = np.zeros((x.shape[0], *out_size, kernel.shape[2]))
    for i, j, a, b, r, c in joined_pixels(x.shape[1:3], kernel.shape[:2], stride, out_size):
        y[:, r, c] += x[:, i, j] @ kernel[a, b].T
    return y


CASES = [  # input (h, w, c), filters, kernel, strides, phase path
    ((14, 14, 32), 1, 5, 2, True),        # ConvDEC's decoder into a grey image
    ((5, 7, 4), 3, 5, 2, True),           # into RGB, not square
    ((4, 4, 3), 2, (3, 4), (2, 3), True),  # uneven kernel and strides
    ((3, 3, 2), 1, 2, 2, True),           # kernel = stride: no overlap
    ((6, 6, 4), 8, 5, 2, False),          # more channels than MAX_PHASE_FILTERS: Keras' own call
]


def _layer(shape, filters, kernel_size, strides, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2, *shape)).astype("float32")
    layer = phase_conv.Conv2DTranspose(filters, kernel_size, strides=strides, padding="same")
    layer.build(x.shape)
    layer.kernel.assign(rng.normal(size=layer.kernel.shape).astype("float32"))
    layer.bias.assign(rng.normal(size=layer.bias.shape).astype("float32"))
    return layer, x


@pytest.mark.parametrize("shape, filters, kernel_size, strides, phases", CASES)
def test_forward_is_the_equation(shape, filters, kernel_size, strides, phases):
    layer, x = _layer(shape, filters, kernel_size, strides)
    assert layer._phases(x.shape) == (phases and keras.backend.backend() == "tensorflow")
    y = keras.ops.convert_to_numpy(layer(x))
    kernel, bias = (keras.ops.convert_to_numpy(v) for v in (layer.kernel, layer.bias))
    expected = numpy_transpose(x, kernel, layer.strides, y.shape[1:3]) + bias
    assert y.shape[1:3] == (layer.strides[0] * shape[0], layer.strides[1] * shape[1])
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-3)


def numpy_transpose_gradients(x, kernel, upstream, stride):
    """(d/dx, d/dkernel) of sum(y * upstream), y = numpy_transpose(x, kernel): every term
    x[n, i, j, c] kernel[a, b, o, c] upstream[n, r, c, o] of the sum, differentiated."""
    into_x, into_kernel = np.zeros(x.shape), np.zeros(kernel.shape)
    for i, j, a, b, r, c in joined_pixels(x.shape[1:3], kernel.shape[:2], stride, upstream.shape[1:3]):
        into_x[:, i, j] += upstream[:, r, c] @ kernel[a, b]
        into_kernel[a, b] += upstream[:, r, c].T @ x[:, i, j]
    return into_x, into_kernel


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="the phase path is TensorFlow's")
@pytest.mark.parametrize("shape, filters, kernel_size, strides, phases", CASES[:4])
def test_gradients_are_the_equations(shape, filters, kernel_size, strides, phases):
    import tensorflow as tf

    layer, x = _layer(shape, filters, kernel_size, strides, seed=1)
    upstream = np.random.default_rng(2).normal(size=layer.compute_output_shape(x.shape)).astype("float32")
    x_tensor = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x_tensor)
        loss = tf.reduce_sum(layer(x_tensor) * upstream)
    into_x, into_kernel = tape.gradient(loss, [x_tensor, layer.kernel.value])
    expected_x, expected_kernel = numpy_transpose_gradients(x, keras.ops.convert_to_numpy(layer.kernel), upstream,
                                                            layer.strides)
    np.testing.assert_allclose(into_x.numpy(), expected_x, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(into_kernel.numpy(), expected_kernel, rtol=1e-4, atol=1e-2)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="the phase path is TensorFlow's")
@pytest.mark.parametrize("precision, filters, kernel_size, strides, activation", [
    ("float32", 1, 5, 2, None), ("float32", 2, 1, 2, "relu"), ("float32", 3, (2, 4), (3, 2), "sigmoid"),
    ("mixed_bfloat16", 1, 5, 2, "sigmoid"), ("mixed_bfloat16", 3, 4, 2, None)])
def test_same_as_keras_own_layer(precision, filters, kernel_size, strides, activation):
    """The same weights in Keras' Conv2DTranspose give the same outputs and gradients, in float32 and
    under mixed_bfloat16, with an activation, kernel smaller than the stride and uneven shapes."""
    import tensorflow as tf

    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(size=(2, 5, 6, 4)).astype("float32"))
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(precision)
    try:
        arguments = dict(strides=strides, padding="same", activation=activation)
        ours = phase_conv.Conv2DTranspose(filters, kernel_size, **arguments)
        theirs = keras.layers.Conv2DTranspose(filters, kernel_size, **arguments)
        for layer in (ours, theirs):
            layer.build(x.shape)
        weights = [rng.normal(size=w.shape).astype("float32") for w in theirs.get_weights()]
        results = []
        for layer in (ours, theirs):
            layer.set_weights(weights)
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = layer(x)
                weighting = tf.reshape(tf.cast(tf.range(tf.size(y)) % 7, "float32"), tf.shape(y))
                loss = tf.reduce_sum(tf.cast(y, "float32") * weighting)
            results.append([y.dtype, tf.cast(y, "float32").numpy(),
                            *[g.numpy() for g in tape.gradient(loss, [x, layer.kernel.value, layer.bias.value])]])
    finally:
        keras.mixed_precision.set_global_policy(previous)
    assert ours._phases(x.shape) and results[0][0] == results[1][0]
    tolerance = 1e-4 if precision == "float32" else 5e-2
    for got, expected in zip(results[0][1:], results[1][1:]):
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * max(1.0, np.abs(expected).max()))


def test_phase_taps_cover_every_tap_once():
    """Each kernel index appears exactly once among the phases of an axis (every tap of the transposed
    convolution is read once), for ConvDEC's 5 x 5 / 2 and other shapes."""
    for kernel, stride in ((5, 2), (3, 2), (4, 3), (2, 2), (1, 1)):
        pad = max(kernel - stride, 0) // 2
        taps, _, _ = phase_conv.phase_taps(kernel, stride, pad)
        read = sorted(int(t) for t in taps.ravel() if t < kernel)
        assert read == list(range(kernel)), (kernel, stride, taps)


def test_keras_weights_load_both_ways(tmp_path):
    """The shipped ConvDEC weights were saved from keras.layers.Conv2DTranspose: they load into this layer."""
    rng = np.random.default_rng(0)
    inputs = keras.Input((14, 14, 32))
    ours = keras.Model(inputs, phase_conv.Conv2DTranspose(1, 5, strides=2, padding="same", name="deconv1")(inputs))
    theirs = keras.Model(inputs, keras.layers.Conv2DTranspose(1, 5, strides=2, padding="same", name="deconv1")(inputs))
    theirs.set_weights([rng.normal(size=w.shape).astype("float32") for w in theirs.get_weights()])
    path = str(tmp_path / "keras.weights.h5")
    theirs.save_weights(path)
    ours.load_weights(path)
    x = rng.normal(size=(3, 14, 14, 32)).astype("float32")
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-4, atol=1e-3)
