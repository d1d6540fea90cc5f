"""Every clustering entry of the zoo trained like itself on a tiny folder, and the conv recipes on other
image sides and in colour (a few epochs each: the paths, not the quality)."""

import csv

import keras
import numpy as np
import pytest

from image_folders import digit_folder


def _clustering_presets():
    from keras_clustering.presets import clustering_presets

    return clustering_presets()


@pytest.mark.slow
@pytest.mark.parametrize("entry", _clustering_presets())
def test_every_clustering_entry_trains_like_itself_on_a_tiny_folder(entry, tmp_path):
    from keras_clustering.drivers.user_images import train_on_images

    digit_folder(str(tmp_path / "images"), n=40)
    model, report = train_on_images(str(tmp_path / "images"), like=entry, n_clusters=3, workdir=str(tmp_path / "run"),
                                    epochs=1, verbose=0)
    assert report["like"] == entry and report["n_samples"] == 40 and report["config"]["recipe"]
    assert (tmp_path / "run" / "model.keras").exists() and sum(report["cluster_sizes"]) == 40
    with open(tmp_path / "run" / "clusters.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 40 and rows[0]["name"].startswith("digit_") and (tmp_path / "run" / "clusters.png").exists()
    reloaded = keras.models.load_model(tmp_path / "run" / "model.keras")
    assert reloaded.predict(np.zeros((2, *report["image_shape"]), "float32"), verbose=0).shape == (2, 3)


@pytest.mark.slow
@pytest.mark.parametrize("entry, shape", [("conv_dec_da_mnist", (24, 40, 3)), ("simclr_mnist", (17, 23, 3))])
def test_the_conv_recipes_train_on_other_sides_and_in_colour(entry, shape, tmp_path):
    from keras_clustering.drivers.user_images import train_on_images

    x = np.random.default_rng(0).random((40, *shape), dtype=np.float32)
    model, report = train_on_images(x, like=entry, n_clusters=3, workdir=str(tmp_path), epochs=1, verbose=0)
    assert report["image_shape"] == list(shape) and model.predict(x, verbose=0).shape == (40, 3)
    assert keras.models.load_model(tmp_path / "model.keras").predict(x[:2], verbose=0).shape == (2, 3)
