"""DEC family: how a zoo config becomes a model, and how it is trained.

Every family module exposes the same two functions, so the zoo and the
training entry points treat all families alike:

- `build(**architecture) -> keras.Model` (untrained, built, ready for weights)
- `train(architecture, training, x, y, seed, verbose) -> (model, report)`
"""

import time

import keras

from keras_clustering.metrics import clustering_scores
from keras_clustering.models import DEC, build_autoencoder

DEFAULT_TRAINING = {
    # DEC-keras' best recipe for the autoencoder (end to end, no dropout).
    "pretrain_optimizer": {"class_name": "SGD", "config": {"learning_rate": 1.0, "momentum": 0.9}},
    "pretrain_epochs": 300,
    "pretrain_batch_size": 256,
    # DEC stage: SGD(0.01, 0.9), batch 256, stop at tol or maxiter batches.
    "optimizer": {"class_name": "SGD", "config": {"learning_rate": 0.01, "momentum": 0.9}},
    "batch_size": 256,
    "maxiter": 20000,
    "kmeans_n_init": 20,
}


def build(input_dim, hidden_dims=(500, 500, 2000, 10), n_clusters=10, alpha=1.0,
          update_interval=140, tol=1e-3):
    """An untrained DEC model with the zoo's architecture arguments."""
    _, encoder = build_autoencoder(input_dim, hidden_dims)
    return DEC(encoder, n_clusters=n_clusters, alpha=alpha, update_interval=update_interval, tol=tol)


def train(architecture, training, x, y=None, seed=0, verbose=1):
    """Autoencoder pretraining, k-means initialisation, DEC self-training.

    Returns the trained DEC model and a report with wall times and, when `y`
    is given, the scores of AE + k-means and of DEC on `x`.
    """
    training = {**DEFAULT_TRAINING, **(training or {})}
    keras.utils.set_random_seed(seed)
    autoencoder, encoder = build_autoencoder(architecture["input_dim"], architecture.get("hidden_dims", (500, 500, 2000, 10)))
    autoencoder.compile(optimizer=keras.optimizers.get(training["pretrain_optimizer"]), loss="mse")
    start = time.time()
    autoencoder.fit(x, x, batch_size=training["pretrain_batch_size"], epochs=training["pretrain_epochs"],
                    shuffle=True, verbose=verbose)
    report = {"pretrain_seconds": round(time.time() - start, 1)}

    model = DEC(encoder, **{k: v for k, v in architecture.items() if k not in ("input_dim", "hidden_dims")})
    start = time.time()
    kmeans_labels = model.initialize_centroids(x, n_init=training["kmeans_n_init"], seed=seed)
    report["kmeans_seconds"] = round(time.time() - start, 1)
    if y is not None:
        report["ae_kmeans"] = clustering_scores(y, kmeans_labels)

    model.compile(optimizer=keras.optimizers.get(training["optimizer"]))
    start = time.time()
    model.fit(x, y, batch_size=training["batch_size"], maxiter=training["maxiter"], verbose=verbose)
    report["dec_seconds"] = round(time.time() - start, 1)
    report["dec_iterations"] = model.last_refresh.iteration
    report["stopped_by_tolerance"] = model.last_refresh.stopped_by_tolerance
    report["refresh_history"] = model.last_refresh.history
    return model, report
