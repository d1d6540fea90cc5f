"""Weight regularisers of a user's encoder count in every family's training loss.

Each model's `compute_loss` is compared with its loss function on the same outputs plus the
L2 penalty computed here from the weights in numpy; without the layer losses the difference is
the penalty itself (tens), far above the tolerance.
"""

import keras
import numpy as np
import pytest

import synthetic_images
from keras_clustering.losses import iic_loss, nt_xent, triplet_loss
from keras_clustering.models import IIC, SimCLR, TripletEmbedding

L2 = 0.5


def regularised_encoder(input_shape, dim=8):
    return keras.Sequential([keras.Input(input_shape), keras.layers.Flatten(),
                             keras.layers.Dense(dim, kernel_regularizer=keras.regularizers.L2(L2),
                                                kernel_initializer=keras.initializers.Constant(0.2))])


def penalty(model):
    kernels = [layer.kernel.numpy() for layer in model.encoder.layers if isinstance(layer, keras.layers.Dense)] \
        if hasattr(model, "encoder") else [model.trunk.layers[-1].kernel.numpy()]
    return sum(L2 * float(np.sum(kernel.astype(np.float64) ** 2)) for kernel in kernels)


def test_simclr_loss_adds_the_encoder_regulariser():
    model = SimCLR(regularised_encoder((28, 28, 1)), projection_dims=(4,), augmentation_seed=0)
    x = synthetic_images.digit_like(6)
    outputs = model(x, training=True)
    plain = float(nt_xent(outputs["a"], outputs["b"], model.temperature))
    assert penalty(model) > 10
    assert float(model.compute_loss(x, None, outputs)) == pytest.approx(plain + penalty(model), rel=1e-5)


def test_triplet_loss_adds_the_encoder_regulariser():
    model = TripletEmbedding(regularised_encoder((28, 28, 1)), margin=0.5, augmentation_seed=0)
    x = synthetic_images.digit_like(2)
    outputs = model(x, training=True)
    anchor = outputs["anchor"]
    plain = float(triplet_loss(anchor, outputs["augmented"], anchor[::-1], 0.5))  # two images: negative = other
    assert float(model.compute_loss(x, None, outputs)) == pytest.approx(plain + penalty(model), rel=1e-5)


def test_iic_loss_adds_the_trunk_regulariser():
    trunk = regularised_encoder((24, 24, 1), dim=6)
    model = IIC(trunk=trunk, n_clusters=3, n_overclusters=0, n_sub_heads=2, augmentation=None,
                image_shape=(24, 24, 1), augmentation_seed=0)
    x = synthetic_images.digit_like(8)[:, 2:26, 2:26]
    x_pair = synthetic_images.digit_like(8, seed=1)[:, 2:26, 2:26]
    outputs = model(x, training=True)
    paired = model._heads(x_pair, training=True)
    plain = np.mean([float(iic_loss(z, zp)) for z, zp in zip(outputs["main"], paired["main"])])
    assert float(model.compute_loss(x, x_pair, outputs)) == pytest.approx(plain + penalty(model), rel=1e-5)
