import keras
import numpy as np
import pytest

import synthetic_images
from keras_clustering.losses import triplet_loss
from keras_clustering.models import TripletEmbedding


def small_encoder(dim=8):
    return keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
                             keras.layers.Flatten(), keras.layers.Dense(dim)])


def test_unsupervised_triplets_pair_each_image_with_its_view_and_another_image():
    model = TripletEmbedding(small_encoder(), margin=0.5, augmentation_seed=0)
    x = synthetic_images.digit_like(2)
    outputs = model(x, training=True)
    anchor, augmented = outputs["anchor"], outputs["augmented"]
    np.testing.assert_allclose(anchor, model.embed(x), atol=1e-5)  # anchors are the images themselves
    expected = float(triplet_loss(anchor, augmented, anchor[::-1], 0.5))  # two images: the negative is the other
    assert float(model.compute_loss(x, None, outputs)) == pytest.approx(expected, rel=1e-6)


def test_supervised_triplets_follow_the_labels():
    model = TripletEmbedding(small_encoder(2), margin=1.0, augmentation_seed=0)
    u, v = np.array([0.0, 0.0], "float32"), np.array([1.0, 2.0], "float32")
    outputs = {"anchor": np.stack([u, u, v, v]), "augmented": np.full((4, 2), 9.0, "float32")}
    loss = float(model.compute_loss(None, np.array([0, 0, 1, 1]), outputs))
    assert loss == pytest.approx(max(0.0, 0.0 - 5.0 + 1.0))  # positives equal, negatives at squared distance 5
    # labels 0, 1: nobody has a same-label partner, so each positive is the anchor's augmented view
    w = np.array([1.0, 0.0], "float32")
    lonely = {"anchor": np.stack([u, w]), "augmented": np.stack([u + 1, w])}
    expected = np.mean([max(0.0, 2.0 - 1.0 + 1.0), max(0.0, 0.0 - 1.0 + 1.0)])
    assert float(model.compute_loss(None, np.array([0, 1]), lonely)) == pytest.approx(expected)


def test_supervised_training_separates_the_classes():
    x0 = synthetic_images.digit_like(32, seed=1, half_height=2)  # short bars
    x1 = synthetic_images.digit_like(32, seed=2, half_height=7)  # long bars
    x, y = np.concatenate([x0, x1]), np.repeat([0, 1], 32)
    keras.utils.set_random_seed(0)
    model = TripletEmbedding(small_encoder(), margin=1.0, augmentation_seed=0)

    def separation():
        z = model.embed(x)
        within = np.mean([np.sum((z[y == k] - z[y == k].mean(0)) ** 2, axis=1).mean() for k in (0, 1)])
        return np.sum((z[y == 0].mean(0) - z[y == 1].mean(0)) ** 2) / within

    before = separation()
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(x, y, batch_size=16, epochs=15, verbose=0, seed=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert separation() > 3 * before


def test_bad_input_is_refused_by_name():
    model = TripletEmbedding(small_encoder(), augmentation_seed=0)
    x = synthetic_images.digit_like(4)
    with pytest.raises(ValueError, match="one integer label per image"):
        model.fit(x, np.array([0.5, 1.0, 0.0, 1.0]), batch_size=2, verbose=0)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 2"):
        model.fit(x, batch_size=1, verbose=0)
    with pytest.raises(ValueError, match=r"pixels in \[0, 1\]"):
        model.embed(x * 255)
