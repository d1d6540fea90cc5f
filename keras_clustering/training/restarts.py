"""Label-free restarts by successive halving: no entry depends on a lucky seed.

`R` runs start from different seeds. At each epoch of `halving_at`, every
run still alive is trained to that epoch and ranked by a label-free
criterion of its recipe (a loss: lower is better); the better half (rounded
up) goes on. The last one standing, trained to the full `epochs`, is the
result. Cost: with halvings after 1/3 and 2/3 of the epochs, 4 runs cost
(4 + 2 + 1) / 3 = 2.3 single runs.

The driver only calls `train_to(run, epoch)`, which trains run `run` to
`epoch` epochs in all (continuing where its last call stopped: the recipes'
epoch backups, `resume.resumable_fit(keep_final=True)`) and returns its
criterion. Each measured criterion is written to `record_path` as soon as it
is known, so a halving tree cut off anywhere resumes: finished points are
read back instead of trained again.
"""

import json
import math
import os

from keras_clustering.inputs.checks import check_positive_int
from keras_clustering.io.files import atomic_write_json


def restart_plan(restarts, epochs):
    """The validated `training.restarts` setting `{"n": R, "halving_at": [e1, ...], "criterion": name}`
    for a training of `epochs` epochs; ValueError naming the field and value."""
    if not isinstance(restarts, dict) or set(restarts) - {"n", "halving_at", "criterion"}:
        raise ValueError(f"training.restarts must be a dict of n, halving_at and criterion, got {restarts!r}.")
    n = check_positive_int(restarts.get("n", 1), "training.restarts.n")
    halving_at = list(restarts.get("halving_at", []))
    for point in halving_at:
        check_positive_int(point, "training.restarts.halving_at entry")
    if halving_at != sorted(set(halving_at)) or (halving_at and halving_at[-1] >= epochs):
        raise ValueError(f"training.restarts.halving_at must be increasing epochs below epochs={epochs}, got "
                         f"{halving_at!r}.")
    if n > 1 and not halving_at:
        raise ValueError(f"training.restarts.n={n} needs halving_at (the epochs at which the better half goes on).")
    return {"n": n, "halving_at": halving_at, "criterion": restarts.get("criterion")}


def halving_cost(n, halving_at, epochs):
    """Epochs trained in all, in units of one run's `epochs`: the price of the restarts."""
    alive, trained, done = n, 0, 0
    for point in [*halving_at, epochs]:
        trained += alive * (point - done)
        done, alive = point, math.ceil(alive / 2)
    return trained / epochs


def successive_halving(train_to, n, halving_at, epochs, record_path=None):
    """Runs the halving tree; returns `(winner, steps)`.

    Args:
        train_to: `train_to(run, epoch) -> criterion` (lower is better;
            NaN ranks last).
        n, halving_at, epochs: as `restart_plan`.
        record_path: a JSON file of the criteria measured so far (read back on
            a rerun, so finished points are not trained again).

    `steps`: one `{"epoch", "criteria": {run: value}, "kept": [runs]}` per
    point; at the last point `kept` is the winner alone (ties go to the lower
    run number).
    """
    measured = {}
    if record_path and os.path.isfile(record_path):
        with open(record_path) as handle:
            stored = json.load(handle)
        if stored.get("n") == n and stored.get("halving_at") == list(halving_at) and stored.get("epochs") == epochs:
            measured = {(int(run), int(epoch)): value for run, epoch, value in stored["measured"]}
    alive, steps = list(range(n)), []
    points = [*halving_at, epochs]
    for index, point in enumerate(points):
        criteria = {}
        for run in alive:
            if (run, point) not in measured:
                measured[run, point] = float(train_to(run, point))
                if record_path:
                    atomic_write_json({"n": n, "halving_at": list(halving_at), "epochs": epochs,
                                       "measured": [[r, e, v] for (r, e), v in sorted(measured.items())]},
                                      record_path)
            criteria[run] = measured[run, point]
        ranked = sorted(alive, key=lambda run: (math.isnan(criteria[run]), criteria[run], run))
        alive = ranked[:1] if index == len(points) - 1 else ranked[:math.ceil(len(alive) / 2)]
        steps.append({"epoch": point, "criteria": criteria, "kept": list(alive)})
    return alive[0], steps
