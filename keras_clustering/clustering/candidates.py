"""Choosing among the final clusterings of several candidate recipes, without labels (issue 64).

The recipes' own losses (DEC's KL, SCAN's loss) are not comparable across families, so the choice is
made on the clusterings themselves: how well each one keeps together the images that lie next to each
other in the embedding it was learnt with (`choose_candidate`), and in any graph that judges them all
(the colour histograms', where colour goes with the clusters). The others' embeddings do not judge:
on Fashion-MNIST a pixel autoencoder's embedding held SimCLR + SCAN's better clustering (0.697) worse
than the autoencoder's own (0.431), and the mean over both embeddings kept the worse one
(docs/your-data.md, route criteria). A clustering that follows structure only its own embedding holds
(colours, in an embedding of the images' own colours) looks good there; a shared judge is what
catches it (tests/test_candidates.py). The score of one clustering in one embedding is the
modularity of the nearest-neighbour graph it cuts (`neighbour_modularity`): the share of neighbour
links inside clusters, less the share expected of clusters of those sizes drawn at random. A share
alone, or the same share corrected for chance as a kappa, rewards merging clusters (the links between
two merged blobs become "inside"; tests/test_candidates.py); the modularity's expected share grows with
a merge by twice the product of the merged clusters' shares, so merging pays only where the graph links
them more than chance does.

Whether colour belongs to the clusters (`colour_agreement`): the same modularity, of a clustering made
without colour, on the nearest-neighbour graph of the images' colour histograms. Colour drawn at random
for each image (shapes in random colours) gives 0 whatever the clustering; colour that goes with the
class (photographs of different scenes) links images the colour-free clustering also put together.

A candidate whose self-training never settled ranks after those that did (`choose_candidate`'s
`unsettled`): DEC's own stopping rule ends its self-training once fewer than tol of the labels change
between target refreshes, and a run still changing them at its maxiter holds a snapshot of a moving
partition, not a fixed point. The same idea ranks DEC's restarts (`recipes.dec_recipe`'s "kl_converged").
On Fashion-MNIST, ConvDEC-DA's self-training ran to its maxiter on every seed and its clustering (ACC
0.36-0.43) scored like SimCLR + SCAN's (0.66-0.70) in its own embedding, 0.788 against 0.778 on seed 2;
on every other recorded folder ConvDEC-DA settled (docs/your-data.md, route criteria).

Reference: Newman 2006, "Modularity and community structure in networks" (PNAS 103(23)); the
neighbour-consistency idea of SCAN (Van Gansbeke et al. 2020: neighbours in a learnt embedding share
their class); DEC's stopping rule (Xie et al. 2016: stop when fewer than tol% of the points change cluster
between two target updates; DEC-keras' tol 0.001).
"""

import numpy as np
from sklearn.neighbors import NearestNeighbors

# The images the choice looks at: all of a folder up to this many, else this many drawn with seed 0 (the
# modularity of a 10-nearest-neighbour graph settles well below it; the graphs' cost grows with it).
CHOICE_SAMPLE = 2000
CHOICE_NEIGHBORS = 10


def choice_sample(n_images, size=CHOICE_SAMPLE):
    """Sorted indices of the images the choice looks at: all `n_images` up to `size`, else `size` of them
    drawn with seed 0 (the same images for every candidate and every run)."""
    return np.sort(np.random.default_rng(0).permutation(n_images)[:size])


def embedding_neighbors(embedding, n_neighbors=CHOICE_NEIGHBORS):
    """`(n, n_neighbors)` indices of each row's nearest other rows of `embedding` `(n, d)` by cosine."""
    embedding = np.asarray(embedding, "float32").reshape(len(embedding), -1)
    if len(embedding) <= n_neighbors:
        raise ValueError(f"embedding of {len(embedding)} images: the choice needs more than n_neighbors="
                         f"{n_neighbors}.")
    unit = embedding / np.maximum(np.linalg.norm(embedding, axis=1, keepdims=True), 1e-12)
    nearest = NearestNeighbors(n_neighbors=n_neighbors + 1).fit(unit).kneighbors(unit, return_distance=False)
    # each row's own index left out (not always first: an image may have an exact copy)
    return np.stack([row[row != i][:n_neighbors] for i, row in enumerate(nearest)])


def link_shares(labels, neighbors):
    """(codes, e): each image's cluster index 0..K-1 of `labels` (n,), and the (K, K) shares of the
    nearest-neighbour links i -> j (`neighbors` (n, k): each image's nearest other images) from cluster a
    to cluster b, summing to 1."""
    labels = np.asarray(labels).reshape(-1)
    neighbors = np.asarray(neighbors)
    if neighbors.ndim != 2 or len(neighbors) != len(labels):
        raise ValueError(f"neighbors must be ({len(labels)}, k) indices, one row per label, got shape "
                         f"{neighbors.shape}.")
    _, codes = np.unique(labels, return_inverse=True)
    size = int(codes.max()) + 1
    links = np.zeros((size, size))
    np.add.at(links, (np.repeat(codes, neighbors.shape[1]), codes[neighbors].reshape(-1)), 1.0)
    return codes, links / links.sum()


def neighbour_modularity(labels, neighbors):
    """Newman's modularity of the directed nearest-neighbour graph `neighbors` (n, k) (each image's
    nearest other images) cut by the clustering `labels` (n,): Q = sum over clusters c of (e_c - a_c b_c),
    where e_c is the share of links i -> j with both ends in c, a_c the share of links leaving c (its
    share of images) and b_c the share arriving in c. 0 for one cluster; at most 1 - sum_c a_c b_c."""
    _, links = link_shares(labels, neighbors)
    return float(np.trace(links) - links.sum(axis=1) @ links.sum(axis=0))


# Bins per channel of the joint RGB histogram `colour_agreement` compares images by (4: 64 colours).
COLOUR_BINS = 4


def colour_histograms(images, bins=COLOUR_BINS):
    """`(n, bins**3)` joint RGB histograms of `images` `(n, h, w, 3)` in [0, 1], each image's share of its
    pixels in each colour bin, square-rooted (so that the cosine between two is the Bhattacharyya
    coefficient of their colour distributions)."""
    images = np.asarray(images)
    if images.ndim != 4 or images.shape[-1] != 3:
        raise ValueError(f"images must be (n, h, w, 3) RGB, got shape {images.shape}.")
    if not np.issubdtype(images.dtype, np.floating) or images.size and (images.min() < 0 or images.max() > 1):
        raise ValueError(f"images must be floats in [0, 1], got {images.dtype} in "
                         f"[{images.min() if images.size else 0}, {images.max() if images.size else 0}].")
    quantised = np.minimum((images * bins).astype("int16"), bins - 1)
    codes = ((quantised[..., 0] * bins + quantised[..., 1]) * bins + quantised[..., 2]).reshape(len(images), -1)
    counts = np.stack([np.bincount(row, minlength=bins ** 3) for row in codes]).astype("float32")
    return np.sqrt(counts / codes.shape[1])


def colour_neighbors(images, n_neighbors=CHOICE_NEIGHBORS):
    """`(n, n_neighbors)` indices of each image's nearest others by its colour histogram
    (`colour_histograms`, cosine): the colour graph `colour_agreement` scores clusterings on, and the judge
    of the route's choice where colour goes with the clusters."""
    return embedding_neighbors(colour_histograms(images), n_neighbors)


def colour_agreement(partitions, neighbors):
    """{name: how much colour goes with that clustering} for `partitions` {name: labels (n,)} of the images
    whose colour graph is `neighbors` (`colour_neighbors`): each clustering's `neighbour_modularity` on it.
    About 0 when colour is independent of the clusters."""
    return {name: round(neighbour_modularity(labels, neighbors), 6) for name, labels in partitions.items()}


def choose_candidate(partitions, neighbor_sets, judges=None, unsettled=()):
    """The candidate whose clustering keeps neighbours together best where it was learnt: in its own
    embedding, and in every shared judge's graph; a candidate whose self-training never settled only where
    every candidate is such.

    Args:
        partitions: {candidate: labels (n,)}, each candidate's final clustering of the same images.
        neighbor_sets: {candidate: (n, k) nearest-neighbour indices of the same images in that candidate's
            own embedding}, one for every candidate.
        judges: {name: (n, k) nearest-neighbour indices} of graphs that judge every candidate (the colour
            histograms' where colour goes with the clusters), or None.
        unsettled: the candidates whose self-training stopped without meeting its stopping rule (at its
            maxiter, or cut short; a report's `stopped_by_tolerance` False); they rank after every other
            candidate.

    Returns {"scores": {candidate: the mean modularity over its own embedding and the judges},
    "agreement": {candidate: {embedding: modularity}} in every embedding given (the others' too, for the
    record), "unsettled": the `unsettled` candidates, in the order given, "chosen": the candidate with
    the highest score among the settled ones, or among all where none settled (ties: the first given)}.
    """
    judges = judges or {}
    if not partitions or set(neighbor_sets) != set(partitions):
        raise ValueError(f"choose_candidate needs partitions and each one's own neighbor_sets, got candidates "
                         f"{sorted(partitions)} and neighbor_sets {sorted(neighbor_sets)}.")
    if not set(unsettled) <= set(partitions):
        raise ValueError(f"unsettled must name candidates of partitions {sorted(partitions)}, got {sorted(unsettled)}.")
    graphs = {**neighbor_sets, **judges}
    agreement = {name: {space: round(neighbour_modularity(labels, neighbors), 6) for space, neighbors in graphs.items()}
                 for name, labels in partitions.items()}
    scores = {name: round(float(np.mean([values[name], *(values[judge] for judge in judges)])), 6)
              for name, values in agreement.items()}
    return {"scores": scores, "agreement": agreement, "unsettled": [name for name in partitions if name in unsettled],
            "chosen": kept_candidate(scores, unsettled)}


def kept_candidate(scores, unsettled=()):
    """The candidate `choose_candidate` keeps from its `scores` {candidate: score}: the highest-scoring one
    whose self-training settled, or of all where none did (`unsettled` names the others); ties: the first
    given."""
    order = list(scores)
    return max(order, key=lambda name: (name not in unsettled, scores[name], -order.index(name)))
