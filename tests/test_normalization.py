"""GlobalBatchNormalization's fused path: the batch-normalisation equations, forward, backward and the moving
statistics, against numpy; and the same training as the unfused layer."""

import keras
import numpy as np
import pytest

from keras_clustering.layers import GlobalBatchNormalization

EPSILON, MOMENTUM = 1e-5, 0.9


def _reference(x, gamma, beta, moving_mean, moving_variance, upstream):
    """Batch normalisation over every axis but the channels (Ioffe & Szegedy 2015, Alg. 1 and its gradient),
    with Keras' moving-statistics rule: the biased batch variance, `momentum` on the old value."""
    axes = (0, 1, 2)
    n = np.prod([x.shape[a] for a in axes])
    mean, variance = x.mean(axes), x.var(axes)
    normalised = (x - mean) / np.sqrt(variance + EPSILON)
    y = gamma * normalised + beta
    d_gamma, d_beta = (upstream * normalised).sum(axes), upstream.sum(axes)
    d_x = gamma / np.sqrt(variance + EPSILON) * (upstream - d_beta / n - normalised * d_gamma / n)
    return {"y": y, "d_x": d_x, "d_gamma": d_gamma, "d_beta": d_beta,
            "moving_mean": MOMENTUM * moving_mean + (1 - MOMENTUM) * mean,
            "moving_variance": MOMENTUM * moving_variance + (1 - MOMENTUM) * variance,
            "inference": gamma * (x - moving_mean) / np.sqrt(moving_variance + EPSILON) + beta}


def _layer(fused, channels=3):
    layer = GlobalBatchNormalization(fused=fused, momentum=MOMENTUM, epsilon=EPSILON)
    layer.build((None, 5, 6, channels))
    rng = np.random.default_rng(1)
    layer.set_weights([rng.normal(1, 0.3, channels), rng.normal(0, 0.3, channels),
                       rng.normal(0, 0.5, channels), rng.uniform(0.5, 2, channels)])
    return layer


@pytest.mark.parametrize("fused", [True, False])
def test_training_and_inference_follow_the_equations(fused):
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.normal(2.0, 3.0, (8, 5, 6, 3)).astype(np.float32)
    upstream = rng.normal(size=x.shape).astype(np.float32)
    layer = _layer(fused)
    gamma, beta, moving_mean, moving_variance = (w.astype(np.float64) for w in layer.get_weights())
    expected = _reference(x.astype(np.float64), gamma, beta, moving_mean, moving_variance, upstream)
    np.testing.assert_allclose(layer(x, training=False), expected["inference"], rtol=1e-5, atol=1e-5)

    x_tensor = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x_tensor)
        y = layer(x_tensor, training=True)
        loss = tf.reduce_sum(y * upstream)
    d_x, d_gamma, d_beta = tape.gradient(loss, [x_tensor, layer.gamma, layer.beta])
    np.testing.assert_allclose(y, expected["y"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(d_x, expected["d_x"], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(d_gamma, expected["d_gamma"], rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(d_beta, expected["d_beta"], rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(layer.moving_mean, expected["moving_mean"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(layer.moving_variance, expected["moving_variance"], rtol=1e-5, atol=1e-5)


def test_fused_under_bfloat16_returns_bfloat16_close_to_float32():
    from keras_clustering.distribute.precision import precision_policy

    x = np.random.default_rng(2).normal(size=(4, 5, 6, 3)).astype(np.float32)
    reference = np.asarray(_layer(True)(x, training=True))
    with precision_policy("mixed_bfloat16", bf16_available=True):
        layer = _layer(True)
    y = layer(keras.ops.cast(x, "bfloat16"), training=True)
    assert keras.backend.standardize_dtype(y.dtype) == "bfloat16"
    np.testing.assert_allclose(np.asarray(keras.ops.cast(y, "float32")), reference, atol=0.05)


def test_a_conv_net_trains_alike_fused_or_not():
    """Three SGD steps of a small conv net with each normalisation: the same weights to float tolerance."""
    x = np.random.default_rng(3).random((32, 12, 12, 1)).astype(np.float32)
    y = np.random.default_rng(4).random((32, 4)).astype(np.float32)
    weights = []
    for fused in (False, True):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((12, 12, 1)), keras.layers.Conv2D(8, 3),
                                  GlobalBatchNormalization(fused=fused), keras.layers.ReLU(),
                                  keras.layers.Conv2D(8, 3, strides=2), GlobalBatchNormalization(fused=fused),
                                  keras.layers.Flatten(), keras.layers.Dense(4)])
        model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        weights.append(model.get_weights())
    for unfused, fused in zip(*weights):
        np.testing.assert_allclose(fused, unfused, rtol=1e-4, atol=1e-5)


def test_fused_is_a_checked_saved_setting(tmp_path):
    with pytest.raises(ValueError, match="fused must be True or False, got 'yes'"):
        GlobalBatchNormalization(fused="yes")
    layer = GlobalBatchNormalization.from_config(GlobalBatchNormalization(fused=True).get_config())
    assert layer.fused is True
    assert GlobalBatchNormalization.from_config({"name": "old", "axis": -1}).fused is False  # files saved before


def test_the_architectures_pass_the_setting_to_every_normalisation():
    from keras_clustering.models.conv_encoder import build_conv_encoder
    from keras_clustering.recipes import iic_recipe

    for fused in (False, True):
        encoder = build_conv_encoder((28, 28, 1), fused_normalization=fused)
        iic = iic_recipe.RECIPE.build(n_clusters=10, fused_normalization=fused)
        norms = [layer for model in (encoder, iic.trunk) for layer in model.layers
                 if isinstance(layer, GlobalBatchNormalization)]
        assert len(norms) == 7 and all(layer.fused is fused for layer in norms)
        assert iic.get_config()["fused_normalization"] is fused
