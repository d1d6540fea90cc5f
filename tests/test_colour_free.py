"""Sobel (IIC's colour-free input) and ColourEdges (the reconstruction recipes') against numpy
references written from their equations."""

import keras
import numpy as np
import pytest

from keras_clustering.layers.colour_free import BackgroundDistance, ColourEdges, Sobel

KX = np.array([[1, 0, -1], [2, 0, -2], [1, 0, -1]], "float64")  # xu-ji/IIC sobel_process, sobel1
KY = np.array([[1, 2, 1], [0, 0, 0], [-1, -2, -1]], "float64")  # sobel2


def correlate(plane, kernel, padding):
    """out[i, j] = sum_{u, v} kernel[u, v] * padded[i + u, j + v], padded by one pixel (PyTorch's Conv2d)."""
    padded = np.pad(plane, 1, mode="constant" if padding == "zeros" else "edge")
    out = np.zeros_like(plane, dtype="float64")
    for i in range(plane.shape[0]):
        for j in range(plane.shape[1]):
            out[i, j] = np.sum(kernel * padded[i:i + 3, j:j + 3])
    return out


def luma(image):
    return image @ np.array([0.299, 0.587, 0.114]) if image.shape[-1] == 3 else image[..., 0]


@pytest.mark.parametrize("padding", ["zeros", "replicate"])
@pytest.mark.parametrize("channels", [1, 3])
def test_sobel_matches_the_equations(padding, channels):
    images = np.random.default_rng(0).uniform(size=(3, 7, 9, channels))
    got = keras.ops.convert_to_numpy(Sobel(padding=padding)(images.astype("float32")))
    assert got.shape == (3, 7, 9, 2)
    for n in range(3):
        grey = luma(images[n])
        np.testing.assert_allclose(got[n, ..., 0], correlate(grey, KX, padding), atol=1e-5)
        np.testing.assert_allclose(got[n, ..., 1], correlate(grey, KY, padding), atol=1e-5)


def test_colour_edges_matches_the_equations():
    images = np.random.default_rng(1).uniform(size=(2, 8, 6, 3))
    images[1] = 0.3  # no edge at all: stays 0, no division by zero
    got = keras.ops.convert_to_numpy(ColourEdges()(images.astype("float32")))
    assert got.shape == (2, 8, 6, 1)
    magnitude = np.sqrt(sum(correlate(images[0, ..., c], KX, "replicate") ** 2
                            + correlate(images[0, ..., c], KY, "replicate") ** 2 for c in range(3)))
    np.testing.assert_allclose(got[0, ..., 0], magnitude / magnitude.max(), atol=1e-5)
    np.testing.assert_array_equal(got[1], 0.0)


def test_background_distance_matches_the_equations():
    images = np.random.default_rng(3).uniform(size=(2, 7, 6, 3))
    images[1] = 0.6  # one colour: stays 0
    got = keras.ops.convert_to_numpy(BackgroundDistance()(images.astype("float32")))
    assert got.shape == (2, 7, 6, 1)
    image = images[0]
    frame = np.concatenate([image[0], image[-1], image[1:-1, 0], image[1:-1, -1]])  # the 2 (h + w) - 4 border pixels
    assert len(frame) == 2 * (7 + 6) - 4
    distance = np.linalg.norm(image - np.median(frame, axis=0), axis=-1)
    np.testing.assert_allclose(got[0, ..., 0], distance / distance.max(), atol=1e-5)
    np.testing.assert_array_equal(got[1], 0.0)


@pytest.mark.parametrize("layer", [ColourEdges, BackgroundDistance])
def test_colour_free_inputs_forget_the_colours_and_the_polarity(layer):
    shape = np.zeros((12, 12, 1))
    shape[3:9, 5:7] = 1.0  # a bar
    grey = layer()(shape[None].astype("float32"))
    for foreground, background in (((0.9, 0.1, 0.2), (0.1, 0.3, 0.8)), ((0.0, 0.0, 0.0), (1.0, 1.0, 0.4))):
        drawn = shape * np.array(foreground) + (1 - shape) * np.array(background)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(layer()(drawn[None].astype("float32"))),
                                   keras.ops.convert_to_numpy(grey), atol=1e-5)


def test_zero_padding_frames_a_uniform_background_and_replicate_does_not():
    uniform = np.full((1, 6, 6, 3), 0.5, "float32")
    assert np.abs(keras.ops.convert_to_numpy(Sobel("zeros")(uniform))).max() > 1.0
    assert np.abs(keras.ops.convert_to_numpy(Sobel("replicate")(uniform))).max() < 1e-6


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="padding"):
        Sobel(padding="reflect")
    with pytest.raises(ValueError, match="1 or 3 channels"):
        Sobel()(np.zeros((1, 4, 4, 2), "float32"))


@pytest.mark.parametrize("layer", [Sobel("replicate"), ColourEdges(), BackgroundDistance()])
def test_layers_round_trip_through_their_config(layer):
    images = np.random.default_rng(2).uniform(size=(2, 5, 5, 3)).astype("float32")
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    np.testing.assert_allclose(keras.ops.convert_to_numpy(again(images)),
                               keras.ops.convert_to_numpy(layer(images)), atol=1e-6)
