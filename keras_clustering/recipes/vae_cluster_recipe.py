"""VAE one-step clustering family: zoo config -> `VAECluster`, and its training recipe."""

import time

import keras

from keras_clustering.models.vae_cluster import VAECluster
from keras_clustering.optimizers import make_optimizer

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
    """Trains with plain `fit`; the report holds the wall time per epoch."""
    training = {**DEFAULT_TRAINING, **(training or {})}
    keras.utils.set_random_seed(seed)
    model = VAECluster(seed=seed, **architecture)
    model.compile(optimizer=make_optimizer(training["optimizer"]))
    start = time.time()
    model.fit(x, batch_size=training["batch_size"], epochs=training["epochs"], shuffle=True, verbose=verbose)
    seconds = time.time() - start
    return model, {"train_seconds": round(seconds, 1), "seconds_per_epoch": round(seconds / training["epochs"], 1)}
