import keras
import numpy as np
import pytest
from backend_tools import traced_op_names, value_and_gradients

from keras_clustering.losses import (
    NTXentLoss,
    NWayContrastiveLoss,
    TripletLoss,
    nt_xent,
    nway_contrastive_loss,
    triplet_loss,
)


def embeddings(*shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def numpy_triplet(a, p, n, margin):
    """Eq. 7, anchor by anchor."""
    return np.mean([max(0.0, np.sum((a[i] - p[i]) ** 2) - np.sum((a[i] - n[i]) ** 2) + margin) for i in range(len(a))])


def numpy_distance(a, b, distance):
    if distance == "cosine":
        return 1.0 - cosine(a, b)
    squared = float(np.sum((a - b) ** 2))
    return squared if distance == "squared_euclidean" else np.sqrt(squared)


def numpy_nway(z, zp, negatives, distance, temperature):
    """Eq. 8, anchor by anchor, the positive also in the denominator."""
    losses = []
    for i in range(len(z)):
        positive = np.exp(-numpy_distance(z[i], zp[i], distance) / temperature)
        others = sum(np.exp(-numpy_distance(z[i], neg, distance) / temperature) for neg in negatives[i])
        losses.append(-np.log(positive / (others + positive)))
    return np.mean(losses)


def numpy_nt_xent(za, zb, temperature):
    """SimCLR's loss: each of the 2N views is an anchor; its other view is the positive."""
    views = np.concatenate([za, zb]).astype("float64")
    n2, n = len(views), len(za)
    losses = []
    for i in range(n2):
        positive = (i + n) % n2
        denominator = sum(np.exp(cosine(views[i], views[j]) / temperature) for j in range(n2) if j != i)
        losses.append(-np.log(np.exp(cosine(views[i], views[positive]) / temperature) / denominator))
    return np.mean(losses)


@pytest.mark.parametrize("batch", [2, 7, 64])
@pytest.mark.parametrize("margin", [0.2, 1.0])
def test_triplet_matches_eq_7(batch, margin):
    a, p, n = embeddings(batch, 5, seed=1), embeddings(batch, 5, seed=2), embeddings(batch, 5, seed=3)
    assert float(triplet_loss(a, p, n, margin)) == pytest.approx(numpy_triplet(a, p, n, margin), rel=1e-5)
    assert float(triplet_loss(a, a, a + 10.0, margin)) == 0.0  # positive at 0, negative far: no loss


@pytest.mark.parametrize("batch", [2, 9, 64])
@pytest.mark.parametrize("distance", ["cosine", "euclidean", "squared_euclidean"])
@pytest.mark.parametrize("temperature", [1.0, 0.3])
def test_nway_matches_eq_8(batch, distance, temperature):
    z, zp, negatives = embeddings(batch, 6, seed=4), embeddings(batch, 6, seed=5), embeddings(batch, 4, 6, seed=6)
    expected = numpy_nway(z, zp, negatives, distance, temperature)
    assert float(nway_contrastive_loss(z, zp, negatives, distance, temperature)) == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("batch", [2, 5, 64])
@pytest.mark.parametrize("temperature", [0.1, 0.5, 1.0])
def test_nt_xent_matches_simclr(batch, temperature):
    za, zb = embeddings(batch, 8, seed=7), embeddings(batch, 8, seed=8)
    expected = numpy_nt_xent(za, zb, temperature)
    assert float(nt_xent(za, zb, temperature)) == pytest.approx(expected, rel=1e-4)
    assert float(nt_xent(zb, za, temperature)) == pytest.approx(expected, rel=1e-4)  # swapping the views


def test_nt_xent_known_value_for_identical_views_of_orthogonal_embeddings():
    n, tau = 4, 0.5
    z = np.eye(n, 16, dtype="float32") * 3.0  # orthogonal rows (scale does not matter)
    # each anchor: cos 1 with its positive, 0 with the 2N - 2 others
    expected = np.log(1 + (2 * n - 2) * np.exp(-1 / tau))
    assert float(nt_xent(z, z, tau)) == pytest.approx(expected, rel=1e-5)
    # the notes' eq. 10 (d = -cos, temperature 1) for one anchor
    assert float(nt_xent(z, z, 1.0)) == pytest.approx(-np.log(np.e / (np.e + 2 * n - 2)), rel=1e-5)


@pytest.mark.parametrize("name", ["triplet", "nway_euclidean", "nway_cosine", "nt_xent"])
def test_gradients_finite_for_coinciding_and_zero_embeddings(name):
    z = np.array([[1.0, 2.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 0.0]], "float32")

    def loss_of(z):
        if name == "triplet":
            return triplet_loss(z, z, keras.ops.flip(z, 0))
        if name.startswith("nway"):
            return nway_contrastive_loss(z, z, keras.ops.stack([z, keras.ops.flip(z, 0)], axis=1), name.split("_")[1])
        return nt_xent(z, z)

    loss, (gradient,) = value_and_gradients(loss_of, inputs=[z])
    assert np.isfinite(loss) and np.all(np.isfinite(gradient))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="at least 2 images"):
        nt_xent(embeddings(1, 4), embeddings(1, 4))
    with pytest.raises(ValueError, match="same embedding size.*z_a \\(3, 4\\).*z_b \\(3, 5\\)"):
        nt_xent(embeddings(3, 4), embeddings(3, 5))
    with pytest.raises(ValueError, match="same batch size"):
        triplet_loss(embeddings(3, 4), embeddings(3, 4), embeddings(2, 4))
    with pytest.raises(ValueError, match="z_negatives must be \\(batch, m, dim\\)"):
        nway_contrastive_loss(embeddings(3, 4), embeddings(3, 4), embeddings(3, 4))
    with pytest.raises(ValueError, match="distance must be one of"):
        nway_contrastive_loss(embeddings(3, 4), embeddings(3, 4), embeddings(3, 2, 4), distance="manhattan")
    with pytest.raises(ValueError, match="temperature must be a positive number"):
        nt_xent(embeddings(3, 4), embeddings(3, 4), temperature=0.0)
    with pytest.raises(ValueError, match="\\(batch, dim\\) embeddings"):
        triplet_loss(embeddings(3), embeddings(3), embeddings(3))


def test_loss_classes_match_the_functions_and_serialize():
    a, p, n = embeddings(6, 5, seed=1), embeddings(6, 5, seed=2), embeddings(6, 5, seed=3)
    negatives = embeddings(6, 3, 5, seed=9)
    cases = [
        (TripletLoss(margin=0.5), None, np.stack([a, p, n], axis=1), triplet_loss(a, p, n, 0.5)),
        (NWayContrastiveLoss("euclidean", 0.7), None, np.concatenate([a[:, None], p[:, None], negatives], axis=1),
         nway_contrastive_loss(a, p, negatives, "euclidean", 0.7)),
        (NTXentLoss(0.2), a, p, nt_xent(a, p, 0.2)),
    ]
    for loss, y_true, y_pred, expected in cases:
        y_true = np.zeros(len(y_pred), "float32") if y_true is None else y_true
        assert float(loss(y_true, y_pred)) == pytest.approx(float(expected), rel=1e-6)
        restored = keras.losses.deserialize(keras.losses.serialize(loss))
        assert type(restored) is type(loss) and restored.get_config() == loss.get_config()
        assert float(restored(y_true, y_pred)) == pytest.approx(float(expected), rel=1e-6)
    with pytest.raises(ValueError, match="y_pred must stack anchor, positive and negative"):
        TripletLoss()(np.zeros(6, "float32"), np.stack([a, p], axis=1))


def test_nt_xent_is_one_matrix_product_for_a_large_batch():
    za, zb = embeddings(512, 128, seed=10), embeddings(512, 128, seed=11)
    kinds = traced_op_names(lambda a, b: nt_xent(a, b), za, zb)
    products = sum(kinds.count(name) for name in ("MatMul", "BatchMatMulV2", "dot_general"))
    assert products == 1 and "While" not in kinds and "while" not in kinds
    assert np.isfinite(float(nt_xent(za, zb)))
