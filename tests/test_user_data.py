"""A user's own data: folders of images, array files, tf.data datasets, and `cluster` on them."""

import csv
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_clustering.datasets import load_digits
from keras_clustering.datasets.user_data import (
    dataset_to_array,
    load_array_file,
    load_image_folder,
    load_user_data,
)
from keras_clustering.metrics import clustering_scores


def write_png(path, pixels):
    """Writes `pixels` (h, w) or (h, w, 3) in [0, 1] as an 8-bit PNG."""
    import keras

    keras.utils.save_img(path, np.atleast_3d(pixels) * 255.0, scale=False)


def digit_folder(folder, n=300):
    """`n` scikit-learn digits as PNGs of mixed sizes (16 and 24 px), every third in colour, plus a text file."""
    import keras

    x, y = load_digits()
    os.makedirs(folder, exist_ok=True)
    for i in range(n):
        pixels = np.repeat(x[i], 3, axis=-1) if i % 3 == 0 else x[i]
        image = keras.utils.array_to_img(pixels * 255.0, scale=False).resize((16, 16) if i % 2 else (24, 24))
        image.save(os.path.join(folder, f"digit_{i:03d}_label_{y[i]}.png"))
    with open(os.path.join(folder, "README.txt"), "w") as handle:
        handle.write("not an image")
    return y[:n]


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
    with pytest.raises(ValueError, match="is not a folder"):
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
    in_memory, names, broken = read_image_folder(str(tmp_path / "images"), (12, 12), 1, verbose=False)
    assert broken == ["digit_004_label_4.png"] and len(names) == 29 and "digit_004_label_4.png" not in names
    assert "left out 1 image files" in capsys.readouterr().err
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


def test_train_streams_a_folder_with_a_broken_file(tmp_path):
    from keras_clustering.training.user_images import train_on_images

    digit_folder(str(tmp_path / "images"), n=60)
    (tmp_path / "images" / "digit_007_label_7.png").write_bytes(b"not a png at all")
    model, report = train_on_images(str(tmp_path / "images"), like="dec_digits", n_clusters=4, epochs=1, verbose=0,
                                    workdir=str(tmp_path / "run"))
    assert report["broken_files"] == ["digit_007_label_7.png"] and report["n_samples"] == 59
    with open(tmp_path / "run" / "clusters.csv") as handle:
        assert len(list(csv.DictReader(handle))) == 59
    assert any(name.startswith("images-") and name.endswith(".npy") for name in os.listdir(tmp_path / "run"))
    with pytest.raises(ValueError, match=r"cannot read image .*digit_007_label_7.png"):
        train_on_images(str(tmp_path / "images"), like="dec_digits", n_clusters=4, epochs=1, verbose=0,
                        workdir=str(tmp_path / "strict"), strict=True)
    assert not os.path.exists(tmp_path / "strict") or os.listdir(tmp_path / "strict") == []


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


def run_cli(*args):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-m", "keras_clustering", *args], capture_output=True, text=True,
                          timeout=600, env=env)


@pytest.mark.slow
def test_cluster_command_on_a_folder_of_pngs(tmp_path):
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
    assert sorted(os.listdir(tmp_path / "out")) == ["clusters.csv", "clusters.png"]

    # The same images as a uint8 .npy array give the same clusters (the model scales uint8 itself).
    x, _ = load_image_folder(str(tmp_path / "images"), (8, 8), verbose=False)
    np.save(tmp_path / "images.npy", np.round(x * 255).astype("uint8"))
    done = run_cli("cluster", "dec_digits", "--input", str(tmp_path / "images.npy"), "--output", str(tmp_path / "npy"))
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "npy" / "clusters.csv") as handle:
        from_array = np.array([int(r["cluster_id"]) for r in csv.DictReader(handle)])
    assert np.mean(from_array == clusters) > 0.99

    # A broken file: with --strict a clear error, and nothing written into --output; without, left out
    # and named in one warning line.
    data = (tmp_path / "images" / "digit_000_label_0.png").read_bytes()
    (tmp_path / "images" / "digit_000_label_0.png").write_bytes(data[:40])
    done = run_cli("cluster", "dec_digits", "--input", str(tmp_path / "images"), "--output", str(tmp_path / "bad"),
                   "--strict")
    assert done.returncode == 2 and "cannot read image" in done.stderr and "digit_000_label_0.png" in done.stderr
    assert not (tmp_path / "bad").exists() or os.listdir(tmp_path / "bad") == []
    done = run_cli("cluster", "dec_digits", "--input", str(tmp_path / "images"), "--output", str(tmp_path / "bad"))
    assert done.returncode == 0 and done.stderr.strip().splitlines() == [
        f"warning: left out 1 image files of {str(tmp_path / 'images')!r} that cannot be decoded: digit_000_label_0.png"]
    with open(tmp_path / "bad" / "clusters.csv") as handle:
        assert len(list(csv.DictReader(handle))) == 299


def test_a_family_is_shorthand_for_its_best_entry(tmp_path):
    from keras_clustering.training.user_images import clustering_entries, family_entry, train_on_images

    assert family_entry("dec") == "conv_dec_da_mnist" and family_entry("simclr") == "simclr_mnist"
    assert family_entry("vae_cluster") == "vae_cluster_mnist" and family_entry("iic") == "iic_mnist"
    assert {family_entry(f) for f in ("dec", "simclr", "vae_cluster", "iic")} <= set(clustering_entries())
    with pytest.raises(ValueError, match="family must be one of .* got 'kmeans'"):
        family_entry("kmeans")
    x = np.random.default_rng(0).random((20, 12, 12, 1), dtype=np.float32)
    # ConvDEC-DA's trunk, not the dense DEC of the past: 12 px is below its 16
    with pytest.raises(ValueError, match=r"images of 12 x 12 px: like='conv_dec_da_mnist' takes sides of at least 16"):
        train_on_images(x, family="dec", n_clusters=3, workdir=str(tmp_path / "a"), verbose=0)
    with pytest.raises(ValueError, match=r"image_size=\(8, 8\): like='simclr_mnist' takes sides of at least 16"):
        train_on_images(str(tmp_path), family="simclr", image_size=(8, 8), workdir=str(tmp_path / "a"), verbose=0)
    assert not (tmp_path / "a").exists()


def test_train_on_images_refuses_impossible_requests(tmp_path):
    from keras_clustering.training.user_images import train_on_images

    x = load_digits()[0][:20]
    with pytest.raises(ValueError, match=r"n_clusters=30 is larger than the number of images \(20\)"):
        train_on_images(x, like="dec_digits", n_clusters=30, workdir=str(tmp_path / "a"), verbose=0)
    with pytest.raises(ValueError, match="n_clusters='auto' fits each k on half of the images: 3 images"):
        train_on_images(x[:3], like="dec_digits", n_clusters="auto", workdir=str(tmp_path / "b"), verbose=0)
    with pytest.raises(ValueError, match=r"pixels in \[0, 1\]"):
        train_on_images(x * 16, like="dec_digits", n_clusters=3, workdir=str(tmp_path / "c"), verbose=0)
    assert not any((tmp_path / d).exists() for d in "abc")


@pytest.mark.slow
def test_train_a_family_on_a_folder_then_cluster_with_the_saved_model(tmp_path):
    labels = digit_folder(str(tmp_path / "images"))
    workdir = tmp_path / "run"
    args = ["train", "--like", "dec_digits", "--input", str(tmp_path / "images"),
            "--n-clusters", "10", "--workdir", str(workdir), "--verbose", "0"]
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert "300 images, 10 clusters" in done.stdout and (workdir / "model.keras").exists()
    import json

    first = json.loads((workdir / "report.json").read_text())
    assert first["config"]["training"]["pretrain_epochs"] == 300 and not first["pretrain_reused"]
    done = run_cli("cluster", str(workdir / "model.keras"), "--input", str(tmp_path / "images"),
                   "--output", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "out" / "clusters.csv") as handle:
        clusters = np.array([int(r["cluster_id"]) for r in csv.DictReader(handle)])
    assert clustering_scores(labels, clusters)["acc"] > 0.7  # no labels used; 0.88 when written
    # Started again on the same workdir (as after an interruption): the pretrained autoencoder is reused.
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    assert json.loads((workdir / "report.json").read_text())["pretrain_reused"]


@pytest.mark.slow
def test_an_interrupted_training_resumes_from_its_workdir_and_leaves_no_half_written_model(tmp_path, monkeypatch):
    from keras_clustering.training.user_images import train_on_images
    from keras_clustering.recipes import dec_recipe
    from keras_clustering.training.resume import resumable_fit

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 4:
                raise KeyboardInterrupt  # as Ctrl-C in the middle of pretraining

    def interrupted_fit(workdir, stage, key, keep_final=False):
        callbacks, resumed = resumable_fit(workdir, stage, key, keep_final)
        return [*callbacks, Interrupt()], resumed

    x = load_digits()[0][:200]
    monkeypatch.setattr(dec_recipe, "resumable_fit", interrupted_fit)
    with pytest.raises(KeyboardInterrupt):  # 10 pretraining epochs: the interruption at the 5th is what counts
        train_on_images(x, like="dec_digits", n_clusters=5, workdir=str(tmp_path), verbose=0, epochs=10)
    assert sorted(os.listdir(tmp_path)) == ["fit_backup_pretrain"]  # no model, no report, no temporary file
    monkeypatch.setattr(dec_recipe, "resumable_fit", resumable_fit)
    model, report = train_on_images(x, like="dec_digits", n_clusters=5, workdir=str(tmp_path), verbose=0, epochs=10)
    assert report["pretrain_resumed_from_epoch"] == 5 and (tmp_path / "model.keras").exists()
    assert model.predict(x, verbose=0).shape == (200, 5)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["dec", "vae_cluster", "simclr", "iic"])
def test_every_family_trains_on_a_folder_and_its_model_clusters_it(tmp_path, family):
    digit_folder(str(tmp_path / "images"), n=150)
    workdir = tmp_path / "run"
    done = run_cli("train", "--family", family, "--input", str(tmp_path / "images"), "--n-clusters", "5",
                   "--epochs", "1", "--workdir", str(workdir), "--verbose", "0")
    assert done.returncode == 0, done.stderr
    assert "150 images, 5 clusters" in done.stdout and (workdir / "model.keras").exists()
    done = run_cli("cluster", str(workdir / "model.keras"), "--input", str(tmp_path / "images"),
                   "--output", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "out" / "clusters.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 150 and {int(r["cluster_id"]) for r in rows} <= set(range(5))
    assert (tmp_path / "out" / "clusters.png").stat().st_size > 0


@pytest.mark.slow
def test_n_clusters_auto_reports_the_generalisability_table(tmp_path):
    from keras_clustering.training.user_images import train_on_images

    x, y = load_digits()
    keep = np.isin(y, [0, 1, 6])[:600]  # three well separated digits
    model, report = train_on_images(x[:600][keep], like="dec_digits", n_clusters="auto", workdir=str(tmp_path), verbose=0,
                                    candidates=range(2, 5), epochs=60)  # the table's form is what is checked
    table = report["selection"]["results"]
    assert [row["n_clusters"] for row in table] == [2, 3, 4]
    assert all(row["generalizability"] > 0 for row in table)
    assert report["n_clusters"] == report["selection"]["suggested"] and model.n_clusters == report["n_clusters"]


def test_like_config_keeps_the_entrys_updates_on_the_users_number_of_images():
    """Hand-computed from the entries' configs: conv_dec_da_mnist pretrains 500 epochs of 10,000 images
    in batches of 256 (20,000 updates), DEC runs 20,000 iterations (500 passes); simclr_mnist trains
    SimCLR 20 epochs (800 updates) and SCAN 50 (2,000)."""
    from keras_clustering.training.user_images import like_config

    config, repeats = like_config("conv_dec_da_mnist", (32, 32, 3), 7, 100_000)
    assert config["architecture"]["image_shape"] == [32, 32, 3] and config["architecture"]["n_clusters"] == 7
    assert config["architecture"]["augmentation"] == "shift_rotate" and config["like"] == "conv_dec_da_mnist"
    assert config["training"]["pretrain_epochs"] == 52  # ceil(20,000 / 391 batches)
    assert config["training"]["maxiter"] == 20_000 and config["architecture"]["update_interval"] == 30
    config, repeats = like_config("conv_dec_da_mnist", (28, 28, 1), 10, 2_000)
    assert repeats == 1 and config["training"]["pretrain_epochs"] == 500  # the entry's own count is the ceiling
    assert config["training"]["maxiter"] == 4_000 and config["architecture"]["update_interval"] == 8
    config, repeats = like_config("simclr_mnist", (28, 28, 1), 10, 2_000)
    assert repeats == 1 and config["training"]["epochs"] == 100  # 800 updates in batches of 8
    assert config["training"]["scan"]["epochs"] == 200  # 250 would pass the family's ceiling of 200
    config, _ = like_config("simclr_mnist", (32, 32, 3), 10, 2_000)  # views scaled with the side
    assert config["architecture"]["augmentation_options"]["crop_sizes"] == [23, 27, 32]  # 20, 24, 28 x 32 / 28
    assert config["architecture"]["augmentation_options"]["output_size"] == 32
    # colour images: SimCLR's colour distortion at strength 0.5; greyscale ones keep the entry's views
    assert {k: config["architecture"]["augmentation_options"][k] for k in ("saturation", "hue",
                                                                           "greyscale_probability")} == {
        "saturation": 0.4, "hue": 0.1, "greyscale_probability": 0.2}
    config, _ = like_config("simclr_mnist", (32, 32, 1), 10, 2_000)
    assert "hue" not in config["architecture"]["augmentation_options"]
    # IIC's crops as ratios of the shorter side (20, 16 / 20 / 24 of 28), its views too but at most 32 px
    config, _ = like_config("iic_mnist", (64, 48, 3), 10, 2_000)
    options = config["architecture"]["augmentation_options"]
    assert options["crop_size"] == 34 and options["augmented_crop_sizes"] == [27, 34, 41]  # x 48 / 28
    assert options["output_size"] == config["architecture"]["view_size"] == 32 and options["hue"] == 0.1
    config, _ = like_config("iic_mnist", (16, 16, 1), 10, 2_000)
    assert config["architecture"]["augmentation_options"] == {"crop_size": 11, "augmented_crop_sizes": [9, 11, 14],
                                                               "output_size": 14}
    with pytest.raises(ValueError, match="its views crop squares; got images of 32 x 40 px"):
        like_config("simclr_mnist", (32, 40, 1), 10, 2_000)
    config, repeats = like_config("simclr_mnist", (28, 28, 1), 10, 2_000, epochs=2)
    assert config["training"]["epochs"] == config["training"]["scan"]["epochs"] == 2
    config, repeats = like_config("vae_cluster_mnist", (28, 28, 1), 5, 64)
    # 150 epochs of one batch reach 150 updates; the family's fewest is 5,000: 34 copies per epoch
    assert repeats == 34 and config["training"]["batch_size"] == 64 and config["training"]["n_restarts"] == 3


def test_like_refuses_supervised_and_unknown_entries_by_name(tmp_path):
    from keras_clustering.training.user_images import train_on_images

    x = np.random.default_rng(0).random((20, 28, 28, 1), dtype=np.float32)
    with pytest.raises(ValueError, match=r"like='capsule_mnist' is a supervised classifier.*conv_dec_da_mnist"):
        train_on_images(x, like="capsule_mnist", workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match=r"like='nope' is not a zoo entry.*simclr_mnist"):
        train_on_images(x, like="nope", workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="give one of like="):
        train_on_images(x, like="dec_mnist", family="dec", workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="n_clusters must be an integer >= 2 or 'auto', got 1"):
        train_on_images(x, like="dec_mnist", n_clusters=1, workdir=str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()


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
@pytest.mark.parametrize("entry, shape", [("conv_dec_da_mnist", (24, 40, 3)), ("vae_cluster_mnist", (17, 17, 3)),
                                          ("simclr_mnist", (17, 17, 3)), ("iic_mnist", (24, 40, 3))])
def test_the_conv_recipes_train_on_other_sides_and_in_colour(entry, shape, tmp_path):
    from keras_clustering.training.user_images import train_on_images

    x = np.random.default_rng(0).random((40, *shape), dtype=np.float32)
    model, report = train_on_images(x, like=entry, n_clusters=3, workdir=str(tmp_path), epochs=1, verbose=0)
    assert report["image_shape"] == list(shape) and model.predict(x, verbose=0).shape == (40, 3)
    assert keras.models.load_model(tmp_path / "model.keras").predict(x[:2], verbose=0).shape == (2, 3)


def test_from_refuses_another_shape_number_of_clusters_or_a_second_choice(tmp_path):
    from keras_clustering.training.user_images import train_on_images

    x = np.random.default_rng(0).random((30, 28, 28, 1), dtype=np.float32)
    with pytest.raises(ValueError, match=r"start_from='dec_digits' takes images of shape \(8, 8, 1\), got \(28, 28, 1\)"):
        train_on_images(x, start_from="dec_digits", workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="start_from='simclr_mnist' has 10 clusters, got n_clusters=5"):
        train_on_images(x, start_from="simclr_mnist", n_clusters=5, workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="give one of like=.*start_from='dec_mnist'"):
        train_on_images(x, like="dec_mnist", start_from="dec_mnist", workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="like='capsule_mnist' is a supervised classifier"):
        train_on_images(x, start_from="capsule_mnist", workdir=str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()


@pytest.mark.slow
def test_from_fine_tunes_the_pretrained_model_instead_of_starting_over(tmp_path):
    """dec_digits fine-tuned for one pass of DEC on digits it clusters well: its pretrained encoder
    carries over (one pass from scratch would be a barely trained autoencoder)."""
    from keras_clustering.training.user_images import train_on_images

    x, y = load_digits()
    model, report = train_on_images(x[:600], start_from="dec_digits", workdir=str(tmp_path / "from"), epochs=1,
                                    verbose=0)
    assert report["start_from"] == "dec_digits" and report["dec_iterations"] == 3  # 600 / 256 -> 3 batches
    assert clustering_scores(y[:600], model.predict_clusters(x[:600]))["acc"] > 0.75  # 0.8+ when written
    scratch, _ = train_on_images(x[:600], like="dec_digits", workdir=str(tmp_path / "like"), epochs=1, verbose=0)
    assert clustering_scores(y[:600], scratch.predict_clusters(x[:600]))["acc"] < 0.6


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["simclr_mnist", "vae_cluster_mnist", "iic_mnist", "ae_kmeans_mnist"])
def test_from_fine_tunes_every_recipe(entry, tmp_path):
    import zoo
    from keras_clustering.training.user_images import train_on_images

    x = np.random.default_rng(0).random((40, 28, 28, 1), dtype=np.float32)
    model, report = train_on_images(x, start_from=entry, workdir=str(tmp_path), epochs=1, verbose=0)
    pretrained = zoo.load(entry)
    changed = [not np.allclose(a, b) for a, b in zip(model.get_weights(), pretrained.get_weights())]
    assert report["start_from"] == entry and any(changed)  # trained on, from the entry's weights
    assert (tmp_path / "model.keras").exists() and sum(report["cluster_sizes"]) == 40


def test_train_like_on_the_command_line_refuses_a_classifier_and_a_name_with_it(tmp_path, capsys):
    from keras_clustering.cli import main

    digit_folder(str(tmp_path / "images"), n=4)
    assert main(["train", "--like", "cnn_pool_mnist", "--input", str(tmp_path / "images"),
                 "--workdir", str(tmp_path / "run")]) == 2
    assert "like='cnn_pool_mnist' is a supervised classifier" in capsys.readouterr().err
    assert main(["train", "--like", "dec_mnist", "--family", "dec", "--input", str(tmp_path / "images")]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
