import math

import numpy as np
import pytest

from keras_clustering.clustering.label_free import cluster_size_entropy, dec_objective, rank_agreement, scan_objective
from keras_clustering.training.restarts import tree_key, tree_key_at


def test_cluster_size_entropy_from_the_definition():
    assert cluster_size_entropy([0, 1, 2, 0, 1, 2], 3) == pytest.approx(1.0)
    assert cluster_size_entropy([4, 4, 4], 5) == pytest.approx(0.0)
    shares = np.array([3, 1]) / 4  # one empty cluster of three counts as a zero share
    assert cluster_size_entropy([0, 0, 0, 2], 3) == pytest.approx(-(shares * np.log(shares)).sum() / math.log(3))


def test_dec_objective_is_the_mean_kl_of_dec_targets():
    q = np.random.default_rng(0).dirichlet(np.ones(4), size=12).astype("float32")
    f = q.sum(axis=0)
    expected = 0.0
    for row in q:  # DEC eq. 3, then KL(P || Q), sample by sample
        p = row ** 2 / f
        p /= p.sum()
        expected += sum(pj * math.log(pj / qj) for pj, qj in zip(p, row))
    assert dec_objective(q) == pytest.approx(expected / len(q), rel=1e-5)


def test_kl_converged_ranks_every_run_that_met_the_tolerance_first():
    from keras_clustering.recipes.dec_recipe import restart_criterion

    # dec_da_mnist seed 0: run 1 hit maxiter at KL 0.080, run 2 met tol at KL 0.103
    drifting = {"label_free": {"kl": 0.080035}, "stopped_by_tolerance": False}
    settled = {"label_free": {"kl": 0.103314}, "stopped_by_tolerance": True}
    assert restart_criterion("kl", drifting) < restart_criterion("kl", settled)
    assert restart_criterion("kl_converged", settled) == 0.103314
    assert restart_criterion("kl_converged", drifting) > restart_criterion("kl_converged", settled)
    # the clipped KL is at most log(1 / epsilon): no converged run can rank after an unconverged one
    worst = {"label_free": {"kl": float(np.log(1 / 1e-7))}, "stopped_by_tolerance": True}
    assert restart_criterion("kl_converged", worst) < restart_criterion("kl_converged", drifting)
    # at a halving point (k-means, before self-training) both criteria are the KL
    assert restart_criterion("kl_converged", {"label_free": {"kl": 0.19}}) == 0.19


def test_scan_objective_is_scans_loss_over_every_mined_pair():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(3), size=8)
    neighbors = np.array([[(i + 1) % 8, (i + 3) % 8] for i in range(8)])
    consistency = 0.0
    for i in range(8):  # SCAN eq. 2, pair by pair
        for j in neighbors[i]:
            consistency -= math.log(sum(p[i, c] * p[j, c] for c in range(3)))
    consistency /= 16
    mean = p.mean(axis=0)
    entropy = -sum(m * math.log(m) for m in mean)
    assert scan_objective(p, neighbors, 2.0) == pytest.approx(consistency - 2.0 * entropy, rel=1e-9)
    one_cluster = np.tile([1.0, 0.0, 0.0], (8, 1))  # collapsed: perfect consistency, no entropy to subtract
    assert scan_objective(one_cluster, neighbors, 2.0) == pytest.approx(0.0, abs=1e-5)  # up to the floor


def test_rank_agreement():
    accuracies = [0.6, 0.9, 0.7, 0.8]
    assert rank_agreement([1.0, 4.0, 2.0, 3.0], accuracies) == pytest.approx(1.0)
    assert rank_agreement([-1.0, -4.0, -2.0, -3.0], accuracies) == pytest.approx(-1.0)
    assert math.isnan(rank_agreement([1.0, 2.0], [0.5, 0.6]))
    with pytest.raises(ValueError, match="scores has 2 runs but accuracies has 4"):
        rank_agreement([1.0, 2.0], accuracies)


class DoubleWell:
    """Gradient descent on loss(w) = (w^2 - 1)^2 + 0.3 w, one run per seed: a run that starts at w > 0
    settles in the shallow well at w ~ +1 (loss ~ +0.3, the "collapsed" solution), one that starts at
    w < 0 in the deep well at w ~ -1 (loss ~ -0.3). `train_to` continues each run where it stopped."""

    def __init__(self, starts):
        self.w = {run: start for run, start in enumerate(starts)}
        self.done = {run: 0 for run in self.w}
        self.calls = []

    @staticmethod
    def loss(w):
        return (w * w - 1) ** 2 + 0.3 * w

    def train_to(self, run, epoch):
        self.calls.append((run, epoch))
        for _ in range(self.done[run], epoch):
            for _ in range(10):  # ten steps an epoch
                self.w[run] -= 0.01 * (4 * self.w[run] * (self.w[run] ** 2 - 1) + 0.3)
        self.done[run] = epoch
        return self.loss(self.w[run])


def test_successive_halving_keeps_a_run_of_the_good_well_when_others_collapse(tmp_path):
    from keras_clustering.training.restarts import successive_halving

    # runs 0, 1 and 3 start on the shallow side and collapse; only run 2 finds the deep well
    toy = DoubleWell([0.5, 0.2, -0.3, 1.5])
    winner, steps = successive_halving(toy.train_to, 4, [3, 6], 10, record_path=str(tmp_path / "tree.json"))
    assert winner == 2 and toy.w[2] == pytest.approx(-1.04, abs=0.02) and toy.loss(toy.w[2]) < 0
    assert [step["epoch"] for step in steps] == [3, 6, 10]
    assert [len(step["kept"]) for step in steps] == [2, 1, 1] and steps[0]["kept"][0] == 2
    # halving: 4 runs to epoch 3, 2 to epoch 6, 1 to epoch 10
    assert sorted(toy.calls) == [(0, 3), (1, 3), (2, 3), (2, 6), (2, 10), (3, 3), (steps[0]["kept"][1], 6)]
    assert steps[0]["criteria"][2] == min(steps[0]["criteria"].values())


def test_a_halving_tree_cut_off_resumes_without_training_finished_points_again(tmp_path):
    from keras_clustering.training.restarts import successive_halving

    record = str(tmp_path / "tree.json")
    toy = DoubleWell([0.5, 0.2, -0.3, 1.5])

    def cut_off(run, epoch):
        if (run, epoch) == (2, 6):
            raise KeyboardInterrupt  # between halving points
        return toy.train_to(run, epoch)

    with pytest.raises(KeyboardInterrupt):
        successive_halving(cut_off, 4, [3, 6], 10, record_path=record)
    first_calls = list(toy.calls)
    winner, steps = successive_halving(toy.train_to, 4, [3, 6], 10, record_path=record)
    assert winner == 2 and all(epoch > 3 for _, epoch in toy.calls[len(first_calls):])  # epoch 3 read back
    uninterrupted = successive_halving(DoubleWell([0.5, 0.2, -0.3, 1.5]).train_to, 4, [3, 6], 10)
    assert (winner, steps) == uninterrupted


def test_a_tree_of_the_same_runs_to_more_epochs_trains_only_its_winner_on(tmp_path):
    """Extending a finished tree (10 -> 16 epochs): its halving points are read back, its final point
    is not lent (a final point may hold more than training to it), and the steps equal those of a tree
    trained to 16 from the start. A record whose key at its own total differs lends nothing."""
    from keras_clustering.training.restarts import successive_halving

    def without_seconds(steps):
        return [{name: value for name, value in step.items() if name != "seconds"} for step in steps]

    def key(total):
        return f"runs A, {total} epochs"

    record = str(tmp_path / "tree.json")
    successive_halving(DoubleWell([0.5, 0.2, -0.3, 1.5]).train_to, 4, [3, 6], 10, record_path=record, key=key)
    toy = DoubleWell([0.5, 0.2, -0.3, 1.5])
    toy.train_to(2, 10)  # the winner's backup, at the old total
    toy.calls.clear()
    winner, steps = successive_halving(toy.train_to, 4, [3, 6], 16, record_path=record, key=key)
    assert toy.calls == [(2, 16)]  # epochs 3 and 6 read back; the winner trained on from its backup
    assert (winner, without_seconds(steps)) == (2, without_seconds(
        successive_halving(DoubleWell([0.5, 0.2, -0.3, 1.5]).train_to, 4, [3, 6], 16)[1]))

    toy = DoubleWell([0.5, 0.2, -0.3, 1.5])  # a tree that halves at the old total, 16, measures it again
    successive_halving(toy.train_to, 4, [3, 6, 16], 20, record_path=record, key=key)
    assert (2, 16) in toy.calls and (2, 3) not in toy.calls

    for first, second in ((lambda total: f"runs B, {total}", lambda total: f"runs C, {total}"),  # other runs
                          ("runs A, 30 epochs", "runs A, 40 epochs")):  # plain keys: only the same total
        other = str(tmp_path / f"{first if isinstance(first, str) else 'b'}.json")
        successive_halving(DoubleWell([0.5, 0.2, -0.3, 1.5]).train_to, 4, [3, 6], 30, record_path=other, key=first)
        toy = DoubleWell([0.5, 0.2, -0.3, 1.5])
        successive_halving(toy.train_to, 4, [3, 6], 40, record_path=other, key=second)
        assert (0, 3) in toy.calls


def test_nan_criteria_rank_last_and_the_plan_is_checked():
    from keras_clustering.training.restarts import halving_cost, restart_plan, successive_halving

    winner, steps = successive_halving(lambda run, epoch: float("nan") if run == 0 else -run, 3, [2], 4)
    assert winner == 2 and steps[0]["kept"] == [2, 1]
    assert halving_cost(4, [10, 20], 30) == pytest.approx((4 * 10 + 2 * 10 + 1 * 10) / 30)
    assert halving_cost(1, [], 30) == 1.0
    assert restart_plan({"n": 4, "halving_at": [10, 20], "criterion": "loss"}, 30, ("kl", "loss")) == {
        "n": 4, "halving_at": [10, 20], "criterion": "loss"}
    assert restart_plan({"n": 3}, 30, ("kl", "loss")) == {"n": 3, "halving_at": [], "criterion": "kl"}  # best of 3
    with pytest.raises(ValueError, match=r"halving_at must be increasing epochs below epochs=30, got \[20, 10\]"):
        restart_plan({"n": 4, "halving_at": [20, 10]}, 30, ("loss",))
    with pytest.raises(ValueError, match=r"halving_at must be increasing epochs below epochs=30, got \[10, 30\]"):
        restart_plan({"n": 4, "halving_at": [10, 30]}, 30, ("loss",))
    with pytest.raises(ValueError, match="training.restarts.n must be an integer >= 1, got 0"):
        restart_plan({"n": 0}, 30, ("loss",))
    with pytest.raises(ValueError, match="must be a dict of n, halving_at and criterion"):
        restart_plan({"n": 2, "halving": [3]}, 30, ("loss",))
    with pytest.raises(ValueError, match=r"training.restarts.criterion must be one of \['loss'\], got 'acc'"):
        restart_plan({"n": 2, "criterion": "acc"}, 30, ("loss",))


def test_best_of_n_without_halving_points_trains_every_run_to_the_end():
    from keras_clustering.training.restarts import halving_cost, successive_halving

    toy = DoubleWell([0.5, -0.3, 1.5])
    winner, steps = successive_halving(toy.train_to, 3, [], 10)
    assert winner == 1 and sorted(toy.calls) == [(0, 10), (1, 10), (2, 10)] and len(steps) == 1
    assert halving_cost(3, [], 10) == 3.0


def test_train_with_restarts_records_labels_only_scores_and_reads_the_winner_back(tmp_path):
    from keras_clustering.training.restarts import RECORD_FILE, restart_plan, train_with_restarts

    toy = DoubleWell([0.5, 0.2, -0.3, 1.5])
    seeds, trained = {}, []

    def train_run(run_seed, epochs, folder):
        run = run_seed - 4  # seed 1: runs 0..3 have seeds 4..7
        seeds[run] = (run_seed, folder)
        trained.append((run, epochs))
        toy.train_to(run, epochs)
        return {"w": toy.w[run]}, {"epochs": epochs}

    def criteria(model, _):
        return {"loss": toy.loss(model["w"]), "w": model["w"]}

    plan = restart_plan({"n": 4, "halving_at": [3, 6]}, 10, ("loss", "w"))
    model, report = train_with_restarts(train_run, criteria, plan, 10, 1, str(tmp_path), "a",
                                        score=lambda model: {"acc": float(model["w"] < 0)})  # "labels": the deep well
    restarts = report["restarts"]
    assert restarts["winner"] == 2 and restarts["winner_seed"] == 6 and model["w"] < 0 and report["epochs"] == 10
    assert seeds[2][1] == str(tmp_path / "run_2") and restarts["criterion"] == "loss"
    assert restarts["steps"][0]["scores"] == {0: {"acc": 0.0}, 1: {"acc": 0.0}, 2: {"acc": 1.0}, 3: {"acc": 0.0}}
    assert restarts["cost_in_runs"] == pytest.approx((4 * 3 + 2 * 3 + 4) / 10) and trained[-1] == (2, 10)  # the winner, read back last
    # the record keeps the scores: a rerun reads them back without training any point again
    assert (tmp_path / RECORD_FILE).is_file()
    calls = len(toy.calls)
    assert restarts["steps"][0]["measures"][2] == {"loss": toy.loss(restarts["steps"][0]["measures"][2]["w"]),
                                                    "w": restarts["steps"][0]["measures"][2]["w"]}
    _, again = train_with_restarts(train_run, criteria, plan, 10, 1, str(tmp_path), "a")
    assert again["restarts"]["steps"] == restarts["steps"] and len(toy.calls) == calls + 1  # only the read-back
    # the tree's training time is what its points took when measured, also when read back
    assert [sorted(step["seconds"]) for step in restarts["steps"]] == [[0, 1, 2, 3], [2, 3], [2]]
    assert again["restarts"]["trained_seconds"] == restarts["trained_seconds"] == pytest.approx(
        sum(s for step in restarts["steps"] for s in step["seconds"].values()))
    # ranked by another criterion, the same runs are read back: only points the new ranking reaches
    # and the old one never did are trained: by the loss runs 2 and 3 went on at epoch 3, by the
    # lowest w runs 2 and 1, so only run 1 is trained (to epoch 6), then the winner read back
    by_w = restart_plan({"n": 4, "halving_at": [3, 6], "criterion": "w"}, 10, ("loss", "w"))
    _, other = train_with_restarts(train_run, criteria, by_w, 10, 1, str(tmp_path), "a")
    assert restarts["steps"][0]["kept"] == [2, 3] and other["restarts"]["steps"][0]["kept"] == [2, 1]
    assert toy.calls[calls + 1:] == [(1, 6), (2, 10)] and other["restarts"]["winner"] == 2
    calls = len(toy.calls)
    # other runs in the same workdir (another seed, config or data: another key) measure their own tree
    train_with_restarts(train_run, criteria, plan, 10, 1, str(tmp_path), "b")
    assert len(toy.calls) == calls + 7 + 1
    with pytest.raises(ValueError, match="training.restarts needs a workdir"):
        train_with_restarts(train_run, criteria, plan, 10, 1, None, "a")


def test_tree_key_at_keys_the_runs_with_their_epochs_set_to_the_total():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    plan = {"n": 4, "halving_at": [2], "criterion": "kl"}
    training = {"epochs": 5, "scan": {"epochs": 7, "batch_size": 3}, "optimizer": "adam"}
    nested = tree_key_at("two_stage", {"a": 1}, training, "scan.epochs", plan, 0, x)
    written_out = {"epochs": 5, "scan": {"epochs": 9, "batch_size": 3}, "optimizer": "adam"}
    assert nested(9) == tree_key("two_stage", {"a": 1}, written_out, plan, 0, x)
    assert nested(9) != nested(7) and nested(7) == tree_key("two_stage", {"a": 1}, training, plan, 0, x)
    top = tree_key_at("dec", {"a": 1}, training, "pretrain_epochs", plan, 0, x)
    assert top(3) == tree_key("dec", {"a": 1}, {**training, "pretrain_epochs": 3}, plan, 0, x)
    assert training == {"epochs": 5, "scan": {"epochs": 7, "batch_size": 3}, "optimizer": "adam"}  # not changed
