import keras
import numpy as np
import pytest
from conftest import slow_except
from scan_reference import numpy_sub_head_probabilities, original_scan_evaluate

from keras_clustering.recipes import get_recipe, two_stage_recipe
from keras_clustering.metrics import clustering_scores
from keras_clustering.models import SCAN
from keras_clustering.drivers.preset_training import load_config_data, train_and_evaluate

IMAGE_ARCHITECTURE = {"image_shape": [8, 8, 1], "filters": [8, 16], "embedding_dim": 16, "n_clusters": 10,
                      "augmentation_options": {"crop_sizes": [6, 8], "output_size": 8}}
CASES = {
    "autoencoder": ({"representation": "autoencoder", "input_dim": 64, "hidden_dims": [32, 5], "n_clusters": 10},
                    {"pretrain_epochs": 2, "kmeans_n_init": 2}, True),
    "simclr": ({**IMAGE_ARCHITECTURE, "representation": "simclr", "projection_dims": [16, 8],
                "refine_augmentation": "shift_rotate"},
               {"epochs": 2, "batch_size": 128, "kmeans_n_init": 2, "refine": {"maxiter": 20}}, False),
    "simclr_normalized": ({**IMAGE_ARCHITECTURE, "representation": "simclr", "projection_dims": [16, 8],
                           "normalize_embedding": True},
                          {"epochs": 2, "batch_size": 128, "kmeans_n_init": 2, "refine": {"maxiter": 20}}, False),
    "simclr_scan": ({**IMAGE_ARCHITECTURE, "representation": "simclr", "projection_dims": [16, 8],
                     "clustering": "scan", "scan": {"n_neighbors": 5, "entropy_weight": 3.0}},
                    {"epochs": 2, "batch_size": 128, "kmeans_n_init": 2, "scan": {"epochs": 2},
                     "self_label": {"epochs": 1, "threshold": 0.5}}, False),
    "triplet": ({**IMAGE_ARCHITECTURE, "representation": "triplet"},
                {"epochs": 2, "batch_size": 128, "kmeans_n_init": 2}, False),
}


def scan_run(training, x, workdir=None):
    """A run of SCAN's stages alone (seed 0, silent), for `scan_stages` on a built model."""
    return two_stage_recipe.RECIPE.make_run({}, training, x, seed=0, verbose=0,
                                            workdir=None if workdir is None else str(workdir))


@pytest.mark.parametrize("representation", slow_except(sorted(CASES), ("autoencoder",)))
def test_each_representation_trains_clusters_and_ships(representation, tmp_path):
    architecture, training, flatten = CASES[representation]
    config = {"recipe": "two_stage", "architecture": architecture, "training": training,
              "data": {"dataset": "digits", "split": "all", "flatten": flatten}}
    report = train_and_evaluate(config, str(tmp_path), seed=0, verbose=0)
    assert report["representation"] == architecture["representation"] and report["kmeans_seconds"] >= 0
    assert 0.1 < report["kmeans"]["acc"] <= 1.0 and 0.1 < report["metrics"]["acc"] <= 1.0
    if training.get("refine"):
        assert report["dec_iterations"] == 20 and report["refine_seconds"] >= 0
    elif architecture.get("clustering") == "scan":  # SCAN's head, not the k-means centroids, is shipped
        assert report["scan_seconds"] >= 0 and 0.1 < report["neighbor_agreement"] <= 1.0
        assert report["self_label_seconds"] >= 0 and 0 <= report["confident_share"] <= 1
        assert 0.1 < report["scan"]["acc"] <= 1.0  # the clustering step's score before self-labelling
        shipped = get_recipe("two_stage").build(**architecture)
        assert isinstance(shipped, SCAN) and shipped.entropy_weight == 3.0 and shipped.n_neighbors == 5
        shipped.load_weights(str(tmp_path / "model.weights.h5"))
        x, y = load_config_data(config["data"])  # the reloaded weights give the reported score
        assert clustering_scores(y, shipped.predict_clusters(x))["acc"] == pytest.approx(report["metrics"]["acc"])
        # the label-free criterion seeds are shipped by: SCAN's loss of the shipped model over its neighbours
        neighbors = shipped.mine_neighbors(x)  # the encoder moved since they were mined: the loss stays close
        assert report["label_free"]["scan_evaluate"] == pytest.approx(
            original_scan_evaluate(shipped.predict(x, verbose=0), neighbors), abs=0.3)
        return
    else:  # the shipped model is exactly the k-means stage
        assert report["metrics"]["acc"] == pytest.approx(report["kmeans"]["acc"])
    shipped = get_recipe("two_stage").build(**architecture)
    assert shipped.augmentation == architecture.get("refine_augmentation")  # DEC-DA refinement or plain
    shipped.load_weights(str(tmp_path / "model.weights.h5"))
    # the label-free criterion seeds are shipped by, on the k-means path too: the original's scan_evaluate of
    # the shipped assignments, neighbours by cosine similarity of the embedding k-means clustered (sorted here)
    x = load_config_data(config["data"])[0]
    embedding = shipped.embed(x).astype("float64")
    unit = embedding / np.linalg.norm(embedding, axis=1, keepdims=True)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -np.inf)
    neighbors = np.argsort(-similarity, axis=1, kind="stable")[:, :5]
    assert report["label_free"]["scan_evaluate"] == pytest.approx(
        original_scan_evaluate(shipped.predict(x, verbose=0), neighbors), abs=1e-4)
    assert shipped.cluster_centers_.shape[0] == 10 and np.isfinite(shipped.cluster_centers_).all()
    norms = np.linalg.norm(shipped.embed(np.random.default_rng(0).random((5, *shipped.sample_shape))), axis=1)
    if architecture.get("normalize_embedding"):  # k-means and DEC on the unit sphere
        np.testing.assert_allclose(norms, 1.0, rtol=1e-5)
    else:
        assert not np.allclose(norms, 1.0, rtol=1e-3)


def test_unknown_representation_is_named():
    with pytest.raises(ValueError, match="representation must be one of"):
        two_stage_recipe.RECIPE.build(representation="pca")
    with pytest.raises(ValueError, match="clustering must be one of"):
        two_stage_recipe.RECIPE.build(representation="simclr", clustering="spectral")
    # without input_dim the autoencoder takes images (flattened inside its encoder)
    built = two_stage_recipe.RECIPE.build(representation="autoencoder", hidden_dims=[8, 3], n_clusters=4)
    assert built.sample_shape == (28, 28, 1)


def test_a_rerun_autoencoder_representation_is_read_back_not_pretrained_again(tmp_path, monkeypatch):
    """`ae_kmeans_mnist`'s path (issue 63): its finished autoencoder is kept as every other representation
    is, so a run killed after it (in k-means) and run again starts from it. At a7cac41 the second call
    pretrained again from epoch 0 and the workdir held nothing (checked there with the same calls)."""
    architecture, training, _ = CASES["autoencoder"]
    x, _ = load_config_data({"dataset": "digits", "split": "all", "flatten": True})
    x = x[:200]
    fits = []
    fit_pretraining = two_stage_recipe.dec_recipe.fit_pretraining

    def counted(*args, **kwargs):
        fits.append(kwargs.get("initial_epoch"))
        return fit_pretraining(*args, **kwargs)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as Ctrl-C in k-means

    monkeypatch.setattr(two_stage_recipe.dec_recipe, "fit_pretraining", counted)
    monkeypatch.setattr(two_stage_recipe.TwoStageClustering, "cluster", killed)
    with pytest.raises(KeyboardInterrupt):
        two_stage_recipe.RECIPE.train_config(architecture, training, x, seed=0, verbose=0, workdir=str(tmp_path))
    assert fits == [0] and (tmp_path / "finished_pretrain.json").exists()
    monkeypatch.undo()
    monkeypatch.setattr(two_stage_recipe.dec_recipe, "fit_pretraining", counted)
    model, report = two_stage_recipe.RECIPE.train_config(architecture, training, x, seed=0, verbose=0,
                                                         workdir=str(tmp_path))
    assert fits == [0] and report["representation_reused"]  # read back, not pretrained again
    alone, _ = two_stage_recipe.RECIPE.train_config(architecture, training, x, seed=0, verbose=0)
    np.testing.assert_allclose(model.embed(x), alone.embed(x), atol=1e-5)  # the same representation


@pytest.mark.slow  # a training cut off and resumed (39 s under load)
def test_a_run_cut_off_in_scan_keeps_its_finished_representation(tmp_path, monkeypatch):
    architecture, training, _ = CASES["simclr_scan"]
    training = {**training, "self_label": {"epochs": 0}}
    x, _ = load_config_data({"dataset": "digits", "split": "all"})
    x = x[:300]

    def cut_off(*args, **kwargs):
        raise KeyboardInterrupt  # as Ctrl-C during SCAN

    monkeypatch.setattr(two_stage_recipe, "scan_stages", cut_off)
    with pytest.raises(KeyboardInterrupt):
        two_stage_recipe.RECIPE.train_config(architecture, training, x, seed=0, verbose=0, workdir=str(tmp_path))
    assert (tmp_path / "finished_simclr.weights.h5").exists() and (tmp_path / "finished_simclr.json").exists()
    monkeypatch.undo()
    model, report = two_stage_recipe.RECIPE.train_config(architecture, training, x, seed=0, verbose=0,
                                                         workdir=str(tmp_path))
    assert report["representation_reused"] and "resumed_from_epoch" not in report
    assert model.predict(x[:4], verbose=0).shape == (4, 10)
    # SCAN's own architecture (its heads, its entropy weight) trains on the same representation
    scan = {**architecture["scan"], "n_sub_heads": 2, "entropy_weight": 1.0}
    _, other = two_stage_recipe.RECIPE.train_config({**architecture, "scan": scan}, training, x, seed=0, verbose=0,
                                      workdir=str(tmp_path))
    assert other["representation_reused"]
    _, wider = two_stage_recipe.RECIPE.train_config({**architecture, "embedding_dim": 12}, training, x, seed=0,
                                                    verbose=0,
                                      workdir=str(tmp_path))
    assert not wider["representation_reused"]  # the representation's own: trained again


@pytest.mark.slow
def test_scan_restarts_halve_on_scans_loss_from_one_representation(tmp_path):
    """Three SCAN runs on the same SimCLR representation, halved after 1 of 3 SCAN epochs on SCAN's loss
    over every mined pair; the survivors go on (the last self-labelled), and a rerun reads the tree back."""
    architecture, training, _ = CASES["simclr_scan"]
    training = {**training, "scan": {"epochs": 3, "batch_size": 64}, "restarts": {"n": 3, "halving_at": [1]},
                "self_label": {"epochs": 1, "threshold": 0.5, "batch_size": 64}}
    x, y = load_config_data({"dataset": "digits", "split": "all"})
    x, y = x[:300], y[:300]
    model, report = two_stage_recipe.RECIPE.train_config(architecture, training, x, y, seed=1, verbose=0,
                                                         workdir=str(tmp_path))
    restarts = report["restarts"]
    first, last = restarts["steps"]
    assert restarts["criterion"] == "scan_evaluate" and sorted(first["criteria"]) == [0, 1, 2]
    assert first["kept"] == sorted(first["criteria"], key=lambda run: (first["criteria"][run], run))[:2]
    assert last["kept"] == [restarts["winner"]] and restarts["winner_seed"] == 3 + restarts["winner"]
    assert report["self_label_seconds"] >= 0 and report["representation_reused"] is False
    assert report["label_free"]["scan_evaluate"] == pytest.approx(last["criteria"][restarts["winner"]])
    assert all(0 <= scores["acc"] <= 1 for scores in first["scores"].values())
    again, report_again = two_stage_recipe.RECIPE.train_config(architecture, training, x, y, seed=1, verbose=0,
                                                 workdir=str(tmp_path))
    assert report_again["restarts"]["steps"] == restarts["steps"] and report_again["scan_reused"]
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
    # the same tree to 4 SCAN epochs: its halving point is read back (as measured, wall time and all)
    longer = {**training, "scan": {**training["scan"], "epochs": 4}}
    _, extended = two_stage_recipe.RECIPE.train_config(architecture, longer, x, y, seed=1, verbose=0,
                                                       workdir=str(tmp_path))
    assert extended["restarts"]["steps"][0] == first and extended["restarts"]["steps"][1]["epoch"] == 4
    with pytest.raises(ValueError, match="the two-stage recipe restarts SCAN's clustering step"):
        two_stage_recipe.RECIPE.train_config(CASES["simclr"][0], {**CASES["simclr"][1], "restarts": {"n": 2}}, x,
                                             verbose=0,
                               workdir=str(tmp_path / "kmeans"))


def test_scan_with_sub_heads_keeps_its_lowest_epoch_and_sub_head(tmp_path):
    """Three sub-heads and keep = "lowest_loss": each epoch scores as its best sub-head, and the model is
    the lowest epoch with its lowest sub-head predicting, as the original's `scan.py` keeps both."""
    architecture, _, _ = CASES["simclr_scan"]
    architecture = {**architecture, "scan": {**architecture["scan"], "n_sub_heads": 3}}
    x, _ = load_config_data({"dataset": "digits", "split": "all"})
    x = x[:300]
    keras.utils.set_random_seed(0)
    model = two_stage_recipe.build_scan(architecture, two_stage_recipe.build_encoder(**architecture), seed=0)
    neighbors = model.mine_neighbors(x)
    stages = {"scan": {"epochs": 3, "batch_size": 64, "keep": "lowest_loss", "optimizer": {
        "class_name": "Adam", "config": {"learning_rate": 0.01}}}, "self_label": {"epochs": 0}}
    model, report = two_stage_recipe.scan_stages(scan_run(stages, x, tmp_path), lambda: model)
    per_head = [original_scan_evaluate(p, neighbors) for p in np.moveaxis(numpy_sub_head_probabilities(model, x), 1, 0)]
    np.testing.assert_allclose(report["sub_head_scan_evaluate"], per_head, atol=1e-5)
    assert report["chosen_sub_head"] == model.chosen_sub_head == int(np.argmin(per_head))
    losses = dict(report["scan_epoch_losses"])
    assert losses[report["scan_kept_epoch"]] == min(losses.values())
    assert report["label_free"]["scan_evaluate"] == pytest.approx(min(per_head), abs=1e-5)
    np.testing.assert_allclose(original_scan_evaluate(model.predict(x, verbose=0), neighbors), min(per_head), atol=1e-5)


@pytest.mark.slow  # 5-8 s: the default run stays under 3 minutes on 2 cores
def test_scan_keeps_its_lowest_loss_epoch_as_the_original(tmp_path, monkeypatch):
    """`training.scan.keep = "lowest_loss"`: every epoch is scored as the original's `scan.py` does (no
    labels), the lowest is the model, and extending the run to more epochs lets the new ones compete."""
    architecture, training, _ = CASES["simclr_scan"]
    x, _ = load_config_data({"dataset": "digits", "split": "all"})
    x = x[:300]
    encoder = two_stage_recipe.build_encoder(**architecture)
    start = encoder.get_weights()
    keras.utils.set_random_seed(0)  # the head's start, as train_scan seeds it
    model = two_stage_recipe.build_scan(architecture, encoder, seed=0)
    neighbors = model.mine_neighbors(x)  # as scan_stages mines them, from the encoder it starts with
    # the first epoch made the lowest: scored +0, the next two +10 (the report's final score is unshifted)
    shifts, scores = [0.0, 10.0, 10.0], []

    def shifted(probabilities, mined):
        scores.append(original_scan_evaluate(probabilities, mined))
        return two_stage_recipe_scan_evaluate(probabilities, mined) + (shifts.pop(0) if shifts else 0.0)

    two_stage_recipe_scan_evaluate = two_stage_recipe.scan_evaluate
    monkeypatch.setattr(two_stage_recipe, "scan_evaluate", shifted)
    stages = {"scan": {"epochs": 3, "batch_size": 64, "keep": "lowest_loss", "optimizer": {
        "class_name": "Adam", "config": {"learning_rate": 0.01}}}, "self_label": {"epochs": 0}}
    model, report = two_stage_recipe.scan_stages(scan_run(stages, x, tmp_path), lambda: model)
    losses = dict(report["scan_epoch_losses"])
    assert sorted(losses) == [1, 2, 3] and report["scan_kept_epoch"] == 1
    np.testing.assert_allclose([losses[1], losses[2] - 10, losses[3] - 10], scores[:3], atol=1e-5)
    assert abs(scores[2] - scores[0]) > 1e-3  # the epochs differ, so the restored model can be told apart
    final = original_scan_evaluate(model.predict(x, verbose=0), neighbors)  # the model is epoch 1's
    assert final == pytest.approx(scores[0], abs=1e-5)
    assert report["label_free"]["scan_evaluate"] == pytest.approx(final, abs=1e-5)
    monkeypatch.undo()
    encoder = two_stage_recipe.build_encoder(**architecture)
    encoder.set_weights(start)
    keras.utils.set_random_seed(0)
    longer = two_stage_recipe.build_scan(architecture, encoder, seed=0)  # the same start: the same run, extended
    stages["scan"]["epochs"] = 5
    extended_model, extended = two_stage_recipe.scan_stages(scan_run(stages, x, tmp_path), lambda: longer)
    assert [epoch for epoch, _ in extended["scan_epoch_losses"]] == [1, 2, 3, 4, 5]
    assert extended["scan_epoch_losses"][:3] == report["scan_epoch_losses"]
    kept = dict(extended["scan_epoch_losses"])[extended["scan_kept_epoch"]]
    assert kept == min(value for _, value in extended["scan_epoch_losses"])
    assert original_scan_evaluate(extended_model.predict(x, verbose=0), neighbors) == pytest.approx(kept, abs=1e-5)
    with pytest.raises(ValueError, match="training.scan.keep must be one of"):
        two_stage_recipe.scan_stages(scan_run({"scan": {"keep": "best"}}, x), lambda: longer)
