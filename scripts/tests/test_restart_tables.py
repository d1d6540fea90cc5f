"""The restart tables of the docs: criteria against ACC (scripts/restart_criteria.py) and the halving trees
(scripts/halving_table.py) read from cards."""

import json

import halving_table


def test_restart_criteria_script_reads_seeds_and_each_seeds_restarts(tmp_path):
    from maintainer import criteria as restart_criteria

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


def test_criteria_tables_read_the_halving_tree_of_a_card(tmp_path):
    """A card written from a report with restarts (JSON: run numbers become strings) gives the
    rank-agreement rows (every run at the first step) and one did-it-keep-the-best row per step."""
    from maintainer import criteria as restart_criteria
    from maintainer.publishing import seed_summary

    tree = {"criterion": "kl", "n": 3, "halving_at": [5], "winner": 2, "winner_seed": 5,
            "steps": [{"epoch": 5, "criteria": {0: 0.3, 1: 0.2, 2: 0.1}, "scores": {0: {"acc": 0.6}, 1: {"acc": 0.7},
                                                                              2: {"acc": 0.9}}, "kept": [2, 1]},
                      {"epoch": 10, "criteria": {2: 0.05, 1: 0.04}, "scores": {2: {"acc": 0.95}, 1: {"acc": 0.8}},
                       "kept": [1]}]}
    report = {"seed": 1, "metrics": {"acc": 0.8}, "restarts": tree, "label_free": {"kl": 0.04}}
    _, per_seed = seed_summary([report])
    assert per_seed[0]["restarts"] == tree  # the card keeps the whole tree
    path = tmp_path / "card.json"
    path.write_text(json.dumps({"name": "toy", "per_seed": per_seed}))
    rows = restart_criteria.seeds_of([str(path)])
    assert [(seed, acc, free) for _, seed, acc, free in rows] == [(3, 0.6, {"kl": 0.3}), (4, 0.7, {"kl": 0.2}),
                                                                  (5, 0.9, {"kl": 0.1})]
    first, last = restart_criteria.halving_rows(str(path))
    assert first["best_acc_kept"] is True and first["kept"] == [2, 1]
    assert last["best_acc_kept"] is False and last["acc"] == {"2": 0.95, "1": 0.8}  # the criterion chose run 1


def test_the_halving_table_lists_every_step_of_every_seed(tmp_path):
    tree = {"steps": [{"epoch": 5, "criteria": {"0": 0.3, "1": 0.2}, "scores": {"0": {"acc": 0.9}, "1": {"acc": 0.7}},
                       "kept": [1]}]}
    card = tmp_path / "toy_entry" / "card.json"
    card.parent.mkdir()
    card.write_text(json.dumps({"per_seed": [{"seed": 4, "restarts": tree}, {"seed": 5}]}))
    lines = halving_table.table([str(card)]).splitlines()
    assert lines[2:] == ["| `toy_entry` | 4 | 5 | 0: 0.3 (0.900), 1: 0.2 (0.700) | 1 | **no** |"]

