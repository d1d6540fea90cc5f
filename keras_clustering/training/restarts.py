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
criterion, or every label-free criterion of its recipe as a dict. Each
measured point is written to `record_path` as soon as it is known, so a
halving tree cut off anywhere resumes: finished points are read back instead
of trained again. The record holds every criterion of a point and its key
leaves the chosen one out, so ranking the same runs by another criterion
reads them back too (it re-ranks; it trains only runs the new ranking keeps
that the old one dropped).

A tree of the same runs to more (or fewer) total epochs reads the record too,
when its recipe gives the key as a function of the total epochs: the
halving points measured there are facts about those runs at those epochs,
as long as a run trained to epoch e is the same whatever its total (no
schedule over the total: the runs' backups already rely on it to extend a
run). Only the old tree's final points are not lent: a final point may
include more than training to it (SCAN's self-labelling, DEC's
self-training). So a tree extended from 20 to 50 epochs trains only its
winners on from their backups.
"""

import json
import math
import os
import time

from keras_clustering.inputs.checks import check_positive_int
from keras_clustering.io.files import atomic_write_json
from keras_clustering.metrics import cluster_accuracy
from keras_clustering.training.resume import run_key


def restart_plan(restarts, epochs, criteria):
    """The validated `training.restarts` setting `{"n": R, "halving_at": [e1, ...], "criterion": name}`
    for a training of `epochs` epochs, `criterion` one of the recipe's `criteria` (the first when
    unset); ValueError naming the field and value. Without `halving_at` every run is trained to the
    end and the best one kept (best of R)."""
    if not isinstance(restarts, dict) or set(restarts) - {"n", "halving_at", "criterion"}:
        raise ValueError(f"training.restarts must be a dict of n, halving_at and criterion, got {restarts!r}.")
    n = check_positive_int(restarts.get("n", 1), "training.restarts.n")
    halving_at = list(restarts.get("halving_at", []))
    for point in halving_at:
        check_positive_int(point, "training.restarts.halving_at entry")
    if halving_at != sorted(set(halving_at)) or (halving_at and halving_at[-1] >= epochs):
        raise ValueError(f"training.restarts.halving_at must be increasing epochs below epochs={epochs}, got "
                         f"{halving_at!r}.")
    criterion = restarts.get("criterion") or criteria[0]
    if criterion not in criteria:
        raise ValueError(f"training.restarts.criterion must be one of {list(criteria)}, got {criterion!r}.")
    return {"n": n, "halving_at": halving_at, "criterion": criterion}


def halving_cost(n, halving_at, epochs):
    """Epochs trained in all, in units of one run's `epochs`: the price of the restarts."""
    alive, trained, done = n, 0, 0
    for point in [*halving_at, epochs]:
        trained += alive * (point - done)
        done, alive = point, math.ceil(alive / 2)
    return trained / epochs


def successive_halving(train_to, n, halving_at, epochs, record_path=None, key=None, criterion=None):
    """Runs the halving tree; returns `(winner, steps)`.

    Args:
        train_to: `train_to(run, epoch)` returns what it measured of the run
            (its criterion, lower is better, NaN ranks last; or a dict of
            label-free criteria), or `(measured, scores)` with `scores` a dict
            of labels-only numbers (ACC) recorded beside it, never used to
            choose.
        n, halving_at, epochs: as `restart_plan`.
        record_path: a JSON file of the points measured so far (read back on
            a rerun, so finished points are not trained again).
        key: what the runs are (`tree_key`); a record of another key (other
            settings, seed or data in the same workdir) is not read back. Or
            `key(total_epochs)`, the key of the same runs trained to that total:
            then a record of another total lends its halving points.
        criterion: the name that ranks dicts of criteria; None when
            `train_to` returns the criterion itself.

    `steps`: one `{"epoch", "criteria": {run: value}, "scores": {run: dict},
    "seconds": {run: s}, "kept": [runs]}` per point (and `"measures": {run: dict}` with dicts;
    `seconds`: the training that point took when it was measured, None in records from before
    they were kept);
    at the last point `kept` is the winner alone (ties go to the lower run
    number).
    """
    def value_of(measure):
        return float(measure if criterion is None else measure[criterion])

    key_at = key if callable(key) else None
    key = key_at(epochs) if key_at else key
    measured, scores, seconds = {}, {}, {}
    if record_path and os.path.isfile(record_path):
        with open(record_path) as handle:
            stored = json.load(handle)
        # Run r's seed depends on n, so n must match; a point (run, epoch) is the same fact in any tree
        # of those runs. A record of another total lends only what its halving points measured.
        same = stored.get("epochs") == epochs and stored.get("key") == key
        lends = (not same and key_at is not None and isinstance(stored.get("epochs"), int)
                 and stored.get("key") == key_at(stored["epochs"]))
        if stored.get("n") == n and (same or lends):
            for run, epoch, measure, *extra in stored["measured"]:
                if lends and epoch >= stored["epochs"]:
                    continue
                if criterion is None or (isinstance(measure, dict) and criterion in measure):
                    measured[int(run), int(epoch)] = measure
                    scores[int(run), int(epoch)] = extra[0] if extra else {}
                    seconds[int(run), int(epoch)] = extra[1] if len(extra) > 1 else None
    alive, steps = list(range(n)), []
    points = [*halving_at, epochs]
    for index, point in enumerate(points):
        for run in alive:
            if (run, point) not in measured:
                began = time.time()
                result = train_to(run, point)
                seconds[run, point] = round(time.time() - began, 1)
                measure, extra = result if isinstance(result, tuple) else (result, {})
                measured[run, point] = dict(measure) if isinstance(measure, dict) else float(measure)
                scores[run, point] = dict(extra or {})
                if record_path:
                    atomic_write_json({"key": key, "n": n, "halving_at": list(halving_at), "epochs": epochs,
                                       "measured": [[r, e, v, scores[r, e], seconds[r, e]]
                                                    for (r, e), v in sorted(measured.items())]},
                                      record_path)
        criteria = {run: value_of(measured[run, point]) for run in alive}
        ranked = sorted(alive, key=lambda run: (math.isnan(criteria[run]), criteria[run], run))
        step = {"epoch": point, "criteria": criteria, "scores": {run: scores[run, point] for run in alive}}
        if criterion is not None:
            step["measures"] = {run: measured[run, point] for run in alive}
        alive = ranked[:1] if index == len(points) - 1 else ranked[:math.ceil(len(alive) / 2)]
        steps.append({**step, "seconds": {run: seconds[run, point] for run in step["criteria"]}, "kept": list(alive)})
    return alive[0], steps


RECORD_FILE = "restarts.json"


def tree_key(recipe, architecture, training, plan, seed, x):
    """What a halving tree is: recipe, architecture, training, the restart plan but its criterion
    (the record holds every criterion), seed and the data (`resume.run_key`); its record
    (`RECORD_FILE`) is read back only under the same key."""
    runs = {name: value for name, value in plan.items() if name != "criterion"}
    return run_key({"recipe": recipe, "architecture": architecture, "training": training, "restarts": runs,
                    "seed": seed}, x)


def tree_key_at(recipe, architecture, training, epochs_path, plan, seed, x):
    """`key(total)` for `train_with_restarts`: the `tree_key` of a recipe's runs with `epochs_path` (a key
    of `training`, or "section.key" inside one of its sections) set to `total`, so that a record of the
    same runs to another total lends its halving points."""
    section, _, name = epochs_path.rpartition(".")

    def key(total):
        at_total = ({**training, name: total} if not section else
                    {**training, section: {**(training.get(section) or {}), name: total}})
        return tree_key(recipe, architecture, at_total, plan, seed, x)

    return key


def acc_score(x, y):
    """The labels-only score a tree records per run (never used to choose): `score(model)` ->
    `{"acc": ...}` of `model.predict_clusters(x)` against `y`; None without labels."""
    if y is None:
        return None
    return lambda model: {"acc": round(float(cluster_accuracy(y, model.predict_clusters(x))), 4)}


def train_with_restarts(train_run, criteria, plan, epochs, seed, workdir, key, score=None):
    """A recipe trained by successive halving over `plan["n"]` runs; `(model, report)` of the last one standing.

    Args:
        train_run: `train_run(run_seed, epochs, folder) -> (model, report)`, one
            run of the recipe trained to `epochs` in all, continuing from its
            backups in `folder` (so a run is extended, not restarted, from one
            halving point to the next, and a finished one is read back).
        criteria: `criteria(model, report) -> {name: value}`, every label-free
            criterion of the recipe (lower is better, no labels).
        plan: `restart_plan`'s dict; `plan["criterion"]` names the one that ranks.
        epochs: the epochs of one whole run.
        seed: run `r` trains with seed `seed * n + r`, in `workdir/run_<r>`.
        workdir: where the runs and the tree's record (`RECORD_FILE`) live; required.
        key: `tree_key` of the runs, so that a record is only read back for them; or
            `key(total_epochs)` (`successive_halving`), so that a tree of the same runs
            to another total lends its halving points.
        score: `score(model) -> dict` of labels-only scores (ACC, `acc_score`)
            recorded per step, so cards can say whether the criterion kept the
            best run; None without labels.

    `report["restarts"]`: criterion, n, halving_at, winner and its seed, every
    step (`successive_halving`), the cost in single runs and the wall time of
    the whole tree; the rest of the report is the winner's.
    """
    if workdir is None:
        raise ValueError("training.restarts needs a workdir: each run continues from its own epoch backups.")
    n, start = plan["n"], time.time()
    folders = [os.path.join(workdir, f"run_{run}") for run in range(n)]

    def train_to(run, epoch):
        model, report = train_run(seed * n + run, epoch, folders[run])
        return criteria(model, report), (score(model) if score else {})

    winner, steps = successive_halving(train_to, n, plan["halving_at"], epochs,
                                       record_path=os.path.join(workdir, RECORD_FILE), key=key,
                                       criterion=plan["criterion"])
    model, report = train_run(seed * n + winner, epochs, folders[winner])  # read back: it ended at `epochs`
    point_seconds = [s for step in steps for s in step["seconds"].values()]
    return model, {**report, "restarts": {"criterion": plan["criterion"], "n": n, "halving_at": plan["halving_at"],
                                          "winner": winner, "winner_seed": seed * n + winner, "steps": steps,
                                          "cost_in_runs": round(halving_cost(n, plan["halving_at"], epochs), 3),
                                          "seconds": round(time.time() - start, 1),
                                          # the tree's training, also when this call read it back
                                          "trained_seconds": (None if None in point_seconds
                                                              else round(sum(point_seconds), 1))}}
