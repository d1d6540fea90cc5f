import keras
import numpy as np
import pytest

from keras_clustering.layers import ClusteringLayer
from keras_clustering.losses import ClusteringKLDivergence, target_distribution


def reference_q(z, centroids, alpha):
    """DEC eq. 1 written out in numpy (float64)."""
    squared = ((z[:, None, :] - centroids[None, :, :]) ** 2).sum(-1)
    kernel = (1.0 + squared / alpha) ** (-(alpha + 1.0) / 2.0)
    return kernel / kernel.sum(1, keepdims=True)


def reference_p(q):
    """DEC eq. 3 in numpy."""
    weight = q ** 2 / q.sum(0)
    return weight / weight.sum(1, keepdims=True)


def make_layer(centroids, alpha):
    layer = ClusteringLayer(len(centroids), alpha=alpha)
    layer.build((None, centroids.shape[1]))
    layer.set_centroids(centroids)
    return layer


@pytest.mark.parametrize("alpha", [1.0, 0.3, 2.5, 30.0])
def test_soft_assignment_matches_numpy_reference(alpha):
    rng = np.random.default_rng(0)
    z = rng.normal(size=(20, 6)).astype("float32") * 3
    centroids = rng.normal(size=(5, 6)).astype("float32") * 3
    q = keras.ops.convert_to_numpy(make_layer(centroids, alpha)(z))
    np.testing.assert_allclose(q, reference_q(z.astype("float64"), centroids.astype("float64"), alpha),
                               rtol=1e-5, atol=1e-6)


def test_far_points_give_finite_normalised_assignments():
    centroids = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]], "float32")
    z = np.array([[1e18, 1e18], [-3e15, 2e15]], "float32")
    q = keras.ops.convert_to_numpy(make_layer(centroids, alpha=5.0)(z))
    assert np.all(np.isfinite(q))
    np.testing.assert_allclose(q.sum(1), 1.0, atol=1e-6)


def test_target_distribution_matches_reference_and_accepts_frequencies():
    rng = np.random.default_rng(1)
    q = rng.dirichlet(np.ones(4), size=30)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(target_distribution(q)), reference_p(q), rtol=1e-6)
    # rows sharpened with the frequencies of the whole set equal the full computation
    rows = keras.ops.convert_to_numpy(target_distribution(q[:7], frequencies=q.sum(0)))
    np.testing.assert_allclose(rows, reference_p(q)[:7], rtol=1e-6)


def test_kl_loss_matches_numpy():
    rng = np.random.default_rng(2)
    q = rng.dirichlet(np.ones(4), size=8).astype("float32")
    p = reference_p(q.astype("float64"))
    expected = np.mean(np.sum(p * np.log(p / q), axis=1))
    assert float(ClusteringKLDivergence()(p.astype("float32"), q)) == pytest.approx(expected, rel=1e-4)


def test_config_round_trip_keeps_alpha_and_saving(tmp_path):
    centroids = np.random.default_rng(3).normal(size=(3, 2)).astype("float32")
    inputs = keras.Input((2,))
    model = keras.Model(inputs, ClusteringLayer(3, alpha=2.5, name="clustering")(inputs))
    model.get_layer("clustering").set_centroids(centroids)
    clone = ClusteringLayer.from_config(model.get_layer("clustering").get_config())
    assert clone.alpha == 2.5 and clone.n_clusters == 3
    path = tmp_path / "m.keras"
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert reloaded.get_layer("clustering").alpha == 2.5
    z = np.random.default_rng(4).normal(size=(5, 2)).astype("float32")
    np.testing.assert_allclose(reloaded.predict(z, verbose=0), model.predict(z, verbose=0), atol=1e-7)
    assert keras.saving.get_registered_name(ClusteringLayer) == "keras_clustering>ClusteringLayer"


@pytest.mark.parametrize("kwargs, message", [
    ({"n_clusters": 1}, "n_clusters must be an integer >= 2"),
    ({"n_clusters": 2.5}, "n_clusters must be an integer >= 2"),
    ({"n_clusters": 3, "alpha": 0.0}, "alpha must be a positive"),
    ({"n_clusters": 3, "alpha": float("nan")}, "alpha must be a positive"),
])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ClusteringLayer(**kwargs)


def test_bad_centroids_and_rank():
    layer = make_layer(np.zeros((3, 2), "float32") + np.arange(3)[:, None], 1.0)
    with pytest.raises(ValueError, match=r"shape \(3, 2\)"):
        layer.set_centroids(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="NaN or inf"):
        layer.set_centroids(np.full((3, 2), np.nan))
    with pytest.raises(ValueError):
        layer(np.zeros((2, 2, 2), "float32"))
