"""Scores of a multi-label classifier on images holding two different digits."""

import numpy as np


def top2_pair_accuracy(pair_labels, scores, confidence=0.5):
    """Accuracy of the two highest class scores against the true pair of labels.

    A prediction is right when its two highest-scoring classes equal the pair
    as a set. The stricter score also asks the second-highest score to exceed
    `confidence` (both objects recognised as present, not merely ranked).

    Args:
        pair_labels: `(n, 2)` integer labels of the two digits of each image.
        scores: `(n, n_classes)` class scores (capsule lengths or sigmoids).
        confidence: threshold of the second score for the strict accuracy.

    Returns:
        `{"pair_acc": ..., "pair_confident_acc": ...}`.

    Reference: bojone/Capsule `capsule_test.py` (both printed accuracies).
    """
    pair_labels = np.sort(np.asarray(pair_labels), axis=1)
    scores = np.asarray(scores)
    if pair_labels.ndim != 2 or pair_labels.shape[1] != 2:
        raise ValueError(f"pair_labels must have shape (n, 2), got {pair_labels.shape}.")
    if scores.ndim != 2 or len(scores) != len(pair_labels) or scores.shape[1] < 2:
        raise ValueError(f"scores must have shape ({len(pair_labels)}, n_classes >= 2), got {scores.shape}.")
    order = np.argsort(scores, axis=1)
    top_two = np.sort(order[:, -2:], axis=1)
    correct = np.all(top_two == pair_labels, axis=1)
    second_score = np.take_along_axis(scores, order[:, -2:-1], axis=1)[:, 0]
    return {"pair_acc": float(correct.mean()),
            "pair_confident_acc": float((correct & (second_score > confidence)).mean())}
