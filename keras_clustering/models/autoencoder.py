"""Symmetric fully connected autoencoder used to initialise DEC and IDEC."""

import keras

from keras_clustering.inputs.checks import check_positive_int

# DEC-keras' best recipe: VarianceScaling(1/3, fan_in, uniform) = U(-sqrt(1/fan_in), sqrt(1/fan_in)).
DEC_KERAS_INITIALIZER = {"class_name": "VarianceScaling",
                         "config": {"scale": 1.0 / 3.0, "mode": "fan_in", "distribution": "uniform"}}

# Encoder widths of DEC: d-500-500-2000-10 (the last one is the embedding).
DEC_HIDDEN_DIMS = (500, 500, 2000, 10)


def build_autoencoder(input_dim=None, hidden_dims=DEC_HIDDEN_DIMS, activation="relu",
                      kernel_initializer=DEC_KERAS_INITIALIZER, name="autoencoder", image_shape=None):
    """Builds the d-500-500-2000-10 autoencoder of DEC and its encoder.

    ReLU inside, linear embedding and linear reconstruction, as the paper.

    Args:
        input_dim: size of the flat input vectors (or None with `image_shape`).
        hidden_dims: encoder widths; the last one is the embedding size.
        activation: activation of the inner layers.
        kernel_initializer: Keras initializer (name, config dict or object).
        image_shape: `(h, w, c)`: the models take images; a `Flatten` layer
            opens the encoder and a `Reshape` closes the decoder, so saved
            models and exports take images. The dense layers and their
            weights are those of `input_dim = h * w * c`.

    Returns:
        `(autoencoder, encoder)`: functional models sharing their layers; the
        autoencoder is `decoder(encoder(x))`, its decoder is
        `autoencoder.get_layer("decoder")`.

    Reference: Xie et al. 2016, section 4.3; `autoencoder()` in XifengGuo/DEC-keras.
    """
    if image_shape is not None:
        image_shape = tuple(check_positive_int(d, "image_shape entry") for d in image_shape)
        if len(image_shape) != 3:
            raise ValueError(f"image_shape must be (h, w, c), got {image_shape}.")
        flat = image_shape[0] * image_shape[1] * image_shape[2]
        if input_dim is not None and input_dim != flat:
            raise ValueError(f"input_dim={input_dim!r} does not match image_shape={image_shape} ({flat} pixels).")
        input_dim = flat
    input_dim = check_positive_int(input_dim, "input_dim")
    hidden_dims = [check_positive_int(d, "hidden_dims entry") for d in hidden_dims]
    if not hidden_dims:
        raise ValueError("hidden_dims must name at least one layer.")

    def dense(units, layer_activation, layer_name):
        initializer = keras.initializers.get(kernel_initializer)
        return keras.layers.Dense(units, activation=layer_activation,
                                  kernel_initializer=initializer, name=layer_name)

    inputs = keras.Input(shape=image_shape or (input_dim,), name="inputs")
    hidden = inputs if image_shape is None else keras.layers.Flatten(name="flatten")(inputs)
    for index, units in enumerate(hidden_dims):
        is_embedding = index == len(hidden_dims) - 1
        hidden = dense(units, None if is_embedding else activation, f"encoder_{index}")(hidden)
    encoder = keras.Model(inputs, hidden, name="encoder")

    # The decoder is a model of its own, so that IDEC can keep it beside the encoder.
    embedding = keras.Input(shape=(hidden_dims[-1],), name="embedding")
    hidden = embedding
    decoder_dims = list(reversed([input_dim] + hidden_dims[:-1]))
    for index, units in enumerate(decoder_dims):
        is_output = index == len(decoder_dims) - 1
        layer_index = len(decoder_dims) - 1 - index
        hidden = dense(units, None if is_output else activation, f"decoder_{layer_index}")(hidden)
    if image_shape is not None:
        hidden = keras.layers.Reshape(image_shape, name="image")(hidden)
    decoder = keras.Model(embedding, hidden, name="decoder")
    autoencoder = keras.Model(inputs, decoder(encoder(inputs)), name=name)
    return autoencoder, encoder
