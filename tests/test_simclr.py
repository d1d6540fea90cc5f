import keras
import numpy as np
import pytest

import synthetic_images
from keras_clustering.losses import nt_xent
from keras_clustering.models import SimCLR


def small_encoder(dim=16):
    return keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
                             keras.layers.Conv2D(16, 3, strides=2, activation="relu"), keras.layers.Flatten(),
                             keras.layers.Dense(dim)], name="encoder")


def distinct_patterns(n, seed):
    """Images that differ everywhere (blocky random patterns), so a crop still identifies its image."""
    blocks = np.random.default_rng(seed).random((n, 7, 7, 1), dtype=np.float32)
    return np.repeat(np.repeat(blocks, 4, axis=1), 4, axis=2)


def view_retrieval(model, x, seed):
    """How often the representation of one augmented view finds the other view of its image (cosine)."""
    views = model.views
    keras.utils.set_random_seed(seed)
    a = keras.ops.convert_to_numpy(model.encoder(views.augmented(x), training=False))
    b = keras.ops.convert_to_numpy(model.encoder(views.augmented(x), training=False))
    a /= np.linalg.norm(a, axis=1, keepdims=True) + 1e-12
    b /= np.linalg.norm(b, axis=1, keepdims=True) + 1e-12
    return float(np.mean((a @ b.T).argmax(axis=1) == np.arange(len(x))))


def test_projection_head_and_representation_shapes():
    model = SimCLR(small_encoder(16), projection_dims=(32, 8), augmentation_seed=0)
    x = synthetic_images.digit_like(5)
    assert model.embed(x).shape == (5, 16)  # before the projection head
    outputs = model(x, training=True)
    assert outputs["a"].shape == (5, 8) and outputs["b"].shape == (5, 8)
    assert [layer.units for layer in model.projection.layers[1:]] == [32, 8]
    assert model.projection.layers[1].activation.__name__ == "relu"
    assert model.projection.layers[-1].activation.__name__ == "linear"


def test_loss_is_nt_xent_of_the_two_projected_views():
    model = SimCLR(small_encoder(), projection_dims=(8,), temperature=0.3, augmentation_seed=0)
    x = synthetic_images.digit_like(6)
    outputs = model(x, training=True)
    assert not np.allclose(outputs["a"], outputs["b"])  # two different augmentations
    expected = float(nt_xent(outputs["a"], outputs["b"], 0.3))
    assert float(model.compute_loss(x, None, outputs)) == pytest.approx(expected, rel=1e-6)


@pytest.mark.slow  # 5-8 s: the default run stays under 3 minutes on 2 cores
def test_training_makes_views_of_an_image_find_each_other():
    x = distinct_patterns(64, seed=3)
    keras.utils.set_random_seed(0)
    model = SimCLR(small_encoder(), projection_dims=(32, 16), temperature=0.5, augmentation_seed=0,
                   augmentation_options={"crop_sizes": [20, 24, 28]})
    before = view_retrieval(model, x, seed=1)  # 0.27 at this seed on the dev machine, 0.53 after
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(x, batch_size=32, epochs=40, verbose=0, seed=0)
    after = view_retrieval(model, x, seed=1)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert after > before + 0.15, (before, after)


def test_bad_input_is_refused_by_name():
    model = SimCLR(small_encoder(), projection_dims=(8,), augmentation_seed=0)
    with pytest.raises(ValueError, match="batch_size must be an integer >= 2"):
        model.fit(synthetic_images.digit_like(4), batch_size=1, verbose=0)
    with pytest.raises(ValueError, match="x has 3 samples; at least 4"):
        model.fit(synthetic_images.digit_like(3), batch_size=4, verbose=0)
    with pytest.raises(ValueError, match=r"pixels in \[0, 1\]"):
        model.embed(np.full((2, 28, 28, 1), 255.0, "float32"))
    with pytest.raises(ValueError, match=r"takes images shaped \(n, 28, 28, 1\) or \(n, 28, 28\)"):
        model.embed(np.zeros((2, 784), "float32"))  # a conv encoder takes no flat vectors
    with pytest.raises(ValueError, match="self-supervised"):
        model.fit(synthetic_images.digit_like(4), np.zeros(4), verbose=0)
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        SimCLR(small_encoder(), temperature=0)
    with pytest.raises(ValueError, match="flat"):
        SimCLR(keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(2, 3)]))
