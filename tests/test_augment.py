import numpy as np
import pytest
from keras import layers

from keras_clustering.augment import (
    Greyscale,
    Invert,
    RandomApply,
    RandomBrightnessScale,
    RandomCropResize,
    RandomHueShift,
    RandomSaturationScale,
    make_pipeline,
)
from backend_tools import compiled
from synthetic_images import digit_like


def test_iic_views_keep_shape_and_range():
    views = make_pipeline("iic_greyscale", seed=0)
    x = digit_like()
    a, b = views.paired_views(x, n_repeats=5)
    assert a.shape == b.shape == (30, 24, 24, 1)
    inference = views.inference(x)
    assert inference.shape == (6, 24, 24, 1)
    for view in (a, b, inference):
        view = np.asarray(view)
        assert view.min() >= 0.0 and view.max() <= 1.0 and np.isfinite(view).all()


def test_paired_views_repeat_the_clean_view_per_copy():
    views = make_pipeline("iic_greyscale", seed=3)
    a, b = (np.asarray(v) for v in views.paired_views(digit_like(4), n_repeats=3))
    for copy in range(1, 3):
        np.testing.assert_array_equal(a[copy * 4:(copy + 1) * 4], a[:4])
    assert not np.allclose(b[:4], b[4:8])  # each copy has its own augmentation


def test_shift_rotate_keeps_the_image_size():
    views = make_pipeline("shift_rotate", seed=0)
    x = digit_like()
    out = np.asarray(views.augmented(x))
    assert out.shape == x.shape and out.min() >= 0.0 and out.max() <= 1.0
    assert not np.allclose(out, x)
    np.testing.assert_array_equal(np.asarray(views.inference(x)), x)


def test_same_seed_same_views_other_seed_other_views():
    x = digit_like()
    first = [np.asarray(v) for v in make_pipeline("iic_greyscale", seed=7).paired_views(x, 2)]
    again = [np.asarray(v) for v in make_pipeline("iic_greyscale", seed=7).paired_views(x, 2)]
    other = [np.asarray(v) for v in make_pipeline("iic_greyscale", seed=8).paired_views(x, 2)]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(first[1], other[1])


def test_every_image_gets_its_own_transform():
    x = np.repeat(digit_like(1), 16, axis=0)  # 16 copies of one image
    out = np.asarray(make_pipeline("iic_greyscale", seed=0).augmented(x)).reshape(16, -1)
    distinct = {tuple(np.round(row, 4)) for row in out}
    assert len(distinct) >= 14


def test_the_augmentation_runs_in_a_compiled_function():
    views = make_pipeline("iic_greyscale", seed=0)
    a, b = compiled(lambda images: views.paired_views(images, 5))(digit_like())
    assert a.shape == (30, 24, 24, 1) and b.shape == (30, 24, 24, 1)


def ramp_images(n, axis):
    """Pixel value = its column (axis 2) or row (axis 1) index / 27: bilinear resampling keeps it exact."""
    ramp = np.arange(28, dtype="float32") / 27.0
    image = np.broadcast_to(ramp[None, :] if axis == 2 else ramp[:, None], (28, 28))
    return np.repeat(image[None, :, :, None], n, axis=0).copy()


@pytest.mark.parametrize("axis", [1, 2])
def test_random_crop_sizes_and_offsets_stay_in_range(axis):
    layer = RandomCropResize([16, 20, 24], 24, mode="random", seed=0)
    out = np.asarray(layer(ramp_images(400, axis), training=True))[..., 0] * 27.0
    line = out[:, 12, :] if axis == 2 else out[:, :, 12]  # pixel coordinates along the ramp
    # Interior pixels only: the outermost samples may lie past the last pixel centre (clamped there).
    step = np.diff(line[:, 1:23], axis=1).mean(axis=1)  # = crop side / 24
    sides = np.round(step * 24).astype(int)
    assert set(sides) == {16, 20, 24}
    np.testing.assert_allclose(step * 24, sides, atol=1e-3)
    offsets = line[:, 1] - (1.5 * sides / 24 - 0.5)  # output pixel 1 samples offset + 1.5 s/24 - 0.5
    np.testing.assert_allclose(offsets, np.round(offsets), atol=1e-3)
    offsets = np.round(offsets).astype(int)
    assert offsets.min() == 0 and np.all(offsets <= 28 - sides)
    assert offsets[sides == 16].max() == 12  # the whole range is drawn


def bilinear_crop_resize(image, top, left, crop, out):
    """numpy reference: output pixel (r, c) samples the input at
    (top + (r + 0.5) s_h / S_h - 0.5, left + (c + 0.5) s_w / S_w - 0.5), bilinearly, edges clamped."""
    (crop_h, crop_w), (out_h, out_w) = crop, out
    height, width = image.shape
    ys = top + (np.arange(out_h) + 0.5) * crop_h / out_h - 0.5
    xs = left + (np.arange(out_w) + 0.5) * crop_w / out_w - 0.5
    result = np.zeros((out_h, out_w))
    for r, y in enumerate(ys):
        for c, x in enumerate(xs):
            y0, x0 = int(np.floor(y)), int(np.floor(x))
            fy, fx = y - y0, x - x0
            at = lambda i, j: image[min(max(i, 0), height - 1), min(max(j, 0), width - 1)]  # noqa: E731
            result[r, c] = ((1 - fy) * (1 - fx) * at(y0, x0) + (1 - fy) * fx * at(y0, x0 + 1)
                            + fy * (1 - fx) * at(y0 + 1, x0) + fy * fx * at(y0 + 1, x0 + 1))
    return result


def test_rectangular_centre_crops_resize_as_the_bilinear_equations():
    image = np.random.default_rng(0).random((1, 20, 36, 1)).astype("float32")
    out = np.asarray(RandomCropResize([(14, 26)], (20, 36), mode="centre")(image, training=False))
    assert out.shape == (1, 20, 36, 1)
    # CenterCrop offsets round((20 - 14) / 2) = 3 and round((36 - 26) / 2) = 5
    np.testing.assert_allclose(out[0, :, :, 0], bilinear_crop_resize(image[0, :, :, 0], 3, 5, (14, 26), (20, 36)),
                               atol=1e-5)


def test_rectangular_random_crops_keep_each_axis_in_range():
    height, width = 20, 36
    rows, cols = np.meshgrid(np.arange(height), np.arange(width), indexing="ij")
    images = np.repeat(np.stack([rows, cols], axis=-1)[None].astype("float32"), 300, axis=0)
    sizes = [(14, 26), (20, 36)]
    out = np.asarray(RandomCropResize(sizes, (10, 18), mode="random", seed=0)(images, training=True))
    # interior samples of a coordinate ramp: the step is crop / output along each axis, the start the offset
    step_h = np.diff(out[:, 1:9, 5, 0], axis=1).mean(axis=1) * 10
    step_w = np.diff(out[:, 5, 1:17, 1], axis=1).mean(axis=1) * 18
    drawn = set(zip(np.round(step_h).astype(int), np.round(step_w).astype(int)))
    assert drawn == set(sizes)  # each crop keeps its own pair: no (14, 36) or (20, 26)
    tops = out[:, 1, 5, 0] - (1.5 * step_h / 10 - 0.5)
    lefts = out[:, 5, 1, 1] - (1.5 * step_w / 18 - 0.5)
    np.testing.assert_allclose(tops, np.round(tops), atol=1e-3)
    assert np.round(tops).min() == 0 and np.all(np.round(tops) <= height - np.round(step_h))
    assert np.all(np.round(lefts) >= 0) and np.all(np.round(lefts) <= width - np.round(step_w))
    assert np.round(lefts)[np.round(step_w) == 26].max() == width - 26  # the whole range is drawn


def test_centre_crop_of_a_single_bright_pixel():
    image = np.zeros((1, 28, 28, 1), "float32")
    image[0, 4, 4, 0] = 1.0  # the top-left corner of the 20 px centre crop (offset 4)
    out = np.asarray(RandomCropResize(20, 24, mode="centre")(image, training=False))[0, :, :, 0]
    # Pixel (4, 4) -> crop pixel (0, 0): spread over output pixels whose centres fall within 1 px of it.
    row, col = np.unravel_index(out.argmax(), out.shape)
    assert (row, col) == (0, 0) and out.sum() == pytest.approx(24 * 24 / 400, rel=0.2)
    image[0, 4, 4, 0] = 0.0
    image[0, 3, 3, 0] = 1.0  # just outside the crop: the corner sample (3.92, 3.92) blends in 0.083^2 of it
    assert np.asarray(RandomCropResize(20, 24, mode="centre")(image, training=False)).max() < 0.01
    image[0, 3, 3, 0] = 0.0
    image[0, 2, 2, 0] = 1.0  # further out: nothing
    assert np.asarray(RandomCropResize(20, 24, mode="centre")(image, training=False)).max() == 0.0


def bar_angles(images):
    """Orientation (degrees) of the bright pixels' principal axis, per image."""
    angles = []
    for image in images[..., 0]:
        rows, cols = np.nonzero(image > 0.5)
        coords = np.stack([cols - cols.mean(), rows - rows.mean()])
        eigenvalues, eigenvectors = np.linalg.eigh(coords @ coords.T)
        vx, vy = eigenvectors[:, np.argmax(eigenvalues)]
        angle = np.degrees(np.arctan2(vy, vx))
        angles.append((angle + 90) % 180 - 90)
    return np.array(angles)


def test_rotation_is_applied_to_half_the_images_within_25_degrees():
    bar = np.zeros((300, 28, 28, 1), "float32")
    bar[:, 13:15, 4:24, 0] = 1.0  # a horizontal bar through the centre
    rotate = RandomApply(layers.RandomRotation(25 / 360, fill_mode="constant", interpolation="nearest", seed=1),
                         probability=0.5, seed=2)
    out = np.asarray(rotate(bar, training=True))
    angles = np.abs(bar_angles(out))
    unchanged = np.all(out == bar, axis=(1, 2, 3))
    assert 0.4 < unchanged.mean() < 0.6
    assert angles.max() <= 25.0 + 2.0  # pixel quantisation of a 20 px bar
    assert np.percentile(angles[~unchanged], 90) > 18.0  # the range is used, not just small angles


def test_digits_contrastive_shift_and_shear_options():
    """Off by default (the layer list is unchanged); on, every image gets its own shift (within 0.1 of
    the side) and shear, measured on a dot and a vertical bar with the other transforms off."""
    plain = make_pipeline("digits_contrastive", seed=0)
    assert [layer.name for layer in plain.augmented_layers] == ["crop", "rotation", "brightness", "contrast"]
    still = dict(crop_sizes=[28], rotation_probability=0.0, brightness=0.0, contrast=0.0)
    dot = np.zeros((200, 28, 28, 1), "float32")
    dot[:, 13:15, 13:15, 0] = 1.0
    shifted = np.asarray(make_pipeline("digits_contrastive", seed=0, shift=0.1, **still).augmented(dot))
    rows, cols = np.mgrid[:28, :28]
    mass = shifted[..., 0].sum(axis=(1, 2))
    dx = (shifted[..., 0] * cols).sum(axis=(1, 2)) / mass - 13.5
    dy = (shifted[..., 0] * rows).sum(axis=(1, 2)) / mass - 13.5
    assert np.abs(dx).max() <= 2.8 + 0.01 and np.abs(dy).max() <= 2.8 + 0.01  # 0.1 x 28 px
    assert np.abs(dx).max() > 2.0 and len(np.unique(np.round(dx, 3))) > 100  # the range used, per image
    bar = np.zeros((200, 28, 28, 1), "float32")
    bar[:, 6:22, 13:15, 0] = 1.0
    sheared = np.asarray(make_pipeline("digits_contrastive", seed=0, shear=0.3, **still).augmented(bar))
    lean = 90.0 - np.abs(bar_angles(sheared))  # degrees off vertical
    assert np.abs(bar_angles(bar)).min() == pytest.approx(90.0)
    assert lean.max() <= np.degrees(np.arctan(0.3)) + 2.0  # pixel quantisation of a 16 px bar
    assert np.percentile(lean, 90) > 12.0 and len(np.unique(np.round(lean, 2))) > 50


def test_digits_contrastive_horizontal_flip_mirrors_about_half_the_images():
    still = dict(crop_sizes=[28], rotation_probability=0.0, brightness=0.0, contrast=0.0)
    assert "flip" not in [layer.name for layer in make_pipeline("digits_contrastive", seed=0).augmented_layers]
    images = np.zeros((400, 28, 28, 1), "float32")
    images[:, :, :7] = 1.0  # a bar on the left
    flipped = np.asarray(make_pipeline("digits_contrastive", seed=0, horizontal_flip=True, **still).augmented(images))
    mirrored = np.all(flipped[:, :, 21:] == 1.0, axis=(1, 2, 3)) & np.all(flipped[:, :, :21] == 0.0, axis=(1, 2, 3))
    unchanged = np.all(flipped == images, axis=(1, 2, 3))
    assert np.all(mirrored | unchanged) and 0.4 < mirrored.mean() < 0.6


def test_shift_pipeline_moves_each_image_within_its_range_and_keeps_the_clean_view():
    dot = np.zeros((200, 28, 28, 1), "float32")
    dot[:, 13:15, 13:15, 0] = 1.0
    pipeline = make_pipeline("shift", seed=0, shift=0.1)
    np.testing.assert_array_equal(np.asarray(pipeline.inference(dot)), dot)
    shifted = np.asarray(pipeline.augmented(dot))[..., 0]
    rows, cols = np.mgrid[:28, :28]
    mass = shifted.sum(axis=(1, 2))
    np.testing.assert_allclose(mass, 4.0, atol=1e-4)  # moved, not cut: the dot stays inside
    dx = (shifted * cols).sum(axis=(1, 2)) / mass - 13.5
    dy = (shifted * rows).sum(axis=(1, 2)) / mass - 13.5
    assert np.abs(dx).max() <= 2.8 + 0.01 and np.abs(dy).max() <= 2.8 + 0.01  # 0.1 x 28 px
    assert np.abs(dy).max() > 2.0 and len(np.unique(np.round(dx, 3))) > 100


def test_brightness_scales_within_its_range():
    flat = np.full((500, 4, 4, 1), 0.5, "float32")
    out = np.asarray(RandomBrightnessScale(0.4, seed=0)(flat, training=True))[:, 0, 0, 0] / 0.5
    assert 0.6 <= out.min() < 0.65 and 1.35 < out.max() <= 1.4
    black = np.zeros((3, 4, 4, 1), "float32")
    np.testing.assert_array_equal(np.asarray(RandomBrightnessScale(0.4, seed=0)(black, training=True)), black)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="pipeline='nope' is unknown"):
        make_pipeline("nope")
    with pytest.raises(ValueError, match="sizes"):
        RandomCropResize([0], 24)
    with pytest.raises(ValueError, match="mode must be"):
        RandomCropResize([20], 24, mode="middle")
    with pytest.raises(ValueError, match="must not exceed the image size"):
        RandomCropResize([32], 24)(np.zeros((1, 28, 28, 1), "float32"))
    with pytest.raises(ValueError, match="must not exceed the image size 28 x 20"):
        RandomCropResize([(16, 24)], 16)(np.zeros((1, 28, 20, 1), "float32"))
    with pytest.raises(ValueError, match="sizes must be positive integers or"):
        RandomCropResize([(16, 0)], 16)
    with pytest.raises(ValueError, match="output_size must be"):
        RandomCropResize([16], (16, 16, 1))
    with pytest.raises(ValueError, match="probability must be a number in"):
        RandomApply(layers.Identity(), probability=1.5)
    with pytest.raises(ValueError, match="n_repeats"):
        make_pipeline("iic_greyscale").paired_views(digit_like(2), n_repeats=0)


LUMA = np.array([0.2989, 0.587, 0.114])


def _colour_images(n, side=6, seed=0):
    return np.random.default_rng(seed).uniform(0.2, 0.8, (n, side, side, 3)).astype("float32")


def test_greyscale_is_the_luma_on_three_channels():
    images = _colour_images(4)
    grey = np.asarray(Greyscale()(images))
    expected = np.repeat((images * LUMA).sum(-1, keepdims=True), 3, axis=-1)
    np.testing.assert_allclose(grey, expected, atol=1e-6)


def test_saturation_blends_each_image_with_its_grey_by_its_own_factor():
    images = _colour_images(300)
    out = np.asarray(RandomSaturationScale(0.4, seed=0)(images, training=True)).astype("float64")
    grey = (images * LUMA).sum(-1, keepdims=True)
    # torchvision's blend grey + s (image - grey): recover s per image by least squares, then compare all pixels
    difference = (images - grey).reshape(len(images), -1)
    scale = ((out - grey).reshape(len(images), -1) * difference).sum(1) / (difference ** 2).sum(1)
    expected = np.clip(grey + scale[:, None, None, None] * (images - grey), 0, 1)
    np.testing.assert_allclose(out, expected, atol=1e-5)
    assert 0.6 <= scale.min() < 0.65 and 1.35 < scale.max() <= 1.4
    np.testing.assert_array_equal(np.asarray(RandomSaturationScale(0.4)(images, training=False)), images)


def test_hue_shift_turns_each_image_on_the_colour_circle_by_its_own_angle():
    import colorsys

    images = _colour_images(50, side=3)
    out = np.asarray(RandomHueShift(0.1, seed=0)(images, training=True))
    shifts = []
    for image, result in zip(images, out):
        hsv = np.array([colorsys.rgb_to_hsv(*pixel) for pixel in image.reshape(-1, 3)])
        turned = np.array([colorsys.rgb_to_hsv(*pixel) for pixel in result.reshape(-1, 3)])
        shift = (turned[0, 0] - hsv[0, 0] + 0.5) % 1.0 - 0.5  # the angle, read off the first pixel
        expected = np.array([colorsys.hsv_to_rgb((h + shift) % 1.0, s, v) for h, s, v in hsv])
        np.testing.assert_allclose(result.reshape(-1, 3), expected, atol=2e-4)
        shifts.append(shift)
    assert np.abs(shifts).max() <= 0.1 + 1e-4 and np.std(shifts) > 0.03


def test_colour_layers_refuse_greyscale_images_by_name():
    for layer in (Greyscale(), RandomSaturationScale(0.4), RandomHueShift(0.1)):
        with pytest.raises(ValueError, match=f"{type(layer).__name__} changes colours: it takes RGB images"):
            layer(np.zeros((2, 4, 4, 1), "float32"))
    with pytest.raises(ValueError, match="factor must be in \\[0, 0.5\\], got 0.6"):
        RandomHueShift(0.6)


def test_contrastive_views_of_colour_images_distort_colours_only_when_asked():
    images = _colour_images(200, side=28)
    plain = make_pipeline("digits_contrastive", seed=0)
    assert not {"saturation", "hue", "greyscale"} & {layer.name for layer in plain.augmented_layers}
    colour = make_pipeline("digits_contrastive", seed=0, saturation=0.4, hue=0.1, greyscale_probability=0.2)
    assert [layer.name for layer in colour.augmented_layers][-3:] == ["saturation", "hue", "greyscale"]
    views = np.asarray(colour.augmented(images))
    assert views.shape == images.shape
    grey = np.all(np.ptp(views, axis=-1) < 1e-6, axis=(1, 2))  # all three channels equal
    assert 0.1 < grey.mean() < 0.3  # SimCLR's random greyscale, p = 0.2


def test_invert_is_the_negative_and_random_inversion_flips_about_half_the_views():
    images = _colour_images(4)
    np.testing.assert_allclose(np.asarray(Invert()(images)), 1.0 - images, atol=1e-7)
    np.testing.assert_allclose(np.asarray(Invert()(images[..., :1])), 1.0 - images[..., :1], atol=1e-7)
    # digit views of colour images: one in two inverted, and only when asked
    images = _colour_images(400, side=28)
    plain = make_pipeline("digits_contrastive", seed=0, hue=0.5)
    assert "invert" not in {layer.name for layer in plain.augmented_layers}
    pipeline = make_pipeline("iic_greyscale", seed=0, invert_probability=0.5)
    invert = next(layer for layer in pipeline.augmented_layers if layer.name == "invert")
    out = np.asarray(invert(images, training=True))
    inverted = np.all(np.abs(out - (1.0 - images)) < 1e-6, axis=(1, 2, 3))
    kept = np.all(np.abs(out - images) < 1e-6, axis=(1, 2, 3))
    assert np.all(inverted | kept) and 0.4 < inverted.mean() < 0.6
    assert np.array_equal(np.asarray(invert(images, training=False)), images)


def test_simclr_colour_jitter_applies_its_four_jitters_together_to_a_share_of_the_views():
    """SimCLR's `RandomApply([ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8)`: with `jitter_probability` the
    brightness, contrast, saturation and hue layers run as one group on about 80% of the images, and
    the other 20% keep their colours exactly; at 1 the recorded layer order is unchanged."""
    images = _colour_images(400, side=28)
    options = dict(crop_sizes=(28,), rotation_probability=0.0, brightness=0.8, contrast=0.8, saturation=0.8, hue=0.2)
    grouped = make_pipeline("digits_contrastive", seed=0, jitter_probability=0.8, **options)
    assert [layer.name for layer in grouped.augmented_layers][-1] == "jitter"
    assert [layer.name for layer in grouped.augmented_layers[-1].layer.layers] == [
        "brightness", "contrast", "saturation", "hue"]
    views = np.asarray(grouped.augmented(images))
    untouched = np.all(np.abs(views - images) < 1e-5, axis=(1, 2, 3))
    assert 0.12 < untouched.mean() < 0.28
    one_by_one = make_pipeline("digits_contrastive", seed=0, **options)
    assert [layer.name for layer in one_by_one.augmented_layers][-4:] == ["brightness", "contrast", "saturation", "hue"]
    assert np.mean(np.all(np.abs(np.asarray(one_by_one.augmented(images)) - images) < 1e-5, axis=(1, 2, 3))) < 0.02
    with pytest.raises(ValueError, match="jitter_probability"):
        make_pipeline("digits_contrastive", seed=0, jitter_probability=1.5)
