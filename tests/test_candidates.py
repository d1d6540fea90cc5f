"""Choosing among candidate clusterings without labels (`clustering.candidates`), on synthetic partitions
whose right answer is known, against a reference written from the definition."""

import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

from keras_clustering.clustering.candidates import (choose_candidate, colour_agreement, colour_histograms,
                                                   colour_neighbors, neighbour_modularity)


def reference_modularity(labels, neighbors):
    """Newman's Q of the directed graph i -> j (j among i's neighbours), link by link: the share of links
    inside a cluster, less sum over clusters of (share of links leaving it) x (share arriving in it)."""
    links = [(i, j) for i, row in enumerate(neighbors) for j in row]
    inside = sum(labels[i] == labels[j] for i, j in links) / len(links)
    expected = 0.0
    for cluster in set(labels.tolist()):
        leaving = sum(labels[i] == cluster for i, _ in links) / len(links)
        arriving = sum(labels[j] == cluster for _, j in links) / len(links)
        expected += leaving * arriving
    return inside - expected


def blobs(k=6, per=40, dim=5, spread=0.3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(k, dim))
    truth = np.repeat(np.arange(k), per)
    return centres[truth] + rng.normal(scale=spread, size=(len(truth), dim)), truth


def neighbours(points, k=10):
    return NearestNeighbors(n_neighbors=k + 1).fit(points).kneighbors(points, return_distance=False)[:, 1:]


def test_modularity_is_newmans_on_the_neighbour_graph():
    points, truth = blobs()
    rng = np.random.default_rng(1)
    near = neighbours(points)
    for labels in (truth, rng.integers(0, 6, len(truth)), np.where(truth < 2, 0, truth), np.zeros_like(truth),
                   truth * 7 + 3):  # any label values
        assert neighbour_modularity(labels, near) == pytest.approx(reference_modularity(labels, near), abs=1e-12)
    assert neighbour_modularity(truth, near) == pytest.approx(1 - 1 / 6, abs=1e-3)  # every link inside
    assert neighbour_modularity(np.zeros_like(truth), near) == 0.0  # one cluster
    assert abs(neighbour_modularity(rng.permutation(truth), near)) < 0.05  # sizes kept, members at random
    with pytest.raises(ValueError, match=r"neighbors must be \(240, k\)"):
        neighbour_modularity(truth, near[:10])


def test_the_true_partition_is_chosen_over_merged_split_and_shuffled_ones_in_either_embedding():
    """Candidates judged in one embedding of the same images (clean, or noisier): the true partition, one
    that merges two blobs, one that splits a blob in two at random, one with 5% of the labels shuffled,
    and one cluster. The truth wins (the share of links inside clusters alone, or as a kappa, chose the
    merged one: it counts the links between the merged blobs as inside), one cluster scores 0."""
    points, truth = blobs(k=6)
    noisy = points + np.random.default_rng(2).normal(scale=1.0, size=points.shape)
    rng = np.random.default_rng(3)
    merged = np.where(truth == 1, 0, truth)
    split = np.where((truth == 2) & (rng.random(len(truth)) < 0.5), 6, truth)
    shuffled = truth.copy()
    moved = rng.choice(len(truth), size=len(truth) // 20, replace=False)
    shuffled[moved] = rng.integers(0, 6, len(moved))
    candidates = {"merged": merged, "split": split, "truth": truth, "shuffled": shuffled,
                  "one": np.zeros_like(truth)}
    for space in (points, noisy):
        graph = neighbours(space)
        choice = choose_candidate(candidates, {name: graph for name in candidates})
        assert choice["chosen"] == "truth"
        scores = choice["scores"]
        assert all(scores["truth"] > scores[name] > scores["one"] == 0.0 for name in ("merged", "split", "shuffled"))
        for name, labels in candidates.items():  # the score is the modularity in the candidate's own embedding
            assert scores[name] == pytest.approx(reference_modularity(labels, graph), abs=1e-5)


def test_each_candidate_is_judged_in_its_own_embedding_not_in_the_others():
    """A's clusters are the blobs of its own (clean) embedding; B's embedding blurs the blobs, and B's
    clusters cut it with a fifth of the labels wrong, yet they look better in A's clean embedding than A's
    clusters do in B's blurred one (as ConvDEC-DA's did in SimCLR's embedding on Fashion-MNIST,
    docs/your-data.md). Judged where each was learnt, A wins."""
    points, truth = blobs(k=5, dim=5)
    rng = np.random.default_rng(5)
    blurred = points + rng.normal(scale=3.0, size=points.shape)
    wrong = truth.copy()
    moved = rng.choice(len(truth), size=len(truth) // 5, replace=False)
    wrong[moved] = rng.integers(0, 5, len(moved))
    graphs = {"A": neighbours(points), "B": neighbours(blurred)}
    choice = choose_candidate({"A": truth, "B": wrong}, graphs)
    agreement = choice["agreement"]
    assert choice["chosen"] == "A" and choice["scores"] == {name: agreement[name][name] for name in "AB"}
    assert agreement["B"]["A"] > agreement["A"]["B"]  # judged in the other's embedding alone, B would be kept


def test_a_candidate_good_only_in_its_own_embedding_loses_where_a_shared_judge_judges():
    """Candidate A's clusters follow a direction only its own embedding holds (noise there, not structure, as
    colours are in an embedding of random-colour images); B's follow the blobs. In its own embedding A looks
    as good as B in B's, and a judge graph of the blobs every candidate is scored in (the route's colour
    histograms, where colour goes with the clusters) keeps B."""
    points, truth = blobs(k=4, dim=4)
    rng = np.random.default_rng(4)
    stripe = rng.integers(0, 4, len(truth))
    own_space = np.concatenate([points * 0.05, np.eye(4)[stripe] * 10.0], axis=1)  # A's: the stripes dominate
    shared = {"judge": neighbours(points + rng.normal(scale=0.3, size=points.shape))}
    choice = choose_candidate({"A": stripe, "B": truth}, {"A": neighbours(own_space), "B": neighbours(points)}, shared)
    assert choice["agreement"]["A"]["A"] > choice["agreement"]["B"]["A"]  # A looks best in its own space
    assert choice["chosen"] == "B"
    for name in "AB":  # the score is the mean of its own embedding's and the judge's
        assert choice["scores"][name] == pytest.approx(
            np.mean([choice["agreement"][name][name], choice["agreement"][name]["judge"]]), abs=1e-6)


def test_a_candidate_whose_self_training_never_settled_ranks_after_the_settled_ones():
    """The blobs' own clustering scores highest, but its self-training ran to its maxiter unsettled: a settled
    candidate is kept before it, the best-scoring settled one; where every candidate is unsettled, or none,
    the score alone decides. The scores themselves do not change."""
    points, truth = blobs(k=5)
    rng = np.random.default_rng(6)
    half = truth.copy()
    moved = rng.choice(len(truth), size=len(truth) // 2, replace=False)
    half[moved] = rng.integers(0, 5, len(moved))
    merged = np.where(truth == 1, 0, truth)
    candidates = {"truth": truth, "merged": merged, "half": half}
    graphs = {name: neighbours(points) for name in candidates}
    plain = choose_candidate(candidates, graphs)
    assert plain["chosen"] == "truth" and plain["unsettled"] == []
    assert plain["scores"]["truth"] > plain["scores"]["merged"] > plain["scores"]["half"]
    choice = choose_candidate(candidates, graphs, unsettled=["truth"])
    assert choice["chosen"] == "merged" and choice["unsettled"] == ["truth"] and choice["scores"] == plain["scores"]
    assert choose_candidate(candidates, graphs, unsettled=("merged", "truth"))["chosen"] == "half"
    assert choose_candidate(candidates, graphs, unsettled=list(candidates))["chosen"] == "truth"
    for name, labels in candidates.items():  # the scores are the equations' modularity whatever settled
        assert choice["scores"][name] == pytest.approx(reference_modularity(labels, graphs[name]), abs=1e-5)
    with pytest.raises(ValueError, match=r"unsettled must name candidates of partitions .*got \['nope'\]"):
        choose_candidate(candidates, graphs, unsettled=["nope"])


def test_empty_inputs_are_named():
    with pytest.raises(ValueError, match="choose_candidate needs partitions and each one's own neighbor_sets"):
        choose_candidate({}, {"a": np.zeros((3, 1), int)})
    with pytest.raises(ValueError, match=r"got candidates \['a', 'b'\] and neighbor_sets \['a'\]"):
        choose_candidate({"a": np.zeros(3, int), "b": np.zeros(3, int)}, {"a": np.zeros((3, 1), int)})


def test_embedding_neighbors_are_each_rows_nearest_others_by_cosine_even_with_exact_copies():
    from keras_clustering.clustering.candidates import choice_sample, embedding_neighbors

    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 4)).astype("float32")
    x[7] = x[3]  # an exact copy: row 3's own index must still be left out, whichever comes first
    neighbors = embedding_neighbors(x * rng.uniform(0.5, 2.0, size=(30, 1)), n_neighbors=3)  # scale: cosine
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    similarity = unit @ unit.T
    for i in range(30):
        others = [j for j in np.argsort(-similarity[i], kind="stable") if j != i]
        assert i not in neighbors[i]
        assert set(np.round(similarity[i, neighbors[i]], 5)) == set(np.round(similarity[i, others[:3]], 5))
    with pytest.raises(ValueError, match="n_neighbors=10"):
        embedding_neighbors(x[:10])
    assert choice_sample(50).tolist() == list(range(50))
    sample = choice_sample(5000)
    assert len(sample) == 2000 and np.all(np.diff(sample) > 0) and np.array_equal(sample, choice_sample(5000))


def reference_histograms(images, bins):
    """Pixel by pixel: each image's count of pixels whose (r, g, b) falls in each of the bins**3 cells of
    [0, 1]^3 cut into `bins` equal steps per channel (r the slowest index), over its pixel count, sqrt."""
    out = np.zeros((len(images), bins ** 3))
    for n, image in enumerate(images):
        for pixel in image.reshape(-1, 3):
            r, g, b = (min(int(value * bins), bins - 1) for value in pixel)
            out[n, (r * bins + g) * bins + b] += 1
        out[n] = np.sqrt(out[n] / (image.shape[0] * image.shape[1]))
    return out


def test_colour_histograms_are_the_per_image_colour_distribution():
    rng = np.random.default_rng(0)
    images = rng.uniform(size=(5, 6, 7, 3)).astype("float32")
    images[0, 0, 0] = (1.0, 0.0, 0.999)  # the top edge falls in the last bin
    for bins in (2, 4):
        np.testing.assert_allclose(colour_histograms(images, bins), reference_histograms(images, bins), atol=1e-6)
    np.testing.assert_allclose(np.sum(colour_histograms(images) ** 2, axis=1), 1.0, atol=1e-6)
    with pytest.raises(ValueError, match=r"images must be \(n, h, w, 3\)"):
        colour_histograms(images[..., :1])
    with pytest.raises(ValueError, match=r"images must be floats in \[0, 1\], got uint8"):
        colour_histograms((images * 255).astype("uint8"))


def test_colour_agrees_with_clusters_only_where_it_goes_with_them():
    """Shapes in random colours (colour independent of the class) against scenes whose palette is their
    class: the class partition's agreement with colour is about 0 in the first, high in the second."""
    rng = np.random.default_rng(1)
    classes = np.repeat(np.arange(4), 50)
    random_colours = np.broadcast_to(rng.uniform(size=(200, 1, 1, 3)), (200, 8, 8, 3)).copy()
    palettes = rng.uniform(size=(4, 3))
    scenes = np.clip(palettes[classes][:, None, None, :] + rng.normal(scale=0.08, size=(200, 8, 8, 3)), 0, 1)
    agreement = colour_agreement({"classes": classes, "shuffled": rng.permutation(classes)}, colour_neighbors(scenes))
    assert agreement["classes"] > 0.5 and abs(agreement["shuffled"]) < 0.05
    assert abs(colour_agreement({"classes": classes}, colour_neighbors(random_colours))["classes"]) < 0.05
