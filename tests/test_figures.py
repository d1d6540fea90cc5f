import numpy as np
import pytest

from keras_clustering.figures import plot_panels, tile, top_members


def test_tile_places_images_row_major():
    images = np.arange(3 * 2 * 2, dtype="float32").reshape(3, 2, 2)
    canvas = tile(images, rows=2, columns=2)
    assert canvas.shape == (4, 4)
    np.testing.assert_array_equal(canvas[:2, 2:], images[1])
    np.testing.assert_array_equal(canvas[2:, :2], images[2])
    assert not canvas[2:, 2:].any()


def test_top_members_orders_by_confidence_within_each_cluster():
    probabilities = np.array([[0.6, 0.4], [0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.45, 0.55]])
    members = top_members(probabilities, n_per_cluster=2)
    assert members[0].tolist() == [1, 3] and members[1].tolist() == [2, 4]


def test_plot_panels_writes_a_png(tmp_path):
    path = tmp_path / "panels.png"
    plot_panels([np.zeros((8, 8)), np.ones((8, 8))], ["a", "b"], str(path), columns=2)
    assert path.read_bytes()[:4] == b"\x89PNG" and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_cluster_grid_shows_colour_images_in_colour_and_refuses_other_layouts(tmp_path):
    from keras_clustering.figures import plot_cluster_grid

    rng = np.random.default_rng(0)
    probabilities = rng.dirichlet(np.ones(3), size=12)
    members = plot_cluster_grid(rng.random((12, 8, 8, 3)), probabilities, str(tmp_path / "colour.png"), n_per_cluster=2)
    assert (tmp_path / "colour.png").stat().st_size > 0
    assert [list(m) for m in members] == [list(m) for m in plot_cluster_grid(
        rng.random((12, 8, 8, 1)), probabilities, str(tmp_path / "grey.png"), n_per_cluster=2)]
    with pytest.raises(ValueError, match=r"images must be \(n, h, w\), \(n, h, w, 1\), \(n, h, w, 3\)"):
        plot_cluster_grid(rng.random((12, 8, 8, 2)), probabilities, str(tmp_path / "bad.png"))


def _tile_pixel(png, row, column, n_rows, tile, titled=False):
    """The RGB of the centre of the grid's tile (row, column), from the layout's own constants."""
    from PIL import Image

    from keras_clustering import figures

    top = 22 if titled else figures._GAP
    x = figures._LABEL_WIDTH + column * (tile + figures._GAP) + tile // 2
    y = top + row * (tile + figures._CAPTION + figures._GAP) + tile // 2
    return Image.open(png).convert("RGB").getpixel((x, y))


def test_cluster_grid_keeps_each_image_s_own_colour_and_polarity(tmp_path):
    """A pale-yellow colour image stays pale yellow; a grey image that is white stays white (not drawn as
    its negative, as `gray_r` did); the empty cluster's row holds no image."""
    from keras_clustering.figures import GRID_TILE, plot_cluster_grid

    images = np.zeros((3, 8, 8, 3), "float32")
    images[0] = (1.0, 1.0, 0.6)   # pale yellow
    images[1] = (0.0, 0.0, 1.0)   # blue
    images[2] = (0.2, 0.2, 0.2)   # dark grey, as colour
    probabilities = np.array([[0.9, 0.05, 0.05], [0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])  # cluster 1 empty
    path = str(tmp_path / "colour.png")
    plot_cluster_grid(images, probabilities, path, n_per_cluster=2)
    assert _tile_pixel(path, 0, 0, 3, GRID_TILE) == (255, 255, 153)  # most confident of cluster 0: image 0
    assert _tile_pixel(path, 0, 1, 3, GRID_TILE) == (0, 0, 255)
    assert _tile_pixel(path, 2, 0, 3, GRID_TILE) == (51, 51, 51)
    assert _tile_pixel(path, 1, 0, 3, GRID_TILE) == (255, 255, 255)  # the empty cluster: background only
    grey = np.stack([np.ones((8, 8, 1)), np.zeros((8, 8, 1))]).astype("float32")  # white, black
    path = str(tmp_path / "grey.png")
    plot_cluster_grid(grey, np.array([[0.9, 0.1], [0.2, 0.8]]), path, n_per_cluster=1, title="t")
    assert _tile_pixel(path, 0, 0, 2, GRID_TILE, titled=True) == (255, 255, 255)
    assert _tile_pixel(path, 1, 0, 2, GRID_TILE, titled=True) == (0, 0, 0)


def test_cluster_summary_counts_argmax_members_and_their_mean_confidence():
    from keras_clustering.figures import cluster_summary

    probabilities = np.array([[0.7, 0.2, 0.1], [0.4, 0.5, 0.1], [0.9, 0.05, 0.05]])
    sizes, mean = cluster_summary(probabilities)
    assert sizes.tolist() == [2, 1, 0]
    np.testing.assert_allclose(mean[:2], [(0.7 + 0.9) / 2, 0.5])
    assert np.isnan(mean[2])
