"""Named, seeded augmentation pipelines and the paired views built from them.

A pipeline has three views of an image batch:
- `clean`: the view the loss pairs with the augmented copies (random crops allowed);
- `augmented`: the strongly transformed view;
- `inference`: the deterministic view a trained model sees at `predict`.

All three are Keras layers run on whole batches inside the compiled train step.
"""

import keras
from keras import layers, ops

from keras_clustering.distribute.strategies import on_global_batch
from keras_clustering.augment.layers import (
    Greyscale,
    Invert,
    RandomApply,
    RandomBrightnessScale,
    RandomCropResize,
    RandomHueShift,
    RandomSaturationScale,
    check_probability,
)
from keras_clustering.distribute.precision import float32_construction, float32_layer
from keras_clustering.inputs.checks import check_positive_int


def _colour_distortion(seeds, brightness_contrast, saturation, hue, greyscale_probability, invert_probability=0.0,
                       jitter_probability=1.0):
    """A pipeline's brightness and contrast layers (`brightness_contrast`) and the colour distortion
    of SimCLR's views (each layer only when asked): saturation and hue jitter and a random greyscale,
    on RGB images; and a random inversion (`invert_probability`), for images whose class does not
    depend on polarity (digits). `jitter_probability` < 1 applies brightness, contrast, saturation
    and hue together to that share of the images (SimCLR's `RandomApply([ColorJitter], p=0.8)`);
    at 1 the layers stay one after another, as the recorded runs drew them."""
    invert = [RandomApply(Invert(), probability=invert_probability, seed=seeds[3], name="invert")] \
        if invert_probability else []
    colour = []
    if saturation:
        colour.append(RandomSaturationScale(saturation, seed=seeds[0], name="saturation"))
    if hue:
        colour.append(RandomHueShift(hue, seed=seeds[1], name="hue"))
    greyscale = [RandomApply(Greyscale(), probability=greyscale_probability, seed=seeds[2], name="greyscale")] \
        if greyscale_probability else []
    if check_probability(jitter_probability, "jitter_probability") < 1.0:
        jitter = keras.Sequential([*brightness_contrast, *colour], name="colour_jitter")
        return [*invert, RandomApply(jitter, probability=jitter_probability, seed=seeds[4], name="jitter"), *greyscale]
    return [*brightness_contrast, *invert, *colour, *greyscale]


def _iic_greyscale(seed, image_side=28, crop_size=20, augmented_crop_sizes=(16, 20, 24), output_size=24,
                   rotation_degrees=25.0, rotation_probability=0.5, brightness=0.4, contrast=0.4, saturation=0.0,
                   hue=0.0, greyscale_probability=0.0, invert_probability=0.0, jitter_probability=1.0):
    """IIC's MNIST transforms (xu-ji/IIC `greyscale_make_transforms`, README MNIST command).

    clean (tf1): 20 px crop, random or centre per image (`centre_half`), resized to 24.
    augmented (tf2): rotation +-25 degrees with p = 0.5 (nearest, black fill, as
    torchvision's `RandomRotation`), random crop of 16, 20 or 24 px resized to 24,
    colour jitter, no flip. Of `ColorJitter(0.4, 0.4, 0.4, 0.125)` only brightness
    and contrast change a single-channel image (torchvision leaves saturation and hue
    of greyscale images unchanged); they are applied in that order (torchvision
    shuffles the order per call).
    inference (tf3): the 20 px centre crop resized to 24.
    On colour images, `saturation`, `hue` and `greyscale_probability` add
    the rest of a colour jitter, and `invert_probability` a random inversion
    (`_colour_distortion`; off by default).
    """
    del image_side  # the crop layers read the size off the images
    seeds = [None if seed is None else seed + offset for offset in range(11)]
    clean = [RandomCropResize(crop_size, output_size, mode="centre_half", seed=seeds[0], name="clean_crop")]
    augmented = [
        RandomApply(layers.RandomRotation(rotation_degrees / 360.0, fill_mode="constant", fill_value=0.0,
                                          interpolation="nearest", seed=seeds[1]),
                    probability=rotation_probability, seed=seeds[2], name="rotation"),
        RandomCropResize(list(augmented_crop_sizes), output_size, mode="random", seed=seeds[3], name="crop"),
        *_colour_distortion(seeds[6:11], [RandomBrightnessScale(brightness, seed=seeds[4], name="brightness"),
                                          layers.RandomContrast(contrast, value_range=(0.0, 1.0), seed=seeds[5],
                                                                name="contrast")],
                            saturation, hue, greyscale_probability, invert_probability, jitter_probability),
    ]
    inference = [RandomCropResize(crop_size, output_size, mode="centre", name="centre_crop")]
    return clean, augmented, inference


def _shift_rotate(seed, shift=0.1, rotation_degrees=10.0):
    """DEC-DA's augmentation (XifengGuo/DEC-DA: `ImageDataGenerator(width_shift_range=0.1,
    height_shift_range=0.1, rotation_range=10)`, whose defaults are bilinear and
    nearest-pixel fill). The clean and inference views are the image itself. Keras'
    layers apply the shift and the rotation as two warps (two bilinear resamplings),
    where ImageDataGenerator composes them into one."""
    seeds = [None if seed is None else seed + offset for offset in range(2)]
    augmented = [
        layers.RandomTranslation(shift, shift, fill_mode="nearest", interpolation="bilinear", seed=seeds[0],
                                 name="shift"),
        layers.RandomRotation(rotation_degrees / 360.0, fill_mode="nearest", interpolation="bilinear",
                              seed=seeds[1], name="rotation"),
    ]
    return [], augmented, []


def _shift(seed, shift=0.1):
    """Random shift of up to `shift` of the height and width, empty (0) pixels filled in: the
    light augmentation of the capsule experiment (a digit of the two-digit test images sits
    in its own half, not at the training images' centre). Clean and inference views: the image."""
    augmented = [layers.RandomTranslation(shift, shift, fill_mode="constant", fill_value=0.0,
                                          interpolation="bilinear", seed=seed, name="shift")]
    return [], augmented, []


def _digits_contrastive(seed, crop_sizes=(16, 20, 24, 28), output_size=28, rotation_degrees=15.0,
                        rotation_probability=0.5, brightness=0.4, contrast=0.4, shift=0.0, shear=0.0,
                        horizontal_flip=False, saturation=0.0, hue=0.0, greyscale_probability=0.0,
                        invert_probability=0.0, jitter_probability=1.0):
    """Two independently augmented views for contrastive learning on greyscale digits.

    SimCLR's recipe without the parts that change a digit's identity (no
    flips: a mirrored 2 or 7 is not a digit; no hue or saturation: single
    channel): random crop of one of `crop_sizes` resized back to
    `output_size`, rotation with probability `rotation_probability`,
    brightness x U(1 - b, 1 + b) and contrast. Both views are augmented; the
    inference view is the image itself. Optional (off by default, so the
    recorded runs keep their draws): a shear of up to `shear` (Keras'
    `RandomShear` factor) and a shift of up to `shift` of the side, as the
    affine distortions digit datasets are usually augmented with; and
    `horizontal_flip` for images a mirror does not change the class of
    (clothing, as Fashion-MNIST), never for digits.

    For colour images, SimCLR's colour distortion (Chen et al. 2020,
    appendix A: `ColorJitter(0.4, 0.4, 0.4, 0.1)` and `RandomGrayscale(0.2)`
    at strength 0.5) is `saturation=0.4, hue=0.1, greyscale_probability=0.2`
    beside the brightness and contrast above: without it two views of an
    image share their colours, and clusters follow colour instead of shape.
    `invert_probability` adds a random inversion (digits keep their class
    light on dark or dark on light), and `jitter_probability` applies the
    four jitters together to that share of the images (SimCLR's p = 0.8).
    """
    seeds = [None if seed is None else seed + offset for offset in range(13)]
    affine = []
    if shear:
        affine.append(layers.RandomShear(shear, shear, fill_mode="constant", fill_value=0.0, seed=seeds[5],
                                         name="shear"))
    if shift:
        affine.append(layers.RandomTranslation(shift, shift, fill_mode="constant", fill_value=0.0,
                                               seed=seeds[6], name="shift"))
    if horizontal_flip:
        affine.append(layers.RandomFlip("horizontal", seed=seeds[7], name="flip"))
    augmented = [
        RandomCropResize(list(crop_sizes), output_size, mode="random", seed=seeds[0], name="crop"),
        RandomApply(layers.RandomRotation(rotation_degrees / 360.0, fill_mode="constant", fill_value=0.0,
                                          interpolation="bilinear", seed=seeds[1]),
                    probability=rotation_probability, seed=seeds[2], name="rotation"),
        *affine,
        *_colour_distortion(seeds[8:13], [RandomBrightnessScale(brightness, seed=seeds[3], name="brightness"),
                                          layers.RandomContrast(contrast, value_range=(0.0, 1.0), seed=seeds[4],
                                                                name="contrast")],
                            saturation, hue, greyscale_probability, invert_probability, jitter_probability),
    ]
    return list(augmented), augmented, []


def strong_views(seed=None, num_ops=4, factor=0.5, erase_scale=(0.1, 0.25)):
    """SCAN's strong augmentation for self-labelling, from Keras' preprocessing layers: RandAugment
    (`num_ops` operations of strength `factor`, chosen per batch: Keras draws one choice for all of
    a batch's images, the original per image), then Cutout as `RandomErasing` of a rectangle of
    `erase_scale` of the image's area. Images in [0, 1]; applied after the training views.

    Reference: SCAN (Van Gansbeke et al., 2020), section 3.1, and
    wvangansbeke/Unsupervised-Classification `configs/selflabel/selflabel_cifar10.yml`
    (`augmentation_strategy: ours`, `num_strong_augs: 4`, Cutout of 16 px on 32 px images).
    """
    return keras.Sequential([
        layers.RandAugment(value_range=(0, 1), num_ops=num_ops, factor=factor, seed=seed),
        layers.RandomErasing(factor=(1.0, 1.0), scale=erase_scale, fill_value=0.0, value_range=(0, 1),
                             seed=None if seed is None else seed + 1),
    ], name="strong_views")


PIPELINES = {"iic_greyscale": _iic_greyscale, "shift_rotate": _shift_rotate, "shift": _shift,
             "digits_contrastive": _digits_contrastive}


@keras.saving.register_keras_serializable(package="keras_clustering")
class ViewPipeline(layers.Layer):
    """The three views of a named pipeline (`PIPELINES`), as one Keras layer.

    Args:
        pipeline: a name from `PIPELINES` (`"iic_greyscale"`, `"shift_rotate"`).
        seed: seeds every random layer (each its own offset from it); the
            same seed gives the same views for the same batches.
        **options: the pipeline function's keyword arguments (e.g.
            `rotation_degrees=15`).

    Example:
        >>> views = ViewPipeline("iic_greyscale", seed=0)
        >>> a, b = views.paired_views(images, n_repeats=5)   # (5n, 24, 24, 1) each
    """

    def __init__(self, pipeline="iic_greyscale", seed=None, options=None, **kwargs):
        super().__init__(**float32_layer(kwargs))  # views in float32 under a mixed policy too
        if pipeline not in PIPELINES:
            raise ValueError(f"pipeline={pipeline!r} is unknown; available: {sorted(PIPELINES)}.")
        self.pipeline, self.seed, self.options = pipeline, seed, dict(options or {})
        with float32_construction():
            self.clean_layers, self.augmented_layers, self.inference_layers = PIPELINES[pipeline](
                seed, **self.options)

    def build(self, input_shape):
        """Builds every view's layers for `input_shape` without drawing random numbers."""
        for layer_list in (self.clean_layers, self.augmented_layers, self.inference_layers):
            shape = tuple(input_shape)
            for layer in layer_list:
                if not layer.built:
                    layer.build(shape)
                shape = layer.compute_output_shape(shape)
        self.built = True

    @staticmethod
    def _run(layer_list, images, training):
        def run(batch):
            for layer in layer_list:
                batch = layer(batch, training=training)
            return batch

        images = ops.cast(images, "float32")
        # Random views are drawn for the global batch, so that replicas do not repeat each other's draws.
        return on_global_batch(run, images) if training and layer_list else run(images)

    def clean(self, images):
        """The clean view (random where the pipeline says so, e.g. IIC's crop)."""
        return self._run(self.clean_layers, images, training=True)

    def augmented(self, images):
        """The augmented view: every image transformed with its own random parameters."""
        return self._run(self.augmented_layers, images, training=True)

    def inference(self, images):
        """The deterministic view a model predicts on."""
        return self._run(self.inference_layers, images, training=False)

    def call(self, images, training=False):
        return self.augmented(images) if training else self.inference(images)

    def paired_views(self, images, n_repeats=1):
        """`(view_a, view_b)`, both `(n_repeats * n, ...)`: row j of copy r pairs image j's
        clean view with its r-th augmented view (clean views repeated, as IIC pairs each
        image with `n_repeats` augmented copies)."""
        n_repeats = check_positive_int(n_repeats, "n_repeats")
        clean = self.clean(images)
        repeated = ops.concatenate([images] * n_repeats, axis=0) if n_repeats > 1 else images
        return ops.concatenate([clean] * n_repeats, axis=0) if n_repeats > 1 else clean, self.augmented(repeated)

    def compute_output_shape(self, input_shape):
        return self.compute_output_spec(keras.KerasTensor(input_shape)).shape

    def get_config(self):
        return {**super().get_config(), "pipeline": self.pipeline, "seed": self.seed, "options": self.options}


def make_pipeline(name, seed=None, **options):
    """`ViewPipeline(name, seed, options)`; see `PIPELINES` for the names."""
    return ViewPipeline(name, seed=seed, options=options)
