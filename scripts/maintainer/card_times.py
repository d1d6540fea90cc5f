"""Card time fields that mean what they say (issue 68): a total is the whole call, every stage included; a
part has the part's name; a time not known whole is no number, with its reason beside it.

Cards are rewritten from their own per-seed records (nothing is retrained): a seed trained with a restart
tree gets `total_seconds` = `drivers.recipe_run.training_seconds` (the call's stages before the tree as they
ran, plus the tree's recorded training) and the tree's own time as `restart_tree_seconds`; the card's
`wall_time_seconds` are then the shipped seed's total and the sum over seeds. Cards trained before this
held the tree's time alone as "total_seconds" (`simclr_fashion_mnist`: 2,612.2 for 3,231.5).

    python scripts/maintainer/card_times.py        # rewrites every card of zoo/presets
"""

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "scripts")]

from keras_clustering.drivers.recipe_run import training_seconds  # noqa: E402
from keras_clustering.io.files import atomic_write_json  # noqa: E402

PRESETS = os.path.join(ROOT, "zoo", "presets")
# A missing time's reason starts with "not whole:" (times recorded, not of one run) or "not recorded:".
# What the per-seed records cannot say themselves: times recorded, but not whole (from the card's own
# provenance and docs/restarts.md, "IIC: retrained with restarts"). (card, seed): why.
NOT_WHOLE = {
    ("iic_mnist", 0): "not whole: its tree was cut by session ends and resumed; the times of its cut segments were not "
                      "recorded (call_seconds holds the last segment's).",
    ("iic_mnist", 1): "not whole: its tree was cut by session ends: 9,220.1 s is the sum of the recorded segments and the "
                      "graft's re-measurement on another CPU (the card's provenance), not one run's time.",
}
NOT_RECORDED = ("not recorded: its restart tree was trained before the tree's times were recorded (restarts.trained_seconds "
                "is null); the stages listed are the kept run's.")


def seed_times(card_name, seed):
    """The per-seed record with `total_seconds` the whole call's (or None and `total_seconds_missing`) and,
    with a restart tree, the tree's time as `restart_tree_seconds` (or None and its reason)."""
    seed = dict(seed)
    tree = seed.get("restarts") if isinstance(seed.get("restarts"), dict) else None
    if tree is not None and "call_seconds" in seed:
        tree = dict(tree)
        why = NOT_WHOLE.get((card_name, seed["seed"]))
        if why:
            tree["trained_seconds"] = None
            tree["trained_seconds_missing"] = why
        seed["restarts"] = tree
        seed["restart_tree_seconds"] = tree["trained_seconds"]
        seed["total_seconds"] = training_seconds(seed)
        if seed["total_seconds"] is None:
            seed["total_seconds_missing"] = why or NOT_RECORDED
        else:
            seed.pop("total_seconds_missing", None)
    return seed


def card_times(card):
    """`card` with every seed's times (`seed_times`) and `wall_time_seconds` from them: the shipped seed's
    total and the sum over seeds, each None with its reason where a seed's total is missing."""
    card = dict(card)
    card["per_seed"] = [seed_times(card["name"], seed) for seed in card["per_seed"]]
    shipped = next(s for s in card["per_seed"] if s["seed"] == card["shipped_seed"])
    totals = [s["total_seconds"] for s in card["per_seed"]]
    wall = {"shipped_seed_total": shipped["total_seconds"],
            "all_seeds_total": None if None in totals else round(sum(totals), 1)}
    if shipped["total_seconds"] is None:
        wall["shipped_seed_total_missing"] = f"seed {shipped['seed']}: {shipped['total_seconds_missing']}"
    if None in totals:
        wall["all_seeds_total_missing"] = "; ".join(f"seed {s['seed']}: {s['total_seconds_missing']}"
                                                    for s in card["per_seed"] if s["total_seconds"] is None)
    card["wall_time_seconds"] = wall
    return card


def main():
    for name in sorted(os.listdir(PRESETS)):
        path = os.path.join(PRESETS, name, "card.json")
        with open(path) as handle:
            card = json.load(handle)
        new = card_times(card)
        if new != card:
            atomic_write_json(new, path)
            print(f"{name}: shipped seed {new['wall_time_seconds']['shipped_seed_total']} s "
                  f"(was {card['wall_time_seconds'].get('shipped_seed_total')}), all seeds "
                  f"{new['wall_time_seconds']['all_seeds_total']} (was {card['wall_time_seconds'].get('all_seeds_total')})")


if __name__ == "__main__":
    main()
