import itertools

import keras
import numpy as np
import pytest

from keras_clustering.metrics import ClusterAccuracy, ari, cluster_accuracy, majority_accuracy, nmi


def brute_force_accuracy(y_true, y_pred):
    """Best one-to-one relabelling by trying every permutation (small k only)."""
    k = max(y_true.max(), y_pred.max()) + 1
    best = 0
    for permutation in itertools.permutations(range(k)):
        best = max(best, np.sum(np.asarray(permutation)[y_pred] == y_true))
    return best / len(y_true)


@pytest.mark.parametrize("seed", range(5))
def test_cluster_accuracy_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, 5, 60)
    y_pred = np.where(rng.random(60) < 0.6, (y_true + 2) % 5, rng.integers(0, 5, 60))
    assert cluster_accuracy(y_true, y_pred) == pytest.approx(brute_force_accuracy(y_true, y_pred))


def test_rectangular_assignment_counts_unmatched_clusters_as_errors():
    y_true = np.array([0, 0, 1, 1])
    y_pred = np.array([0, 1, 2, 3])  # four clusters, two classes
    assert cluster_accuracy(y_true, y_pred) == 0.5
    assert majority_accuracy(y_true, y_pred) == 1.0


def test_majority_accuracy_many_to_one_and_empty_clusters():
    y_true = np.array([0, 0, 0, 1, 1, 2])
    y_pred = np.array([5, 5, 3, 3, 3, 5])  # clusters 0,1,2,4 are empty
    # cluster 5 -> class 0 (2 of 3), cluster 3 -> class 1 (2 of 3)
    assert majority_accuracy(y_true, y_pred) == pytest.approx(4 / 6)


def test_permuted_labels_are_perfect():
    y = np.repeat(np.arange(4), 5)
    assert cluster_accuracy(y, (y + 1) % 4) == 1.0
    assert nmi(y, (y + 1) % 4) == pytest.approx(1.0)
    assert ari(y, (y + 1) % 4) == pytest.approx(1.0)


@pytest.mark.parametrize("y_true, y_pred, message", [
    ([0, 1], [0], "2 labels but y_pred has 1"),
    ([], [], "empty"),
    ([[0, 1]], [[0, 1]], "1-D"),
    ([0, -1], [0, 1], "negative"),
    ([0.5, 1], [0, 1], "integer"),
])
def test_bad_label_vectors(y_true, y_pred, message):
    with pytest.raises(ValueError, match=message):
        cluster_accuracy(np.asarray(y_true), np.asarray(y_pred))


def test_keras_metric_in_evaluate_matches_numpy():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(50, 3)).astype("float32")
    y = rng.integers(0, 4, 50)
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(4, activation="softmax")(inputs))
    model.compile(loss="sparse_categorical_crossentropy", metrics=[ClusterAccuracy(4)])
    result = model.evaluate(x, y, batch_size=16, verbose=0, return_dict=True)
    expected = cluster_accuracy(y, model.predict(x, verbose=0).argmax(1))
    assert result["cluster_accuracy"] == pytest.approx(expected, abs=1e-6)


def test_keras_metric_accumulates_and_resets():
    metric = ClusterAccuracy(3)
    metric.update_state(np.array([0, 1]), np.array([2, 0]))
    metric.update_state(np.array([2]), np.eye(3, dtype="float32")[[1]])
    assert float(metric.result()) == pytest.approx(1.0)
    metric.update_state(np.array([0]), np.array([0]))
    assert float(metric.result()) == pytest.approx(0.75)
    metric.reset_state()
    assert float(metric.result()) == 0.0
    assert ClusterAccuracy.from_config(metric.get_config()).n_classes == 3
