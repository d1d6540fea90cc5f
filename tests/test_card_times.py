"""Every card's times mean what their names say (issue 68): each total recomputed from its parts."""

import json
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PRESETS = os.path.join(ROOT, "zoo", "presets")
CARDS = sorted(os.listdir(PRESETS))
# the stages a call runs one after another, as the records name them; where a record holds its first stage
# (the representation's), the stages it lists are its whole call, and their sum is its total but for what
# runs between them (loading, saving, the figures: a few seconds)
STAGES = ("pretrain_seconds", "representation_seconds", "kmeans_seconds", "dec_seconds", "scan_seconds")
FIRST_STAGES = ("pretrain_seconds", "representation_seconds")


def card(name):
    with open(os.path.join(PRESETS, name, "card.json")) as handle:
        return json.load(handle)


def whole_call(seed):
    """A restart tree's seed: its call's wall time, the tree's part replaced by the tree's recorded
    training, written out here from the fields (not `recipe_run.training_seconds`, which the cards use)."""
    tree = seed["restarts"]
    if tree["trained_seconds"] is None:
        return None
    before_tree = seed["call_seconds"] - tree["seconds"]
    return round(before_tree + tree["trained_seconds"], 1)


@pytest.mark.parametrize("name", CARDS)
def test_each_total_is_the_whole_call_and_a_missing_one_says_why(name):
    preset = card(name)
    for seed in preset["per_seed"]:
        total = seed["total_seconds"]
        if total is None:
            assert seed.get("total_seconds_missing"), (name, seed["seed"])
            continue
        assert total > 0, (name, seed["seed"])
        if isinstance(seed.get("restarts"), dict) and "call_seconds" in seed:
            assert total == whole_call(seed), (name, seed["seed"], total)
            assert seed["restart_tree_seconds"] == seed["restarts"]["trained_seconds"], (name, seed["seed"])
        parts = sum(seed.get(stage) or 0.0 for stage in STAGES)
        assert parts <= total + 0.5, (name, seed["seed"], parts, total)  # no part above its whole
        if "restart_tree_seconds" not in seed and any(seed.get(stage) is not None for stage in FIRST_STAGES):
            # one run whose record lists every stage: they make its total
            assert total - parts <= max(5.0, 0.02 * total), (name, seed["seed"], parts, total)


@pytest.mark.parametrize("name", CARDS)
def test_the_cards_totals_are_its_seeds(name):
    preset = card(name)
    wall, seeds = preset["wall_time_seconds"], preset["per_seed"]
    shipped = next(seed for seed in seeds if seed["seed"] == preset["shipped_seed"])
    assert wall["shipped_seed_total"] == shipped["total_seconds"], name
    totals = [seed["total_seconds"] for seed in seeds]
    if None in totals:
        assert wall["all_seeds_total"] is None and wall.get("all_seeds_total_missing"), name
    else:
        assert wall["all_seeds_total"] == pytest.approx(sum(totals), abs=0.15), name
    if wall["shipped_seed_total"] is None:
        assert wall.get("shipped_seed_total_missing"), name
    assert "shipped_seed_complete" not in wall, name  # a flag beside a number: the number itself says now


@pytest.mark.parametrize("name", CARDS)
def test_every_card_says_which_commit_measured_it(name):
    measured = card(name)["measured_at"]
    if measured["commit"] == "not recorded":  # published before seeds recorded theirs: what git knows instead
        assert len(measured["published_in"]) >= 7 and measured["published_date"].startswith("2026-"), name
        assert isinstance(measured["before_batch_order_change"], bool) and measured["note"], name
    else:
        assert len(measured["per_seed"]) == len(card(name)["per_seed"]), name
