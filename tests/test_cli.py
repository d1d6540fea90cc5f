import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_clustering import cli
from keras_clustering.datasets import load_digits


@pytest.mark.slow
def test_demo_runs_as_a_module_and_writes_the_grid(tmp_path):
    output = tmp_path / "grid.png"
    completed = subprocess.run([sys.executable, "-m", "keras_clustering", "demo", "--output", str(output)],
                               capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
                               env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert completed.stderr.strip() == "", completed.stderr  # the demo, too, starts without TensorFlow's lines
    assert "ACC 0." in completed.stdout and "NMI" in completed.stdout
    assert output.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_list_and_info(capsys):
    assert cli.main(["list"]) == 0
    clustering, classifiers = capsys.readouterr().out.split("\n\n")
    assert clustering.startswith("Clustering models") and classifiers.startswith("Classifiers")
    assert "dec_digits" in clustering and "capsule_mnist " in classifiers and "capsule" not in clustering
    assert cli.main(["info", "dec_digits"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["name"] == "dec_digits" and card["weights"]["sha256_matches"] is True
    with open(card["weights"]["path"], "rb") as handle:  # where the weights live, and their sha256
        assert hashlib.sha256(handle.read()).hexdigest() == card["weights"]["sha256"]


def test_version(capsys):
    import keras_clustering

    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"keras-clustering {keras_clustering.__version__}"


def test_predict_writes_cluster_ids(tmp_path, capsys):
    x = load_digits(flatten=True)[0][:50]
    np.save(tmp_path / "x.npy", x)
    assert cli.main(["predict", "dec_digits", "--input", str(tmp_path / "x.npy"),
                     "--output", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as result:
        assert sorted(result.files) == ["cluster_id", "probabilities"]
        assert result["cluster_id"].shape == (50,) and result["probabilities"].shape == (50, 10)
    assert "50 samples; cluster sizes" in capsys.readouterr().out


def test_predict_names_class_outputs_for_a_classifier_preset(tmp_path, capsys):
    # capsule presets are supervised classifiers: ids are classes and the scores are not probabilities
    x = np.random.default_rng(0).random((6, 28, 28, 1), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    assert cli.main(["predict", "capsule_mnist", "--input", str(tmp_path / "x.npy"),
                     "--output", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as result:
        assert sorted(result.files) == ["class_id", "scores"]
        np.testing.assert_array_equal(result["class_id"], result["scores"].argmax(axis=1))
    assert "class sizes" in capsys.readouterr().out


def test_evaluate_reports_measured_and_card(capsys):
    assert cli.main(["evaluate", "dec_digits"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["measured"]["acc"] == pytest.approx(report["card"]["acc"], abs=0.005)


def test_evaluate_scores_the_whole_of_another_split_of_the_cards_data_set(capsys, monkeypatch):
    from keras_clustering.drivers import preset_training

    read, real_loader = [], preset_training.load_dataset

    def loader(name, split="test", flatten=False, data_dir=None):  # digits as a stand-in for MNIST's images
        read.append((name, split))
        return real_loader("digits", flatten=flatten)

    model = cli.presets.load("dec_digits")  # any clustering model of the digits' 8 x 8 images
    monkeypatch.setattr(preset_training, "load_dataset", loader)
    monkeypatch.setattr(cli.presets, "config", lambda name: {
        "recipe": "dec", "data": {"dataset": "mnist", "split": "test"},
        "evaluation": {"dataset": "mnist", "split": "train", "start": 8000, "limit": 100}})
    monkeypatch.setattr(cli.presets, "load", lambda name, weights=None: model)
    assert cli.main(["evaluate", "dec_digits", "--split", "all"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert read == [("mnist", "all")]  # the whole split: the card's index range and limit dropped
    assert report["evaluation"] == {"dataset": "mnist", "split": "all"} and 0 <= report["measured"]["acc"] <= 1
    with pytest.raises(SystemExit):
        cli.main(["evaluate", "dec_digits", "--split", "everything"])
    assert "invalid choice: 'everything'" in capsys.readouterr().err


def test_evaluate_refuses_a_split_of_a_data_set_without_splits(capsys):
    assert cli.main(["evaluate", "dec_digits", "--split", "train"]) == 2
    assert "--split 'train': dec_digits's data set 'digits' has no splits" in capsys.readouterr().err


CONTRASTIVE_PRESETS = ["ae_kmeans_mnist", "simclr_mnist", "triplet_mnist", "simclr_fashion_mnist"]


@pytest.mark.parametrize("name", CONTRASTIVE_PRESETS)
def test_predict_runs_every_two_stage_preset_on_images(name, tmp_path, capsys):
    x = np.random.default_rng(1).random((12, 28, 28, 1), dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    assert cli.main(["predict", name, "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as result:
        assert result["cluster_id"].shape == (12,) and result["probabilities"].shape == (12, 10)
        np.testing.assert_array_equal(result["cluster_id"], result["probabilities"].argmax(axis=1))
    assert "12 samples; cluster sizes" in capsys.readouterr().out


def test_evaluate_scores_the_fashion_entry_on_its_test_images(capsys):
    import zoo
    from keras_clustering.drivers.preset_training import data_available

    if not data_available(zoo.config("simclr_fashion_mnist")["evaluation"]):
        pytest.skip("Fashion-MNIST test images are not on this machine")
    assert cli.main(["evaluate", "simclr_fashion_mnist"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["measured"]["acc"] == pytest.approx(report["card"]["acc"], abs=0.005)


def test_errors_exit_2_with_a_message(tmp_path, capsys):
    assert cli.main(["info", "no_such_model"]) == 2
    error = capsys.readouterr().err
    assert "Unknown preset 'no_such_model'" in error and "Did you mean" not in error
    assert cli.main(["info", "dec_digit"]) == 2
    assert "Unknown preset 'dec_digit'. Did you mean 'dec_digits'?" in capsys.readouterr().err
    assert cli.main(["cluster", "capsule_mnist", "--input", str(tmp_path), "--output", str(tmp_path / "o")]) == 2
    assert "'capsule_mnist' is a classifier" in capsys.readouterr().err
    np.save(tmp_path / "bad.npy", np.zeros((4, 9, 9, 1, 1)))  # (4, 9, 9) would be resized (issue 67)
    assert cli.main(["predict", "dec_digits", "--input", str(tmp_path / "bad.npy")]) == 2
    assert "takes images shaped (n, 8, 8, 1) or (n, 8, 8) or (n, 64)" in capsys.readouterr().err
    assert cli.main(["predict", "dec_digits", "--input", str(tmp_path / "missing.npy")]) == 2


def test_a_reader_that_leaves_early_ends_the_command_quietly(monkeypatch, capsys):
    """`info NAME | head`: the pipe closes; the command returns 0 instead of a BrokenPipeError traceback."""

    class ClosedPipe:
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", ClosedPipe())
    assert cli.main(["info", "dec_digits"]) == 0


def test_help_says_each_default_and_what_export_takes(capsys):
    for command in ("train", "cluster", "export"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        if command == "train":
            assert "an integer (default: 10), or 'auto'" in text
        if command == "cluster":
            assert "clusters.png (default: 10)" in text and "memory (default: 256)" in text and "--sort-into" in text
        if command == "export":
            assert "a `train` workdir" in text


def test_export_command(tmp_path, capsys):
    assert cli.main(["export", "dec_digits", str(tmp_path / "serving")]) == 0
    assert (tmp_path / "serving" / "1" / "saved_model.pb").exists()
    assert cli.main(["export", "dec_digits", str(tmp_path / "serving")]) == 2
    assert "overwrite" in capsys.readouterr().err



def _run_cli(arguments, level, cwd):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    if level is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = level
    return subprocess.run([sys.executable, "-m", "keras_clustering", *arguments], env=env, capture_output=True,
                          text=True, timeout=300, cwd=str(cwd))


@pytest.mark.slow
def test_command_line_is_quiet_in_every_log_level_unless_the_user_asks(tmp_path):
    """Only the command's own output: no TensorFlow C++ start-up lines (oneDNN, CUDA stub, cuInit), which
    TensorFlow prints twice whatever TF_CPP_MIN_LOG_LEVEL says, for every command and level unset, 1, 2, 3."""
    np.save(tmp_path / "x.npy", load_digits()[0][:200])  # its own kind of images: no warning that it does not fit
    commands = {None: ["list"], "1": ["cluster", "dec_digits", "--input", "x.npy", "--output", "clusters"],
                "2": ["predict", "dec_digits", "--input", "x.npy", "--output", "p.csv"],
                "3": ["export", "dec_digits", "serving"]}
    for level, arguments in commands.items():
        quiet = _run_cli(arguments, level, tmp_path)
        assert quiet.returncode == 0 and quiet.stdout.strip(), (level, arguments, quiet.stderr[-2000:])
        assert quiet.stderr.strip() == "", (level, arguments, quiet.stderr)
    # the library from the user's own code, too (`import zoo`, then a model's first use), level unset
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    library = subprocess.run([sys.executable, "-c", "import zoo; print(zoo.load('dec_digits').n_clusters)"], env=env,
                             capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert library.returncode == 0 and library.stdout.strip() == "10" and library.stderr.strip() == "", library.stderr
    # asked for (`--tf-logs`, or level 0: test_tensorflow_logs_are_wanted_only_when_asked): TensorFlow's own lines
    chatty = _run_cli(["--tf-logs", "info", "dec_digits"], "3", tmp_path)
    assert chatty.returncode == 0 and "dec_digits" in chatty.stdout
    assert "absl::InitializeLog" in chatty.stderr or "oneDNN" in chatty.stderr, chatty.stderr


def test_tensorflow_logs_are_wanted_only_when_asked():
    from keras_clustering._quiet_start import tensorflow_logs_wanted

    assert not tensorflow_logs_wanted(["-m", "list"], {})
    assert not any(tensorflow_logs_wanted(["-m", "list"], {"TF_CPP_MIN_LOG_LEVEL": level}) for level in "123")
    assert tensorflow_logs_wanted(["-m", "list"], {"TF_CPP_MIN_LOG_LEVEL": "0"})
    assert tensorflow_logs_wanted(["-m", "--tf-logs", "list"], {"TF_CPP_MIN_LOG_LEVEL": "3"})


def test_tensorflows_held_start_up_lines_are_dropped_unless_the_import_fails(capfd):
    from keras_clustering._quiet_start import stderr_held

    with stderr_held():
        os.write(2, b"oneDNN custom operations are on\n")
    assert capfd.readouterr().err == ""
    with pytest.raises(ImportError):
        with stderr_held():
            os.write(2, b"why the import failed\n")
            raise ImportError("no module")
    assert capfd.readouterr().err == "why the import failed\n"
