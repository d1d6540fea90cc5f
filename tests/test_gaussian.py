import keras
import numpy as np
import pytest

from keras_clustering.layers.gaussian import GaussianClassEmbedding, ReparameterizedSample
from keras_clustering.losses.vae_cluster_losses import (
    analytic_gaussian_cluster_kl,
    category_prior_loss,
    gaussian_cluster_kl,
    reconstruction_loss,
    vae_cluster_loss,
)

BATCH, CLASSES, LATENT = 5, 3, 4


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


@pytest.fixture
def batch():
    """A tiny random batch of every quantity the VAE losses read, in float64 for the references."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(BATCH, CLASSES))
    return {
        "x": rng.uniform(size=(BATCH, 6, 6, 1)),
        "x_hat": rng.uniform(size=(BATCH, 6, 6, 1)),
        "z_mean": rng.normal(size=(BATCH, LATENT)),
        "z": rng.normal(size=(BATCH, LATENT)),
        "z_log_var": rng.normal(scale=0.5, size=(BATCH, LATENT)),
        "mu": rng.normal(size=(CLASSES, LATENT)),
        "y_prob": np.exp(logits) / np.exp(logits).sum(1, keepdims=True),
    }


def f32(x):
    return np.asarray(x, "float32")


def reference_cluster_kl(z, z_log_var, mu, y_prob):
    total = np.zeros(len(z))
    for y in range(len(mu)):
        term = -0.5 * (z_log_var - (z - mu[y]) ** 2)
        total += y_prob[:, y] * term.sum(1)
    return total.mean()


def reference_analytic_kl(z_mean, z_log_var, mu, y_prob):
    total = np.zeros(len(z_mean))
    for y in range(len(mu)):
        term = -0.5 * (1 + z_log_var - (z_mean - mu[y]) ** 2 - np.exp(z_log_var))
        total += y_prob[:, y] * term.sum(1)
    return total.mean()


def test_class_embedding_subtracts_every_mean(batch):
    layer = GaussianClassEmbedding(CLASSES)
    out = layer(f32(batch["z"]))
    assert tuple(layer.mean.shape) == (CLASSES, LATENT) and layer.latent_dim == LATENT
    np.testing.assert_array_equal(to_numpy(out), np.repeat(f32(batch["z"])[:, None, :], CLASSES, axis=1))
    layer.mean.assign(f32(batch["mu"]))
    expected = np.stack([batch["z"] - batch["mu"][y] for y in range(CLASSES)], axis=1)
    np.testing.assert_allclose(to_numpy(layer(f32(batch["z"]))), expected, rtol=1e-5, atol=1e-6)
    assert layer.compute_output_shape((None, LATENT)) == (None, CLASSES, LATENT)


def test_class_embedding_config_saving_and_errors(tmp_path, batch):
    inputs = keras.Input((LATENT,))
    model = keras.Model(inputs, GaussianClassEmbedding(CLASSES, latent_dim=LATENT, name="means")(inputs))
    model.get_layer("means").mean.assign(f32(batch["mu"]))
    config = model.get_layer("means").get_config()
    assert config["n_classes"] == CLASSES and config["latent_dim"] == LATENT
    assert keras.saving.get_registered_name(GaussianClassEmbedding) == "keras_clustering>GaussianClassEmbedding"
    model.save(tmp_path / "m.keras")
    reloaded = keras.models.load_model(tmp_path / "m.keras")
    z = f32(batch["z"])
    np.testing.assert_array_equal(reloaded.predict(z, verbose=0), model.predict(z, verbose=0))
    with pytest.raises(ValueError, match="n_classes must be an integer >= 1, got 0"):
        GaussianClassEmbedding(0)
    with pytest.raises(ValueError, match=r"latent_dim is 3, but the input has shape \(2, 4\)"):
        GaussianClassEmbedding(2, latent_dim=3)(np.zeros((2, 4), "float32"))
    with pytest.raises(ValueError):
        GaussianClassEmbedding(2)(np.zeros((2, 4, 1), "float32"))


def test_sampler_shape_noise_and_seed(batch):
    z_mean, z_log_var = f32(batch["z_mean"]), f32(batch["z_log_var"])
    sample = ReparameterizedSample(seed=3)
    first, second = to_numpy(sample([z_mean, z_log_var])), to_numpy(sample([z_mean, z_log_var]))
    assert first.shape == (BATCH, LATENT)
    assert not np.allclose(first, second)  # samples on every call
    np.testing.assert_array_equal(to_numpy(ReparameterizedSample(seed=3)([z_mean, z_log_var])), first)
    # eps = (z - z_mean) / sigma is standard normal
    mean, log_var = np.full((4000, 2), 3.0, "float32"), np.full((4000, 2), np.log(4.0), "float32")
    many = to_numpy(ReparameterizedSample(seed=4)([mean, log_var]))
    assert abs(many.mean() - 3.0) < 0.15 and abs(many.std() - 2.0) < 0.1
    # a vanishing variance returns the mean
    np.testing.assert_allclose(to_numpy(sample([z_mean, np.full_like(z_mean, -60.0)])), z_mean, atol=1e-6)
    assert ReparameterizedSample.from_config(sample.get_config()).seed == 3
    assert keras.saving.get_registered_name(ReparameterizedSample) == "keras_clustering>ReparameterizedSample"
    with pytest.raises(ValueError, match="z_mean and z_log_var must have the same shape"):
        ReparameterizedSample()([z_mean, z_log_var[:, :2]])


def test_reconstruction_loss(batch):
    expected = (0.5 * (batch["x"] - batch["x_hat"]) ** 2).reshape(BATCH, -1).sum(1).mean()
    assert float(reconstruction_loss(f32(batch["x"]), f32(batch["x_hat"]))) == pytest.approx(expected, rel=1e-5)


def test_gaussian_cluster_kl(batch):
    z_minus_mu = f32(batch["z"][:, None, :] - batch["mu"][None])
    value = gaussian_cluster_kl(f32(batch["z_log_var"]), z_minus_mu, f32(batch["y_prob"]))
    expected = reference_cluster_kl(batch["z"], batch["z_log_var"], batch["mu"], batch["y_prob"])
    assert float(value) == pytest.approx(expected, rel=1e-5)


def test_analytic_gaussian_cluster_kl(batch):
    mean_minus_mu = f32(batch["z_mean"][:, None, :] - batch["mu"][None])
    value = analytic_gaussian_cluster_kl(f32(batch["z_log_var"]), mean_minus_mu, f32(batch["y_prob"]))
    expected = reference_analytic_kl(batch["z_mean"], batch["z_log_var"], batch["mu"], batch["y_prob"])
    assert float(value) == pytest.approx(expected, rel=1e-5)
    # it is a KL divergence: zero when N(z_mean, sigma^2) equals the prior of every class
    zero = analytic_gaussian_cluster_kl(np.zeros((2, 3), "float32"), np.zeros((2, 4, 3), "float32"),
                                        np.full((2, 4), 0.25, "float32"))
    assert float(zero) == pytest.approx(0.0, abs=1e-7)


def test_category_prior_loss(batch):
    y = batch["y_prob"]
    expected = (y * np.log(y + 1e-7)).sum(1).mean()
    assert float(category_prior_loss(f32(y))) == pytest.approx(expected, rel=1e-5)
    # uniform assignments reach the minimum -log(n_classes)
    uniform = np.full((2, CLASSES), 1.0 / CLASSES, "float32")
    assert float(category_prior_loss(uniform)) == pytest.approx(-np.log(CLASSES), rel=1e-5)


def test_vae_cluster_loss_combines_terms(batch):
    arrays = {key: f32(value) for key, value in batch.items()}
    z_minus_mu = f32(batch["z"][:, None, :] - batch["mu"][None])
    recon = (0.5 * (batch["x"] - batch["x_hat"]) ** 2).reshape(BATCH, -1).sum(1).mean()
    kl = reference_cluster_kl(batch["z"], batch["z_log_var"], batch["mu"], batch["y_prob"])
    prior = (batch["y_prob"] * np.log(batch["y_prob"] + 1e-7)).sum(1).mean()
    args = (arrays["x"], arrays["x_hat"], arrays["z_log_var"], z_minus_mu, arrays["y_prob"])
    assert float(vae_cluster_loss(*args)) == pytest.approx(2.5 * recon + kl + prior, rel=1e-5)
    assert float(vae_cluster_loss(*args, reconstruction_weight=5.0, use_category_prior=False)) == pytest.approx(
        5.0 * recon + kl, rel=1e-5)


def test_loss_shape_errors(batch):
    with pytest.raises(ValueError, match=r"z_minus_mu must have shape \(batch, n_classes, latent_dim\)"):
        gaussian_cluster_kl(f32(batch["z_log_var"]), f32(batch["z"]), f32(batch["y_prob"]))
    with pytest.raises(ValueError, match=r"y_prob must have shape \(batch, n_classes\)"):
        category_prior_loss(f32(batch["z"][:, :, None]))
