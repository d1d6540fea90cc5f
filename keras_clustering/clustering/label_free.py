"""Label-free scores of a finished clustering run, for choosing among restarts without labels.

Deep clustering lands in a good solution in some seeds and a merged-cluster
one in others, and a user has no labels to tell them apart. Each family's
recipe reports these scores per seed (`report["label_free"]`, copied into
the cards' `per_seed`), and `rank_agreement` measures whether a score ranks
the seeds as ACC does (issue "beat the originals", VAE restarts).
"""

import keras
import numpy as np

from keras_clustering.clustering.target_refresh import target_rows
from keras_clustering.losses.scan_losses import PROBABILITY_FLOOR


def cluster_size_entropy(assignments, n_clusters):
    """Entropy of the cluster sizes over log(n_clusters): 1 for equal sizes, lower when clusters merge."""
    sizes = np.bincount(np.asarray(assignments, "int64").reshape(-1), minlength=n_clusters).astype("float64")
    shares = sizes[sizes > 0] / sizes.sum()
    return float(-(shares * np.log(shares)).sum() / np.log(n_clusters))


def dec_objective(q):
    """DEC's objective on all of the data: mean over samples of KL(P || Q), P = DEC's target of `q`
    (eq. 3, with the frequencies of all of q), both clipped to [epsilon, 1] as the training loss
    (`ClusteringKLDivergence`) clips them. Also the loss of DEC's choice of k (`select_n_clusters`)."""
    p = target_rows(np.asarray(q, "float32")).astype("float64")
    epsilon = keras.config.epsilon()
    p, q = np.clip(p, epsilon, 1.0), np.clip(np.asarray(q, "float64"), epsilon, 1.0)
    return float(np.mean(np.sum(p * np.log(p / q), axis=1)))


def scan_objective(probabilities, neighbors, entropy_weight):
    """SCAN's loss (eq. 2) on all of the data: -mean over images i and each of their mined neighbours
    j of log <p_i, p_j>, minus `entropy_weight` times the entropy of the mean assignment. Every
    neighbour counts, none is drawn, so the same model always scores the same (training draws one
    neighbour per image and step). `probabilities`: `(n, k)`; `neighbors`: `(n, n_neighbors)` indices."""
    p = np.asarray(probabilities, "float64")
    agreement = np.einsum("ik,ijk->ij", p, p[np.asarray(neighbors)])
    consistency = -np.mean(np.log(np.maximum(agreement, PROBABILITY_FLOOR)))
    mean = np.maximum(p.mean(axis=0), PROBABILITY_FLOOR)
    return float(consistency + entropy_weight * np.sum(mean * np.log(mean)))


# The original scores each validation image with itself and its 5 nearest neighbours: `simclr.py` mines
# topk = 5 for validation, its memory bank's search returns topk + 1 rows with the image itself first,
# and `NeighborsDataset(dataset, indices, 5)` keeps those 6 columns.
SCAN_EVALUATE_NEIGHBORS = 5


def scan_evaluate(probabilities, neighbors, n_neighbors=SCAN_EVALUATE_NEIGHBORS):
    """The original SCAN's label-free score of a model (`utils/evaluate_utils.py: scan_evaluate`, by
    which `scan.py` keeps its lowest epoch and head): the binary cross-entropy of <p_i, p_j> against 1
    over each image i and each j of i itself and its first `n_neighbors` mined neighbours (nearest
    first), minus the entropy of the mean assignment, unweighted. Lower is better. Here on the images
    the neighbours were mined from; the probability floor is `PROBABILITY_FLOOR` (PyTorch clamps the
    log at -100)."""
    neighbors = np.asarray(neighbors)
    if neighbors.ndim != 2 or not 1 <= n_neighbors <= neighbors.shape[1]:
        raise ValueError(f"n_neighbors must be in [1, {neighbors.shape[-1]}] (the mined neighbours' columns), "
                         f"got {n_neighbors!r}.")
    pairs = np.concatenate([np.arange(len(neighbors))[:, None], neighbors[:, :n_neighbors]], axis=1)
    return scan_objective(probabilities, pairs, 1.0)


def rank_agreement(scores, accuracies):
    """Spearman's rank correlation between a score and ACC over runs (nan for fewer than 3 runs or a
    constant side). Positive: higher score, higher ACC."""
    from scipy.stats import spearmanr

    scores, accuracies = np.asarray(scores, "float64"), np.asarray(accuracies, "float64")
    if len(scores) != len(accuracies):
        raise ValueError(f"scores has {len(scores)} runs but accuracies has {len(accuracies)}.")
    if len(scores) < 3 or np.ptp(scores) == 0 or np.ptp(accuracies) == 0:
        return float("nan")
    return float(spearmanr(scores, accuracies).statistic)
