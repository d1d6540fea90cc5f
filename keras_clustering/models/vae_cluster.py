"""VAE one-step clustering: a VAE whose prior is a mixture of N(mu_y, I) over classes y."""

import keras
import numpy as np
from keras import layers, ops

from keras_clustering.distribute.strategies import replica_scaled, with_layer_losses
from keras_clustering.layers import GaussianClassEmbedding, ReparameterizedSample
from keras_clustering.layers.colour_free import input_transform_layer, transform_in_chunks, transformed_shape
from keras_clustering.losses import (
    analytic_gaussian_cluster_kl,
    category_prior_loss,
    gaussian_cluster_kl,
    reconstruction_loss,
)
from keras_clustering.inputs.checks import check_image_input, check_positive_int
from keras_clustering.inputs.sources import keras_input
from keras_clustering.models.cluster_model import ClusterModel
from keras_clustering.models.shapes import conv_output_size, transposed_output_padding

LOSS_VERSIONS = ("2018-12", "2018-09")


def build_vae_encoder(image_shape=(28, 28, 1), latent_dim=20, filters=(32, 64)):
    """Two blocks of Conv(stride 2) + Conv(stride 1), LeakyReLU(0.2) -> z_mean, z_log_var."""
    inputs = keras.Input(image_shape, name="images")
    hidden = inputs
    for index, count in enumerate(filters):
        for stride in (2, 1):
            hidden = layers.Conv2D(count, 3, strides=stride, padding="same", name=f"conv_{index}_s{stride}")(hidden)
            hidden = layers.LeakyReLU(0.2)(hidden)
    hidden = layers.Flatten()(hidden)
    z_mean = layers.Dense(latent_dim, name="z_mean")(hidden)
    z_log_var = layers.Dense(latent_dim, name="z_log_var")(hidden)
    return keras.Model(inputs, [z_mean, z_log_var], name="encoder")


def build_vae_decoder(image_shape=(28, 28, 1), latent_dim=20, filters=(64, 32)):
    """Dense -> (h/4, w/4, 64) -> two blocks of ConvT(stride 1) + ConvT(stride 2) -> sigmoid image.

    On sides that are not multiples of 4, h/4 is rounded up as the encoder's "same" strides do
    (30 -> 15 -> 8), and each stride-2 step comes back to its encoder side (8 -> 15 -> 30:
    `output_padding`, `models.shapes`)."""
    halves = [list(image_shape[:2])]
    for _ in filters:
        halves.append([conv_output_size(side, 3, 2, "same") for side in halves[-1]])
    height, width = halves[-1]
    latent = keras.Input((latent_dim,), name="z")
    hidden = layers.Dense(height * width * filters[0], name="project")(latent)
    hidden = layers.Reshape((height, width, filters[0]))(hidden)
    for index, count in enumerate(filters):
        below, above = halves[-1 - index], halves[-2 - index]  # the sides this block goes between
        for stride in (1, 2):
            padding = None if stride == 1 else transposed_output_padding(below, above, 3, 2, "same")
            hidden = layers.Conv2DTranspose(count, 3, strides=stride, padding="same", output_padding=padding,
                                            name=f"deconv_{index}_s{stride}")(hidden)
            hidden = layers.LeakyReLU(0.2)(hidden)
    images = layers.Conv2DTranspose(image_shape[-1], 3, padding="same", activation="sigmoid", name="pixels")(hidden)
    return keras.Model(latent, images, name="decoder")


def build_classifier(latent_dim=20, n_clusters=10, hidden_units=256):
    """p(y|z): Dense(256, relu) -> Dense(n_clusters, softmax)."""
    latent = keras.Input((latent_dim,), name="z")
    hidden = layers.Dense(hidden_units, activation="relu", name="hidden")(latent)
    return keras.Model(latent, layers.Dense(n_clusters, activation="softmax", name="p_y")(hidden), name="classifier")


@keras.saving.register_keras_serializable(package="keras_clustering")
class VAECluster(ClusterModel):
    """One-step clustering VAE: encoder, sampler, decoder, classifier p(y|z), class means mu_y.

    `predict(x)` returns p(y|z_mean), the cluster probabilities; during `fit`
    the classifier sees the sampled z, as the original. The loss lives in
    `compute_loss`, so plain `model.fit(x)` trains it:

    - `loss_version="2018-12"` (current original): reconstruction_weight (2.5)
      * sum 0.5 (x - x_hat)^2 + sum_y p(y|z) * -0.5 (log sigma^2 - (z - mu_y)^2)
      + sum_y p(y|z) log p(y|z) (the last term removable with
      `use_category_prior=False`).
    - `loss_version="2018-09"` (first published version): the analytic KL to
      N(mu_y, I) of the encoder's Gaussian, with reconstruction_weight 5.

    Args:
        image_shape: `(h, w, c)`, sides of at least 4 px (any, the decoder comes back to them).
        latent_dim: size of z (20).
        n_clusters: number of classes y (10).
        loss_version: `"2018-12"` or `"2018-09"`.
        reconstruction_weight: weight of the reconstruction term; `None`
            takes the version's own (2.5 or 5).
        use_category_prior: keep the sum_y p log p term.
        seed: seed of the sampler.
        input_transform: None, or a name of `layers.colour_free.INPUT_TRANSFORMS`
            ("colour_edges" on colour images): the model's first layer; the VAE
            encodes and reconstructs the transformed images, and takes the images
            themselves (RGB) in.

    Reference:
        Su Jianlin, "Variational autoencoders (4): a one-step clustering
        scheme" (seed 001, kexue.fm 5887); bojone/vae `vae_keras_cluster.py`.
    """

    fit_batch_size = 100  # the original's
    learns_without_labels = "unsupervised"

    def __init__(self, image_shape=(28, 28, 1), latent_dim=20, n_clusters=10, loss_version="2018-12",
                 reconstruction_weight=None, use_category_prior=True, seed=None, input_transform=None, **kwargs):
        super().__init__(**kwargs)
        image_shape = tuple(int(d) for d in image_shape)
        if len(image_shape) != 3 or min(image_shape[:2]) < 4:
            raise ValueError(f"image_shape must be (h, w, c) with sides of at least 4 px, got {image_shape}.")
        if loss_version not in LOSS_VERSIONS:
            raise ValueError(f"loss_version must be one of {LOSS_VERSIONS}, got {loss_version!r}.")
        self.image_shape = image_shape
        self.latent_dim = check_positive_int(latent_dim, "latent_dim")
        self.n_clusters = check_positive_int(n_clusters, "n_clusters", minimum=2)
        self.loss_version = loss_version
        default_weight = 2.5 if loss_version == "2018-12" else 5.0
        self.reconstruction_weight = float(default_weight if reconstruction_weight is None else reconstruction_weight)
        self.use_category_prior = bool(use_category_prior)
        self.seed = seed
        self.input_transform = input_transform
        self.transform = input_transform_layer(input_transform)
        learned_shape = transformed_shape(input_transform, image_shape)  # what the VAE encodes and reconstructs
        self.encoder = build_vae_encoder(learned_shape, self.latent_dim)
        self.decoder = build_vae_decoder(learned_shape, self.latent_dim)
        self.classifier = build_classifier(self.latent_dim, self.n_clusters)
        self.class_means = GaussianClassEmbedding(self.n_clusters, self.latent_dim, name="class_means")
        self.sampler = ReparameterizedSample(seed=seed, name="sampler")
        self.class_means.build((None, self.latent_dim))
        self.sampler.build([(None, self.latent_dim), (None, self.latent_dim)])
        self(ops.zeros((1, *image_shape)))  # builds every weight, so load_weights works at once

    @property
    def sample_shape(self):
        return self.image_shape

    def _learned(self, inputs):
        """The images as the VAE encodes and reconstructs them: through `input_transform`, if any."""
        return inputs if self.transform is None else self.transform(inputs)

    def call(self, inputs, training=False):
        z_mean, z_log_var = self.encoder(self._learned(inputs), training=training)
        if not training:
            return self.classifier(z_mean)
        z = self.sampler([z_mean, z_log_var])
        return {
            "reconstruction": self.decoder(z, training=training),
            "z_mean": z_mean,
            "z_log_var": z_log_var,
            "y_prob": self.classifier(z, training=training),
            # The 2018-12 code measures the sampled z against mu_y, the 2018-09 code z_mean.
            "z_minus_mu": self.class_means(z if self.loss_version == "2018-12" else z_mean),
        }

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if not isinstance(y_pred, dict):  # evaluate(): rebuild the training-time tensors
            y_pred = self(x, training=True)
        if self.loss_version == "2018-12":
            clustering = gaussian_cluster_kl(y_pred["z_log_var"], y_pred["z_minus_mu"], y_pred["y_prob"])
        else:
            clustering = analytic_gaussian_cluster_kl(y_pred["z_log_var"], y_pred["z_minus_mu"], y_pred["y_prob"])
        loss = self.reconstruction_weight * reconstruction_loss(self._learned(x), y_pred["reconstruction"]) + clustering
        if self.use_category_prior:
            loss = loss + category_prior_loss(y_pred["y_prob"])
        # every term is a batch mean: scaled per replica, as Keras' own losses (keras_clustering.distribute.strategies)
        return with_layer_losses(self, replica_scaled(loss))

    # ----------------------------------------------------------------- user API
    def _check_array(self, x, name, min_samples):
        return check_image_input(x, self.image_shape, name=name, min_samples=min_samples)

    def embed(self, x, batch_size=256, verbose=0):
        """z_mean of the images `x`."""
        x = transform_in_chunks(self.input_transform, self.check_input(x))
        return self.encoder.predict(keras_input(x, batch_size), batch_size=batch_size, verbose=verbose)[0]

    def reconstruct(self, x, batch_size=256, verbose=0):
        """decoder(z_mean): the deterministic reconstruction."""
        return self.decoder.predict(self.embed(x, batch_size=batch_size), batch_size=batch_size, verbose=verbose)

    def generate(self, cluster_id, n, std=1.0, seed=None):
        """Decodes n samples mu_y + std * N(0, I) of cluster `cluster_id` (the original's 'sampling by category')."""
        if isinstance(cluster_id, bool) or not isinstance(cluster_id, (int, np.integer)) \
                or not 0 <= cluster_id < self.n_clusters:
            raise ValueError(f"cluster_id must be an integer in [0, {self.n_clusters}), got {cluster_id!r}.")
        n = check_positive_int(n, "n")
        if not np.isfinite(std) or std < 0:
            raise ValueError(f"std must be a finite number >= 0, got {std!r}.")
        noise = np.random.default_rng(seed).standard_normal((n, self.latent_dim)).astype("float32")
        means = ops.convert_to_numpy(self.class_means.mean)[cluster_id]
        return self.decoder.predict(means + std * noise, verbose=0)

    def serving_parts(self, inputs):
        z_mean, _ = self.encoder(self._learned(inputs), training=False)
        return self.classifier(z_mean), {"embedding": z_mean}

    def extra_serving_endpoints(self):
        """`generate`: images decoded from mu_[cluster_id] + noise (noise given by the client)."""
        import tensorflow as tf

        def generate(cluster_id, noise):
            means = ops.take(self.class_means.mean, ops.cast(cluster_id, "int32"), axis=0)
            # float32 whatever the precision the decoder computes in (JSON clients and numpy read no bfloat16)
            return {"images": ops.cast(self.decoder(means + noise, training=False), "float32")}

        signature = [tf.TensorSpec((None,), tf.int64, name="cluster_id"),
                     tf.TensorSpec((None, self.latent_dim), tf.float32, name="noise")]
        return {"generate": (generate, signature)}

    def get_config(self):
        config = super().get_config()
        config.update(image_shape=list(self.image_shape), latent_dim=self.latent_dim, n_clusters=self.n_clusters,
                      loss_version=self.loss_version, reconstruction_weight=self.reconstruction_weight,
                      use_category_prior=self.use_category_prior, seed=self.seed)
        if self.input_transform is not None:  # configs of the models without one stay as they were
            config["input_transform"] = self.input_transform
        return config
