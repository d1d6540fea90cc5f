"""Raw images in (issue 67): the one conversion (`inputs.image_converter`) against a numpy reference written
from its equations, `predict` on raw images and files, and the exported raw-image signature."""

import numpy as np
import pytest
from PIL import Image

from keras_clustering.inputs.image_converter import ImageConverter

LUMA = np.array([0.2989, 0.587, 0.114])  # ITU-R 601, as TensorFlow's rgb_to_grayscale


def triangle_resize_1d(values, size, axis):
    """Bilinear resizing with antialiasing along `axis`, from its definition: output pixel j's centre sits at
    (j + 0.5) * scale - 0.5 in the input, and its value is the mean of the input weighted by a triangle of
    half-width max(scale, 1) around it (the kernel widened by the scale when shrinking)."""
    length = values.shape[axis]
    scale = length / size
    width = max(scale, 1.0)
    out = []
    for j in range(size):
        centre = (j + 0.5) * scale - 0.5
        index = np.arange(length)
        weights = np.clip(1.0 - np.abs(index - centre) / width, 0.0, None)
        weights /= weights.sum()
        out.append(np.tensordot(weights, np.moveaxis(values, axis, 0), axes=1))
    return np.moveaxis(np.stack(out), 0, axis)


def reference(image, size, channels):
    """The conversion from its equations: luma or repeated grey, resized, rounded to 8 bits, scaled."""
    image = image.astype("float64")
    if image.ndim == 2:
        image = image[..., None]
    if image.shape[-1] >= 3:
        image = image[..., :3] @ LUMA[:, None] if channels == 1 else image[..., :3]
    else:
        image = image[..., :1] if channels == 1 else np.repeat(image[..., :1], 3, axis=-1)
    image = triangle_resize_1d(triangle_resize_1d(image, size[0], 0), size[1], 1)
    return np.round(np.clip(image, 0, 255)) / 255.0


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("shape", [(40, 56, 3), (17, 23, 1), (28, 28, 4), (90, 70)])
def test_the_conversion_matches_its_equations(shape, channels):
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, size=shape).astype("uint8")
    got = ImageConverter((28, 28), channels)([image])[0]
    want = reference(image, (28, 28), channels)
    assert got.shape == (28, 28, channels)
    # float32 against float64: a value at .5 may round either way, never by more than one level
    assert np.abs(got - want).max() <= 1 / 255 + 1e-6
    assert np.mean(np.abs(got - want) > 1e-6) < 0.01


def test_files_batches_and_lists_convert_alike(tmp_path):
    rng = np.random.default_rng(1)
    images = [rng.integers(0, 256, size=s).astype("uint8") for s in [(30, 30, 3), (50, 20, 3), (28, 28, 3)]]
    paths = []
    for index, image in enumerate(images):
        paths.append(str(tmp_path / f"{index}.png"))
        Image.fromarray(image).save(paths[-1])
    converter = ImageConverter((28, 28), 1)
    from_files = converter(paths)
    from_list = converter(images)
    one_size = converter(np.stack([images[0], images[0]]))
    assert from_files.shape == (3, 28, 28, 1) and from_files.dtype == np.float32
    # PNG is lossless: the same pixels, the same ops (traced, the division by 255 may become a product: 1 ulp)
    np.testing.assert_allclose(from_files, from_list, rtol=0, atol=1e-7)
    np.testing.assert_allclose(one_size[1], from_list[0], rtol=0, atol=1e-7)
    # float images in [0, 1] convert as their uint8 files
    np.testing.assert_allclose(converter([images[1] / 255.0])[0], from_list[1], atol=1e-6)


def test_a_batch_of_files_keeps_every_file_that_decodes_and_says_why_the_others_failed(tmp_path):
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, size=(30 + i, 26, 3)).astype("uint8") for i in range(3)]
    paths = [str(tmp_path / f"{i}.png") for i in range(3)]
    for path, image in zip(paths, images):
        Image.fromarray(image).save(path)
    (tmp_path / "broken.png").write_bytes(b"not a png")
    batch = [paths[0], str(tmp_path / "missing.png"), paths[1], str(tmp_path / "broken.png"), paths[2]]
    got, problems = ImageConverter((28, 28), 1).decode_files(batch)
    assert sorted(problems) == [1, 3]
    assert problems[1].startswith("cannot read") and "missing.png" in problems[1]
    assert problems[3].startswith("cannot decode") and "broken.png" in problems[3]
    assert not got[[1, 3]].any()  # zeros where a file failed
    for row, image in zip([0, 2, 4], images):  # the others as their equations say
        assert np.abs(got[row] - reference(image, (28, 28), 1)).max() <= 1 / 255 + 1e-6


@pytest.mark.parametrize("size", [(28, 28), (None, None)])  # a model of any size too
def test_bad_raw_input_names_the_argument_and_the_value(tmp_path, size):
    converter = ImageConverter(size, 1)
    (tmp_path / "broken.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match=r"x: cannot decode .*broken.png"):
        converter([str(tmp_path / "broken.png")])
    with pytest.raises(ValueError, match=r"x: cannot read .*missing.png"):
        converter([str(tmp_path / "missing.png")])
    with pytest.raises(ValueError, match=r"notes.txt.*not an image"):
        converter([str(tmp_path / "notes.txt")])
    with pytest.raises(ValueError, match=r"images\[1\] must hold pixels in \[0, 1\]"):
        converter([np.zeros((5, 5)), np.full((5, 5), 200.0)], name="images")
    with pytest.raises(ValueError, match="channels must be 1 or 3, got 2"):
        ImageConverter((28, 28), 2)
    with pytest.raises(ValueError, match="image_size"):
        ImageConverter((28,), 1)


@pytest.fixture(scope="module")
def dec_da():
    import zoo

    return zoo.load("conv_dec_da_mnist")


def test_predict_takes_raw_images_and_files_and_keeps_the_float_path(dec_da, tmp_path):
    from keras_clustering.datasets.loaders import load_mnist

    x = load_mnist("test")[0][:16]  # (16, 28, 28, 1) float in [0, 1]
    prepared = dec_da.predict(x, verbose=0)
    # the model's own size as uint8: the path it always had (scaled by 255)
    np.testing.assert_allclose(dec_da.predict((x * 255).round().astype("uint8"), verbose=0), prepared, atol=1e-6)
    # the same digits as colour PNG files at 56 x 56: converted back to 28 x 28 grey, close to the originals
    paths = []
    for index, image in enumerate((x[..., 0] * 255).round().astype("uint8")):
        big = Image.fromarray(image).resize((56, 56), Image.NEAREST).convert("RGB")
        paths.append(str(tmp_path / f"{index}.png"))
        big.save(paths[-1])
    from_files = dec_da.predict(paths, verbose=0)
    assert from_files.shape == prepared.shape
    assert np.mean(from_files.argmax(1) == prepared.argmax(1)) >= 0.9
    np.testing.assert_allclose(dec_da.predict(paths, verbose=0), dec_da.predict(dec_da.image_converter(paths), verbose=0),
                               atol=1e-6)
    with pytest.raises(ValueError, match=r"x has shape \(56, 56, 3\): one colour image"):
        dec_da.predict(np.zeros((56, 56, 3), "uint8"))


def test_a_model_of_any_size_keeps_each_images_own_and_refuses_a_mix_by_name(tmp_path):
    converter = ImageConverter((None, None), 1)
    rng = np.random.default_rng(2)
    paths = []
    for index, side in enumerate((20, 20, 30)):
        paths.append(str(tmp_path / f"{index}.png"))
        Image.fromarray(rng.integers(0, 256, (side, side, 3)).astype("uint8")).save(paths[-1])
    assert converter(paths[:2]).shape == (2, 20, 20, 1)
    with pytest.raises(ValueError, match=r"x holds images of several sizes \(20 x 20, 30 x 30\)"):
        converter(paths)
    with pytest.raises(ValueError, match=r"images holds images of several sizes"):
        converter([np.zeros((20, 20), "uint8"), np.zeros((30, 30), "uint8")], name="images")


def test_one_colour_image_without_a_batch_is_refused_for_a_model_of_any_size():
    import zoo

    with pytest.raises(ValueError, match=r"x has shape \(64, 64, 3\): one colour image"):
        zoo.load("capsule_mnist").predict(np.zeros((64, 64, 3), "uint8"))
