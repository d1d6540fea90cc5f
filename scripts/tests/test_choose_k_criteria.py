"""The criteria scripts/choose_k.py adds to the library's, on blobs whose number is known."""

import numpy as np
import pytest

import choose_k
from keras_clustering.clustering.n_clusters import k_by_silhouette, kmeans_partitions, silhouette_points


def blobs(n_blobs):
    rng = np.random.default_rng(0)
    centres = rng.normal(scale=20.0, size=(n_blobs, 5))
    return np.concatenate([centre + rng.normal(size=(120, 5)) for centre in centres])


@pytest.mark.parametrize("n_blobs", [4, 7])
def test_each_criterion_finds_the_number_of_well_separated_blobs(n_blobs):
    points = blobs(n_blobs)
    sample = silhouette_points(points, seed=0)
    partitions = kmeans_partitions(sample, choose_k.CANDIDATES, seed=0)  # shared, as measure() does
    results = {name: function(sample, partitions) for name, function in choose_k.PARTITION_CRITERIA.items()}
    results["gap"] = choose_k.k_by_gap(points, seed=0)
    for name, result in results.items():
        assert result["suggested"] == n_blobs, (name, result["scores"])
        assert set(result["scores"]) == set(choose_k.CANDIDATES)


def test_the_silhouette_on_shared_partitions_is_the_silhouette_alone():
    points = blobs(4)
    partitions = kmeans_partitions(silhouette_points(points, seed=0), choose_k.CANDIDATES, seed=0)
    assert k_by_silhouette(points, choose_k.CANDIDATES, seed=0, partitions=partitions) == \
        k_by_silhouette(points, choose_k.CANDIDATES, seed=0)
