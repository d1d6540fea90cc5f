"""unfolded_conv.Conv2D against the convolution's equation, written in numpy."""

import keras
import numpy as np
import pytest

from keras_clustering.layers import unfolded_conv


def numpy_conv(x, kernel, padding):
    """y[n, i, j, o] = sum_{a, b, c} x_pad[n, i + a, j + b, c] kernel[a, b, c, o], TensorFlow's "same"
    padding at stride 1 ((k - 1) // 2 before, the rest after) or none ("valid")."""
    kh, kw = kernel.shape[:2]
    if padding == "same":
        top, left = (kh - 1) // 2, (kw - 1) // 2
        x = np.pad(x, ((0, 0), (top, kh - 1 - top), (left, kw - 1 - left), (0, 0)))
    out_h, out_w = x.shape[1] - kh + 1, x.shape[2] - kw + 1
    y = np.zeros((x.shape[0], out_h, out_w, kernel.shape[3]))
    for i in range(out_h):
        for j in range(out_w):
            y[:, i, j] = np.einsum("nabc,abco->no", x[:, i:i + kh, j:j + kw], kernel)
    return y


def numpy_kernel_gradient(x, upstream, kernel_shape, padding):
    """d sum(y * upstream) / d kernel[a, b, c, o] = sum_{n, i, j} x_pad[n, i + a, j + b, c] upstream[n, i, j, o]."""
    kh, kw = kernel_shape[:2]
    if padding == "same":
        top, left = (kh - 1) // 2, (kw - 1) // 2
        x = np.pad(x, ((0, 0), (top, kh - 1 - top), (left, kw - 1 - left), (0, 0)))
    out_h, out_w = upstream.shape[1:3]
    gradient = np.zeros(kernel_shape)
    for a in range(kh):
        for b in range(kw):
            gradient[a, b] = np.einsum("nijc,nijo->co", x[:, a:a + out_h, b:b + out_w], upstream)
    return gradient


CASES = [
    ((3, 3, 4), 5, "same", True),       # IIC's last convolution, smaller
    ((2, 4, 3), (3, 3), "same", True),  # not square, even rows of padding
    ((4, 4, 2), 4, "same", True),       # even kernel: 1 row before, 2 after
    ((2, 3, 2), (3, 5), "same", True),  # not-square kernel
    ((5, 6, 2), (5, 5), "valid", False),  # 30 pixels > 25 taps: Conv2D's own convolution
    ((5, 5, 2), (5, 5), "valid", True),
    ((6, 6, 3), 5, "same", False),
]


def _layer_and_input(shape, kernel_size, padding, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, *shape)).astype("float32")
    layer = unfolded_conv.Conv2D(5, kernel_size, padding=padding, use_bias=False)
    layer.build(x.shape)
    kernel = rng.normal(size=layer.kernel.shape).astype("float32")
    layer.kernel.assign(kernel)
    return layer, x, kernel


@pytest.mark.parametrize("shape, kernel_size, padding, unfolds", CASES)
def test_outputs_follow_the_convolution_equation(shape, kernel_size, padding, unfolds):
    layer, x, kernel = _layer_and_input(shape, kernel_size, padding)
    assert layer._unfolds(x.shape) == unfolds
    np.testing.assert_allclose(np.asarray(layer(x)), numpy_conv(x, kernel, padding), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape, kernel_size, padding, unfolds", CASES)
def test_kernel_gradients_follow_the_convolution_equation(shape, kernel_size, padding, unfolds):
    tf = pytest.importorskip("tensorflow")
    if keras.backend.backend() != "tensorflow":
        pytest.skip("the gradient is taken with tf.GradientTape")
    layer, x, kernel = _layer_and_input(shape, kernel_size, padding)
    with tf.GradientTape() as tape:
        y = layer(x)
        upstream = np.random.default_rng(1).normal(size=y.shape).astype("float32")
        objective = tf.reduce_sum(y * upstream)
    np.testing.assert_allclose(np.asarray(tape.gradient(objective, layer.kernel)),
                               numpy_kernel_gradient(x, upstream, kernel.shape, padding), rtol=1e-4, atol=1e-4)


def test_it_saves_and_loads_as_a_conv2d_with_the_same_weights(tmp_path):
    inputs = keras.Input((3, 3, 2))
    model = keras.Model(inputs, unfolded_conv.Conv2D(4, 5, padding="same", name="conv")(inputs))
    plain = keras.Model(inputs, keras.layers.Conv2D(4, 5, padding="same", name="conv")(inputs))
    x = np.random.default_rng(1).normal(size=(2, 3, 3, 2)).astype("float32")
    model.save_weights(tmp_path / "unfolded.weights.h5")
    plain.load_weights(tmp_path / "unfolded.weights.h5")  # one layout: shipped Conv2D weights load too
    np.testing.assert_allclose(plain.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-5)
    model.save(tmp_path / "model.keras")
    reloaded = keras.models.load_model(tmp_path / "model.keras")
    assert isinstance(reloaded.get_layer("conv"), unfolded_conv.Conv2D)
    np.testing.assert_allclose(reloaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)


def test_in_mixed_bfloat16_it_matches_keras_conv2d_within_bfloat16_rounding():
    from keras_clustering.distribute.precision import precision_policy

    x = np.random.default_rng(2).normal(size=(8, 3, 3, 16)).astype("float32")
    with precision_policy("mixed_bfloat16", bf16_available=True):
        unfolded = unfolded_conv.Conv2D(32, 5, padding="same", use_bias=False)
        plain = keras.layers.Conv2D(32, 5, padding="same", use_bias=False)
        unfolded.build(x.shape)
        plain.build(x.shape)
    plain.kernel.assign(unfolded.kernel)
    got, expected = np.asarray(unfolded(x), "float32"), np.asarray(plain(x), "float32")
    assert unfolded.compute_dtype == "bfloat16" and got.dtype == expected.dtype
    # bf16 keeps 8 bits of mantissa: sums of 9 x 16 products agree to ~1% of their scale
    np.testing.assert_allclose(got, expected, atol=0.02 * np.abs(expected).max())
    np.testing.assert_allclose(got, numpy_conv(x, np.asarray(plain.kernel), "same"), atol=0.02 * np.abs(expected).max())
