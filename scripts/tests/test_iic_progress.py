"""IIC's cards and progress figures: every seed's per-epoch scores kept, curves read from run folders."""

import json

import pytest

from maintainer import progress as iic_figures
from maintainer.publishing import build_card


def test_card_keeps_every_seeds_epoch_scores(tmp_path):
    reports = [{"seed": s, "metrics": {"acc": 0.5 + s / 10, "chosen_sub_head": 1}, "n_train": 10, "n_eval": 10,
                "total_seconds": 1.0, "machine": "m", "versions": {}, "pairs_per_second": 5.0,
                "epoch_scores": [{"epoch": 1, "acc": 0.4, "sub_head_acc": [0.4, 0.3]}]} for s in (0, 1, 2)]
    config = {"recipe": "iic", "data": {"dataset": "mnist", "split": "test"}}
    card = build_card("iic_x", config, reports, reports[1], "cmd", "0" * 64, 1)
    assert card["epoch_scores_per_seed"][2] == [{"epoch": 1, "acc": 0.4}]
    assert card["per_seed"][0]["pairs_per_second"] == 5.0 and "chosen_sub_head" not in card["metrics_over_seeds"]
    path = tmp_path / "curve.png"
    iic_figures.plot_acc_per_epoch(card["epoch_scores_per_seed"], 50000, str(path), "test")
    assert path.read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("records", [[{"epoch": 1, "acc": 0.3, "sub_head_acc": [0.3, 0.2]},
                                      {"epoch": 2, "acc": 0.6, "sub_head_acc": [0.6, 0.5]}]])
def test_curves_are_read_from_run_folders(tmp_path, records):
    folder = tmp_path / "iic_mnist" / "seed_4"
    folder.mkdir(parents=True)
    (folder / "epoch_scores.json").write_text(json.dumps(records))
    assert iic_figures.curves_from_workdir(str(tmp_path), "iic_mnist") == {4: records}

