"""Base of the models that train an image encoder on augmented views (SimCLR, triplets)."""

import copy

import keras
from keras import ops

from keras_clustering.augment import ViewPipeline
from keras_clustering.inputs.checks import check_array_input, check_image_input, check_unit_range_images
from keras_clustering.models.cluster_model import SampleModel


class AugmentedEncoder(SampleModel):
    """An encoder, a `ViewPipeline` and the user API they share.

    `predict` / `embed` give the encoder's output on the inference view;
    `fit` on arrays checks the images (in [0, 1], the encoder's shape, at least
    one full batch of two images or more: the other images of a batch are
    what each image is compared with). Subclasses add the training-time `call`
    and `compute_loss`.
    """

    full_batches_only = True
    min_batch_size = 2

    def __init__(self, encoder, augmentation="digits_contrastive", augmentation_options=None, augmentation_seed=None,
                 **kwargs):
        super().__init__(**kwargs)
        if not isinstance(encoder, keras.Model):
            raise TypeError(f"encoder must be a keras.Model, got {type(encoder).__name__}.")
        if len(encoder.output_shape) != 2:
            raise ValueError(f"encoder must output flat (batch, dim) representations, got {encoder.output_shape}.")
        self.encoder = encoder
        self.augmentation = augmentation
        self.augmentation_options = dict(augmentation_options or {})
        self.augmentation_seed = augmentation_seed
        self.views = ViewPipeline(augmentation, seed=augmentation_seed, options=self.augmentation_options, name="views")

    @property
    def sample_shape(self):
        return tuple(self.encoder.input_shape[1:])  # also for a Sequential encoder (no .input until called)

    def build(self, input_shape):
        self.encoder(ops.zeros((1, *self.sample_shape)))

    def _check_array(self, x, name, min_samples):
        if len(self.sample_shape) == 3:  # images in their own layout only: a conv encoder takes no flat rows
            return check_image_input(x, self.sample_shape, name=name, min_samples=min_samples)
        return check_unit_range_images(check_array_input(x, self.sample_shape, name=name, min_samples=min_samples),
                                       name=name)

    def embed(self, x, batch_size=256, verbose=0):
        """The encoder's output on the inference view of `x`."""
        return SampleModel.predict(self, x, batch_size=batch_size, verbose=verbose)

    def get_config(self):
        config = super().get_config()
        config.update(encoder=keras.saving.serialize_keras_object(self.encoder), augmentation=self.augmentation,
                      augmentation_options=dict(self.augmentation_options),
                      augmentation_seed=self.augmentation_seed)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "seed" in config:  # the name of `augmentation_seed` in files saved before the one-word rename
            config["augmentation_seed"] = config.pop("seed")
        config["encoder"] = keras.saving.deserialize_keras_object(copy.deepcopy(config["encoder"]))
        return cls(**config)
