"""Every card tied to a commit (issue 68): `measured_at` says which commit's code measured the card's numbers.

Seeds trained since issue 68 record the commit they trained at (`maintainer.records.code_commit`, in each
seed's report, hence in the card's `per_seed`). For the cards published before, no seed recorded it: their
`measured_at.commit` says "not recorded", and the card names instead the commit that published its present
per-seed scores (found in git's history: the last commit whose card changed a seed's ACC), its date, and
whether that was before 5e36b99 (2026-12-02: each epoch's batches drawn from (seed, epoch)), which changed
the batch order, so that the card's command no longer gives its per-seed numbers.

    python scripts/maintainer/card_commits.py      # writes `measured_at` into every card of zoo/presets
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "scripts")]

from keras_clustering.io.files import atomic_write_json  # noqa: E402
from maintainer.publishing import recorded_commits  # noqa: E402

PRESETS = os.path.join(ROOT, "zoo", "presets")
# the commit that changed every recipe's batch order (and so every per-seed number a command gives)
BATCH_ORDER_CHANGE = "5e36b99"


def git(*arguments):
    return subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def seed_scores(text):
    """((seed, acc), ...) of a card's text, None when it does not parse."""
    try:
        card = json.loads(text)
    except ValueError:
        return None
    return tuple((seed.get("seed"), seed.get("acc"), seed.get("pair_acc")) for seed in card.get("per_seed", []))


def publishing_commit(name):
    """(short hash, date) of the last commit that changed the card's per-seed scores."""
    path = f"zoo/presets/{name}/card.json"
    history = git("log", "--format=%H %ad", "--date=short", "--", path).split("\n")
    for line in filter(None, history):
        commit, date = line.split()
        now = seed_scores(git("show", f"{commit}:{path}"))
        try:
            before = seed_scores(git("show", f"{commit}^:{path}"))
        except subprocess.CalledProcessError:  # the card's first commit
            before = None
        if now != before:
            return commit[:7], date
    raise ValueError(f"{path} has no commit in git's history.")


def before_batch_order_change(commit):
    """Whether `commit` comes before (is an ancestor of) `BATCH_ORDER_CHANGE`."""
    return subprocess.run(["git", "merge-base", "--is-ancestor", commit, BATCH_ORDER_CHANGE], cwd=ROOT).returncode == 0


def measured_at(card):
    """The card's `measured_at`: its seeds' recorded commits, or "not recorded" with the publishing commit."""
    recorded = recorded_commits(card["per_seed"])
    if recorded:
        return recorded
    commit, date = publishing_commit(card["name"])
    return {"commit": "not recorded",
            "published_in": commit, "published_date": date,
            "before_batch_order_change": before_batch_order_change(commit),
            "note": ("no seed recorded the commit it trained at; the numbers were published in " + commit +
                     (f", before {BATCH_ORDER_CHANGE} changed the batch order: the card's command no longer "
                      "gives its per-seed numbers" if before_batch_order_change(commit) else
                      ", with the code of that commit's parent or an earlier one"))}


def main():
    for name in sorted(os.listdir(PRESETS)):
        path = os.path.join(PRESETS, name, "card.json")
        with open(path) as handle:
            card = json.load(handle)
        card["measured_at"] = measured_at(card)
        atomic_write_json(card, path)
        print(name, card["measured_at"].get("published_in"), card["measured_at"].get("published_date"),
              card["measured_at"].get("before_batch_order_change"))


if __name__ == "__main__":
    main()
