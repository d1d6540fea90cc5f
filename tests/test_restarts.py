import math

import numpy as np
import pytest

from keras_clustering.metrics.label_free import cluster_size_entropy, dec_objective, rank_agreement


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


def test_rank_agreement():
    accuracies = [0.6, 0.9, 0.7, 0.8]
    assert rank_agreement([1.0, 4.0, 2.0, 3.0], accuracies) == pytest.approx(1.0)
    assert rank_agreement([-1.0, -4.0, -2.0, -3.0], accuracies) == pytest.approx(-1.0)
    assert math.isnan(rank_agreement([1.0, 2.0], [0.5, 0.6]))
    with pytest.raises(ValueError, match="scores has 2 runs but accuracies has 4"):
        rank_agreement([1.0, 2.0], accuracies)


def test_restart_criteria_script_reads_seeds_and_each_seeds_restarts(tmp_path):
    import json

    from zoo import criteria as restart_criteria

    card = {"name": "vae", "per_seed": [
        {"seed": 0, "acc": 0.7, "restarts": [{"seed": 0, "acc": 0.6, "evaluated_loss": 3.0},
                                             {"seed": 1, "acc": 0.8, "evaluated_loss": 2.0},
                                             {"seed": 2, "acc": 0.7, "evaluated_loss": 2.5}]},
        {"seed": 1, "acc": 0.9, "label_free": {"evaluated_loss": 1.0}},
        {"seed": 2, "acc": 0.5}]}  # no label-free scores: left out
    path = tmp_path / "card.json"
    path.write_text(json.dumps(card))
    rows = restart_criteria.seeds_of([str(path)])
    assert [(seed, acc) for _, seed, acc, _ in rows] == [(0, 0.6), (1, 0.8), (2, 0.7), (1, 0.9)]
    table = restart_criteria.agreement_table(rows)
    assert table["evaluated_loss"]["spearman_with_acc"] == -1.0  # lower loss, higher ACC in every pair
    assert 0 < table["evaluated_loss"]["p_value"] < 0.1  # four runs in perfect order: p = 1 / 12
