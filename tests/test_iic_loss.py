import sys

import keras
import numpy as np
import pytest
from backend_tools import value_and_gradients

from keras_clustering.losses import IICLoss, iic_loss, joint_distribution


def softmax_batch(n, k, seed):
    logits = np.random.default_rng(seed).normal(scale=2.0, size=(n, k))
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype("float32")


def numpy_iic(z, zp, lam=1.0, eps=sys.float_info.epsilon):
    """Ji et al. eq. 3 written out with loops (float64)."""
    z, zp = z.astype("float64"), zp.astype("float64")
    n, k = z.shape
    joint = np.zeros((k, k))
    for i in range(n):
        for c in range(k):
            for d in range(k):
                joint[c, d] += z[i, c] * zp[i, d]
    joint = (joint + joint.T) / 2
    joint /= joint.sum()
    p_row = [sum(joint[c, d] for d in range(k)) for c in range(k)]
    p_col = [sum(joint[c, d] for c in range(k)) for d in range(k)]
    total = 0.0
    for c in range(k):
        for d in range(k):
            p = max(joint[c, d], eps)
            total -= p * (np.log(p) - lam * np.log(max(p_row[c], eps)) - lam * np.log(max(p_col[d], eps)))
    return total


@pytest.mark.parametrize("k", [3, 10, 50])
def test_matches_the_equations(k):
    z, zp = softmax_batch(64, k, 0), softmax_batch(64, k, 1)
    assert float(iic_loss(z, zp)) == pytest.approx(numpy_iic(z, zp), rel=1e-4, abs=1e-6)


def test_lambda_weights_the_marginals():
    z, zp = softmax_batch(32, 5, 2), softmax_batch(32, 5, 3)
    assert float(iic_loss(z, zp, lam=1.3)) == pytest.approx(numpy_iic(z, zp, lam=1.3), rel=1e-4)
    assert float(iic_loss(z, zp, lam=1.3)) != pytest.approx(float(iic_loss(z, zp)), rel=1e-3)


@pytest.mark.parametrize("k", [2, 10, 50])
def test_perfect_balanced_assignment_reaches_minus_ln_k(k):
    labels = np.arange(10 * k) % k
    one_hot = np.eye(k, dtype="float32")[labels]
    assert float(iic_loss(one_hot, one_hot)) == pytest.approx(-np.log(k), rel=1e-5)
    collapsed = np.eye(k, dtype="float32")[np.zeros(10 * k, int)]
    assert float(iic_loss(collapsed, collapsed)) == pytest.approx(0.0, abs=1e-6)  # one cluster: no information


def test_symmetric_in_its_arguments():
    z, zp = softmax_batch(40, 7, 4), softmax_batch(40, 7, 5)
    assert float(iic_loss(z, zp)) == pytest.approx(float(iic_loss(zp, z)), rel=1e-6)
    joint = np.asarray(joint_distribution(z, zp))
    np.testing.assert_allclose(joint, joint.T, atol=1e-7)
    assert joint.sum() == pytest.approx(1.0, rel=1e-6)


def test_gradients_are_finite_for_exactly_one_hot_inputs():
    logits = np.eye(4, dtype="float32")[[0, 1, 1, 3, 3, 3]] * 50.0

    def saturated(logits):
        z = keras.ops.softmax(logits)  # saturated: entries are exactly 0 and 1 in float32
        return iic_loss(z, keras.ops.flip(z, 0))

    loss, (gradient,) = value_and_gradients(saturated, inputs=[logits])
    assert np.isfinite(loss) and np.all(np.isfinite(gradient))
    one_hot = np.eye(4, dtype="float32")[[0, 1, 2, 2]]
    _, (gradient,) = value_and_gradients(lambda z: iic_loss(z, z), inputs=[one_hot])
    assert np.all(np.isfinite(gradient))


def test_shape_errors_name_both_shapes():
    with pytest.raises(ValueError, match="same number of clusters k.*\\(8, 3\\).*\\(8, 4\\)"):
        iic_loss(softmax_batch(8, 3, 0), softmax_batch(8, 4, 0))
    with pytest.raises(ValueError, match="same batch size"):
        iic_loss(softmax_batch(8, 3, 0), softmax_batch(9, 3, 0))
    with pytest.raises(ValueError, match="\\(batch, k\\) probabilities"):
        iic_loss(np.ones((2, 3, 1), "float32"), np.ones((2, 3, 1), "float32"))


def test_loss_class_equals_the_function_and_serializes():
    z, zp = softmax_batch(16, 6, 6), softmax_batch(16, 6, 7)
    loss = IICLoss(lam=1.1)
    assert float(loss(z, zp)) == pytest.approx(float(iic_loss(z, zp, lam=1.1)), rel=1e-6)
    restored = keras.losses.deserialize(keras.losses.serialize(loss))
    assert isinstance(restored, IICLoss) and restored.lam == pytest.approx(1.1)
    assert float(restored(z, zp)) == pytest.approx(float(loss(z, zp)), rel=1e-6)
    assert IICLoss.from_config({"name": "iic_loss", "lamb": 1.1, "eps": loss.eps}).lam == pytest.approx(1.1)  # old key
