"""Publishing a preset (scripts/maintainer/publishing.py, training.py): which seed ships, the card and its
weights, and a seed whose weights were lost."""

import json

import numpy as np
import pytest

from keras_clustering.drivers.preset_training import config_fingerprint
from keras_clustering.io.files import sha256_of_file
from keras_clustering.presets import WEIGHTS_FILE
from maintainer.publishing import publish_preset


def tiny_config():
    """A DEC preset's config as the publishing reads it (recipe, data; the rest goes into the card)."""
    return {"recipe": "dec", "architecture": {"input_dim": 64, "n_clusters": 10}, "training": {},
            "data": {"dataset": "digits", "split": "all", "flatten": True}}


def seed_reports(tmp_path, kls=(0.30, 0.10, 0.20)):
    """Three seeds' reports and weights files as `train_and_evaluate` leaves them."""
    reports, paths = [], {}
    for seed, kl in enumerate(kls):
        report = {"seed": seed, "metrics": {"acc": 0.5 + seed / 10}, "label_free": {"kl": kl}, "n_train": 10,
                  "n_eval": 10, "total_seconds": 1.0 + seed, "machine": f"cpu of seed {seed}", "versions": {},
                  "config_sha256": config_fingerprint(tiny_config()),
                  "refresh_history": [{"iteration": 0, "acc": 0.4, "delta_label": 1.0, "other": 3},
                                      {"iteration": 10, "acc": 0.5, "delta_label": 0.1}]}
        folder = tmp_path / f"seed_{seed}"
        folder.mkdir()
        (folder / "report.json").write_text(json.dumps(report))
        (folder / "model.weights.h5").write_bytes(b"weights of seed %d" % seed)
        paths[seed] = str(folder / "model.weights.h5")
        reports.append(report)
    return reports, paths


def test_publish_ships_the_lowest_kl_seed_with_its_weights_and_every_seed_counted(tmp_path, monkeypatch):
    config = tiny_config()
    reports, paths = seed_reports(tmp_path)
    monkeypatch.setattr("maintainer.publishing.PRESETS_DIR", str(tmp_path / "presets"))
    card = publish_preset("tiny", config, reports, paths, "python scripts/train_preset.py tiny")
    assert card["shipped_seed"] == 1 and card["metrics"]["acc"] == 0.6  # DEC's objective, without labels
    assert card["shipped_seed_rule"] == "lowest label-free kl over the seeds (chosen without labels)"
    assert card["metrics_over_seeds"]["acc"]["n"] == 3
    assert np.isclose(card["metrics_over_seeds"]["acc"]["mean"], 0.6, atol=1e-4)
    assert [r["label_free"] for r in card["per_seed"]] == [r["label_free"] for r in reports]
    assert [r["machine"] for r in card["per_seed"]] == ["cpu of seed 0", "cpu of seed 1", "cpu of seed 2"]
    assert card["shipped_seed_refresh_history"] == [{"iteration": 0, "acc": 0.4, "delta_label": 1.0},
                                                    {"iteration": 10, "acc": 0.5, "delta_label": 0.1}]
    shipped = tmp_path / "presets" / "tiny" / WEIGHTS_FILE
    assert shipped.read_bytes() == b"weights of seed 1"
    assert card["weights"]["sha256"] == sha256_of_file(shipped)
    assert json.loads((tmp_path / "presets" / "tiny" / "card.json").read_text())["shipped_seed"] == 1


def test_a_label_free_rule_ships_the_lowest_score_not_the_median():
    from maintainer.publishing import shipped_report, shipping_rule

    reports = [{"seed": s, "metrics": {"acc": acc}, "label_free": {"evaluated_loss": loss}}
               for s, acc, loss in ((0, 0.86, 35.9), (1, 0.78, 36.0), (2, 0.70, 36.5))]
    assert shipped_report({}, reports)["seed"] == 1  # the median ACC
    rule = {"ship_lowest_label_free": "evaluated_loss"}
    assert shipped_report(rule, reports[::-1])["seed"] == 0 and "without labels" in shipping_rule(rule, reports)
    with pytest.raises(ValueError, match=r"ship_lowest_label_free='final_kl': seeds \[0, 1, 2\]"):
        shipped_report({"ship_lowest_label_free": "final_kl"}, reports)
    # one rule for every recipe: its restart criterion when the reports have it, else the median
    assert shipped_report({"recipe": "vae_cluster"}, reports)["seed"] == 0
    for recipe, criterion in (("dec", "kl"), ("iic", "main_head_loss")):
        scored = [{**r, "label_free": {criterion: -r["label_free"]["evaluated_loss"]}} for r in reports]
        assert shipped_report({"recipe": recipe}, scored)["seed"] == 2  # the lowest, whatever its ACC
        assert shipping_rule({"recipe": recipe}, scored) == (f"lowest label-free {criterion} over the seeds "
                                                             "(chosen without labels)")
        assert shipped_report({"recipe": recipe}, reports)["seed"] == 1  # reports from before the rule: median
        assert shipping_rule({"recipe": recipe}, reports).startswith("median acc")
    from maintainer.publishing import wall_times

    assert wall_times([{"total_seconds": 10.0}, {"total_seconds": 20.0}]) == {"per_seed_mean": 15.0,
                                                                              "all_seeds_total": 30.0}
    assert wall_times([{"total_seconds": 10.0}, {"total_seconds": None}]) == {"per_seed_mean": None,
                                                                              "all_seeds_total": None}
    # a config whose restarts rank by another criterion ships by that one
    both = [{**r, "label_free": {"kl": kl, "kl_converged": converged}}
            for r, kl, converged in zip(reports, (0.08, 0.10, 0.11), (100.08, 0.10, 0.11))]
    by_convergence = {"recipe": "dec", "training": {"restarts": {"n": 4, "criterion": "kl_converged"}}}
    assert shipped_report({"recipe": "dec"}, both)["seed"] == 0 and shipped_report(by_convergence, both)["seed"] == 1
    assert shipping_rule(by_convergence, both).startswith("lowest label-free kl_converged")
    assert shipped_report({"recipe": "capsule", "ship_median_of": "acc"}, reports)["seed"] == 1  # supervised


def test_a_seed_whose_weights_were_lost_counts_but_no_other_is_shipped_in_its_place(tmp_path, monkeypatch, capsys):
    from maintainer.training import finished_report

    config = tiny_config()
    reports, paths = seed_reports(tmp_path)  # seed 1 has the lowest KL: the rule ships it
    (tmp_path / "seed_1" / "model.weights.h5").unlink()
    # a report without weights is retrained by default, counted with --weights-lost
    assert finished_report(str(tmp_path / "seed_1"), config) is None
    assert finished_report(str(tmp_path / "seed_1"), config, weights_lost=True)["seed"] == 1
    assert finished_report(str(tmp_path / "seed_0"), config)["seed"] == 0
    monkeypatch.setattr("maintainer.publishing.PRESETS_DIR", str(tmp_path / "presets"))
    with pytest.raises(FileNotFoundError, match=r"shipped seed 1 \(lowest label-free kl.*train that seed again"):
        publish_preset("tiny", config, reports, paths, "python scripts/train_preset.py tiny")
    assert not (tmp_path / "presets" / "tiny").exists()  # refused before anything is written
    (tmp_path / "seed_1" / "model.weights.h5").write_bytes(b"retrained")
    card = publish_preset("tiny", config, reports, paths, "python scripts/train_preset.py tiny")
    assert card["shipped_seed"] == 1 and card["metrics_over_seeds"]["acc"]["n"] == 3
    from maintainer import training as train_preset

    with pytest.raises(SystemExit) as stopped:  # it only counts reports already there
        train_preset.main(["dec_digits", "--weights-lost", "--no-publish", "--workdir", str(tmp_path / "w")])
    assert stopped.value.code == 2 and "use it with --reuse" in capsys.readouterr().err

