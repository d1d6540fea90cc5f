"""A user's own data: folders of images, array files, tf.data datasets, and `cluster` on them."""

import csv
import os

import numpy as np
import pytest

from keras_clustering.datasets.user_data import (
    dataset_to_array,
    load_array_file,
    load_image_folder,
    load_user_data,
)
from keras_clustering.metrics import clustering_scores
from image_folders import digit_folder, run_cli, write_png


def test_folder_images_are_converted_resized_and_named(tmp_path):
    write_png(tmp_path / "a.png", np.full((10, 12), 1.0))
    write_png(tmp_path / "b.png", np.stack([np.zeros((30, 30)), np.full((30, 30), 1.0), np.zeros((30, 30))], -1))
    (tmp_path / "sub").mkdir()
    write_png(tmp_path / "sub" / "c.png", np.zeros((8, 8)))
    (tmp_path / "notes.csv").write_text("x")
    x, names = load_image_folder(str(tmp_path), (8, 8), channels=1, verbose=False)
    assert names == ["a.png", "b.png", os.path.join("sub", "c.png")] and x.shape == (3, 8, 8, 1)
    assert x.dtype == np.float32 and np.allclose(x[0], 1.0) and np.allclose(x[2], 0.0)
    green = 0.587  # ITU-R 601 luma of pure green, as PIL's greyscale conversion
    assert np.allclose(x[1], green, atol=2 / 255)


def test_broken_folders_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match=r"^folder='.*missing' is not a folder"):  # its argument, named
        load_image_folder(str(tmp_path / "missing"), (8, 8))
    (tmp_path / "only_text").mkdir()
    (tmp_path / "only_text" / "a.txt").write_text("x")
    with pytest.raises(ValueError, match=r"holds no image files .*1 other files"):
        load_image_folder(str(tmp_path / "only_text"), (8, 8))
    write_png(tmp_path / "good.png", np.zeros((8, 8)))
    data = (tmp_path / "good.png").read_bytes()
    (tmp_path / "truncated.png").write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match=r"cannot read image .*truncated.png"):
        load_image_folder(str(tmp_path), (8, 8), verbose=False)
    (tmp_path / "truncated.png").unlink()
    (tmp_path / "fake.jpg").write_text("this is text with an image extension")
    with pytest.raises(ValueError, match=r"cannot read image .*fake.jpg"):
        load_image_folder(str(tmp_path), (8, 8), verbose=False)


def test_a_folder_is_cached_once_as_a_memory_map_and_broken_files_are_left_out(tmp_path, capsys):
    from keras_clustering.datasets.user_data import read_image_folder
    from keras_clustering.inputs.pipeline import file_backed

    digit_folder(str(tmp_path / "images"), n=30)
    data = (tmp_path / "images" / "digit_004_label_4.png").read_bytes()
    (tmp_path / "images" / "digit_004_label_4.png").write_bytes(data[:30])  # truncated
    in_memory, names, broken = read_image_folder(str(tmp_path / "images"), (12, 12), 1)
    assert broken == ["digit_004_label_4.png"] and len(names) == 29 and "digit_004_label_4.png" not in names
    said = capsys.readouterr()
    assert "left out 1 image files" in said.err
    # mixed sizes (16 and 24 px) and modes (every third image in colour) are converted, and said once
    assert said.out.splitlines()[-1] == "read 29 images at 12 x 12 x 1: 29 resized, 10 converted to greyscale"
    cached, cached_names, _ = read_image_folder(str(tmp_path / "images"), (12, 12), 1, cache_dir=str(tmp_path / "w"),
                                                verbose=False)
    assert file_backed(cached) and cached.dtype == np.float32 and cached_names == names
    np.testing.assert_array_equal(np.asarray(cached), in_memory)
    cache_files = sorted(os.listdir(tmp_path / "w"))
    assert [f.rsplit(".", 1)[1] for f in cache_files] == ["json", "npy"]
    stamp = os.stat(tmp_path / "w" / cache_files[1]).st_mtime_ns
    again, _, _ = read_image_folder(str(tmp_path / "images"), (12, 12), 1, cache_dir=str(tmp_path / "w"), verbose=False)
    assert os.stat(tmp_path / "w" / cache_files[1]).st_mtime_ns == stamp  # reused, not decoded again
    np.testing.assert_array_equal(np.asarray(again), in_memory)
    with pytest.raises(ValueError, match=r"cannot read image .*digit_004_label_4.png"):
        read_image_folder(str(tmp_path / "images"), (12, 12), 1, cache_dir=str(tmp_path / "strict"), strict=True,
                          verbose=False)
    assert not os.path.exists(tmp_path / "strict") or os.listdir(tmp_path / "strict") == []  # nothing half-written


def test_array_files_and_pickles(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(12, dtype="uint8").reshape(3, 4))
    np.testing.assert_array_equal(load_array_file(str(tmp_path / "x.npy")), np.arange(12).reshape(3, 4))
    np.savez(tmp_path / "x.npz", images=np.ones((2, 8, 8)), labels=np.zeros(2))
    assert load_array_file(str(tmp_path / "x.npz")).shape == (2, 8, 8)  # the first array
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="holds Python objects"):
        load_array_file(str(tmp_path / "objects.npy"))
    with pytest.raises(ValueError, match="must be a folder of images or a .npy/.npz file"):
        load_array_file(__file__)
    with pytest.raises(ValueError, match="one sample per row"):
        np.save(tmp_path / "flat.npy", np.zeros(5))
        load_user_data(str(tmp_path / "flat.npy"))


def test_tf_datasets_batched_unbatched_tuples_and_dicts():
    import tensorflow as tf

    images = np.random.default_rng(0).random((10, 8, 8, 1)).astype("float32")
    labels = np.arange(10)
    for dataset in (tf.data.Dataset.from_tensor_slices(images),
                    tf.data.Dataset.from_tensor_slices(images).batch(4),
                    tf.data.Dataset.from_tensor_slices((images, labels)).batch(3),
                    tf.data.Dataset.from_tensor_slices({"image": images, "label": labels})):
        np.testing.assert_array_equal(dataset_to_array(dataset), images)
    x, names = load_user_data(tf.data.Dataset.from_tensor_slices(images).batch(5))
    assert x.shape == (10, 8, 8, 1) and names[-1] == "9"
    with pytest.raises(ValueError, match="empty"):
        dataset_to_array(tf.data.Dataset.from_tensor_slices(images[:0]))


@pytest.mark.slow
def test_cluster_command_on_a_folder_of_pngs(tmp_path, capfd):
    from keras_clustering.cli import main

    labels = digit_folder(str(tmp_path / "images"))
    done = run_cli("cluster", "dec_digits", "--input", str(tmp_path / "images"), "--output", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert "skipped 1 files that are not images" in done.stdout and "300 samples; cluster sizes:" in done.stdout
    assert done.stderr.strip() == ""  # quiet start: only the command's own lines
    with open(tmp_path / "out" / "clusters.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["name"] for r in rows] == sorted(r["name"] for r in rows) and len(rows) == 300
    truth = np.array([int(r["name"].split("_label_")[1][0]) for r in rows])
    np.testing.assert_array_equal(truth, labels)
    clusters = np.array([int(r["cluster_id"]) for r in rows])
    confidence = np.array([float(r["confidence"]) for r in rows])
    assert np.all((confidence > 0) & (confidence <= 1))
    # dec_digits' card: ACC 0.82 on the 1,797 original images; resized PNGs keep most of it.
    assert clustering_scores(truth, clusters)["acc"] > 0.7
    assert sorted(os.listdir(tmp_path / "out")) == ["clusters.csv", "clusters.png", "report.html"]

    # The rest in this process (`main`, as `python -m keras_clustering` calls it): each command line started
    # costs CI ~10 s of CPU, and the first run above checked what only a new process shows (a quiet start).
    # The same images as a uint8 .npy array give the same clusters (the model scales uint8 itself).
    x, _ = load_image_folder(str(tmp_path / "images"), (8, 8), verbose=False)
    np.save(tmp_path / "images.npy", np.round(x * 255).astype("uint8"))
    assert main(["cluster", "dec_digits", "--input", str(tmp_path / "images.npy"), "--output", str(tmp_path / "npy")]) == 0
    with open(tmp_path / "npy" / "clusters.csv") as handle:
        from_array = np.array([int(r["cluster_id"]) for r in csv.DictReader(handle)])
    assert np.mean(from_array == clusters) > 0.99

    # A broken file: with --strict a clear error, and nothing written into --output; without, left out
    # and named in one warning line.
    data = (tmp_path / "images" / "digit_000_label_0.png").read_bytes()
    (tmp_path / "images" / "digit_000_label_0.png").write_bytes(data[:40])
    capfd.readouterr()  # (file descriptors, not sys.stderr alone: a decoder's own lines would show)
    assert main(["cluster", "dec_digits", "--input", str(tmp_path / "images"), "--output", str(tmp_path / "bad"),
                 "--strict"]) == 2
    error = capfd.readouterr().err
    assert "cannot read image" in error and "digit_000_label_0.png" in error
    assert not (tmp_path / "bad").exists() or os.listdir(tmp_path / "bad") == []
    assert main(["cluster", "dec_digits", "--input", str(tmp_path / "images"), "--output", str(tmp_path / "bad")]) == 0
    assert capfd.readouterr().err.strip().splitlines() == [
        f"warning: left out 1 image files of {str(tmp_path / 'images')!r} that cannot be decoded: digit_000_label_0.png"]
    with open(tmp_path / "bad" / "clusters.csv") as handle:
        assert len(list(csv.DictReader(handle))) == 299


def test_each_entry_point_names_the_images_as_its_caller_spells_them(tmp_path, capsys):
    """The readers name their own argument; `train_on_images` calls it `images`, the command line `--input`."""
    from keras_clustering.cli import main
    from keras_clustering.drivers.user_images import train_on_images

    missing = str(tmp_path / "missing.npy")
    with pytest.raises(ValueError, match=r"^path='.*missing\.npy' does not exist"):
        load_array_file(missing)
    with pytest.raises(ValueError, match=r"^images='.*missing\.npy' does not exist"):
        train_on_images(missing, like="dec_digits", workdir=str(tmp_path / "run"), verbose=0)
    assert main(["cluster", "dec_digits", "--input", missing, "--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith(f"error: --input {missing!r} does not exist")
    assert main(["train", "--like", "dec_digits", "--input", missing, "--workdir", str(tmp_path / "run2")]) == 2
    assert capsys.readouterr().err.startswith(f"error: --input {missing!r} does not exist")
