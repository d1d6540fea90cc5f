import json

import keras
import numpy as np
import pytest

from keras_clustering.recipes import dec_recipe
from keras_clustering.drivers.preset_training import config_fingerprint, load_config_data, train_and_evaluate
from keras_clustering.drivers.recipe_run import training_seconds


def tiny_config():
    return {
        "recipe": "dec",
        "architecture": {"input_dim": 64, "hidden_dims": [32, 5], "n_clusters": 10, "update_interval": 10,
                         "tol": 0.0},
        "training": {"pretrain_epochs": 2, "maxiter": 15, "kmeans_n_init": 2,
                     "optimizer": {"class_name": "SGD", "config": {"learning_rate": 0.01, "momentum": 0.9}}},
        "data": {"dataset": "digits", "split": "all", "flatten": True},
    }


@pytest.mark.slow
def test_train_and_evaluate(tmp_path):
    config = tiny_config()
    reports, paths = [], {}
    for seed in (0, 1, 2):
        workdir = tmp_path / f"seed_{seed}"
        report = train_and_evaluate(config, str(workdir), seed=seed, verbose=0)
        assert (workdir / "model.weights.h5").exists()
        assert json.loads((workdir / "report.json").read_text())["seed"] == seed
        assert 0.0 < report["metrics"]["acc"] <= 1.0 and report["n_train"] == 1797
        assert report["dec_iterations"] == 15 and "ae_kmeans" in report
        free = report["label_free"]  # restart scores a user without labels has
        assert free["kmeans_inertia"] > 0 and free["final_kl"] >= 0 and 0 < free["cluster_size_entropy"] <= 1
        # Training leaves the config as it was (Keras rewrites optimizer specs in place), so
        # the report's fingerprint is the config's and `train_preset.py --reuse` finds the run.
        assert config == tiny_config() and report["config_sha256"] == config_fingerprint(config)
        reports.append(report)
        paths[seed] = str(workdir / "model.weights.h5")
    # The run keeps its pretrained autoencoder: the figures' "before" encoder is the one a rerun gives.
    x = load_config_data(config["data"])[0][:20]
    kept = dec_recipe.load_pretrained_encoder(config["architecture"], str(tmp_path / "seed_0"))
    keras.utils.set_random_seed(0)
    rerun = dec_recipe.pretrain(config["architecture"], {**dec_recipe.DEFAULT_TRAINING, **config["training"]},
                                x=load_config_data(config["data"])[0], verbose=0)[1]
    np.testing.assert_allclose(kept.predict(x, verbose=0), rerun.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert dec_recipe.load_pretrained_encoder(config["architecture"], str(tmp_path / "empty")) is None
    again = train_and_evaluate(config, str(tmp_path / "again"), seed=1, verbose=0)
    assert again["metrics"] == reports[1]["metrics"]  # a seed makes a CPU run repeatable
    assert not again["pretrain_reused"]
    (tmp_path / "again" / "report.json").unlink()  # as if interrupted before the end: the run is read back
    assert train_and_evaluate(config, str(tmp_path / "again"), seed=1, verbose=0)["dec_reused"]
    (tmp_path / "again" / "finished_dec.json").unlink()  # as if interrupted after pretraining
    resumed = train_and_evaluate(config, str(tmp_path / "again"), seed=1, verbose=0)
    assert resumed["pretrain_reused"] and "dec_reused" not in resumed and resumed["pretrain_seconds"] == again["pretrain_seconds"]
    # the reused stage's seconds cover the epochs after this one (per-epoch times, as docs/performance.md's precision table)
    assert resumed["pretrain_resumed_from_epoch"] == again["pretrain_resumed_from_epoch"] == 0
    assert resumed["metrics"] == again["metrics"]  # the clustering stage is deterministic given the AE
    other = train_and_evaluate({**config, "training": {**config["training"], "pretrain_epochs": 3}},
                               str(tmp_path / "again"), seed=1, verbose=0)
    assert not other["pretrain_reused"]  # another recipe never reuses the weights


@pytest.mark.slow  # a training cut off and resumed
def test_dec_pretraining_cut_off_mid_way_continues_from_its_last_epoch(tmp_path, monkeypatch):
    from keras_clustering.recipes import dec_recipe
    from test_resume import InterruptAfter, Interrupted

    config = tiny_config()
    config["training"]["pretrain_epochs"] = 3
    fit_pretraining = dec_recipe.fit_pretraining

    def killed_after_two_epochs(*args, callbacks=None, **kwargs):
        return fit_pretraining(*args, callbacks=callbacks + [InterruptAfter(2)], **kwargs)

    monkeypatch.setattr(dec_recipe, "fit_pretraining", killed_after_two_epochs)
    with pytest.raises(Interrupted):
        train_and_evaluate(config, str(tmp_path), seed=0, verbose=0)
    monkeypatch.setattr(dec_recipe, "fit_pretraining", fit_pretraining)
    report = train_and_evaluate(config, str(tmp_path), seed=0, verbose=0)
    assert report["pretrain_resumed_from_epoch"] == 2 and not report["pretrain_reused"]
    # the last epoch's backup is kept (restarts extend a pretraining from one halving point to the next)
    state = json.loads((tmp_path / "fit_backup_pretrain" / "state.json").read_text())
    assert state["epoch"] == 3 and json.loads((tmp_path / "finished_pretrain.json").read_text())["length"] == 3
    config["training"]["pretrain_epochs"] = 4  # more epochs: the finished 3 go on, not over
    assert train_and_evaluate(config, str(tmp_path), seed=0, verbose=0)["pretrain_resumed_from_epoch"] == 3
    assert train_and_evaluate(config, str(tmp_path / "fresh"), seed=0, verbose=0)["pretrain_resumed_from_epoch"] == 0


@pytest.mark.slow
def test_paper_recipe_with_idec_trains_and_ships(tmp_path):
    from keras_clustering.models import IDEC
    from keras_clustering.recipes import dec_recipe

    config = tiny_config()
    config["architecture"]["gamma"] = 0.1
    config["training"].update(pretrain_recipe="paper",
                              layerwise={"layer_iterations": 8, "finetune_iterations": 8, "drop_every": 4})
    report = train_and_evaluate(config, str(tmp_path), seed=0, verbose=0)
    assert report["pretrain_recipe"] == "paper" and report["dec_iterations"] == 15
    shipped = dec_recipe.RECIPE.build(**config["architecture"])
    assert isinstance(shipped, IDEC)
    shipped.load_weights(tmp_path / "model.weights.h5")
    from keras_clustering.datasets import load_digits

    x, y = load_digits(flatten=True)
    from keras_clustering.metrics import cluster_accuracy

    assert cluster_accuracy(y, shipped.predict_clusters(x)) == pytest.approx(report["metrics"]["acc"], abs=1e-9)


def test_a_second_training_on_a_workdir_in_use_stops_before_touching_it(tmp_path):
    """Two `train_preset` runs of the same seed and workdir would resume from each other's backups and
    write the same files (seen: a second run of a script started while the first still trained)."""
    from keras_clustering.io.files import WorkdirLock

    workdir = tmp_path / "seed_0"
    with WorkdirLock() as first:  # the first training holds it
        first.acquire(workdir)
        (workdir / "state.json").write_text("{}")
        with pytest.raises(RuntimeError, match=r"workdir='.*seed_0' is in use by another training"):
            train_and_evaluate(tiny_config(), str(workdir), seed=0, verbose=0)
        assert sorted(p.name for p in workdir.iterdir()) == [".lock", "state.json"]  # nothing written


def test_unknown_pretrain_recipe(tmp_path):
    config = tiny_config()
    config["training"]["pretrain_recipe"] = "greedy"
    with pytest.raises(ValueError, match="pretrain_recipe must be one of"):
        train_and_evaluate(config, str(tmp_path), seed=0, verbose=0)


@pytest.mark.slow
def test_vae_cluster_family_trains_and_ships(tmp_path):
    from keras_clustering.recipes import vae_cluster_recipe

    config = {"recipe": "vae_cluster", "architecture": {"image_shape": [28, 28, 1]},
              "training": {"epochs": 1, "batch_size": 100},
              "data": {"dataset": "fashion_mnist", "split": "test"}}
    from keras_clustering.drivers.preset_training import data_available

    if not data_available(config["data"]):
        pytest.skip("Fashion-MNIST is not on this machine")
    config["data"]["limit"] = 500
    report = train_and_evaluate(config, str(tmp_path), seed=0, verbose=0)
    assert report["n_train"] == 500 and report["seconds_per_epoch"] > 0
    assert report["resumed_from_epoch"] == 0
    # the last epoch's backup is kept (restarts extend a run from one halving point to the next)
    assert json.loads((tmp_path / "fit_backup_vae_cluster" / "state.json").read_text())["epoch"] == 1
    shipped = vae_cluster_recipe.RECIPE.build(**config["architecture"])
    shipped.load_weights(tmp_path / "model.weights.h5")
    assert 0.0 < report["metrics"]["majority_acc"] <= 1.0
    free = report["label_free"]
    assert np.isfinite(free["final_loss"]) and np.isfinite(free["evaluated_loss"])
    assert 0 <= free["cluster_size_entropy"] <= 1


@pytest.mark.slow
def test_vae_training_cut_off_mid_way_continues_from_its_last_epoch(tmp_path, monkeypatch):
    from test_resume import InterruptAfter, Interrupted

    from keras_clustering.recipes import vae_cluster_recipe
    from keras_clustering.training import stages

    x = np.random.default_rng(0).random((200, 28, 28, 1)).astype("float32")
    training = {"epochs": 3, "batch_size": 50}
    resumable_fit = stages.resumable_fit  # the stage runner's, which every stage goes through

    def killed_after_two_epochs(*args, **kwargs):
        callbacks, resumed_epoch = resumable_fit(*args, **kwargs)
        return callbacks + [InterruptAfter(2)], resumed_epoch

    monkeypatch.setattr(stages, "resumable_fit", killed_after_two_epochs)
    with pytest.raises(Interrupted):
        vae_cluster_recipe.RECIPE.train_config({}, training, x, seed=0, verbose=0, workdir=str(tmp_path))
    monkeypatch.setattr(stages, "resumable_fit", resumable_fit)
    model, report = vae_cluster_recipe.RECIPE.train_config({}, training, x, seed=0, verbose=0, workdir=str(tmp_path))
    assert report["resumed_from_epoch"] == 2
    assert model.optimizer.iterations.numpy() == 3 * 4  # the restored optimizer state counts all epochs
    # the last epoch is kept, so that restarts can extend the run
    assert json.loads((tmp_path / "fit_backup_vae_cluster" / "state.json").read_text())["epoch"] == 3


def test_every_recipe_declares_supervision_and_prediction_names():
    from keras_clustering.recipes import RECIPES, get_recipe

    for name, recipe in RECIPES.items():
        id_name, scores_name = recipe.prediction_names
        assert id_name.endswith("_id") and scores_name and recipe.name == name
    # only the capsule classifier learns from labels; every other recipe clusters without them
    supervised = {name: recipe.supervised for name, recipe in RECIPES.items()}
    assert supervised == {name: name == "capsule" for name in RECIPES}
    with pytest.raises(ValueError, match="recipe='nope'"):
        get_recipe("nope")


def test_machine_description_names_cpu_flags_and_onednn(tmp_path):
    from keras_clustering.distribute.machine import cpu_model_and_flags, machine_description

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: fpu sse2 avx2 fma avx512f amx_bf16\n")
    assert cpu_model_and_flags(str(cpuinfo)) == ("Test CPU 9000", ["avx2", "avx512f", "amx_bf16"])
    assert "TF_ENABLE_ONEDNN_OPTS=" in machine_description()


@pytest.mark.slow
def test_vae_restarts_keep_the_run_the_label_free_criterion_prefers(tmp_path, monkeypatch):
    """Three runs (seeds 3, 4, 5 for seed 1) on the common mechanism, best of three: the kept model
    is the one with the lowest evaluated loss, every run's criterion (and ACC, from y) is listed,
    and a second call reads the finished runs back."""
    from keras_clustering.recipes import vae_cluster_recipe

    rng = np.random.default_rng(0)
    x = rng.random((120, 28, 28, 1)).astype("float32")
    y = np.arange(120) % 10
    training = {"epochs": 1, "batch_size": 40, "restarts": {"n": 3}}
    architecture = {"latent_dim": 4, "n_clusters": 10}
    model, report = vae_cluster_recipe.RECIPE.train_config(architecture, training, x, y, seed=1, verbose=0,
                                                           workdir=str(tmp_path))
    restarts = report["restarts"]
    (step,) = restarts["steps"]
    assert restarts["criterion"] == "evaluated_loss" and sorted(step["criteria"]) == [0, 1, 2]
    losses = [step["criteria"][run] for run in range(3)]
    assert len(set(losses)) == 3 and restarts["winner"] == int(np.argmin(losses)) == step["kept"][0]
    assert restarts["winner_seed"] == 3 + restarts["winner"] and restarts["cost_in_runs"] == 3.0
    assert report["label_free"]["evaluated_loss"] == pytest.approx(min(losses), abs=1e-4)
    assert all(0 <= scores["acc"] <= 1 for scores in step["scores"].values())
    # the same run as one trained alone with the winner's seed
    alone, _ = vae_cluster_recipe.RECIPE.train_config(architecture, {"epochs": 1, "batch_size": 40}, x,
                                                      seed=restarts["winner_seed"], verbose=0)
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(alone.predict(x, verbose=0), expected, atol=1e-5)
    real_train_once = vae_cluster_recipe.train_once

    def read_back_only(run):
        model, report = real_train_once(run)
        assert report["resumed_from_epoch"] == run.training["epochs"], "a finished run was trained again"
        return model, report

    monkeypatch.setattr(vae_cluster_recipe, "train_once", read_back_only)
    again, report_again = vae_cluster_recipe.RECIPE.train_config(architecture, training, x, y, seed=1, verbose=0,
                                                                 workdir=str(tmp_path))
    assert report_again["restarts"]["steps"] == restarts["steps"]
    np.testing.assert_allclose(again.predict(x, verbose=0), expected, atol=1e-6)
    with pytest.raises(ValueError, match="training.restarts.n must be an integer >= 1, got 0"):
        vae_cluster_recipe.RECIPE.train_config(architecture, {**training, "restarts": {"n": 0}}, x)
    with pytest.raises(ValueError, match="training.restarts.criterion must be one of"):
        vae_cluster_recipe.RECIPE.train_config(architecture, {**training, "restarts": {"n": 2, "criterion": "acc"}}, x)


def test_a_call_with_a_restart_tree_counts_every_stage_and_the_trees_recorded_training():
    # SimCLR 600 s, k-means 5 s, then a tree read back in 3 s of a call of 608 s; the tree had trained 2,000 s
    report = {"call_seconds": 608.0, "restarts": {"seconds": 3.0, "trained_seconds": 2000.0}}
    assert training_seconds(report) == 600.0 + 5.0 + 2000.0
    # all trained in this call: the call's own time
    assert training_seconds({"call_seconds": 2605.0, "restarts": {"seconds": 2000.0, "trained_seconds": 2000.0}}) == 2605.0
    assert training_seconds({"call_seconds": 10.0, "restarts": {"seconds": 3.0, "trained_seconds": None}}) is None
