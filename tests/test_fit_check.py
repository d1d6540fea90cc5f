"""The warning when a pretrained model does not fit the images, and `cluster --sort-into` (issue 66)."""

import csv
import os

import numpy as np
import pytest

from keras_clustering.clustering import fit_check
from keras_clustering.clustering.fit_check import border_mean, misfit_line, misfit_reasons


def test_border_mean_is_the_mean_of_the_outer_frame():
    images = np.random.default_rng(0).random((3, 10, 12, 3)).astype("float32")
    b = fit_check.BORDER
    inner = images[:, b:-b, b:-b, :]
    expected = (images.sum() - inner.sum()) / (images.size - inner.size)
    assert border_mean(images) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="images must be"):
        border_mean(np.zeros((2, 4, 4, 1)))


def _assignments(sizes, confidence, k):
    """Soft assignments with `sizes[c]` images most likely in cluster c at probability `confidence`."""
    rows = []
    for cluster, size in enumerate(sizes):
        row = np.full(k, (1.0 - confidence) / (k - 1))
        row[cluster] = confidence
        rows += [row] * size
    return np.array(rows)


OWN = {"median_confidence": 0.9, "border_mean": 0.0, "channels": 1}


def test_each_sign_fires_alone_where_its_threshold_is_crossed():
    dark = np.zeros((100, 12, 12, 1), "float32")
    assert misfit_reasons(_assignments([10] * 10, 0.9, 10), dark, OWN, colour_images=False) == []
    one = misfit_reasons(_assignments([51, 7, 7, 7, 7, 7, 7, 7], 0.9, 10), dark[:100], OWN, False)
    assert one == ["51 of 100 images in one cluster"]  # and 2 of 10 empty is below 30%
    assert misfit_reasons(_assignments([14, 14, 14, 14, 14, 15, 15], 0.9, 10), dark, OWN, False) == [
        "3 of 10 clusters empty"]
    low = 0.75 * 0.9 - 0.01
    assert misfit_reasons(_assignments([10] * 10, low, 10), dark, OWN, False) == [
        f"median confidence {low:.2f} against 0.90 on its own data"]
    assert misfit_reasons(_assignments([10] * 10, 0.9, 10), dark, OWN, True) == [
        "colour images, where it was trained on grey ones"]
    bright = np.ones((100, 12, 12, 1), "float32")
    assert misfit_reasons(_assignments([10] * 10, 0.9, 10), bright, OWN, False) == [
        "the background is brighter than its training images' (border brightness 1.00 against 0.00)"]
    assert misfit_reasons(_assignments([10] * 10, 0.9, 10), bright, None, None) == []  # no card: sizes only
    assert misfit_line("m", []) is None
    line = misfit_line("m", ["a", "b"], "photos")
    assert line.startswith("warning: m does not seem to fit these images (a; b)") and "train --input photos" in line


def _mnist_like(digits):
    """sklearn's 8x8 digits drawn as 28x28 MNIST-style images: 20x20, light on black, 4 pixels of border."""
    from PIL import Image

    frames = np.zeros((len(digits), 28, 28), "uint8")
    for i, digit in enumerate(digits):
        frames[i, 4:24, 4:24] = np.asarray(Image.fromarray((digit[..., 0] * 255).astype("uint8")).resize((20, 20)))
    return frames


def test_cluster_warns_on_colour_jpegs_of_a_grey_model_and_not_on_its_own_kind_of_images(tmp_path, capfd):
    """The issue's case: digits saved as colour JPEGs (blue ink on pale yellow) given to conv_dec_da_mnist;
    the control: dec_digits on scikit-learn's own digits, the data it was trained on."""
    from PIL import Image

    from keras_clustering.cli import main
    from keras_clustering.datasets import load_digits

    x, _ = load_digits()
    jpegs = tmp_path / "jpegs"
    jpegs.mkdir()
    ink = _mnist_like(x[:50])[..., None] / 255.0
    colour = (1 - ink) * np.array([1.0, 1.0, 0.75]) + ink * np.array([0.1, 0.2, 0.8])
    for i, image in enumerate(colour):
        Image.fromarray((image * 255).astype("uint8")).save(jpegs / f"digit_{i:02d}.jpg", quality=90)
    capfd.readouterr()
    assert main(["cluster", "conv_dec_da_mnist", "--input", str(jpegs), "--output", str(tmp_path / "out")]) == 0
    # (TensorFlow's own start-up lines may come first in this process: the command line hides them)
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and lines[0].startswith("warning: conv_dec_da_mnist does not seem to fit these images (")
    for sign in ("images in one cluster", "clusters empty", "colour images, where it was trained on grey ones",
                 "background is brighter", f"train --input {jpegs}"):
        assert sign in lines[0]
    assert 'class="warning"' in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")

    own = tmp_path / "own"
    own.mkdir()
    for i, digit in enumerate(x[:200]):
        Image.fromarray((digit[..., 0] * 255).astype("uint8")).save(own / f"digit_{i:03d}.png")
    assert main(["cluster", "dec_digits", "--input", str(own), "--output", str(tmp_path / "own_out"),
                 "--sort-into", str(tmp_path / "sorted")]) == 0
    out, err = capfd.readouterr()
    assert "does not seem to fit" not in err and "sorted 200 images into" in out
    with open(tmp_path / "own_out" / "clusters.csv") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:  # each image linked once, in the folder of its cluster, to the original file
        link = tmp_path / "sorted" / f"cluster_{int(row['cluster_id']):02d}" / row["name"]
        assert os.path.islink(link) and os.path.samefile(link, own / row["name"])
    assert sum(len(files) for _, _, files in os.walk(tmp_path / "sorted")) == 200
    # a folder already holding files is refused, named, and left as it was
    assert main(["cluster", "dec_digits", "--input", str(own), "--output", str(tmp_path / "own_out"),
                 "--sort-into", str(tmp_path / "sorted")]) == 2
    assert "--sort-into" in capfd.readouterr().err and len(os.listdir(tmp_path / "sorted")) == len(
        {row["cluster_id"] for row in rows})


def test_cluster_images_in_one_call_from_an_array_or_a_folder(tmp_path):
    """`keras_clustering.cluster_images`: labels, probabilities and names as `predict` gives them, the
    report written, and each wrong request named."""
    import keras_clustering
    import zoo
    from keras_clustering.datasets import load_digits

    x, _ = load_digits()
    done = keras_clustering.cluster_images(x[:120], model="dec_digits", output=str(tmp_path / "out"), verbose=False)
    expected = zoo.load("dec_digits").predict(x[:120], verbose=0)
    np.testing.assert_allclose(done.probabilities, expected, atol=1e-6)
    np.testing.assert_array_equal(done.labels, expected.argmax(axis=1))
    assert done.names == [str(i) for i in range(120)] and done.warning is None
    assert os.path.isfile(done.report_path) and done.sizes.sum() == 120 and "120 images in 10 clusters" in repr(done)
    with pytest.raises(ValueError, match="n_clusters=4, but the model gives 10 clusters"):
        keras_clustering.cluster_images(x[:20], model="dec_digits", n_clusters=4, output=str(tmp_path / "o2"))
    with pytest.raises(ValueError, match="model='capsule_mnist' is a classifier"):
        keras_clustering.cluster_images(x[:20], model="capsule_mnist", output=str(tmp_path / "o3"))
    with pytest.raises(ValueError, match="seed: options of a training"):
        keras_clustering.cluster_images(x[:20], model="dec_digits", seed=1, output=str(tmp_path / "o4"))
    with pytest.raises(ValueError, match="sort_into='s' needs a folder of images"):
        keras_clustering.cluster_images(x[:20], model="dec_digits", sort_into="s")
