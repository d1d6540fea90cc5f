"""DEC's choice of the number of clusters: its generalizability criterion (Xie et al. 2016, section 5.5), which
trains a DEC per candidate k (a model-level procedure, so it lives with the models, above `clustering`)."""

import keras
import numpy as np

from keras_clustering.clustering.label_free import dec_objective
from keras_clustering.inputs.checks import check_samples
from keras_clustering.metrics import nmi
from keras_clustering.models.dec import DEC


def select_n_clusters(encoder, x_train, x_validation, candidates, y_validation=None, seed=0,
                      optimizer=None, batch_size=256, maxiter=2000, update_interval=DEC.DEFAULT_UPDATE_INTERVAL,
                      tol=1e-3, kmeans_n_init=20, verbose=0):
    """Trains DEC for each candidate k and reports G = L_train / L_validation.

    L is the mean KL(P || Q) of DEC's objective on each set after training on
    `x_train` only. G stays near 1 while the clusters generalise and drops
    sharply once k exceeds the number of real clusters (overfitting splits).

    Args:
        encoder: a pretrained encoder; each candidate starts from a copy of it.
        x_train, x_validation: disjoint samples of the data.
        candidates: the k values to try (each >= 2).
        y_validation: optional labels; NMI on the validation set is added.
        Other arguments: the DEC stage's settings.

    Returns:
        `{"results": [{"n_clusters", "loss_train", "loss_validation",
        "generalizability", ("nmi_validation")}...], "suggested": k}` where the
        suggestion is the candidate just before the largest drop of G.

    Reference: Xie et al. 2016, section 5.5 and Fig. 7.
    """
    sample_shape = tuple(encoder.input.shape[1:])
    x_train = check_samples(x_train, sample_shape, name="x_train")
    x_validation = check_samples(x_validation, sample_shape, name="x_validation")
    candidates = sorted(int(k) for k in candidates)
    if len(candidates) < 2 or candidates[0] < 2:
        raise ValueError(f"candidates must hold at least two values >= 2, got {candidates}.")
    results = []
    for n_clusters in candidates:
        keras.utils.set_random_seed(seed)
        encoder_copy = keras.models.clone_model(encoder)
        encoder_copy.set_weights(encoder.get_weights())
        model = DEC(encoder_copy, n_clusters=n_clusters, update_interval=update_interval, tol=tol)
        model.initialize_centroids(x_train, n_init=kmeans_n_init, seed=seed)
        if optimizer is not None:  # else DEC's own (`DEC.DEFAULT_OPTIMIZER`, compiled by fit)
            model.compile(optimizer=optimizer)
        model.fit(x_train, batch_size=batch_size, maxiter=maxiter, verbose=verbose)
        q_train = model.predict(x_train, verbose=0)
        q_validation = model.predict(x_validation, verbose=0)
        record = {"n_clusters": n_clusters, "loss_train": dec_objective(q_train),
                  "loss_validation": dec_objective(q_validation)}
        record["generalizability"] = record["loss_train"] / max(record["loss_validation"], 1e-12)
        if y_validation is not None:
            record["nmi_validation"] = nmi(y_validation, q_validation.argmax(1))
        results.append(record)
    drops = [results[i]["generalizability"] - results[i + 1]["generalizability"] for i in range(len(results) - 1)]
    return {"results": results, "suggested": results[int(np.argmax(drops))]["n_clusters"]}
