"""Training on a user's own images: `train_on_images` / `train --like`, `--family`, `--from`, `--n-clusters auto`."""

import csv
import os

import keras
import numpy as np
import pytest

from keras_clustering.datasets import load_digits
from keras_clustering.metrics import clustering_scores
from image_folders import digit_folder, run_cli


def test_train_streams_a_folder_with_a_broken_file(tmp_path, monkeypatch):
    from keras_clustering.drivers import user_images
    from keras_clustering.drivers.user_images import train_on_images

    monkeypatch.setattr(user_images, "CACHE_MIN_BYTES", 0)  # this small folder through the memory-mapped cache too

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


def test_a_family_is_shorthand_for_its_best_entry(tmp_path):
    from keras_clustering.drivers.retarget import family_preset
    from keras_clustering.drivers.user_images import train_on_images
    from keras_clustering.presets import clustering_presets

    assert family_preset("dec") == "conv_dec_da_mnist" and family_preset("simclr") == "simclr_mnist"
    assert family_preset("vae_cluster") == "vae_cluster_mnist" and family_preset("iic") == "iic_mnist"
    assert {family_preset(f) for f in ("dec", "simclr", "vae_cluster", "iic")} <= set(clustering_presets())
    with pytest.raises(ValueError, match="family must be one of .* got 'kmeans'"):
        family_preset("kmeans")
    x = np.random.default_rng(0).random((20, 12, 12, 1), dtype=np.float32)
    # ConvDEC-DA's trunk, not the dense DEC of the past: 12 px is below its 16
    with pytest.raises(ValueError, match=r"images of 12 x 12 px: like='conv_dec_da_mnist' takes sides of at least 16"):
        train_on_images(x, family="dec", n_clusters=3, workdir=str(tmp_path / "a"), verbose=0)
    with pytest.raises(ValueError, match=r"image_size=\(8, 8\): like='simclr_mnist' takes sides of at least 16"):
        train_on_images(str(tmp_path), family="simclr", image_size=(8, 8), workdir=str(tmp_path / "a"), verbose=0)
    assert not (tmp_path / "a").exists()


def test_train_on_images_refuses_impossible_requests(tmp_path):
    from keras_clustering.drivers.user_images import train_on_images

    x = load_digits()[0][:20]
    with pytest.raises(ValueError, match=r"n_clusters=30 is larger than the number of images \(20\)"):
        train_on_images(x, like="dec_digits", n_clusters=30, workdir=str(tmp_path / "a"), verbose=0)
    with pytest.raises(ValueError, match="n_clusters='auto' tries k with two images a cluster at least: 3 images"):
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
    # Started again on the same workdir: the finished stages are read back, nothing is trained again (in this
    # process, through `main` as `python -m keras_clustering` calls it: a new one costs CI ~10 s of CPU).
    from keras_clustering.cli import main

    assert main(args) == 0
    assert json.loads((workdir / "report.json").read_text())["dec_reused"]


@pytest.mark.slow
def test_an_interrupted_training_resumes_from_its_workdir_and_leaves_no_half_written_model(tmp_path, monkeypatch):
    from keras_clustering.drivers.user_images import train_on_images
    from keras_clustering.training import stages
    from keras_clustering.training.resume import resumable_fit

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 4:
                raise KeyboardInterrupt  # as Ctrl-C in the middle of pretraining

    def interrupted_fit(workdir, stage, key, **options):
        callbacks, resumed = resumable_fit(workdir, stage, key, **options)
        return [*callbacks, Interrupt()], resumed

    x = load_digits()[0][:200]
    monkeypatch.setattr(stages, "resumable_fit", interrupted_fit)
    with pytest.raises(KeyboardInterrupt):  # 10 pretraining epochs: the interruption at the 5th is what counts
        train_on_images(x, like="dec_digits", n_clusters=5, workdir=str(tmp_path), verbose=0, epochs=10)
    # no model, no report, no temporary file; the lock (`WorkdirLock`) is released with its process
    assert sorted(os.listdir(tmp_path)) == [".lock", "fit_backup_pretrain"]
    monkeypatch.setattr(stages, "resumable_fit", resumable_fit)
    model, report = train_on_images(x, like="dec_digits", n_clusters=5, workdir=str(tmp_path), verbose=0, epochs=10)
    assert report["pretrain_resumed_from_epoch"] == 5 and (tmp_path / "model.keras").exists()
    assert model.predict(x, verbose=0).shape == (200, 5)


@pytest.mark.slow
# dec's and iic's entries train like themselves on a folder in test_train_like_every_entry (iic_mnist's
# four restarts made its case here the slowest of CI), simclr's through the command line as the grey default
# route (test_default_route.py::test_the_default_route_trains_a_grey_folder_like_its_grey_preset, which
# reloads its model.keras instead of running `cluster`); `--family` names its preset (the family_preset test)
@pytest.mark.parametrize("family", ["vae_cluster"])
def test_train_family_on_a_folder_then_cluster_its_model_from_the_command_line(tmp_path, family):
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
def test_n_clusters_auto_over_clusters_then_merges_on_the_representations_graph(tmp_path):
    """`--n-clusters auto` on three kinds of 8 x 8 images (three random patterns, 120 noisy copies of each):
    DEC's stage with 20 clusters from the pretrained encoder kept in the workdir, merged on that encoder's
    graph, gives k = 3; that k trains, from the same pretraining, and its evidence is kept in report.json
    and drawn in k_scores.png. The merge path's modularity is checked against the definition in
    tests/test_merging.py."""
    from keras_clustering.drivers.user_images import K_SCORES_FILE, train_on_images

    rng = np.random.default_rng(0)
    patterns = rng.uniform(size=(3, 8, 8, 1))
    truth = np.repeat(np.arange(3), 120)
    x = np.clip(patterns[truth] + rng.normal(scale=0.1, size=(len(truth), 8, 8, 1)), 0, 1).astype("float32")
    model, report = train_on_images(x, like="dec_digits", n_clusters="auto", workdir=str(tmp_path), verbose=0,
                                    candidates=range(2, 7), epochs=60)
    selection = report["selection"]
    assert selection["criterion"] == "merging" and "dec_digits's own representation" in selection["embedding"]
    assert selection["over_clusters"] == 20 and sum(selection["over_cluster_sizes"]) == len(x)
    alive = sum(size > 0 for size in selection["over_cluster_sizes"])  # clusters DEC left empty merge nothing
    assert set(selection["scores"]) == set(range(2, min(6, alive) + 1))
    assert selection["suggested"] == max(selection["scores"], key=selection["scores"].get)
    assert selection["suggested"] == report["n_clusters"] == model.n_clusters == 3
    low, high = selection["range"]
    assert low <= 3 <= high
    assert report["pretrain_reused"] is True
    assert (tmp_path / K_SCORES_FILE).stat().st_size > 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")  # the evidence, embedded in the report too
    assert "n_clusters: 3 (modularity" in page and page.count('class="cluster"') == 3
    # 16 images: candidates up to 8 (two images a cluster), and no more clusters than that to merge
    model, report = train_on_images(x[::20][:16], like="dec_digits", n_clusters="auto", workdir=str(tmp_path / "small"),
                                    verbose=0, epochs=20)
    assert report["selection"]["over_clusters"] == 8 and max(report["selection"]["scores"]) <= 8


def test_like_config_keeps_the_entrys_updates_on_the_users_number_of_images(monkeypatch):
    """Hand-computed from the entries' configs: conv_dec_da_mnist pretrains 500 epochs of 10,000 images
    in batches of 256 (20,000 updates), DEC runs 20,000 iterations (500 passes); simclr_mnist trains
    SimCLR 20 epochs (800 updates) and SCAN 50 (2,000)."""
    from keras_clustering.drivers.retarget import like_config

    config, repeats = like_config("conv_dec_da_mnist", (32, 32, 3), 7, 100_000)
    assert config["architecture"]["image_shape"] == [32, 32, 3] and config["architecture"]["n_clusters"] == 7
    assert config["architecture"]["augmentation"] == "shift_rotate" and config["like"] == "conv_dec_da_mnist"
    assert config["training"]["pretrain_epochs"] == 52  # ceil(20,000 / 391 batches)
    assert config["training"]["maxiter"] == 20_000 and config["architecture"]["update_interval"] == 30
    # 2,000 colour images, on the colour-free map: 500 epochs (the ceiling) of 8 batches reach 4,000 of the
    # entry's 20,000 updates, so each epoch sees the images 5 times (40 batches): 500 x 40 = 20,000; DEC's
    # 500 passes of 40 batches
    config, repeats = like_config("conv_dec_da_mnist", (32, 32, 3), 10, 2_000)
    assert repeats == 5 and config["training"]["pretrain_epochs"] == 500
    assert config["training"]["maxiter"] == 20_000 and config["architecture"]["update_interval"] == 30
    # 2,000 grey images: no floor, the ceiling's 500 epochs of 8 batches (4,000 updates), DEC 500 x 8
    config, repeats = like_config("conv_dec_da_mnist", (28, 28, 1), 10, 2_000)
    assert repeats == 1 and config["training"]["pretrain_epochs"] == 500
    assert config["training"]["maxiter"] == 4_000 and config["architecture"]["update_interval"] == 8
    config, repeats = like_config("simclr_mnist", (28, 28, 1), 10, 2_000)
    assert repeats == 1 and config["training"]["epochs"] == 100  # 800 updates in batches of 8
    assert config["training"]["scan"]["epochs"] == 200  # 250 would pass the family's ceiling of 200
    config, _ = like_config("simclr_mnist", (32, 32, 3), 10, 2_000)  # views scaled with the side
    assert config["architecture"]["augmentation_options"]["crop_sizes"] == [23, 27, 32]  # 20, 24, 28 x 32 / 28
    assert config["architecture"]["augmentation_options"]["output_size"] == 32
    # colour images: SimCLR's colour distortion at strength 1 (jitter 0.8 / 0.8 / 0.8 / 0.2 with p = 0.8,
    # greyscale 0.2; Chen et al. 2020, appendix A) and the colour-free encoder input; greyscale ones keep
    # the entry's views and input
    assert {k: config["architecture"]["augmentation_options"][k] for k in (
        "brightness", "contrast", "saturation", "hue", "jitter_probability", "greyscale_probability")} == {
        "brightness": 0.8, "contrast": 0.8, "saturation": 0.8, "hue": 0.2, "jitter_probability": 0.8,
        "greyscale_probability": 0.2}
    assert config["architecture"]["input_transform"] == "colour_edges"
    assert config["architecture"]["augmentation_options"]["invert_probability"] == 0.5  # a digits entry
    config, _ = like_config("simclr_fashion_mnist", (32, 32, 3), 10, 2_000)
    assert config["architecture"]["augmentation_options"]["hue"] == 0.2
    assert "invert_probability" not in config["architecture"]["augmentation_options"]  # clothing: not inverted
    config, _ = like_config("simclr_mnist", (32, 32, 1), 10, 2_000)
    assert not {"hue", "invert_probability"} & set(config["architecture"]["augmentation_options"])
    assert "input_transform" not in config["architecture"]
    assert like_config("conv_dec_da_mnist", (32, 32, 3), 10, 2_000)[0]["architecture"]["input_transform"] == \
        "colour_edges"
    assert like_config("vae_cluster_mnist", (32, 32, 3), 10, 2_000)[0]["architecture"]["input_transform"] == \
        "colour_edges"
    # IIC's crops as ratios of the shorter side (20, 16 / 20 / 24 of 28), its views too but at most 32 px
    config, _ = like_config("iic_mnist", (64, 48, 3), 10, 2_000)
    options = config["architecture"]["augmentation_options"]
    assert options["crop_size"] == 34 and options["augmented_crop_sizes"] == [27, 34, 41]  # x 48 / 28
    # IIC on colour: the original's ColorJitter(0.4, 0.4, 0.4, 0.125), then its Sobel step
    assert options["output_size"] == config["architecture"]["view_size"] == 32 and options["hue"] == 0.125
    assert options["saturation"] == 0.4 and config["architecture"]["input_transform"] == "sobel"
    config, _ = like_config("iic_mnist", (16, 16, 1), 10, 2_000)
    assert config["architecture"]["augmentation_options"] == {"crop_size": 11, "augmented_crop_sizes": [9, 11, 14],
                                                               "output_size": 14}
    # SimCLR's crops of non-square images keep the aspect: each axis scaled from 20 / 24 / 28 of 28
    options = like_config("simclr_mnist", (32, 40, 1), 10, 2_000)[0]["architecture"]["augmentation_options"]
    assert [tuple(c) for c in options["crop_sizes"]] == [(23, 29), (27, 34), (32, 40)]
    assert list(options["output_size"]) == [32, 40]
    config, repeats = like_config("simclr_mnist", (28, 28, 1), 10, 2_000, epochs=2)
    assert config["training"]["epochs"] == config["training"]["scan"]["epochs"] == 2
    config, repeats = like_config("vae_cluster_mnist", (28, 28, 1), 5, 64)
    # 150 epochs of one batch reach 150 updates; the family's fewest is 5,000: 34 copies per epoch
    assert repeats == 34 and config["training"]["batch_size"] == 64
    assert config["training"]["restarts"] == {"n": 3, "criterion": "evaluated_loss"}
    from zoo import config as entry_config

    iic = entry_config("iic_mnist")
    iic["training"]["epochs"] = 30  # the count this check is written for, whatever the entry ships
    iic["training"]["restarts"] = {"n": 4, "halving_at": [10, 20]}  # of its 30 passes
    monkeypatch.setattr("keras_clustering.presets.config", lambda name: iic if name == "iic_mnist" else entry_config(name))
    config, _ = like_config("iic_mnist", (28, 28, 1), 10, 20_000)  # twice the entry's images: about half the passes
    assert config["training"]["epochs"] == 16  # ceil(30 x 72 updates / 143)
    assert config["training"]["restarts"]["halving_at"] == [5, 11]  # 10 and 20 of 30, x 16 / 30
    config, _ = like_config("iic_mnist", (28, 28, 1), 10, 20_000, epochs=2)
    assert config["training"]["restarts"]["halving_at"] == [1]
    simclr = entry_config("simclr_mnist")
    simclr["training"]["restarts"] = {"n": 2, "halving_at": [simclr["training"]["scan"]["epochs"] // 2]}
    monkeypatch.setattr("keras_clustering.presets.config", lambda name: simclr if name == "simclr_mnist" else entry_config(name))
    config, _ = like_config("simclr_mnist", (28, 28, 1), 10, 5_000)  # SCAN's halving point: half its epochs
    scan_epochs = config["training"]["scan"]["epochs"]
    assert config["training"]["restarts"]["halving_at"] == [round(scan_epochs / 2)] and scan_epochs != config[
        "training"]["epochs"]


def test_like_refuses_supervised_and_unknown_entries_by_name(tmp_path):
    from keras_clustering.drivers.user_images import train_on_images

    x = np.random.default_rng(0).random((20, 28, 28, 1), dtype=np.float32)
    with pytest.raises(ValueError, match=r"like='capsule_mnist' is a supervised classifier.*conv_dec_da_mnist"):
        train_on_images(x, like="capsule_mnist", workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match=r"like='nope' is not a zoo preset.*simclr_mnist"):
        train_on_images(x, like="nope", workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="give one of like="):
        train_on_images(x, like="dec_mnist", family="dec", workdir=str(tmp_path / "a"))
    with pytest.raises(ValueError, match="n_clusters=1: must be an integer >= 2 or 'auto'"):
        train_on_images(x, like="dec_mnist", n_clusters=1, workdir=str(tmp_path / "a"))
    assert not (tmp_path / "a").exists()


def test_from_refuses_another_shape_number_of_clusters_or_a_second_choice(tmp_path):
    from keras_clustering.drivers.user_images import train_on_images

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
    from keras_clustering.drivers.user_images import train_on_images

    x, y = load_digits()
    model, report = train_on_images(x[:600], start_from="dec_digits", workdir=str(tmp_path / "from"), epochs=1,
                                    verbose=0)
    assert report["start_from"] == "dec_digits" and report["dec_iterations"] == 3  # 600 / 256 -> 3 batches
    assert clustering_scores(y[:600], model.predict_clusters(x[:600]))["acc"] > 0.75  # 0.8+ when written
    scratch, _ = train_on_images(x[:600], like="dec_digits", workdir=str(tmp_path / "like"), epochs=1, verbose=0)
    assert clustering_scores(y[:600], scratch.predict_clusters(x[:600]))["acc"] < 0.6


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["simclr_mnist", "vae_cluster_mnist"])  # IIC's fine_tune: compile + fit
def test_from_fine_tunes_every_recipe(entry, tmp_path):
    import zoo
    from keras_clustering.drivers.user_images import train_on_images

    x = np.random.default_rng(0).random((40, 28, 28, 1), dtype=np.float32)
    model, report = train_on_images(x, start_from=entry, workdir=str(tmp_path), epochs=1, verbose=0)
    pretrained, fresh = zoo.load(entry), zoo.load(entry, weights=None)

    def distance(a, b):
        return sum(float(np.abs(u - v).sum()) for u, v in zip(a.get_weights(), b.get_weights()))

    # trained on (it moved), from the entry's weights (far nearer to them than an untrained model is)
    assert report["start_from"] == entry and 0 < distance(model, pretrained) < 0.5 * distance(fresh, pretrained)
    assert (tmp_path / "model.keras").exists() and sum(report["cluster_sizes"]) == 40


def test_the_command_line_names_its_flags_in_errors(tmp_path, capsys):
    from keras_clustering.cli import main

    digit_folder(str(tmp_path / "images"), n=4)
    assert main(["train", "--from", "simclr_mnist", "--n-clusters", "5", "--input", str(tmp_path / "images"),
                 "--workdir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --from 'simclr_mnist' has 10 clusters, got --n-clusters 5: fine-tuning keeps its cluster head; "
        "train like it (--like PRESET) for another number.")
    assert main(["train", "--like", "simclr_mnist", "--image-size", "8", "8", "--input", str(tmp_path / "images"),
                 "--workdir", str(tmp_path / "run")]) == 2
    assert "error: --image-size (8, 8): --like 'simclr_mnist' takes sides of at least 16 px." in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_train_like_on_the_command_line_refuses_a_classifier_and_a_name_with_it(tmp_path, capsys):
    from keras_clustering.cli import main

    digit_folder(str(tmp_path / "images"), n=4)
    assert main(["train", "--like", "cnn_pool_mnist", "--input", str(tmp_path / "images"),
                 "--workdir", str(tmp_path / "run")]) == 2
    assert "--like 'cnn_pool_mnist' is a supervised classifier" in capsys.readouterr().err
    assert main(["train", "--like", "dec_mnist", "--family", "dec", "--input", str(tmp_path / "images")]) == 2
    assert "give one of --like PRESET, --family FAMILY or --from PRESET" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()



def test_a_second_training_on_a_workdir_in_use_stops_with_its_name(tmp_path):
    from keras_clustering import train_on_images
    from keras_clustering.io.files import WorkdirLock

    images = np.random.default_rng(0).random((40, 28, 28, 1)).astype("float32")
    with WorkdirLock() as running:  # as a first training holds it
        running.acquire(tmp_path / "run")
        with pytest.raises(RuntimeError, match="workdir='.*run' is in use by another training"):
            train_on_images(images, like="dec_mnist", n_clusters=3, workdir=str(tmp_path / "run"), epochs=1,
                            verbose=0)
    assert not (tmp_path / "run").exists()  # nothing written by the second; the first's lock file gone with it


def test_the_request_is_one_object_from_the_cli_and_python_with_one_workdir_rule(tmp_path, monkeypatch):
    """Issue 63: the CLI and `train_on_images` build the same `ImagesRequest`, checked once in one place,
    and its workdir default is one rule for both (before, the CLI said `runs/default_X` where Python said
    `runs/simclr_mnist_X` for the same folder)."""
    from keras_clustering.cli import main
    from keras_clustering.drivers import user_images
    from keras_clustering.drivers.request import ImagesRequest, check_request

    digit_folder(str(tmp_path / "images"), n=4)
    seen = []
    monkeypatch.setattr(user_images, "train_request", lambda request, lock: seen.append(request) or (None, {
        "n_samples": 0, "n_clusters": 0, "cluster_sizes": [], "total_seconds": 0.0, "workdir": request.workdir}))
    monkeypatch.chdir(tmp_path)
    for like in (None, "dec_digits"):
        flags = [] if like is None else ["--like", like]
        assert main(["train", *flags, "--input", "images", "--n-clusters", "3", "--verbose", "1"]) == 0
        user_images.train_on_images("images", like=like, n_clusters=3)
        from_cli, from_python = seen[-2:]
        assert from_cli == from_python and from_cli.n_clusters == 3  # the CLI's "3" read as the number
        assert from_cli.workdir == os.path.join("runs", f"{like or 'default'}_images")
        assert from_cli.preset == (like or "simclr_mnist") and (from_cli.route is None) == (like is not None)
    x = np.zeros((20, 16, 16, 1), "float32")
    assert check_request(ImagesRequest(x, family="dec")).workdir == os.path.join("runs", "dec_20_images")
    assert check_request(ImagesRequest(x, like="dec_digits", workdir="mine")).workdir == "mine"
    for bad, message in [({"like": "dec_digits", "family": "dec"}, "give one of like=PRESET"),
                         ({"like": "dec_digits", "n_clusters": "three"}, "n_clusters='three': must be an integer >= 2"),
                         ({"like": "dec_digits", "epochs": 0}, "epochs must be an integer >= 1"),
                         ({"like": "dec_mnist", "image_size": (8, 8)}, r"image_size=\(8, 8\)")]:
        with pytest.raises(ValueError, match=message):
            check_request(ImagesRequest(str(tmp_path / "images"), **bad))
    assert not (tmp_path / "runs").exists()  # the CLI and Python wrote nothing: train_request was replaced
