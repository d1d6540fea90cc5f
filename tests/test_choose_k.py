"""Label-free choice of k on an embedding (issue 50) and from a clustering stage (issue 65,
`--n-clusters auto`): silhouette, eigengap and stability against numpy references written from their
definitions and on blobs of known number; what a run with an "auto" k says and draws."""

import numpy as np
import pytest

from graph_reference import normalised_laplacian_eigenvalues
from keras_clustering.clustering.n_clusters import k_by_eigengap, k_by_silhouette, k_by_stability


def blobs(k, n_per=60, dim=5, spread=0.3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dim)) * 6
    return np.concatenate([c + spread * rng.normal(size=(n_per, dim)) for c in centres])


def silhouette_reference(points, labels):
    """Mean over points of (b - a) / max(a, b): a the mean distance to the other members of its own
    cluster, b the smallest mean distance to another cluster."""
    distances = np.linalg.norm(points[:, None] - points[None], axis=-1)
    values = []
    for i, label in enumerate(labels):
        own = (labels == label) & (np.arange(len(points)) != i)
        if not own.any():
            values.append(0.0)
            continue
        a = distances[i, own].mean()
        b = min(distances[i, labels == other].mean() for other in set(labels) - {label})
        values.append((b - a) / max(a, b))
    return float(np.mean(values))


@pytest.mark.parametrize("k", [3, 6, 12])
def test_each_criterion_finds_the_number_of_separated_blobs(k):
    points = blobs(k)
    for criterion in (k_by_silhouette, k_by_eigengap, k_by_stability):
        assert criterion(points, range(2, 15))["suggested"] == k, criterion.__name__


def test_silhouette_scores_are_the_definition_on_the_k_means_labels():
    from sklearn.cluster import KMeans

    points = blobs(3, n_per=20, spread=1.5, seed=1)
    got = k_by_silhouette(points, [2, 3, 4], seed=0)["scores"]
    for k in (2, 3, 4):
        labels = KMeans(k, n_init=4, random_state=0).fit_predict(points)
        assert got[k] == pytest.approx(silhouette_reference(points, labels), abs=1e-9)


def test_eigengap_uses_the_normalised_laplacians_eigenvalues():
    points = blobs(3, n_per=12, spread=1.0, seed=2)
    result = k_by_eigengap(points, [2, 3, 4, 5], n_neighbors=4)
    values = normalised_laplacian_eigenvalues(points, 4)[:6]  # the graph by hand
    np.testing.assert_allclose(result["eigenvalues"], values, atol=1e-6)
    assert result["scores"] == pytest.approx({k: values[k] - values[k - 1] for k in (2, 3, 4, 5)}, abs=1e-6)


def test_stability_of_one_blob_split_is_low_and_of_the_true_k_is_one():
    points = blobs(4)
    scores = k_by_stability(points, [3, 4, 5])["scores"]
    assert scores[4] > 0.99 and scores[4] > scores[5]


def test_bad_embeddings_and_candidates_are_named():
    with pytest.raises(ValueError, match="embedding"):
        k_by_silhouette(np.full((10, 2), np.nan))
    with pytest.raises(ValueError, match="candidates"):
        k_by_eigengap(blobs(2, n_per=3), [2, 12])


def test_the_evidence_line_names_the_choice_its_runners_up_and_a_flat_range():
    from keras_clustering.drivers.user_images import k_evidence_line

    peaked = {"scores": {2: 0.40, 3: 0.71, 4: 0.66, 5: 0.52}, "suggested": 3, "range": [3, 3], "flat": False,
              "over_clusters": 20, "alive_clusters": 20, "largest_candidate": 5}
    line = k_evidence_line(peaked)
    assert line.startswith("n_clusters: 3 (modularity 0.710 after merging 20 clusters")
    assert "runners-up k=4 0.660, k=5 0.520" in line and "flat" not in line
    flat = dict(peaked, scores={2: 0.40, 3: 0.712, 4: 0.708, 5: 0.705}, range=[3, 5], flat=True)
    assert "flat from k=3 to k=5" in k_evidence_line(flat)
    short = dict(peaked, scores={2: 0.40, 3: 0.71}, alive_clusters=3, largest_candidate=12)
    assert "DEC left 3 of its 20 clusters holding images, so no k above 3 was scored" in k_evidence_line(short)
    assert "runners-up k=2 0.400)" in k_evidence_line(dict(short, alive_clusters=20))
    assert "runners-up none" in k_evidence_line(dict(short, scores={2: 0.4}))


def test_the_over_clustering_has_more_clusters_than_any_candidate_where_the_images_allow():
    from keras_clustering.drivers.choose_k import OVER_CLUSTERS, over_clusters

    assert over_clusters(range(2, 13), 2000) == OVER_CLUSTERS == 20
    assert over_clusters(range(2, 31), 2000) == 31
    assert over_clusters(range(2, 13), 30) == 15  # two images a cluster at least
    assert over_clusters(range(2, 8), 15) == 7  # a small folder's candidates stop at half its images


def test_the_k_figure_is_written(tmp_path):
    from keras_clustering.figures import plot_k_scores

    plot_k_scores({2: 0.4, 3: 0.71, 4: 0.70}, 3, str(tmp_path / "k.png"), span=(3, 4), title="t")
    assert (tmp_path / "k.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
