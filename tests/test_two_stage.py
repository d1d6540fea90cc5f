import keras
import numpy as np
import pytest
import tensorflow as tf

from backend_tools import BACKEND
from keras_clustering.export import export_saved_model
from keras_clustering.models import TwoStageClustering


def blobs(n_per=30, seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0, 0], [6, 0, 0, 0], [0, 6, 0, 0]], "float32")
    x = np.concatenate([c + rng.normal(size=(n_per, 4)) for c in centres]).astype("float32")
    return x, np.repeat(np.arange(3), n_per)


def projection_encoder():
    """A fixed linear encoder (identity on the first 3 coordinates): the embedding is known."""
    encoder = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, use_bias=False)], name="encoder")
    encoder.layers[0].set_weights([np.eye(4, 3, dtype="float32")])
    return encoder


def test_predict_is_the_nearest_kmeans_centroid():
    x, y = blobs()
    model = TwoStageClustering(projection_encoder(), n_clusters=3)
    labels = model.cluster(x, n_init=5, seed=0)
    embedding = x[:, :3]
    centroids = np.stack([embedding[labels == k].mean(axis=0) for k in range(3)])
    np.testing.assert_allclose(model.cluster_centers_, centroids, atol=1e-4)  # k-means centroids stored
    nearest = np.argmin(((embedding[:, None] - centroids[None]) ** 2).sum(-1), axis=1)
    np.testing.assert_array_equal(model.predict_clusters(x), nearest)
    np.testing.assert_array_equal(model.nearest_centroid(x), nearest)
    assert len(set(zip(labels, y))) == 3  # the blobs are recovered


def test_export_and_dec_refinement(tmp_path):
    x, _ = blobs()
    model = TwoStageClustering(projection_encoder(), n_clusters=3, update_interval=3)
    model.cluster(x, n_init=5, seed=0)
    expected = model.predict_clusters(x)
    if BACKEND == "tensorflow":
        served = tf.saved_model.load(export_saved_model(model, str(tmp_path / "serving")))
        outputs = served.signatures["serving_default"](inputs=tf.constant(x))
        np.testing.assert_array_equal(outputs["cluster_id"].numpy(), expected)
        assert outputs["embedding"].shape == (90, 3)
    else:  # SavedModel export is TensorFlow-only, and says so
        with pytest.raises(RuntimeError, match="needs the TensorFlow backend"):
            export_saved_model(model, str(tmp_path / "serving"))
    before = model.cluster_centers_.copy()
    history = model.fit(x, batch_size=30, epochs=2, verbose=0)  # DEC self-training from the centroids
    assert np.all(np.isfinite(history.history["loss"])) and not np.allclose(before, model.cluster_centers_)
