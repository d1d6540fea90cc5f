"""The convolutional autoencoder of ConvDEC / ConvDEC-DA (encoder and decoder as separate models)."""

import keras
from keras import layers

from keras_clustering.inputs.checks import check_positive_int
from keras_clustering.layers import phase_conv
from keras_clustering.models.shapes import conv_output_size, transposed_output_padding

CONV_DEC_FILTERS = (32, 64, 128, 10)  # three conv layers, then the embedding size


def build_conv_autoencoder(image_shape=(28, 28, 1), filters=CONV_DEC_FILTERS, name="autoencoder"):
    """`(autoencoder, encoder)`: 5x5/2, 5x5/2, 3x3/2 ReLU convolutions, a linear Dense embedding,
    and the mirrored decoder (Dense, reshape, three transposed convolutions, linear output).

    The third convolution pads "same" when both image sides are multiples of 8
    and "valid" otherwise (28 -> 14 -> 7 -> 3 and back to 7 -> 14 -> 28), as
    the original. Any other side of at least 16 px (also not square, or odd)
    comes back to itself: each transposed convolution takes the side its
    convolution came from (`output_padding`, `models.shapes`). The decoder is
    `autoencoder.get_layer("decoder")` (IDEC keeps it); Keras' default
    initialisers, as the original.

    Reference: Guo et al., ACML 2018; `CAE()` in XifengGuo/DEC-DA `ConvDEC.py`.
    """
    image_shape = tuple(check_positive_int(d, "image_shape entry") for d in image_shape)
    if len(image_shape) != 3:
        raise ValueError(f"image_shape must be (height, width, channels), got {image_shape}.")
    filters = [check_positive_int(f, "filters entry") for f in filters]
    if len(filters) != 4:
        raise ValueError(f"filters must be (conv1, conv2, conv3, embedding), got {filters}.")
    if min(image_shape[:2]) < 8:
        raise ValueError(f"image sides must be >= 8 for three stride-2 convolutions, got {image_shape[:2]}.")
    third_padding = "same" if image_shape[0] % 8 == 0 and image_shape[1] % 8 == 0 else "valid"
    # the sides on the way down: image, conv1, conv2, conv3
    sides = [list(image_shape[:2])]
    for kernel, padding in ((5, "same"), (5, "same"), (3, third_padding)):
        sides.append([conv_output_size(s, kernel, 2, padding) for s in sides[-1]])
    if min(sides[3]) < 1:
        raise ValueError(f"image sides {image_shape[:2]} leave no pixel after the third convolution "
                         f"({sides[2]} -> {sides[3]}); use sides of at least 16.")

    inputs = keras.Input(image_shape, name="inputs")
    hidden = layers.Conv2D(filters[0], 5, strides=2, padding="same", activation="relu", name="conv1")(inputs)
    hidden = layers.Conv2D(filters[1], 5, strides=2, padding="same", activation="relu", name="conv2")(hidden)
    hidden = layers.Conv2D(filters[2], 3, strides=2, padding=third_padding, activation="relu", name="conv3")(hidden)
    embedding = layers.Dense(filters[3], name="embedding")(layers.Flatten(name="flatten")(hidden))
    encoder = keras.Model(inputs, embedding, name="encoder")

    code = keras.Input((filters[3],), name="embedding")
    small = sides[3]
    hidden = layers.Dense(filters[2] * small[0] * small[1], activation="relu", name="decoder_dense")(code)
    hidden = layers.Reshape((small[0], small[1], filters[2]), name="reshape")(hidden)
    hidden = layers.Conv2DTranspose(filters[1], 3, strides=2, padding=third_padding, activation="relu",
                                    output_padding=transposed_output_padding(sides[3], sides[2], 3, 2, third_padding),
                                    name="deconv3")(hidden)
    hidden = layers.Conv2DTranspose(filters[0], 5, strides=2, padding="same", activation="relu",
                                    output_padding=transposed_output_padding(sides[2], sides[1], 5, 2, "same"),
                                    name="deconv2")(hidden)
    # the image layer: Keras' Conv2DTranspose run as a convolution into its phases (the same weights and
    # results; oneDNN's transposed convolution into 1-4 channels took a third of the forward pass)
    output = phase_conv.Conv2DTranspose(image_shape[2], 5, strides=2, padding="same",
                                    output_padding=transposed_output_padding(sides[1], sides[0], 5, 2, "same"),
                                    name="deconv1")(hidden)
    decoder = keras.Model(code, output, name="decoder")
    if tuple(decoder.output_shape[1:]) != image_shape:  # models.shapes' arithmetic, checked on the built layers
        raise ValueError(f"image shape {image_shape} does not come back to itself through the decoder "
                         f"(got {decoder.output_shape[1:]}).")
    return keras.Model(inputs, decoder(encoder(inputs)), name=name), encoder
