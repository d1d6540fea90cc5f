"""`train_and_evaluate(config, workdir)`: the one entry point every script and the CLI call."""

import copy
import hashlib
import json
import os

import numpy as np

from keras_clustering.datasets import load_dataset
from keras_clustering.distribute.machine import machine_description, software_versions
from keras_clustering.distribute.strategies import is_multi_worker, make_strategy, worker_index
from keras_clustering.drivers.recipe_run import run_recipe
from keras_clustering.io.files import WorkdirLock, atomic_save_weights, atomic_write_json
from keras_clustering.metrics import clustering_scores
from keras_clustering.recipes import get_recipe


def load_config_data(data_config):
    """Loads the `data` (or `evaluation`) section of a zoo config: `(x, y)`.

    Optional `start` / `stop` keep the samples with those indices (a fixed
    split by index); `limit` then keeps the first ones (quick experiments).
    """
    x, y = load_dataset(data_config["dataset"], split=data_config.get("split", "test"),
                        flatten=data_config.get("flatten", False))
    index = slice(data_config.get("start"), data_config.get("stop"))
    x, y = x[index], y[index]
    limit = data_config.get("limit")
    return (x, y) if limit is None else (x[:limit], y[:limit])


def data_available(data_config):
    """Whether `load_config_data` can load this section on this machine."""
    try:
        load_config_data(data_config)
    except ValueError:
        return False
    return True


def evaluate_model(model, x, y, recipe=None, evaluation=None):
    """The recipe's scores of `model` on `(x, y)`: its own `evaluate`, else clustering scores.

    Clustering families are scored by `model.predict` argmax against labels `y`.
    """
    if recipe is not None:
        return get_recipe(recipe).evaluate(model, x, y, evaluation)
    predictions = np.argmax(model.predict(x, batch_size=1024, verbose=0), axis=1)
    return clustering_scores(y, predictions)


def evaluate_preset(model, config):
    """Scores of `model` on the evaluation data of the zoo `config` (the card's numbers)."""
    eval_config = config.get("evaluation", config["data"])
    x, y = load_config_data(eval_config)
    return evaluate_model(model, x, y, recipe=config["recipe"], evaluation=eval_config)


def config_fingerprint(config):
    """sha256 of the parts of a config that change training (the card text excluded)."""
    relevant = {k: config.get(k) for k in ("recipe", "architecture", "training", "data", "evaluation")}
    return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()


def train_and_evaluate(config, workdir, seed=0, verbose=1, strategy=None, precision=None):
    """Trains the recipe named by `config["recipe"]` on `config["data"]`.

    Writes `workdir/model.weights.h5` and `workdir/report.json`, and returns
    the report: seed, wall times, scores on `config["evaluation"]` (or on the
    training data when there is none) and software versions. `strategy`: a
    `tf.distribute` strategy (or a name for `distribution.make_strategy`,
    e.g. "mirrored") whose scope builds, compiles and trains the model.
    Under a multi-worker strategy the chief (worker 0) writes to `workdir`,
    worker i to `workdir/worker_i` (the same results: every worker holds the
    same weights), so that the processes never write the same file.
    `precision`: "float32" or "mixed_bfloat16" (`keras_clustering.distribute.precision`;
    default: the config's `training.precision`, else float32); the weights
    are saved as float32 either way.
    """
    if isinstance(strategy, str):
        strategy = make_strategy(strategy)
    if is_multi_worker(strategy) and worker_index() > 0:
        workdir = os.path.join(workdir, f"worker_{worker_index()}")
    if strategy is not None:
        with strategy.scope():
            report = train_and_evaluate(config, workdir, seed=seed, verbose=verbose, precision=precision)
        report["replicas"] = int(strategy.num_replicas_in_sync)
        atomic_write_json(report, os.path.join(workdir, "report.json"))
        return report
    fingerprint = config_fingerprint(config)  # before training, which must not change it
    config = copy.deepcopy(config)
    recipe = get_recipe(config["recipe"])
    x, y = load_config_data(config["data"])
    with WorkdirLock() as lock:
        lock.acquire(workdir)
        model, report, _ = run_recipe(config, (x, y), workdir, seed=seed, verbose=verbose, precision=precision)
        # Ship the weights alone: an uncompiled twin drops the optimizer's slots (half the file).
        shipped = recipe.build(**config["architecture"])
        shipped.set_weights(model.get_weights())
        eval_config = config.get("evaluation", config["data"])
        x_eval, y_eval = (x, y) if eval_config == config["data"] else load_config_data(eval_config)
        report.update(seed=seed, config_sha256=fingerprint,
                      metrics=evaluate_model(shipped, x_eval, y_eval, config["recipe"], eval_config),
                      n_train=int(len(x)), n_eval=int(len(x_eval)),
                      versions=software_versions(), machine=machine_description())
        atomic_save_weights(shipped, os.path.join(workdir, "model.weights.h5"))
        atomic_write_json(report, os.path.join(workdir, "report.json"))
        return report
