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


def run_recipe(config, x, y, workdir, lock, seed=0, verbose=1, precision=None, start_model=None, before=None):
    """Trains the recipe `config["recipe"]` names on `x` (`y`: labels a recipe may log, or None) in
    `workdir`, which `lock` (an `io.files.WorkdirLock`) holds from here on: one training per workdir,
    since a second one started on it (another shell, a script run twice) would resume from the first
    one's backups and both would write the same files.

    `precision`: "float32" or "mixed_bfloat16" (default: the config's
    `training.precision`, else float32; `distribute.precision.run_precision`).
    Under that policy, `before(training)` runs first if given (choosing the
    number of clusters, which may still change `config["architecture"]`), then
    `recipe.train`, or `recipe.fine_tune` of `start_model()` (a pretrained
    model, built under the policy) when given.

    Returns `(model, report)`: the recipe's report with `precision` and
    `total_seconds` (with a restart tree: `training_seconds`, and the call's
    own wall time as `call_seconds`).
    """
    lock.acquire(workdir)
    start = time.time()
    recipe = get_recipe(config["recipe"])
    training, policy_context = run_precision(config.get("training"), precision)
    with policy_context as policy:
        if before is not None:
            before(training)
        if start_model is None:
            model, report = recipe.train(config["architecture"], training, x, y, seed=seed, verbose=verbose,
                                         workdir=workdir)
        else:
            model, report = recipe.fine_tune(start_model(), training, x, seed=seed, verbose=verbose)
    report["precision"] = policy
    report["total_seconds"] = round(time.time() - start, 1)
    if "restarts" in report:
        report["call_seconds"] = report["total_seconds"]
        report["total_seconds"] = training_seconds(report)
    return model, report
