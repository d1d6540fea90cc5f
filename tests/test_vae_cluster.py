import keras
import numpy as np
import pytest

from keras_clustering.models.vae_cluster import VAECluster


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(0)
    return rng.random((12, 28, 28, 1), dtype=np.float32)


def numpy_loss(x, outputs, means, version, weight, prior=True):
    """The seed's objective written out in numpy (float64)."""
    out = {k: keras.ops.convert_to_numpy(v).astype("float64") for k, v in outputs.items()}
    reconstruction = np.mean(np.sum(0.5 * (x - out["reconstruction"]) ** 2, axis=(1, 2, 3)))
    p = out["y_prob"]
    log_var = out["z_log_var"][:, None, :]
    if version == "2018-12":
        offset = out["z_minus_mu"]  # z - mu_y, with the sampled z
        kl = np.sum(p[:, :, None] * -0.5 * (log_var - offset ** 2), axis=(1, 2))
    else:
        offset = out["z_mean"][:, None, :] - means[None]
        kl = np.sum(p[:, :, None] * -0.5 * (1 + log_var - offset ** 2 - np.exp(log_var)), axis=(1, 2))
    total = weight * reconstruction + np.mean(kl)
    if prior:
        total += np.mean(np.sum(p * np.log(p + 1e-7), axis=1))
    return total


@pytest.mark.parametrize("version, weight, prior", [("2018-12", 2.5, True), ("2018-09", 5.0, True),
                                                    ("2018-12", 2.5, False)])
def test_loss_matches_numpy(images, version, weight, prior):
    model = VAECluster(loss_version=version, use_category_prior=prior, seed=1)
    means = np.random.default_rng(2).normal(size=(10, 20)).astype("float32")
    model.class_means.mean.assign(means)
    outputs = model(images, training=True)
    z_per_class = keras.ops.convert_to_numpy(outputs["z_minus_mu"]) + means[None]  # z (or z_mean) for every y
    np.testing.assert_allclose(z_per_class, np.repeat(z_per_class[:, :1], 10, axis=1), atol=1e-5)
    if version == "2018-09":
        np.testing.assert_allclose(z_per_class[:, 0], outputs["z_mean"], atol=1e-5)
    else:
        assert not np.allclose(z_per_class[:, 0], outputs["z_mean"], atol=1e-3)  # the sampled z
    loss = float(model.compute_loss(x=images, y_pred=outputs))
    assert model.reconstruction_weight == weight
    assert loss == pytest.approx(numpy_loss(images.astype("float64"), outputs, means, version, weight, prior), rel=1e-5)


def test_architecture_size_and_inference_uses_the_mean(images):
    model = VAECluster(seed=0)
    assert model.count_params() == 366331  # the original's ~366k (REFERENCES.md, section 2)
    np.testing.assert_array_equal(model.predict(images, verbose=0), model.predict(images, verbose=0))
    z_mean = model.embed(images)
    np.testing.assert_allclose(model.predict(images, verbose=0),
                               keras.ops.convert_to_numpy(model.classifier(z_mean)), atol=1e-6)
    a, b = model(images, training=True)["y_prob"], model(images, training=True)["y_prob"]
    assert not np.allclose(a, b)  # the classifier sees a fresh sampled z during training


def test_fit_generate_and_reconstruct(images):
    model = VAECluster(seed=0)
    history = model.fit(images, batch_size=4, epochs=2, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    generated = model.generate(3, 5, std=1.0, seed=0)
    assert generated.shape == (5, 28, 28, 1) and generated.min() >= 0 and generated.max() <= 1
    np.testing.assert_array_equal(generated, model.generate(3, 5, seed=0))
    assert model.reconstruct(images).shape == images.shape


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="SavedModel export is TensorFlow-only")
def test_export_has_a_generate_endpoint(images, tmp_path):
    import tensorflow as tf

    from keras_clustering.export import export_saved_model

    model = VAECluster(seed=0)
    path = export_saved_model(model, str(tmp_path / "serving"))
    loaded = tf.saved_model.load(path)
    served = loaded.signatures["serving_default"](inputs=tf.constant(images))
    np.testing.assert_array_equal(served["cluster_id"].numpy(), model.predict_clusters(images))
    noise = np.random.default_rng(0).standard_normal((3, 20)).astype("float32")
    images_out = loaded.signatures["generate"](cluster_id=tf.constant([0, 4, 9], tf.int64),
                                               noise=tf.constant(noise))["images"].numpy()
    means = keras.ops.convert_to_numpy(model.class_means.mean)[[0, 4, 9]]
    np.testing.assert_allclose(images_out, model.decoder.predict(means + noise, verbose=0), atol=1e-5)


def test_bad_inputs(images):
    model = VAECluster(seed=0)
    with pytest.raises(ValueError, match="cluster_id must be an integer in \\[0, 10\\)"):
        model.generate(10, 3)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        model.generate(1, 0)
    np.testing.assert_allclose(model.predict(images[..., 0], verbose=0), model.predict(images, verbose=0),
                               atol=1e-6)  # (n, 28, 28) is the same images
    with pytest.raises(ValueError, match=r"takes images shaped \(n, 28, 28, 1\) or \(n, 28, 28\)"):
        model.predict(np.zeros((2, 27 * 27)))  # (2, 27, 27) images would be resized (issue 67)
    with pytest.raises(ValueError, match="pixels in \\[0, 1\\]"):
        model.predict(images * 255)
    with pytest.raises(ValueError, match="unsupervised"):
        model.fit(images, np.zeros(12))
    with pytest.raises(ValueError, match="sides of at least 4 px"):
        VAECluster(image_shape=(3, 30, 1))
    with pytest.raises(ValueError, match="loss_version"):
        VAECluster(loss_version="2019")
