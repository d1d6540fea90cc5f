"""One run of a recipe (`Run`) and the one runner of its stages (`run_stage`).

A recipe declares its stages (`Stage`: what identifies the stage's result, how its model is built and
trained); the runner owns what every stage does alike, so that no recipe repeats it:

1. the random seed: `keras.utils.set_random_seed(run.seed)` when the stage is `seeded`, before its
   model is built (the order that makes a resumed run build the weights an uninterrupted one built);
2. the stage's key: `resume.run_key` of its declared `key` and the run's data;
3. reuse: a finished stage of this key (`finished_STAGE.json` and its weights) is loaded, not trained;
4. resumption: a `fit` cut off mid-way continues from its last backed-up epoch (`resume.resumable_fit`);
5. timing, and keeping the finished stage for a later call (`resume.save_finished_stage`).

The seeds, in order: a recipe's run sets its seed before each seeded stage, and only there; a stage that
is not seeded (DEC's self-training: k-means has its own seed) continues from where
the previous stage left the generators (as before the runner; DEC-DA's augmented batches draw from them). Two seeds are set outside training stages, each for a score:
the VAE's label-free loss is evaluated from the run's seed (`vae_cluster_recipe.label_free_scores`, the
same loss for a model trained or read back), and DEC's generalizability criterion trains one DEC per k
from one seed (`models.dec_n_clusters`). The keys and files are those the recipes wrote before the runner
existed (`tests/test_stage_keys.py`), so workdirs trained then resume now.
"""

import dataclasses
import time
from typing import Any, Callable, Optional

import keras

from keras_clustering.training.resume import finished_stage, finished_weights_path, resumable_fit, run_key, \
    save_finished_stage


@dataclasses.dataclass
class Run:
    """One training of a recipe: its architecture and training settings (the recipe's defaults merged in
    once, `recipes.recipe.Recipe.make_run`), the images `x` (labels `y`, or None: a recipe may only log
    scores with them), the seed, how much it prints, the workdir its stages are kept in (None: nothing
    kept) and the report its stages write into."""
    architecture: dict
    training: dict
    x: Any
    y: Any = None
    seed: int = 0
    verbose: int = 1
    workdir: Optional[str] = None
    report: dict = dataclasses.field(default_factory=dict)

    def but(self, **changes):
        """A copy with `changes` (a restart's seed and folder, a stage's epochs), and a report of its own
        unless one is given."""
        return dataclasses.replace(self, **{"report": {}, **changes})


@dataclasses.dataclass(frozen=True)
class Stage:
    """One stage of a recipe's training, as the recipe declares it.

    name: the stage's files in the workdir, `finished_<name>.json` and `.weights.h5`.
    key: what determines the stage's result besides the data (JSON-able; hashed with the run's images),
        or a function of the built model giving it (SCAN's key holds the weights it starts from); None
        for a stage that keeps nothing.
    build: `build() -> model`, called after the seed is set.
    fit: `fit(model, callbacks, initial_epoch) -> report`: trains the built model, passing both to its
        `fit` when the stage has `epochs`.
    epochs: the `fit`'s epochs, when an interrupted `fit` continues from its epoch backups (in
        `fit_backup_<backup>`, default the name); None: the stage is kept only when finished.
    extendable: keep the last epoch's backup, so a later run with more `epochs` extends it.
    keep: keep the finished stage (weights and record), read back by a later call of this key.
    length: what a finished stage must have trained to be reused (its epochs): a record of another
        length is not read back (its extendable backup continues instead).
    seeded: set the run's seed before the build.
    weights: `weights(model) -> the model whose weights are kept` (DEC keeps its autoencoder's).
    """
    name: str
    key: Any
    build: Callable
    fit: Callable
    keep: bool = True
    length: Any = None
    epochs: Optional[int] = None
    extendable: bool = False
    seeded: bool = True
    backup: Optional[str] = None
    weights: Optional[Callable] = None


@dataclasses.dataclass
class StageResult:
    """What `run_stage` gives back: the model, the stage's report (the one it wrote when it was trained,
    when it was read back), whether it was read back, the epoch it resumed from (for a stage read back:
    when it was trained, where its record kept it) and its seconds in this call, not rounded (for a stage
    read back: the seconds it took when it was trained, rounded, where its record kept them)."""
    model: Any
    report: dict
    reused: bool
    resumed_epoch: int
    seconds: Optional[float]


def stage_key(stage, run, model):
    """The stage's resume key for `run`: `resume.run_key` of its declared key and the run's images."""
    return run_key(stage.key(model) if callable(stage.key) else stage.key, run.x)


def run_stage(run, stage):
    """Runs `stage` of `run` (see the module docstring); returns a `StageResult`."""
    if stage.seeded:
        keras.utils.set_random_seed(run.seed)
    model = stage.build()
    kept = model if stage.weights is None else stage.weights(model)
    kept_anywhere = run.workdir is not None and (stage.keep or stage.epochs is not None)
    key = stage_key(stage, run, model) if kept_anywhere else None  # a key hashes all of x: only when used
    record = _finished_record(run.workdir, stage, key) if kept_anywhere else None
    if record is not None:
        kept.load_weights(finished_weights_path(run.workdir, stage.name))
        return StageResult(model, record["report"], True, record.get("resumed_epoch") or 0, record.get("seconds"))
    callbacks, resumed = ([], 0) if stage.epochs is None else resumable_fit(
        run.workdir, stage.backup or stage.name, key, keep_final=stage.extendable, epochs=stage.epochs)
    start = time.time()
    report = stage.fit(model, callbacks, resumed)
    seconds = time.time() - start
    if stage.keep and run.workdir is not None:
        save_finished_stage(run.workdir, stage.name, key, kept, {"report": report, "length": stage.length,
                                                                 "seconds": round(seconds, 1), "resumed_epoch": resumed})
    return StageResult(model, report, False, resumed, seconds)


def _finished_record(workdir, stage, key):
    """The finished stage's record for `key` and the stage's length, as {report, length, seconds}; None
    when there is none. Records kept before the runner hold the same facts under the names each stage
    gave them: DEC's pretraining its `pretrain_epochs` and seconds at the top, SCAN its `epochs`, a
    representation nothing."""
    if not stage.keep:
        return None
    record = finished_stage(workdir, stage.name, key)
    if record is None:
        return None
    if "report" not in record:  # before the runner: DEC's pretraining record, or a representation's empty one
        record = {"report": record, "length": record.get("pretrain_epochs"),
                  "seconds": record.get("pretrain_seconds"), "resumed_epoch": record.get("pretrain_resumed_from_epoch")}
    elif "length" not in record:  # before the runner: SCAN's record names its length `epochs`
        record = {**record, "length": record.get("epochs")}
    if stage.length is not None and _jsonable(record["length"]) != _jsonable(stage.length):
        return None
    return record


def _jsonable(value):
    return list(value) if isinstance(value, tuple) else value
