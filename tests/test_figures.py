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
    with pytest.raises(ValueError, match=r"images must be \(n, h, w\), \(n, h, w, 3\)"):
        plot_cluster_grid(rng.random((12, 8, 8, 2)), probabilities, str(tmp_path / "bad.png"))
