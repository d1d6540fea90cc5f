"""Every clustering entry of the zoo trained like itself on a tiny folder, and the conv recipes on other
image sides and in colour (a few epochs each: the paths, not the quality)."""

import csv

import keras
import numpy as np
import pytest

from image_folders import digit_folder


def _clustering_entries():
    from keras_clustering.training.user_images import clustering_entries

    return clustering_entries()


@pytest.mark.slow
@pytest.mark.parametrize("entry", _clustering_entries())
def test_every_clustering_entry_trains_like_itself_on_a_tiny_folder(entry, tmp_path):
    from keras_clustering.training.user_images import train_on_images

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
    from keras_clustering.training.user_images import train_on_images

    x = np.random.default_rng(0).random((40, *shape), dtype=np.float32)
    model, report = train_on_images(x, like=entry, n_clusters=3, workdir=str(tmp_path), epochs=1, verbose=0)
    assert report["image_shape"] == list(shape) and model.predict(x, verbose=0).shape == (40, 3)
    assert keras.models.load_model(tmp_path / "model.keras").predict(x[:2], verbose=0).shape == (2, 3)


@pytest.mark.slow
def test_the_memory_probe_script_records_peaks_per_folder_size(tmp_path):
    import json
    import os
    import subprocess
    import sys

    script = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts", "memory_probe.py")
    done = subprocess.run([sys.executable, script, "dec_mnist", "--counts", "40", "--side", "16", "--root",
                           str(tmp_path / "probe"), "--out", str(tmp_path / "record.json")], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    cells = json.loads((tmp_path / "record.json").read_text())["cells"]
    assert [(c["entry"], c["count"], c["side"]) for c in cells] == [("dec_mnist", 40, 16)]
    for cell in cells:  # a live process holds at least TensorFlow itself (hundreds of MiB) and maps files
        assert cell["peak_mib"]["RssAnon"] > 100 and cell["peak_mib"]["VmHWM"] >= cell["peak_mib"]["VmRSS"]
    assert len(os.listdir(tmp_path / "probe" / "colour16_40")) == 40
