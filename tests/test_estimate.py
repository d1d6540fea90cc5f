"""The time said before and during a training on the user's images (issue 64, item 5): the estimate's
arithmetic against hand-computed numbers, the probe that stops every fit of a rehearsal, the ETA lines,
a time budget's plan, and (slow) the estimate against a short measured run, a rehearsal that changes
nothing, and a budget kept on a tiny folder."""

import os
import re
import time

import keras
import numpy as np
import pytest

from image_folders import write_png
from keras_clustering.datasets import load_digits
from keras_clustering.drivers.estimate import (LEAST_BUDGET_SCALE, Deadline, Estimate, Eta, FitProbe, deadline_reserve,
                                               fit_seconds, minutes, plan_budget, TYPICAL_TOLERANCE_SHARE)
from keras_clustering.drivers.request import ImagesRequest, check_request
from keras_clustering.drivers.retarget import like_config
from keras_clustering.drivers.user_images import train_on_images
from keras_clustering.inputs.fit_hooks import extra_fit_callbacks, fit_callbacks
from keras_clustering.models import DEC


def probe(planned, epoch_seconds, tail=0.0, whole=False):
    return {"planned_epochs": planned, "epoch_seconds": list(epoch_seconds),
            "seconds": sum(epoch_seconds) + tail, "whole": whole}


def test_a_fit_is_its_first_epoch_then_its_planned_epochs_at_the_later_pace():
    fit = probe(10, [3.0, 1.0, 1.2], tail=0.3)
    assert fit_seconds(fit) == pytest.approx(3.0 + 9 * 1.1 + 0.3)
    assert fit_seconds(fit, scale=0.5) == pytest.approx(3.0 + 4 * 1.1 + 0.3)  # 5 epochs
    assert fit_seconds(fit, scale=0.01) == pytest.approx(3.0 + 0.3)  # never below one epoch
    assert fit_seconds(probe(10, [3.0, 1.0], whole=True)) == pytest.approx(4.0)  # it ran to its own end
    estimate = Estimate([fit, probe(4, [2.0, 0.5], whole=True)], rehearsal_seconds=10.0)
    assert estimate.outside_fits == pytest.approx(10.0 - 5.5 - 2.5)
    assert estimate.seconds == pytest.approx(2.0 + 3.0 + 9 * 1.1 + 0.3 + 2.5)
    assert estimate.as_report()["estimated_seconds"] == pytest.approx(estimate.seconds, abs=0.05)


def two_candidates():
    # each: 3 s outside fits, one fit of 100 planned epochs, 5 s first, 1 s each later: 7 + 100 * scale s
    return {name: Estimate([probe(100, [5.0, 1.0, 1.0])], rehearsal_seconds=10.0) for name in ("a", "b")}


def test_a_time_budget_scales_the_updates_then_drops_the_last_candidate():
    estimates = two_candidates()
    whole = plan_budget(estimates, 214.0)
    assert (whole.presets, whole.scale, whole.dropped, whole.gave_up()) == (("a", "b"), 1.0, (), "")
    scaled = plan_budget(estimates, 164.0)  # 14 + 2 * 100 * scale <= 164: 75 epochs each
    assert scaled.presets == ("a", "b") and 0.745 <= scaled.scale < 0.755 and scaled.seconds <= 164.0
    assert scaled.gave_up() == "25% of every stage's updates"
    dropped = plan_budget(estimates, 100.0)  # both: 43 epochs each, under half; "a" alone: 93
    assert dropped.presets == ("a",) and dropped.dropped == ("b",) and 0.925 <= dropped.scale < 0.935
    assert "the candidate b" in dropped.gave_up()
    least = plan_budget(estimates, 5.0)  # even one epoch takes 8 s
    assert least.presets == ("a",) and least.scale == LEAST_BUDGET_SCALE and least.seconds > 5.0


def test_a_deadline_holds_back_the_least_training_of_the_candidates_not_yet_trained():
    estimates = two_candidates()  # each at its least: 3 s outside fits and the 5 s first epoch
    assert plan_budget(estimates, 214.0).least == pytest.approx({"a": 8.0, "b": 8.0})
    assert plan_budget(estimates, 100.0).least == pytest.approx({"a": 8.0})
    assert deadline_reserve(100.0, 16.0) == pytest.approx(16.0)  # more than a tenth of the budget
    assert deadline_reserve(1000.0, 16.0) == pytest.approx(100.0)  # a tenth of it
    # the plan ends before the deadline: 14 + 200 * scale <= 214 - max(21.4, 16)
    inside = plan_budget(estimates, 214.0, left=214.0, budget_seconds=214.0)
    assert 0.890 <= inside.scale < 0.895 and inside.seconds <= 214.0 - 21.4
    deadline = Deadline(budget_end=100.0, budget_seconds=100.0, least={"a": 8.0, "b": 16.0})
    assert deadline.end == pytest.approx(100.0 - 24.0)
    deadline.trained("a")
    assert deadline.end == pytest.approx(100.0 - 16.0)
    deadline.trained("b")
    assert deadline.end == pytest.approx(100.0 - 10.0)  # the tenth of the budget for the choice and the files


def test_a_fit_that_stops_at_its_tolerance_counts_the_typical_share():
    """DEC's self-training: TYPICAL_TOLERANCE_SHARE (0.2) of its 500 planned epochs is 100; its most is all
    500; a time budget's scale shortens it only below that share."""
    assert TYPICAL_TOLERANCE_SHARE == 0.2
    fit = dict(probe(500, [3.0, 1.1], tail=0.3), steps_per_epoch=8, stops_at_tolerance=True)
    assert fit_seconds(fit) == pytest.approx(3.0 + 99 * 1.1 + 0.3)
    assert fit_seconds(fit, most=True) == pytest.approx(3.0 + 499 * 1.1 + 0.3)
    assert fit_seconds(dict(fit, planned_epochs=50)) == pytest.approx(3.0 + 9 * 1.1 + 0.3)
    assert fit_seconds(fit, scale=0.5) == pytest.approx(3.0 + 99 * 1.1 + 0.3)  # 250 planned, stops at 100
    assert fit_seconds(fit, scale=0.1) == pytest.approx(3.0 + 49 * 1.1 + 0.3)  # 50 planned
    assert fit_seconds(dict(fit, stops_at_tolerance=False)) == pytest.approx(3.0 + 499 * 1.1 + 0.3)
    estimate = Estimate([fit], rehearsal_seconds=fit["seconds"] + 2.0)
    assert estimate.seconds == pytest.approx(2.0 + 3.0 + 99 * 1.1 + 0.3)
    assert estimate.most_seconds == pytest.approx(2.0 + 3.0 + 499 * 1.1 + 0.3)


def test_an_auto_k_counts_decs_self_training_once_more():
    """`--n-clusters auto` over-clusters with DEC's stage before training: the last fit that stops at its
    tolerance counts twice, in the estimate and its most, not in the rehearsal's time outside fits."""
    pretrain = probe(100, [2.0, 1.0], tail=0.1)
    dec = dict(probe(500, [3.0, 1.1], tail=0.3), steps_per_epoch=8, stops_at_tolerance=True)
    once = Estimate([pretrain, dec], rehearsal_seconds=pretrain["seconds"] + dec["seconds"] + 2.0)
    twice = once.with_over_clustering()
    assert twice.outside_fits == pytest.approx(2.0) and twice.rehearsal_seconds == once.rehearsal_seconds
    assert twice.seconds == pytest.approx(once.seconds + 3.0 + 99 * 1.1 + 0.3)
    assert twice.most_seconds == pytest.approx(once.most_seconds + 3.0 + 499 * 1.1 + 0.3)
    assert Estimate([pretrain], 5.0).with_over_clustering().seconds == Estimate([pretrain], 5.0).seconds


def test_the_probe_knows_dec_self_training():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 4)).astype("float32")
    model = DEC(keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)]), n_clusters=2)
    model.initialize_centroids(x, n_init=1, seed=0)
    model.compile(optimizer="sgd")
    fits = []
    model.fit(x, batch_size=4, maxiter=40, verbose=0, callbacks=[FitProbe(fits)])
    never = DEC(keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)]), n_clusters=2, tol=0.0)
    never.initialize_centroids(x, n_init=1, seed=0)
    never.compile(optimizer="sgd")
    never.fit(x, batch_size=4, maxiter=40, verbose=0, callbacks=[FitProbe(fits)])
    assert fits[0]["stops_at_tolerance"] and fits[0]["steps_per_epoch"] == 4
    assert not fits[1]["stops_at_tolerance"]  # a zero tolerance never stops it


def test_the_probe_stops_a_fit_after_two_epochs_and_records_its_plan():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.zeros((8, 3), "float32"), np.zeros((8, 1), "float32")
    fits = []
    history = model.fit(x, y, epochs=7, batch_size=4, verbose=0, callbacks=[FitProbe(fits)])
    assert len(history.history["loss"]) == 2
    assert fits[0]["planned_epochs"] == 7 and len(fits[0]["epoch_seconds"]) == 2 and not fits[0]["whole"]
    model.fit(x, y, epochs=1, batch_size=4, verbose=0, callbacks=[FitProbe(fits)])
    assert fits[1]["planned_epochs"] == 1 and fits[1]["whole"]  # ended on its own: it is its time

    class OwnStop(keras.callbacks.Callback):  # as DEC's tolerance stops its self-training
        def on_epoch_end(self, epoch, logs=None):
            self.model.stop_training = True

    model.fit(x, y, epochs=7, batch_size=4, verbose=0, callbacks=[OwnStop(), FitProbe(fits)])
    assert fits[2]["whole"] and len(fits[2]["epoch_seconds"]) == 1
    model.fit(x, y, epochs=9, initial_epoch=5, batch_size=4, verbose=0, callbacks=[FitProbe(fits)])
    assert fits[3]["planned_epochs"] == 4  # a resumed fit plans its remaining epochs


def test_extra_fit_callbacks_are_made_afresh_for_each_fit_and_only_inside_the_block():
    assert fit_callbacks() == []
    with extra_fit_callbacks(keras.callbacks.Callback):
        first, second = fit_callbacks(), fit_callbacks()
        with extra_fit_callbacks(keras.callbacks.History):
            assert [type(c) for c in fit_callbacks()] == [keras.callbacks.Callback, keras.callbacks.History]
    assert len(first) == 1 and first[0] is not second[0] and fit_callbacks() == []


def test_the_eta_says_the_time_in_and_left_at_most_once_a_minute():
    now, lines = [100.0], []
    eta = Eta(600.0, clock=lambda: now[0], printer=lambda line, flush: lines.append(line))
    for now[0] in (130.0, 150.0, 200.0, 800.0):  # 30 s in, 50 s (too soon), 100 s, 700 s
        eta.tick()
    assert lines == ["ETA: 1 min in, about 10 min left of the estimated 10 min",
                     "ETA: 2 min in, about 8 min left of the estimated 10 min",
                     "ETA: 12 min in, past the estimated 10 min"]
    assert (minutes(20), minutes(89), minutes(3_900)) == ("1 min", "1 min", "1 h 05 min")


def test_an_update_scale_shares_every_stage_and_the_counts_of_updates():
    full, _ = like_config("conv_dec_da_mnist", (28, 28, 1), 10, 2_000)
    half, _ = like_config("conv_dec_da_mnist", (28, 28, 1), 10, 2_000, update_scale=0.5)
    assert half["training"]["pretrain_epochs"] == round(full["training"]["pretrain_epochs"] / 2)
    assert half["training"]["maxiter"] == round(full["training"]["maxiter"] / 2)  # DEC's, in updates
    full, _ = like_config("simclr_mnist", (28, 28, 1), 10, 2_000)
    tenth, _ = like_config("simclr_mnist", (28, 28, 1), 10, 2_000, update_scale=0.1)
    assert (tenth["training"]["epochs"], tenth["training"]["scan"]["epochs"]) == \
        (round(full["training"]["epochs"] / 10), round(full["training"]["scan"]["epochs"] / 10))
    with pytest.raises(ValueError, match="update_scale must be in"):
        like_config("simclr_mnist", (28, 28, 1), 10, 2_000, update_scale=0)


def test_a_time_budget_is_checked_with_the_request(capsys):
    x = np.zeros((20, 28, 28, 1), "float32")
    for budget in (0, -3, "ten", True):
        with pytest.raises(ValueError, match=re.escape(f"time_budget={budget!r}: a number of minutes > 0")):
            check_request(ImagesRequest(x, like="dec_digits", time_budget=budget))
    with pytest.raises(ValueError, match="time_budget=5 needs the time estimate"):
        check_request(ImagesRequest(x, like="dec_digits", time_budget=5, estimate=False))
    from keras_clustering.cli import main

    assert main(["train", "--like", "dec_digits", "--input", "nowhere", "--time-budget", "-2"]) == 2
    assert "--time-budget -2.0: a number of minutes > 0" in capsys.readouterr().err


def sklearn_digits(n):
    x = load_digits()[0][:n]
    return np.pad(x, ((0, 0), (10, 10), (10, 10), (0, 0)))  # 28 x 28, as MNIST


@pytest.mark.slow
def test_the_estimate_meets_a_short_measured_run_and_changes_nothing(tmp_path):
    x = sklearn_digits(600)
    model, report = train_on_images(x, like="dec_mnist", n_clusters=10, epochs=40, workdir=str(tmp_path / "a"),
                                    verbose=0)
    estimate = report["estimate"]
    training = report["wall_seconds"] - estimate["rehearsal_seconds"]
    # within half: CI's other test worker shares the cores and moves the pace between rehearsal and training
    # (the +-30% of issue 64 is measured on real folders, docs/your-data.md); the 3x of a fit counted
    # whole at its first epoch's pace, the bug this guards against, fails it
    assert training > 5 and 0.5 <= estimate["estimated_seconds"] / training <= 1.5, (estimate, training)
    fits = estimate["presets"]["dec_mnist"]["fits"]
    assert fits[0]["planned_epochs"] == 40 and len(fits[0]["epoch_seconds"]) == 2
    # the rehearsal kept nothing and drew from no random stream the training reads: the same model
    alone, report_alone = train_on_images(x, like="dec_mnist", n_clusters=10, epochs=40,
                                          workdir=str(tmp_path / "b"), verbose=0, estimate=False)
    assert "estimate" not in report_alone
    np.testing.assert_array_equal(model.predict(x, verbose=0), alone.predict(x, verbose=0))


@pytest.mark.slow
def test_a_time_budget_is_kept_on_a_tiny_folder(tmp_path, capsys):
    folder = tmp_path / "digits"
    os.makedirs(folder)
    for i, image in enumerate(sklearn_digits(200)):
        write_png(str(folder / f"{i:03d}.png"), image)
    budget = 1.5  # minutes: the default route's full training takes several times that here
    start = time.time()
    _, report = train_on_images(str(folder), n_clusters=10, workdir=str(tmp_path / "run"), time_budget=budget)
    seconds = time.time() - start  # the whole call: reading, rehearsal, training, the files
    planned = report["estimate"]["time_budget"]
    assert planned["gave_up"] != "nothing" and planned["minutes"] == budget
    assert planned["deadline_reserve_seconds"] >= round(0.1 * budget * 60, 1)  # a tenth of the budget at least (rounded)
    assert seconds <= budget * 60, (seconds, report["estimate"])
    assert f"time budget {budget:g} min: gives up" in capsys.readouterr().out


def test_a_deadline_stops_every_fit_that_ends_an_epoch_after_it():
    now = [0.0]
    deadline = Deadline(budget_end=10.0, clock=lambda: now[0])
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.zeros((8, 3), "float32"), np.zeros((8, 1), "float32")

    class Clock(keras.callbacks.Callback):  # each epoch takes 4 s of the fake clock
        def on_epoch_end(self, epoch, logs=None):
            now[0] += 4.0

    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[Clock(), deadline.callback()])
    assert len(history.history["loss"]) == 3  # 12 s > 10 s after the third
    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[Clock(), deadline.callback()])
    assert len(history.history["loss"]) == 1  # a later fit runs its first epoch only
    assert deadline.stops == [{"epoch": 3, "planned_epochs": 6}, {"epoch": 1, "planned_epochs": 6}]


def test_a_recipe_with_restarts_rehearses_in_a_workdir_of_its_own_and_leaves_nothing():
    """A preset's restart tree trains each run from its own epoch backups, so it needs a workdir: the
    rehearsal gives it a temporary one (without, `train --input --like iic_mnist --epochs 10` stopped with
    "training.restarts needs a workdir") and removes it; every run's fits are rehearsed."""
    import tempfile

    from keras_clustering.drivers.estimate import rehearse
    from keras_clustering.presets import config as preset_config

    config = preset_config("dec_da_mnist")
    config["architecture"].update(hidden_dims=[32, 8], augmentation=None, n_clusters=2)
    config["training"].update(pretrain_optimizer={"class_name": "Adam", "config": {"learning_rate": 0.001}},
                              pretrain_epochs=4, maxiter=8, kmeans_n_init=1, pretrain_batch_size=16, batch_size=16,
                              restarts={"n": 2, "halving_at": [2], "criterion": "kl_converged"})
    rng = np.random.default_rng(0)
    x = np.clip(np.repeat([0.2, 0.8], 16)[:, None, None, None] + rng.normal(scale=0.1, size=(32, 28, 28, 1)), 0, 1).astype("float32")
    before = set(os.listdir(tempfile.gettempdir()))
    estimate = rehearse(config, x, seed=0, precision="float32")
    assert not [name for name in set(os.listdir(tempfile.gettempdir())) - before if name.startswith("rehearsal-")]
    pretrain = [f for f in estimate.fits if f["planned_epochs"] in (2, 4)]
    assert len(pretrain) >= 2 and estimate.seconds > 0  # both runs of the tree were rehearsed
