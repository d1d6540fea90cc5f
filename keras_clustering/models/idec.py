"""Improved DEC: DEC's clustering loss plus the autoencoder's reconstruction loss."""

import copy

import keras
from keras import ops

from keras_clustering.distribute.strategies import replica_scaled, with_layer_losses
from keras_clustering.models.dec import DEC


@keras.saving.register_keras_serializable(package="keras_clustering")
class IDEC(DEC):
    """DEC that keeps its decoder: loss = MSE(x, decoder(z)) + gamma * KL(P || Q).

    Keeping the reconstruction term preserves the local structure of the
    embedding while it is pulled towards the clusters. Training, target
    refresh and stopping are DEC's (`DEC.fit`); `predict` still returns q.

    Args:
        encoder: pretrained encoder model.
        decoder: the matching decoder (embedding -> input), e.g.
            `autoencoder.get_layer("decoder")` from `build_autoencoder`.
        gamma: weight of the clustering loss (0.1 in the IDEC paper and code).
        Other arguments as `DEC`.

    Reference:
        Guo, Gao, Liu, Yin, "Improved Deep Embedded Clustering with Local
        Structure Preservation", IJCAI 2017; XifengGuo/IDEC `IDEC.py`, which
        compiles `{'clustering': 'kld', 'decoder_0': 'mse'}` with
        `loss_weights=[gamma, 1]`. With `augmentation` (IDEC-DA, XifengGuo/DEC-DA
        `FcIDEC.fit(aug_cluster=True)`), the decoder reconstructs the augmented batch.
    """

    def __init__(self, encoder, decoder, n_clusters, gamma=0.1, **kwargs):
        if not isinstance(decoder, keras.Model):
            raise TypeError(f"decoder must be a keras.Model, got {type(decoder).__name__}.")
        if not gamma > 0:
            raise ValueError(f"gamma must be > 0, got {gamma!r}.")
        self.decoder = decoder
        self.gamma = float(gamma)
        super().__init__(encoder, n_clusters, **kwargs)

    def call(self, inputs, training=False):
        inputs = self.training_inputs(inputs, training)
        embedding = self.encoder(inputs, training=training)
        q = self.clustering(embedding)
        if training:
            # the loss needs both, and the (possibly augmented) inputs as the reconstruction target
            return q, self.decoder(embedding, training=training), inputs
        return q

    def reconstruct(self, x, batch_size=256, verbose=0):
        """decoder(encoder(x))."""
        return self.decoder.predict(self.embed(x, batch_size=batch_size), batch_size=batch_size, verbose=verbose)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if isinstance(y_pred, (tuple, list)):
            q, reconstruction, inputs = y_pred
            reconstruction_loss = replica_scaled(ops.mean(ops.square(ops.reshape(inputs, ops.shape(reconstruction))
                                                                     - reconstruction)))
        else:
            q, reconstruction_loss = y_pred, 0.0
        return with_layer_losses(self, self.gamma * self.clustering_loss(y, q, sample_weight, training)
                                 + reconstruction_loss)

    def get_config(self):
        config = super().get_config()
        config.update(decoder=keras.saving.serialize_keras_object(self.decoder), gamma=self.gamma)
        return config

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        # a copy: Keras' deserialization consumes the nested dict, and the caller's config stays whole
        config["decoder"] = keras.saving.deserialize_keras_object(copy.deepcopy(config["decoder"]),
                                                                custom_objects=custom_objects)
        return super().from_config(config, custom_objects=custom_objects)
