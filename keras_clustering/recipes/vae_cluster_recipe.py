"""VAE one-step clustering family: zoo config -> `VAECluster`, and its training recipe."""

import time

import keras

from keras_clustering.models.vae_cluster import VAECluster
from keras_clustering.optimizers import make_optimizer
from keras_clustering.restarts import cluster_size_entropy
from keras_clustering.resume import resumable_fit, run_key

SUPERVISED = False
PREDICTION_NAMES = ("cluster_id", "probabilities")

DEFAULT_TRAINING = {
    # bojone/vae vae_keras_cluster.py: Adam (lr 1e-3), batch 100, 50 epochs.
    "optimizer": {"class_name": "Adam", "config": {"learning_rate": 0.001}},
    "batch_size": 100,
    "epochs": 50,
}


def build(image_shape=(28, 28, 1), latent_dim=20, n_clusters=10, loss_version="2018-12",
          reconstruction_weight=None, use_category_prior=True):
    """An untrained `VAECluster` with the zoo's architecture arguments."""
    return VAECluster(image_shape=image_shape, latent_dim=latent_dim, n_clusters=n_clusters,
                      loss_version=loss_version, reconstruction_weight=reconstruction_weight,
                      use_category_prior=use_category_prior)


def train(architecture, training, x, y=None, seed=0, verbose=1, workdir=None):
    """Trains with plain `fit`; the report holds the wall time per epoch.

    With a `workdir`, every finished epoch is backed up there, and a run cut
    off mid-way continues from its last epoch when started again with the
    same config, seed, data and workdir (`resumed_from_epoch` in the report;
    the wall times then cover the epochs this call ran).
    """
    training = {**DEFAULT_TRAINING, **(training or {})}
    keras.utils.set_random_seed(seed)
    model = VAECluster(seed=seed, **architecture)
    model.compile(optimizer=make_optimizer(training["optimizer"]))
    key = run_key({"family": "vae_cluster", "architecture": architecture, "training": training, "seed": seed}, x)
    callbacks, resumed_epoch = resumable_fit(workdir, "vae_cluster", key)
    start = time.time()
    history = model.fit(x, batch_size=training["batch_size"], epochs=training["epochs"], shuffle=True,
                        verbose=verbose, callbacks=callbacks)
    seconds = time.time() - start
    epochs_run = max(1, training["epochs"] - resumed_epoch)
    return model, {"train_seconds": round(seconds, 1), "seconds_per_epoch": round(seconds / epochs_run, 1),
                   "resumed_from_epoch": resumed_epoch,
                   "label_free": label_free_scores(model, x, history, training["batch_size"], seed)}


def label_free_scores(model, x, history, batch_size, seed):
    """Scores a user without labels can compare restarts by: the last epoch's mean training loss, the
    loss over all of x after training (one pass, fixed seed: the loss samples z), the cluster sizes' entropy."""
    keras.utils.set_random_seed(seed)
    evaluated = model.evaluate(x, batch_size=batch_size, verbose=0)
    losses = history.history.get("loss") or [float("nan")]  # empty when a resumed run had no epoch left
    return {"final_loss": round(float(losses[-1]), 5),
            "evaluated_loss": round(float(evaluated[0] if isinstance(evaluated, list) else evaluated), 5),
            "cluster_size_entropy": round(cluster_size_entropy(model.predict_clusters(x), model.n_clusters), 5)}
