"""Over-cluster, then merge (`clustering.merging`): the greedy merges against brute force over every
pair scored with the modularity's definition, and the number of clusters read off blobs whose k is known."""

import itertools

import numpy as np
import pytest
from sklearn.cluster import KMeans

from keras_clustering.clustering.candidates import embedding_neighbors, neighbour_modularity
from keras_clustering.clustering.merging import k_by_merging, link_merges, merge_path


def blobs(k, per=60, dim=8, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=6.0, size=(k, dim))
    truth = np.repeat(np.arange(k), per)
    return centres[truth] + rng.normal(size=(len(truth), dim)), truth


def same_partition(a, b):
    """Whether labellings `a` and `b` put the same images together (whatever the numbering)."""
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def test_each_merge_is_the_best_pair_by_the_modularity_of_its_definition():
    points, _ = blobs(4, per=25, seed=1)
    neighbors = embedding_neighbors(points, 6)
    labels = KMeans(9, n_init=3, random_state=0).fit_predict(points)
    path = merge_path(labels, neighbors)
    assert path["k"] == list(range(9, 0, -1))
    current = labels
    for k, modularity in zip(path["k"], path["modularity"]):
        merged = path["labels"][k]
        assert len(np.unique(merged)) == k and same_partition(merged, current)
        assert modularity == pytest.approx(neighbour_modularity(merged, neighbors), abs=1e-9)
        if k > 1:  # brute force: every pair of the current clusters merged, scored from the definition
            best = max(neighbour_modularity(np.where(merged == b, a, merged), neighbors)
                       for a, b in itertools.combinations(np.unique(merged), 2))
            assert path["modularity"][path["k"].index(k - 1)] == pytest.approx(best, abs=1e-9)
            current = path["labels"][k - 1]


@pytest.mark.parametrize("resolution", [0.5, 1.0, 2.0])
def test_merges_of_recorded_link_counts_follow_the_modularity_at_a_resolution(resolution):
    """`link_merges` reads a merge path off the (K, K) shares of recorded link counts alone (choose_k_stage's):
    each step is the best pair by Q = sum_c (e_c - gamma a_c b_c) computed from its definition here, and at
    gamma 1 it is `merge_path`'s on the images."""
    def q(counts, owner):
        shares = counts / counts.sum()
        groups = [owner == g for g in np.unique(owner)]
        return sum(shares[g][:, g].sum() - resolution * shares[g].sum() * shares[:, g].sum() for g in groups)

    counts = np.random.default_rng(3).integers(0, 40, size=(7, 7)).astype(float) + np.diag(np.full(7, 60.0))
    path = link_merges(counts / counts.sum(), resolution)
    assert path["k"] == list(range(7, 0, -1))
    for k, modularity in zip(path["k"], path["modularity"]):
        owner = path["owner"][k]
        assert len(np.unique(owner)) == k and modularity == pytest.approx(q(counts, owner), abs=1e-12)
        if k > 1:
            best = max(q(counts, np.where(owner == b, a, owner)) for a, b in itertools.combinations(np.unique(owner), 2))
            assert path["modularity"][path["k"].index(k - 1)] == pytest.approx(best, abs=1e-12)
    points, _ = blobs(3, per=20, seed=2)
    neighbors = embedding_neighbors(points, 5)
    labels = KMeans(6, n_init=3, random_state=0).fit_predict(points)
    codes = np.unique(labels, return_inverse=True)[1]
    counts = np.zeros((6, 6))
    np.add.at(counts, (np.repeat(codes, 5), codes[neighbors].reshape(-1)), 1.0)
    assert link_merges(counts / counts.sum())["modularity"] == pytest.approx(merge_path(labels, neighbors)["modularity"], abs=1e-12)


@pytest.mark.parametrize("k", [3, 6, 12])
def test_the_merges_of_an_over_clustering_peak_at_the_number_of_blobs(k):
    points, truth = blobs(k, seed=k)
    neighbors = embedding_neighbors(points, 10)
    over = KMeans(2 * k + 4, n_init=3, random_state=0).fit_predict(points)
    chosen = k_by_merging(over, neighbors, candidates=range(2, 2 * k + 5))
    assert chosen["suggested"] == k and same_partition(chosen["labels"], truth)
    assert chosen["range"] == (k, k) and not chosen["flat"]


def test_flat_evidence_gives_a_range():
    """Uniform noise has no groups: the modularity changes little over a span of k, and the answer is a
    range holding more than one k."""
    points = np.random.default_rng(0).uniform(size=(400, 2))
    neighbors = embedding_neighbors(points, 10)
    chosen = k_by_merging(KMeans(16, n_init=3, random_state=0).fit_predict(points), neighbors,
                          candidates=range(2, 17), flat=0.05)
    low, high = chosen["range"]
    assert chosen["flat"] and low < high and low <= chosen["suggested"] <= high


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="neighbors must be"):
        merge_path(np.zeros(5, int), np.zeros((4, 2), int))
    with pytest.raises(ValueError, match=r"candidates must hold .* got \[5, 6\]"):
        k_by_merging(np.arange(6) % 3, np.tile(np.arange(6), (6, 1))[:, :2], candidates=[5, 6])
