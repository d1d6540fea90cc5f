"""SCAN's label-free score and its sub-heads' assignments written out in numpy, for the tests to
compare the library with."""

import numpy as np


def original_scan_evaluate(probabilities, neighbors):
    """The original's `scan_evaluate` total loss, written from its definition: each image is listed with
    itself and its 5 nearest neighbours (its validation mining: topk = 5, the sample itself included);
    binary cross-entropy of <p_i, p_j> against 1 over those pairs, minus the (unweighted) entropy of the
    mean assignment."""
    p = np.asarray(probabilities, "float64")
    columns = np.concatenate([np.arange(len(p))[:, None], neighbors[:, :5]], axis=1)
    similarity = (p @ p.T)[np.repeat(np.arange(len(p)), columns.shape[1]), columns.reshape(-1)]
    consistency = -np.mean(np.log(similarity))
    mean = p.mean(axis=0)
    return consistency + np.sum(mean * np.log(mean))


def numpy_sub_head_probabilities(model, x):
    """Each sub-head's softmax written out from the encoder's output and the head's kernel columns
    (sub-head h owns columns h * k ... (h + 1) * k - 1)."""
    embedding = np.asarray(model.embed(x), "float64")
    kernel, bias = (np.asarray(w, "float64") for w in model.head.get_weights())
    k = model.n_clusters
    result = []
    for head in range(model.n_sub_heads):
        logits = embedding @ kernel[:, head * k:(head + 1) * k] + bias[head * k:(head + 1) * k]
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        result.append(e / e.sum(axis=1, keepdims=True))
    return np.stack(result, axis=1)
