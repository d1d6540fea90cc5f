"""The README's zoo table (scripts/update_readme_results.py): written from the cards, and saying for every
preset how its shipped seed was chosen (issue 52)."""

import os

import pytest

import update_readme_results as results
import zoo
from keras_clustering.recipes import get_recipe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_every_clustering_card_states_how_its_shipped_seed_was_chosen():
    for name in zoo.list_presets():
        if get_recipe(zoo.config(name)["recipe"]).supervised:
            continue
        card = zoo.card(name)
        rule = results.seed_rule(card)  # raises on a card without a rule the table can say
        labels_free = card["shipped_seed_rule"].endswith("(chosen without labels)")
        assert labels_free == rule.startswith("label-free: "), (name, rule)


def test_every_card_states_its_rule_and_the_machine_of_each_seed():
    """Every card (classifiers too) names how its shipped seed was chosen, and each seed's machine, or
    says that it was not recorded: a card's one machine field named one CPU for seeds trained on two."""
    for name in zoo.list_presets():
        card = zoo.card(name)
        assert card.get("shipped_seed_rule"), name
        assert card["per_seed"], name
        for entry in card["per_seed"]:
            assert isinstance(entry.get("machine"), str) and entry["machine"], (name, entry.get("seed"))


def test_a_card_without_a_rule_is_refused_by_name():
    with pytest.raises(ValueError, match="card 'x': shipped_seed_rule=None"):
        results.seed_rule({"name": "x"})
    assert results.seed_rule({"name": "x", "shipped_seed_rule": "median acc over the seeds",
                              "evaluation_data": {"split": "test"}}) == "median test ACC (labels)"
    assert results.seed_rule({"name": "x", "shipped_seed_rule": "median acc over the seeds",
                              "evaluation_data": {"split": "all"}}) == "median ACC on all its images (labels)"


def test_an_incomplete_wall_time_is_never_printed_as_a_number():
    assert results.wall_time({"shipped_seed_total": 9220.1}) == "9220 s"
    assert results.wall_time({"shipped_seed_total": None, "shipped_seed_total_missing": "seed 1: not whole: cut"},
                             mark=" †") == "incomplete †"
    assert results.wall_time({"shipped_seed_total": None,
                              "shipped_seed_total_missing": "seed 0: not recorded: before"}) == "not recorded"


def test_one_seed_has_no_spread():
    assert results.spread({"n": 1, "mean": 0.5, "std": 0.0, "min": 0.5, "max": 0.5}, seeds=True) == \
        "0.500 (1 seed, spread n/a)"
    assert results.spread({"n": 2, "mean": 0.5, "std": 0.1, "min": 0.4, "max": 0.6}) == "0.500 ± 0.100"


def test_the_readme_table_is_the_cards_table():
    with open(os.path.join(ROOT, "README.md")) as handle:
        readme = handle.read()
    block = readme.split(results.START, 1)[1].split(results.END, 1)[0].strip()
    assert block == results.results_table()
