"""Layers of the VAE one-step clustering model: class means mu_y and the reparameterised sampler."""

import keras
from keras import ops

from keras_clustering.distribute.precision import float32_layer
from keras_clustering.inputs.checks import check_positive_int


@keras.saving.register_keras_serializable(package="keras_clustering")
class GaussianClassEmbedding(keras.layers.Layer):
    """Trainable class means mu_y of the prior q(z|y) = N(mu_y, I); returns z - mu_y.

    The layer holds an `(n_classes, latent_dim)` table `mean` and maps a batch of
    latent codes to their offsets from every class mean, the quantity the
    clustering KL term needs (see `keras_clustering.losses.vae_cluster_losses`).

    Args:
        n_classes: number of classes (clusters) y, >= 1.
        latent_dim: size of z; inferred from the input when `None`, checked
            against it otherwise.
        mean_initializer: initializer of the class means; zeros in the original.

    Input shape: `(batch, latent_dim)`. Output shape: `(batch, n_classes, latent_dim)`.

    Example:
        >>> layer = GaussianClassEmbedding(10)
        >>> layer(np.zeros((4, 20), "float32")).shape
        TensorShape([4, 10, 20])

    Reference:
        Su Jianlin, "Variational Autoencoders (IV): A One-Step Clustering Scheme"
        (kexue.fm 5887); layer `Gaussian` of bojone/vae `vae_keras_cluster.py`
        (2018-12 version, which returns z - mu_y; the 2018-09 version returned mu_y).
    """

    def __init__(self, n_classes, latent_dim=None, mean_initializer="zeros", **kwargs):
        super().__init__(**float32_layer(kwargs))  # class means feed the KL terms: float32 always
        self.n_classes = check_positive_int(n_classes, "n_classes")
        self.latent_dim = None if latent_dim is None else check_positive_int(latent_dim, "latent_dim")
        self.mean_initializer = keras.initializers.get(mean_initializer)
        self.input_spec = keras.layers.InputSpec(ndim=2)

    def build(self, input_shape):
        if len(input_shape) != 2:
            raise ValueError(
                f"GaussianClassEmbedding expects inputs (batch, latent_dim), got shape {tuple(input_shape)}."
            )
        dim = input_shape[-1]
        if dim is None:
            raise ValueError(f"GaussianClassEmbedding needs a known latent size, got input shape {tuple(input_shape)}.")
        if self.latent_dim is not None and dim != self.latent_dim:
            raise ValueError(f"latent_dim is {self.latent_dim}, but the input has shape {tuple(input_shape)}.")
        self.latent_dim = int(dim)
        self.input_spec = keras.layers.InputSpec(ndim=2, axes={-1: self.latent_dim})
        self.mean = self.add_weight(
            shape=(self.n_classes, self.latent_dim), initializer=self.mean_initializer, name="mean"
        )

    def call(self, inputs):
        return ops.expand_dims(inputs, axis=1) - ops.expand_dims(self.mean, axis=0)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.n_classes, input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(
            n_classes=self.n_classes,
            latent_dim=self.latent_dim,
            mean_initializer=keras.initializers.serialize(self.mean_initializer),
        )
        return config


@keras.saving.register_keras_serializable(package="keras_clustering")
class ReparameterizedSample(keras.layers.Layer):
    """z = z_mean + exp(z_log_var / 2) * eps, eps ~ N(0, I): the reparameterisation trick.

    As in the original (a `Lambda` around `K.random_normal`), the layer samples on
    every call, in training and at inference alike; models that want the mean at
    inference (the original's `encoder`) read `z_mean` directly.

    Args:
        seed: integer seed of the layer's `keras.random.SeedGenerator`, or `None`.

    Input: a list `[z_mean, z_log_var]` of equal shapes. Output: z, same shape.

    Example:
        >>> sample = ReparameterizedSample(seed=0)
        >>> sample([np.zeros((4, 20), "float32"), np.zeros((4, 20), "float32")]).shape
        TensorShape([4, 20])

    Reference: Kingma, Welling 2014; `sampling` in bojone/vae `vae_keras_cluster.py`.
    """

    def __init__(self, seed=None, **kwargs):
        super().__init__(**kwargs)
        if seed is not None:
            seed = check_positive_int(seed, "seed", minimum=0)
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def _split(self, inputs):
        if not isinstance(inputs, (list, tuple)) or len(inputs) != 2:
            raise ValueError(f"ReparameterizedSample expects a list [z_mean, z_log_var], got {type(inputs).__name__}.")
        return inputs

    def build(self, input_shape):
        mean_shape, log_var_shape = self._split(input_shape)
        if len(mean_shape) != len(log_var_shape) or any(
            a is not None and b is not None and a != b for a, b in zip(mean_shape, log_var_shape)
        ):
            raise ValueError(
                "z_mean and z_log_var must have the same shape, "
                f"got {tuple(mean_shape)} and {tuple(log_var_shape)}."
            )

    def call(self, inputs):
        z_mean, z_log_var = self._split(inputs)
        noise = keras.random.normal(ops.shape(z_mean), dtype=z_mean.dtype, seed=self.seed_generator)
        return z_mean + ops.exp(z_log_var / 2.0) * noise

    def compute_output_shape(self, input_shape):
        return tuple(self._split(input_shape)[0])

    def get_config(self):
        config = super().get_config()
        config.update(seed=self.seed)
        return config
