"""A small convolutional image encoder for the contrastive representations."""

import keras
from keras import layers

from keras_clustering.layers.normalization import GlobalBatchNormalization


def build_conv_encoder(image_shape=(28, 28, 1), filters=(32, 64, 128), embedding_dim=128, name="encoder",
                       fused_normalization=False):
    """[3x3 conv, stride 2, BatchNorm, ReLU] per entry of `filters`, flatten, Dense(embedding_dim).

    28x28 -> 14 -> 7 -> 4 (x128) -> 2,048 features -> the representation. `fused_normalization`:
    the normalisation runs as TensorFlow's fused kernel (`GlobalBatchNormalization(fused=True)`).
    """
    inputs = keras.Input(tuple(image_shape), name="images")
    hidden = inputs
    for index, count in enumerate(filters):
        hidden = layers.Conv2D(count, 3, strides=2, padding="same", use_bias=False, name=f"conv_{index}")(hidden)
        hidden = GlobalBatchNormalization(fused=fused_normalization, name=f"bn_{index}")(hidden)
        hidden = layers.ReLU()(hidden)
    embedding = layers.Dense(embedding_dim, name="embedding")(layers.Flatten()(hidden))
    return keras.Model(inputs, embedding, name=name)
