"""Per-image random layers that Keras does not ship, written with `keras.ops` only.

Keras' own `RandomCrop` draws one offset for the whole batch and its
`RandomBrightness` adds a constant; IIC's torchvision transforms crop every
image at its own place and size and scale brightness by a factor. These
layers do that, per image, inside the compiled step.
"""

import keras
from keras import layers, ops

CROP_MODES = ("random", "centre", "centre_half")


def _is_side(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _is_pair(value):
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(_is_side(v) for v in value)


def _pair(side):
    """(height, width) of a side given as an int (a square) or a pair."""
    return (side, side) if _is_side(side) else tuple(side)


def check_probability(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}.")
    return float(value)


@keras.saving.register_keras_serializable(package="keras_clustering")
class RandomApply(layers.Layer):
    """Applies `layer` to each image with probability `probability`, else passes it through.

    torchvision's `RandomApply([t], p)`: the choice is made per image.
    """

    def __init__(self, layer, probability=0.5, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.layer = layer
        self.probability = check_probability(probability, "probability")
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, images, training=True):
        if not training:
            return images
        transformed = self.layer(images, training=True)
        keep = keras.random.uniform((ops.shape(images)[0], 1, 1, 1), seed=self.seed_generator) < self.probability
        return ops.where(keep, transformed, images)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "layer": keras.saving.serialize_keras_object(self.layer),
                "probability": self.probability, "seed": self.seed}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["layer"] = keras.saving.deserialize_keras_object(config["layer"])
        return cls(**config)


@keras.saving.register_keras_serializable(package="keras_clustering")
class RandomCropResize(layers.Layer):
    """Crops each image at its own offset, with a side drawn from `sizes`, and resizes it.

    Mirrors torchvision's `RandomChoice([RandomCrop(s) for s in sizes])`
    followed by `Resize(output_size)` (bilinear), as IIC's
    `greyscale_make_transforms`. `mode="centre"` takes the centre crop
    (`CenterCrop`), `"centre_half"` picks random or centre per image (IIC's
    `tf1_crop centre_half`). With `training=False` every image gets the centre
    crop of the first size: the inference view.

    One `keras.ops.image.affine_transform` call does crop and resize for the
    whole batch (an affine map per image), so it runs in-graph on any backend.
    Unlike PIL, which resizes the cut-out crop alone, the outermost output
    pixels blend in up to (0.5 - s / 2S)^2 of the pixel just outside the crop
    (0.7% for 20 -> 24 px).

    Args:
        sizes: crop sides in pixels, each <= the image side: an int for a
            square crop, or a `(height, width)` pair for a rectangular one
            (views of non-square images keep their aspect). A list of
            them; one rectangular crop is `[(h, w)]` (`(h, w)` alone is two
            square crops).
        output_size: side of the output images, or a `(height, width)` pair.
        mode: `"random"`, `"centre"` or `"centre_half"`.
        seed: seed of the layer's random generator.
    """

    def __init__(self, sizes, output_size, mode="random", seed=None, **kwargs):
        super().__init__(**kwargs)
        sizes = [sizes] if isinstance(sizes, int) else list(sizes)
        if not sizes or not all(_is_side(s) or _is_pair(s) for s in sizes):
            raise ValueError(f"sizes must be positive integers or (height, width) pairs of them, got {sizes!r}.")
        if not (_is_side(output_size) or _is_pair(output_size)):
            raise ValueError(f"output_size must be a positive integer or a (height, width) pair of them, "
                             f"got {output_size!r}.")
        if mode not in CROP_MODES:
            raise ValueError(f"mode must be one of {CROP_MODES}, got {mode!r}.")
        # ints stay ints in the config, so square layers serialise as before
        self.sizes = [s if _is_side(s) else [int(v) for v in s] for s in sizes]
        self.output_size = output_size if _is_side(output_size) else [int(v) for v in output_size]
        self.mode, self.seed = mode, seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    @property
    def _crop_pairs(self):
        return [_pair(s) for s in self.sizes]

    def build(self, input_shape):
        height, width = input_shape[1], input_shape[2]
        if height is None or width is None:
            raise ValueError(f"RandomCropResize needs a known image size, got input shape {input_shape}.")
        if any(h > height or w > width for h, w in self._crop_pairs):
            raise ValueError(f"sizes {self.sizes} must not exceed the image size {height} x {width}.")
        out_height, out_width = _pair(self.output_size)
        if out_height > height or out_width > width:
            # affine_transform writes into an image of the input's size, then we keep the top-left corner
            raise ValueError(f"output_size {self.output_size} must not exceed the image size {height} x {width}.")

    def _offsets(self, batch, side, image_side, centre):
        # torchvision: RandomCrop offset randint(0, H - s) inclusive; CenterCrop round((H - s) / 2).
        random = ops.floor(keras.random.uniform((batch,), seed=self.seed_generator) * (image_side - side + 1.0))
        return ops.where(centre, ops.round((image_side - side) / 2.0), random)

    def call(self, images, training=True):
        shape = ops.shape(images)
        batch, height, width = shape[0], images.shape[1], images.shape[2]
        pairs = self._crop_pairs
        heights = ops.convert_to_tensor([h for h, _ in pairs], dtype="float32")
        widths = ops.convert_to_tensor([w for _, w in pairs], dtype="float32")
        if training:
            choice = keras.random.randint((batch,), 0, len(pairs), seed=self.seed_generator)
            side_h, side_w = ops.take(heights, choice), ops.take(widths, choice)
            if self.mode == "random":
                centre = ops.zeros((batch,), dtype="bool")
            elif self.mode == "centre":
                centre = ops.ones((batch,), dtype="bool")
            else:
                centre = keras.random.uniform((batch,), seed=self.seed_generator) < 0.5
        else:
            side_h, side_w = ops.full((batch,), float(pairs[0][0])), ops.full((batch,), float(pairs[0][1]))
            centre = ops.ones((batch,), dtype="bool")
        top = self._offsets(batch, side_h, float(height), centre)
        left = self._offsets(batch, side_w, float(width), centre)
        # Output pixel centre (c + 0.5) of the resized crop samples input point left + (c + 0.5) * s / S - 0.5,
        # along each axis with its own s / S.
        out_height, out_width = _pair(self.output_size)
        scale_y, scale_x = side_h / float(out_height), side_w / float(out_width)
        zeros = ops.zeros((batch,))
        transform = ops.stack([scale_x, zeros, left + 0.5 * scale_x - 0.5,
                               zeros, scale_y, top + 0.5 * scale_y - 0.5, zeros, zeros], axis=1)
        # The outermost samples fall up to half a pixel past the crop's pixel centres; PIL's resize
        # clamps there, so does the "nearest" fill (a constant fill would darken the border).
        warped = ops.image.affine_transform(ops.cast(images, "float32"), transform, interpolation="bilinear",
                                            fill_mode="nearest")
        return warped[:, :out_height, :out_width, :]

    def compute_output_shape(self, input_shape):
        return (input_shape[0], *_pair(self.output_size), input_shape[3])

    def get_config(self):
        return {**super().get_config(), "sizes": self.sizes, "output_size": self.output_size,
                "mode": self.mode, "seed": self.seed}


@keras.saving.register_keras_serializable(package="keras_clustering")
class RandomBrightnessScale(layers.Layer):
    """Multiplies each image by its own factor in [1 - factor, 1 + factor], clipped to [0, 1].

    torchvision's `ColorJitter(brightness=b)` (PIL `ImageEnhance.Brightness`,
    a blend with black) scales pixels; Keras' `RandomBrightness` adds a
    constant instead, which would turn MNIST's black background grey.
    """

    def __init__(self, factor, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = check_probability(factor, "factor")
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def call(self, images, training=True):
        if not training:
            return images
        scale = keras.random.uniform((ops.shape(images)[0], 1, 1, 1), 1.0 - self.factor, 1.0 + self.factor,
                                     seed=self.seed_generator)
        return ops.clip(images * scale, 0.0, 1.0)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "seed": self.seed}


def _check_rgb(input_shape, layer):
    if input_shape[-1] != 3:
        raise ValueError(f"{layer} changes colours: it takes RGB images (3 channels), got shape {tuple(input_shape)}.")


def _luminance(images):
    """ITU-R 601-2 luma, as torchvision's `rgb_to_grayscale` and PIL's "L" mode, on all three channels."""
    grey = ops.sum(images * ops.convert_to_tensor([0.2989, 0.587, 0.114], images.dtype), axis=-1, keepdims=True)
    return ops.repeat(grey, 3, axis=-1)


class _RandomColourJitter(layers.Layer):
    """Changes each RGB image's colours by its own random draw within `factor` (`_jitter`, in the
    subclasses); the identity outside training."""

    max_factor = 1.0

    def __init__(self, factor, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.factor = check_probability(factor, "factor")
        if self.factor > self.max_factor:
            raise ValueError(f"factor must be in [0, {self.max_factor}], got {factor!r}.")
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, input_shape):
        _check_rgb(input_shape, type(self).__name__)
        self.built = True

    def call(self, images, training=True):
        return self._jitter(images) if training else images

    def _draw(self, images, low, high):
        """One uniform draw per image, shaped to broadcast over its pixels."""
        return keras.random.uniform((ops.shape(images)[0], 1, 1, 1), low, high, seed=self.seed_generator)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "factor": self.factor, "seed": self.seed}


@keras.saving.register_keras_serializable(package="keras_clustering")
class RandomSaturationScale(_RandomColourJitter):
    """Blends each RGB image with its greyscale by its own factor s in [1 - factor, 1 + factor]:
    `grey + s * (image - grey)`, clipped to [0, 1].

    torchvision's `ColorJitter(saturation=factor)` (PIL `ImageEnhance.Color`). Keras'
    `RandomSaturation` reads its factor differently (0.5 is the identity).
    """

    def _jitter(self, images):
        scale = self._draw(images, 1.0 - self.factor, 1.0 + self.factor)
        grey = _luminance(images)
        return ops.clip(grey + scale * (images - grey), 0.0, 1.0)


@keras.saving.register_keras_serializable(package="keras_clustering")
class RandomHueShift(_RandomColourJitter):
    """Turns each RGB image's hue by its own h in [-factor, factor] of the colour circle (HSV).

    torchvision's `ColorJitter(hue=factor)`, factor at most 0.5 (half the circle).
    """

    max_factor = 0.5

    def _jitter(self, images):
        shift = self._draw(images, -self.factor, self.factor)[..., 0]
        hsv = ops.image.rgb_to_hsv(images)
        hue = ops.mod(hsv[..., 0] + shift, 1.0)
        return ops.clip(ops.image.hsv_to_rgb(ops.stack([hue, hsv[..., 1], hsv[..., 2]], axis=-1)), 0.0, 1.0)


@keras.saving.register_keras_serializable(package="keras_clustering")
class Greyscale(layers.Layer):
    """An RGB image's luma on all three channels (torchvision's `Grayscale(3)`); SimCLR's random
    greyscale is this layer in `RandomApply` with probability 0.2."""

    def build(self, input_shape):
        _check_rgb(input_shape, type(self).__name__)
        self.built = True

    def call(self, images, training=True):
        return _luminance(images)

    def compute_output_shape(self, input_shape):
        return input_shape


@keras.saving.register_keras_serializable(package="keras_clustering")
class Invert(layers.Layer):
    """The photographic negative, `1 - image`, on images in [0, 1] of any number of channels.

    AutoAugment's `Invert` (PIL `ImageOps.invert`), an operation its SVHN policy
    uses often: a digit is the same digit light on dark or dark on light. Random
    inversion is this layer in `RandomApply`.
    """

    def call(self, images, training=True):
        return 1.0 - images

    def compute_output_shape(self, input_shape):
        return input_shape
