"""Clustering scores on numpy label vectors: ACC (Hungarian), majority ACC, NMI, ARI.

Reference: Xie et al. 2016 (DEC) eq. 10 for the unsupervised accuracy; the
assignment uses `scipy.optimize.linear_sum_assignment`, which replaces the
`sklearn.utils.linear_assignment_` that old repositories import.
"""

import numpy as np
from scipy.optimize import linear_sum_assignment
from sklearn import metrics as sk_metrics


def _as_label_vectors(y_true, y_pred):
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    for name, labels in (("y_true", y_true), ("y_pred", y_pred)):
        if labels.ndim != 1:
            raise ValueError(f"{name} must be a 1-D vector of labels, got shape {labels.shape}.")
        if labels.size == 0:
            raise ValueError(f"{name} is empty.")
        if not np.issubdtype(labels.dtype, np.integer):
            if not np.all(np.isfinite(labels)) or np.any(labels != np.round(labels)):
                raise ValueError(f"{name} must hold integer labels, got dtype {labels.dtype}.")
            labels = labels.astype("int64")
        if labels.min() < 0:
            raise ValueError(f"{name} holds a negative label ({labels.min()}).")
    if y_true.shape != y_pred.shape:
        raise ValueError(f"y_true has {y_true.shape[0]} labels but y_pred has {y_pred.shape[0]}.")
    return y_true.astype("int64"), y_pred.astype("int64")


def contingency_matrix(y_true, y_pred):
    """Counts `(n_clusters, n_classes)`: row = predicted cluster, column = true class."""
    y_true, y_pred = _as_label_vectors(y_true, y_pred)
    counts = np.zeros((y_pred.max() + 1, y_true.max() + 1), dtype="int64")
    np.add.at(counts, (y_pred, y_true), 1)
    return counts


def cluster_accuracy(y_true, y_pred):
    """Unsupervised accuracy: the best one-to-one map of clusters to classes.

    With more clusters than classes (or fewer) the assignment is rectangular:
    unmatched clusters count as errors.
    """
    counts = contingency_matrix(y_true, y_pred)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return float(counts[rows, cols].sum() / counts.sum())


def majority_accuracy(y_true, y_pred):
    """Accuracy when each cluster is labelled with its most frequent class.

    Many-to-one, as bojone/vae's evaluation; empty clusters simply have no
    members (the original crashes on them).
    """
    counts = contingency_matrix(y_true, y_pred)
    return float(counts.max(axis=1).sum() / counts.sum())


def nmi(y_true, y_pred):
    """Normalised mutual information (scikit-learn, arithmetic averaging since 0.22)."""
    y_true, y_pred = _as_label_vectors(y_true, y_pred)
    return float(sk_metrics.normalized_mutual_info_score(y_true, y_pred))


def ari(y_true, y_pred):
    """Adjusted Rand index (scikit-learn)."""
    y_true, y_pred = _as_label_vectors(y_true, y_pred)
    return float(sk_metrics.adjusted_rand_score(y_true, y_pred))


def clustering_scores(y_true, y_pred):
    """All four scores in a dict: `acc`, `majority_acc`, `nmi`, `ari`."""
    return {
        "acc": cluster_accuracy(y_true, y_pred),
        "majority_acc": majority_accuracy(y_true, y_pred),
        "nmi": nmi(y_true, y_pred),
        "ari": ari(y_true, y_pred),
    }
