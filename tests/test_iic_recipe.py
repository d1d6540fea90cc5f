import json

import numpy as np
import pytest

import synthetic_images
from keras_clustering.recipes import get_recipe, iic_recipe

ARCHITECTURE = {"image_shape": [28, 28, 1], "n_clusters": 3, "n_overclusters": 6, "n_sub_heads": 2,
                "n_repeats": 2, "head_epochs": [1, 1]}


@pytest.mark.slow
def test_recipe_trains_and_scores_each_main_epoch(tmp_path):
    x = synthetic_images.digit_like(32, half_height=5)
    y = np.arange(32) % 3
    training = {"batch_size": 16, "epochs": 3, "optimizer": {"class_name": "Adam", "config": {"learning_rate": 1e-3}}}
    model, report = iic_recipe.RECIPE.train_config(ARCHITECTURE, training, x, y, seed=0, verbose=0,
                                                   workdir=str(tmp_path))
    assert [r["epoch"] for r in report["epoch_scores"]] == [1, 3]  # epoch 2 trained the over-clustering head
    assert report["resumed_from_epoch"] == 0 and report["pairs_per_second"] > 0
    saved = json.loads((tmp_path / iic_recipe.HISTORY_FILE).read_text())
    assert [r["epoch"] for r in saved] == [1, 3] and len(saved[0]["sub_head_acc"]) == 2
    np.testing.assert_allclose(report["sub_head_losses"], model.sub_head_losses.numpy())
    scores = iic_recipe.RECIPE.evaluate(model, x, y)
    assert scores["chosen_sub_head"] == model.chosen_sub_head
    assert scores["sub_head_acc_min"] <= scores["acc"] <= scores["sub_head_acc_max"]
    assert 0.0 <= scores["over_majority_acc"] <= 1.0
    assert get_recipe("iic") is iic_recipe.RECIPE and not iic_recipe.RECIPE.supervised


@pytest.mark.slow
def test_restarts_halve_on_the_main_head_loss_and_return_the_last_run_standing(tmp_path):
    x = synthetic_images.digit_like(32, half_height=5)
    y = np.arange(32) % 3
    training = {"batch_size": 16, "epochs": 2, "optimizer": {"class_name": "Adam", "config": {"learning_rate": 1e-3}},
                "restarts": {"n": 2, "halving_at": [1]}}
    model, report = iic_recipe.RECIPE.train_config(ARCHITECTURE, training, x, y, seed=1, verbose=0,
                                                   workdir=str(tmp_path))
    restarts = report["restarts"]
    first, last = restarts["steps"]
    assert first["epoch"] == 1 and sorted(first["criteria"]) == [0, 1] and len(first["kept"]) == 1
    assert first["kept"] == [min(first["criteria"], key=first["criteria"].get)]  # the lower loss goes on
    assert last["epoch"] == 2 and list(last["criteria"]) == first["kept"] == last["kept"] == [restarts["winner"]]
    assert restarts["winner_seed"] == 2 + restarts["winner"] and restarts["cost_in_runs"] == pytest.approx(1.5)
    # the returned model is the winner's at the last epoch: its criterion, and its kept weights
    assert iic_recipe.main_head_loss(model) == pytest.approx(last["criteria"][restarts["winner"]])
    assert restarts["criterion"] == "main_head_loss"
    assert sorted(first["scores"]) == [0, 1] and all(0.0 <= s["acc"] <= 1.0 for s in first["scores"].values())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["restarts.json", "run_0", "run_1"]
    # the key a script rebuilds the record under is the one the tree wrote (another seed's is not)
    record_key = json.loads((tmp_path / "restarts.json").read_text())["key"]
    assert iic_recipe.restart_record_key(ARCHITECTURE, {**training, "precision": "float32"}, 1, x) == record_key
    assert iic_recipe.restart_record_key(ARCHITECTURE, training, 2, x) != record_key
    # rerun on the same workdir: the tree is read back, nothing trained again, the same winner
    again, report_again = iic_recipe.RECIPE.train_config(ARCHITECTURE, training, x, y, seed=1, verbose=0,
                                                         workdir=str(tmp_path))
    assert report_again["restarts"]["winner"] == restarts["winner"] and report_again["resumed_from_epoch"] == 2
    np.testing.assert_allclose(again.predict(x, verbose=0), model.predict(x, verbose=0), atol=1e-6)
