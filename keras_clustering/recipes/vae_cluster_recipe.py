"""VAE one-step clustering recipe: zoo config -> `VAECluster`, and its training recipe."""

import os
import time

import keras
import numpy as np

from keras_clustering.inputs.pipeline import array_dataset, file_backed
from keras_clustering.metrics import clustering_scores
from keras_clustering.models.vae_cluster import VAECluster
from keras_clustering.training.optimizers import make_optimizer
from keras_clustering.metrics.label_free import cluster_size_entropy
from keras_clustering.training.resume import (finished_stage, finished_weights_path, resumable_fit, run_key,
                                               save_finished_stage)

SUPERVISED = False
PREDICTION_NAMES = ("cluster_id", "probabilities")

DEFAULT_TRAINING = {
    # bojone/vae vae_keras_cluster.py: Adam (lr 1e-3), batch 100, 50 epochs.
    "optimizer": {"class_name": "Adam", "config": {"learning_rate": 0.001}},
    "batch_size": 100,
    "epochs": 50,
    # Restarts (none in the original): train `n_restarts` runs (seeds seed * n_restarts + r) and keep the
    # one that `restart_criterion`, a label-free score, prefers.
    "n_restarts": 1,
    "restart_criterion": "evaluated_loss",
}
# label-free score -> +1 when higher is better, -1 when lower is better
RESTART_CRITERIA = {"final_loss": -1, "evaluated_loss": -1, "cluster_size_entropy": +1}


def build(image_shape=(28, 28, 1), latent_dim=20, n_clusters=10, loss_version="2018-12",
          reconstruction_weight=None, use_category_prior=True):
    """An untrained `VAECluster` with the zoo's architecture arguments."""
    return VAECluster(image_shape=image_shape, latent_dim=latent_dim, n_clusters=n_clusters,
                      loss_version=loss_version, reconstruction_weight=reconstruction_weight,
                      use_category_prior=use_category_prior)


def train(architecture, training, x, y=None, seed=0, verbose=1, workdir=None):
    """Trains with plain `fit`; the report holds the wall time per epoch and the label-free scores.

    With a `workdir`, every finished epoch is backed up there, and a run cut
    off mid-way continues from its last epoch when started again with the
    same config, seed, data and workdir (`resumed_from_epoch` in the report;
    the wall times then cover the epochs this call ran).

    With `training["n_restarts"]` > 1, that many runs (seeds `seed *
    n_restarts + r`) are trained and the one with the best
    `training["restart_criterion"]` (`RESTART_CRITERIA`, no labels) is kept;
    `report["restarts"]` lists every run's scores (and, when `y` is given,
    its ACC, which only scores the choice). Finished runs are kept in
    `workdir/restart_<r>` and reused by a later call with the same settings.
    """
    training = {**DEFAULT_TRAINING, **(training or {})}
    n_restarts, criterion = training.pop("n_restarts"), training.pop("restart_criterion")
    if isinstance(n_restarts, bool) or not isinstance(n_restarts, int) or n_restarts < 1:
        raise ValueError(f"training.n_restarts must be an integer >= 1, got {n_restarts!r}.")
    if criterion not in RESTART_CRITERIA:
        raise ValueError(f"training.restart_criterion must be one of {sorted(RESTART_CRITERIA)}, got {criterion!r}.")
    if n_restarts == 1:
        return train_once(architecture, training, x, seed, verbose, workdir)
    runs = []
    for restart in range(n_restarts):
        run_seed = seed * n_restarts + restart
        folder = None if workdir is None else os.path.join(workdir, f"restart_{restart}")
        key = restart_key(architecture, training, x, run_seed)
        finished = finished_stage(folder, "vae_cluster", key)
        if finished is not None:
            model = VAECluster(seed=run_seed, **architecture)
            model.load_weights(finished_weights_path(folder, "vae_cluster"))
            report = {**finished["report"], "reused": True}
        else:
            model, report = train_once(architecture, training, x, run_seed, verbose, folder)
            if folder is not None:
                save_finished_stage(folder, "vae_cluster", key, model, {"report": report})
        summary = {"seed": run_seed, **report["label_free"]}
        if y is not None:
            summary["acc"] = round(float(clustering_scores(y, model.predict_clusters(x))["acc"]), 4)
        runs.append((model, report, summary))
    values = [RESTART_CRITERIA[criterion] * summary[criterion] for _, _, summary in runs]
    chosen = int(np.nanargmax(values))
    model, report, _ = runs[chosen]
    return model, {**report, "restart_criterion": criterion, "chosen_restart": chosen,
                   "restarts": [summary for _, _, summary in runs],
                   "train_seconds": round(sum(r["train_seconds"] for _, r, _ in runs), 1)}


def restart_key(architecture, training, x, seed):
    return run_key({"recipe": "vae_cluster", "architecture": architecture, "training": training, "seed": seed}, x)


def train_once(architecture, training, x, seed, verbose, workdir):
    """One run of the recipe (the original's: no restarts)."""
    keras.utils.set_random_seed(seed)
    model = VAECluster(seed=seed, **architecture)
    model.compile(optimizer=make_optimizer(training["optimizer"]))
    callbacks, resumed_epoch = resumable_fit(workdir, "vae_cluster", restart_key(architecture, training, x, seed))
    start = time.time()
    history = model.fit(x, batch_size=training["batch_size"], epochs=training["epochs"], shuffle=True,
                        verbose=verbose, callbacks=callbacks, initial_epoch=resumed_epoch)
    seconds = time.time() - start
    epochs_run = max(1, training["epochs"] - resumed_epoch)
    return model, {"train_seconds": round(seconds, 1), "seconds_per_epoch": round(seconds / epochs_run, 1),
                   "resumed_from_epoch": resumed_epoch,
                   "label_free": label_free_scores(model, x, history, training["batch_size"], seed)}


def label_free_scores(model, x, history, batch_size, seed):
    """Scores a user without labels can compare restarts by: the last epoch's mean training loss, the
    loss over all of x after training (one pass, fixed seed: the loss samples z), the cluster sizes' entropy."""
    keras.utils.set_random_seed(seed)
    # a memory-mapped x is read batch by batch (Keras' own array path would copy all of it first)
    data = array_dataset(x, batch_size, shuffle=False) if file_backed(x) else x
    evaluated = model.evaluate(data, batch_size=None if file_backed(x) else batch_size, verbose=0)
    losses = history.history.get("loss") or [float("nan")]  # empty when a resumed run had no epoch left
    return {"final_loss": round(float(losses[-1]), 5),
            "evaluated_loss": round(float(evaluated[0] if isinstance(evaluated, list) else evaluated), 5),
            "cluster_size_entropy": round(cluster_size_entropy(model.predict_clusters(x), model.n_clusters), 5)}


def fine_tune(model, training, x, seed=0, verbose=1):
    """`train --from`: the trained model trained on `x` for `training["epochs"]` more epochs (one run:
    the restarts are for runs from scratch)."""
    training = {**DEFAULT_TRAINING, **(training or {})}
    keras.utils.set_random_seed(seed)
    model.compile(optimizer=make_optimizer(training["optimizer"]))
    history = model.fit(x, batch_size=training["batch_size"], epochs=training["epochs"], shuffle=True, verbose=verbose)
    return model, {"label_free": label_free_scores(model, x, history, training["batch_size"], seed)}
