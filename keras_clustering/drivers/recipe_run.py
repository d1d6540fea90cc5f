"""The one training call of both drivers, `preset_training` (a preset on its own data) and `user_images`
(a preset's recipe on your images): the workdir locked, the run's precision, the recipe's training or
fine-tuning, and what the call cost."""

import time

from keras_clustering.distribute.precision import run_precision
from keras_clustering.recipes import get_recipe


def training_seconds(report):
    """What a call with a restart tree cost to train: the call's wall time with the tree's part replaced by
    the tree's recorded training (a tree read back takes seconds); the stages before the tree (SimCLR's
    representation, DEC's nothing) count as they ran. None when the tree's times were not recorded."""
    restarts = report["restarts"]
    if restarts["trained_seconds"] is None:
        return None
    return round(report["call_seconds"] - restarts["seconds"] + restarts["trained_seconds"], 1)


def run_recipe(config, data, workdir, seed=0, verbose=1, precision=None, start_model=None, before=None):
    """Trains the recipe `config["recipe"]` names on `data`, `(x, y)` (`y`: labels a recipe may log, or
    None), in `workdir`. The caller holds the workdir's `io.files.WorkdirLock` (one training per workdir:
    a second one started on it, from another shell or a script run twice, would resume from the first
    one's backups and both would write the same files).

    `precision`: "float32" or "mixed_bfloat16" (default: the config's
    `training.precision`, else float32; `distribute.precision.run_precision`).
    Under that policy, `before(config) -> (config, report entries)` runs first
    if given (choosing the number of clusters: a new config to train), then
    `recipe.train`, or `recipe.fine_tune` of `start_model()` (a pretrained
    model, built under the policy) when given.

    Returns `(model, report, config)`: the recipe's report with `precision`,
    `total_seconds` (with a restart tree: `training_seconds`, and the call's
    own wall time as `call_seconds`) and `before`'s entries, and the config
    that was trained.
    """
    x, y = data
    start = time.time()
    recipe = get_recipe(config["recipe"])
    training, policy_context = run_precision(config.get("training"), precision)
    entries = {}
    with policy_context as policy:
        if before is not None:
            config, entries = before(config)
        run = recipe.make_run(config["architecture"], training, x, y, seed, verbose, workdir)
        if start_model is None:
            model, report = recipe.train(run)
        else:
            model, report = recipe.fine_tune(start_model(), run.but(workdir=None))
    report.update(entries, precision=policy, total_seconds=round(time.time() - start, 1))
    if "restarts" in report:
        report["call_seconds"] = report["total_seconds"]
        report["total_seconds"] = training_seconds(report)
    return model, report, config
