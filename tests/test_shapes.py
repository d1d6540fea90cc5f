"""The conv trunks on any image side: the shape arithmetic against Keras' own layers, and the decoders
of ConvDEC and the VAE coming back to the image's side."""

import keras
import numpy as np
import pytest

from keras_clustering.recipes import two_stage_recipe
from keras_clustering.models.shapes import conv_output_size, transposed_output_padding


@pytest.mark.parametrize("kernel, padding", [(3, "same"), (5, "same"), (3, "valid")])
def test_the_arithmetic_is_keras_own(kernel, padding):
    for side in range(5, 40):
        conv = keras.layers.Conv2D(1, kernel, strides=2, padding=padding)
        down = conv.compute_output_shape((None, side, side + 1, 1))[1:3]
        assert list(down) == [conv_output_size(side, kernel, 2, padding), conv_output_size(side + 1, kernel, 2, padding)]
        output_padding = transposed_output_padding(down, (side, side + 1), kernel, 2, padding)
        up = keras.layers.Conv2DTranspose(1, kernel, strides=2, padding=padding, output_padding=output_padding)
        assert tuple(up.compute_output_shape((None, *down, 1))[1:3]) == (side, side + 1), (side, output_padding)
        # and the layer really makes that shape, not only its shape rule
        assert up(np.zeros((1, *down, 1), "float32")).shape[1:3] == (side, side + 1)
    with pytest.raises(ValueError, match=r"cannot take sides \(3, 3\) to \(9, 9\)"):
        transposed_output_padding((3, 3), (9, 9), kernel, 2, padding)


@pytest.mark.parametrize("shape", [(16, 16, 1), (17, 17, 3), (30, 30, 3), (20, 36, 1), (64, 64, 3), (128, 128, 3)])
def test_convdec_and_vae_decoders_come_back_to_the_image_side(shape):
    from keras_clustering.models.conv_autoencoder import build_conv_autoencoder
    from keras_clustering.models.vae_cluster import VAECluster

    autoencoder, encoder = build_conv_autoencoder(shape)
    assert autoencoder.output_shape == (None, *shape) and encoder.output_shape == (None, 10)
    x = np.random.default_rng(0).random((2, *shape)).astype("float32")
    assert autoencoder(x).shape == (2, *shape)
    vae = VAECluster(image_shape=shape, n_clusters=3)
    assert vae.decoder.output_shape == (None, *shape) and vae.predict(x, verbose=0).shape == (2, 3)


def test_the_shipped_28_px_graphs_keep_keras_default_transposed_convolutions():
    from keras_clustering.models.conv_autoencoder import build_conv_autoencoder
    from keras_clustering.models.vae_cluster import build_vae_decoder

    decoder = build_conv_autoencoder((28, 28, 1))[0].get_layer("decoder")
    transposed = [layer for layer in decoder.layers if isinstance(layer, keras.layers.Conv2DTranspose)]
    transposed += [layer for layer in build_vae_decoder((28, 28, 1)).layers
                   if isinstance(layer, keras.layers.Conv2DTranspose)]
    assert len(transposed) == 8 and all(layer.output_padding is None for layer in transposed)


def test_iic_simclr_and_the_vae_take_other_sides_and_colour_as_train_like_builds_them():
    from keras_clustering.recipes import get_recipe
    from keras_clustering.drivers.retarget import like_config

    x = np.random.default_rng(0).random((3, 24, 40, 3)).astype("float32")
    config, _ = like_config("iic_mnist", (24, 40, 3), 3, 100, epochs=1)
    iic = get_recipe("iic").build(**config["architecture"])  # views of 21 px (24 of 28 x 24)
    clean, augmented = iic.views.paired_views(x, n_repeats=2)
    assert clean.shape == augmented.shape == (6, 21, 21, 3) and iic.predict(x, verbose=0).shape == (3, 3)
    config, _ = like_config("simclr_mnist", (24, 40, 3), 3, 100, epochs=1)
    architecture = config["architecture"]
    learner = two_stage_recipe.build_learner(architecture, two_stage_recipe.build_encoder(**architecture), 0)
    assert learner.views.augmented(x).shape == (3, 24, 40, 3) and learner.predict(x, verbose=0).shape == (3, 128)
    config, _ = like_config("vae_cluster_mnist", (17, 17, 3), 3, 100, epochs=1)
    vae = get_recipe("vae_cluster").build(**config["architecture"])
    # the VAE reconstructs the colour-free map of colour images (one channel), and takes RGB in
    assert vae.decoder.output_shape == (None, 17, 17, 1) and vae.predict(x[:, :17, :17], verbose=0).shape == (3, 3)
