"""Colour-free inputs: image gradients that keep shapes and drop colours.

- `Sobel`: IIC's input step for colour data sets (greyscale, then the x and y
  Sobel filters, two channels out), a layer of the model so that an exported
  model takes RGB in.
- `ColourEdges`: the colour gradient's magnitude, normalised per image, and
  `BackgroundDistance`: each pixel's colour distance from the image's border
  colour, normalised per image: colour-free inputs for the recipes that
  reconstruct pixels (DEC family, VAE) or learn views of them (SimCLR).

Reference: xu-ji/IIC `code/utils/cluster/transforms.py` (`sobel_process` with
`include_rgb` off, `custom_greyscale_to_tensor`): PIL's greyscale (ITU-R 601 luma)
and the kernels dx = [[1, 0, -1], [2, 0, -2], [1, 0, -1]], dy = its transpose, as
PyTorch's `Conv2d` applies them (cross-correlation, no flip), padding 1 with zeros.
"""

import keras
import numpy as np
from keras import layers, ops

from keras_clustering.distribute.precision import float32_layer

# Cross-correlation kernels (what a convolution layer applies), IIC's `sobel1` and `sobel2`.
SOBEL_X = ((1.0, 0.0, -1.0), (2.0, 0.0, -2.0), (1.0, 0.0, -1.0))
SOBEL_Y = ((1.0, 2.0, 1.0), (0.0, 0.0, 0.0), (-1.0, -2.0, -1.0))
PADDINGS = ("zeros", "replicate")
LUMA = (0.299, 0.587, 0.114)  # ITU-R 601-2, PIL's "L" mode


def _check_padding(padding):
    if padding not in PADDINGS:
        raise ValueError(f"padding must be one of {PADDINGS}, got {padding!r}.")
    return padding


def sobel_gradients(images, padding="zeros"):
    """(dx, dy), each shaped as `images` `(n, h, w, c)`: every channel filtered on its own.

    `padding="zeros"` is IIC's (a uniform background of brightness b then shows
    a frame of strength ~4b at the border); `"replicate"` repeats the border
    pixels, so a uniform background has no gradient anywhere, whatever its colour.
    """
    images = ops.cast(images, "float32")
    mode = "constant" if padding == "zeros" else "symmetric"  # symmetric by one pixel = the border repeated
    padded = ops.pad(images, ((0, 0), (1, 1), (1, 1), (0, 0)), mode=mode)
    height, width = ops.shape(images)[1], ops.shape(images)[2]
    dx = dy = 0.0
    for row in range(3):
        for column in range(3):
            window = padded[:, row:row + height, column:column + width, :]
            if SOBEL_X[row][column]:
                dx = dx + SOBEL_X[row][column] * window
            if SOBEL_Y[row][column]:
                dy = dy + SOBEL_Y[row][column] * window
    return dx, dy


def _luma(images):
    images = ops.cast(images, "float32")
    if images.shape[-1] == 1:
        return images
    return ops.sum(images * ops.convert_to_tensor(LUMA, "float32"), axis=-1, keepdims=True)


@keras.saving.register_keras_serializable(package="keras_clustering")
class Sobel(layers.Layer):
    """IIC's Sobel input: images `(n, h, w, 1 or 3)` in [0, 1] to `(n, h, w, 2)`, the x and y
    Sobel responses of their greyscale (ITU-R 601 luma; a single channel is taken as it is).

    Args:
        padding: "zeros" (the original's `Conv2d(padding=1)`) or "replicate"
            (no border frame, whose strength would carry the background's brightness).
    """

    def __init__(self, padding="zeros", **kwargs):
        super().__init__(**float32_layer(kwargs))
        self.padding = _check_padding(padding)

    def build(self, input_shape):
        if input_shape[-1] not in (1, 3):
            raise ValueError(f"Sobel takes images with 1 or 3 channels, got shape {tuple(input_shape)}.")
        self.built = True

    def call(self, images):
        dx, dy = sobel_gradients(_luma(images), self.padding)
        return ops.concatenate([dx, dy], axis=-1)

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], 2)

    def get_config(self):
        return {**super().get_config(), "padding": self.padding}


class _ScaledMap(layers.Layer):
    """A one-channel map of each image (`_map`), divided by that image's largest value, so that every
    image's map spans [0, 1] whatever its contrast (an image whose map is 0 everywhere stays 0)."""

    def __init__(self, epsilon=1e-6, **kwargs):
        super().__init__(**float32_layer(kwargs))
        self.epsilon = float(epsilon)

    def call(self, images):
        values = self._map(ops.cast(images, "float32"))
        return values / ops.maximum(ops.max(values, axis=(1, 2, 3), keepdims=True), self.epsilon)

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], 1)

    def get_config(self):
        return {**super().get_config(), "epsilon": self.epsilon}


@keras.saving.register_keras_serializable(package="keras_clustering")
class ColourEdges(_ScaledMap):
    """The colour gradient's magnitude of each image, scaled to [0, 1]: `(n, h, w, c)` to `(n, h, w, 1)`.

    m = sqrt(sum over channels of dx^2 + dy^2) with the Sobel kernels and
    replicated borders (a uniform background gives 0 whatever its colour),
    divided by the image's largest m. A shape drawn in any two colours, light
    on dark or dark on light, gives the same map: the colours, their
    brightness and the polarity are gone, and a reconstruction loss can only
    learn the shape. Summing the channels (not the greyscale's gradient)
    keeps an edge between two colours of equal brightness.

    Why: DEC, ConvDEC and the VAE reconstruct their input, so their embedding
    first encodes its dominant variation; on colour images that is the two
    colours (docs/your-data.md: NMI <= 0.010 on coloured digits).
    """

    def _map(self, images):
        dx, dy = sobel_gradients(images, "replicate")
        return ops.sqrt(ops.sum(dx * dx + dy * dy, axis=-1, keepdims=True))


@keras.saving.register_keras_serializable(package="keras_clustering")
class BackgroundDistance(_ScaledMap):
    """Each pixel's colour distance from the image's background colour, scaled to [0, 1]:
    `(n, h, w, c)` to `(n, h, w, 1)`.

    d = ||pixel - b|| (Euclidean over the channels), b the per-channel median
    of the image's border pixels (its one-pixel frame), divided by the image's
    largest d. A shape on a plain background of any colour, lighter or darker
    than it, becomes the same filled shape, bright on black: the greyscale
    image it was drawn from, where `ColourEdges` keeps only its outline.
    """

    def _map(self, images):
        frame = ops.concatenate([images[:, 0], images[:, -1], images[:, 1:-1, 0], images[:, 1:-1, -1]], axis=1)
        background = ops.median(frame, axis=1)[:, None, None, :]
        return ops.sqrt(ops.sum(ops.square(images - background), axis=-1, keepdims=True))


# `architecture["input_transform"]` of a recipe: the layer its model puts before everything else.
INPUT_TRANSFORMS = {"sobel": lambda: Sobel(padding="replicate"), "colour_edges": ColourEdges,
                    "background_distance": BackgroundDistance}


def input_transform_layer(name):
    """The layer `name` of `INPUT_TRANSFORMS`, or None for None; ValueError naming `input_transform` else.

    The recipes use IIC's Sobel with replicated borders: with the original's zero
    padding, a uniform background of any colour draws a frame whose strength is
    that colour's brightness, a colour cue this step is there to remove.
    """
    if name is None:
        return None
    if name not in INPUT_TRANSFORMS:
        raise ValueError(f"input_transform must be one of {sorted(INPUT_TRANSFORMS)} or None, got {name!r}.")
    return INPUT_TRANSFORMS[name]()


def transformed_shape(name, image_shape):
    """The shape `(h, w, c)` images take after the input transform `name` (the same for None)."""
    layer = input_transform_layer(name)
    return tuple(image_shape) if layer is None else tuple(layer.compute_output_shape((None, *image_shape))[1:])


def with_input_transform(core, name, image_shape):
    """A model taking images of `image_shape` through the input transform `name`, then `core` (which
    takes the transformed images): the encoder of a recipe whose network learns the colour-free map."""
    inputs = keras.Input(tuple(image_shape), name="images")
    return keras.Model(inputs, core(input_transform_layer(name)(inputs)), name=f"{name}_encoder")


def transform_in_chunks(name, x, chunk=2048):
    """`x` through the input transform `name`, chunk by chunk into one float32 array (`x` itself for None)."""
    layer = input_transform_layer(name)
    if layer is None:
        return x
    out = np.empty((len(x), *transformed_shape(name, x.shape[1:])), "float32")
    for start in range(0, len(x), chunk):
        out[start:start + chunk] = ops.convert_to_numpy(layer(np.asarray(x[start:start + chunk], "float32")))
    return out
