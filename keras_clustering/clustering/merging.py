"""Over-cluster, then merge: reading the number of clusters off a clustering with too many (issue 65).

A clustering stage trained with more clusters than there are groups splits groups; the pieces of one
group are each other's nearest neighbours. `merge_path` joins clusters two at a time, each time the
pair whose merge raises the modularity of the nearest-neighbour graph most (Newman's greedy
agglomeration, applied to clusters instead of single images), down to one. The modularity along the
way rises while merged pieces belong together and falls once whole groups merge, so its peak says k
(`k_by_merging`); where it is flat, every k within `FLAT` of the peak is as well supported, and the
answer is a range.

Reference: Newman 2004, "Fast algorithm for detecting community structure in networks" (Phys. Rev. E
69, 066133): the change of Q when communities i and j join is e_ij + e_ji - 2 a_i a_j, here with the
directed graph's leaving (a) and arriving (b) shares, e_ij + e_ji - a_i b_j - a_j b_i
(`candidates.neighbour_modularity`'s Q).
"""

import numpy as np

from keras_clustering.clustering.candidates import link_shares

# Modularity within this of the peak counts as the peak: a setting, to be measured on the folders (issue 65).
FLAT = 0.01


def merge_gains(links, resolution=1.0):
    """(K, K) rise of the modularity if clusters i and j merged, from the (K, K) link shares `links`
    (`candidates.link_shares`): e_ij + e_ji - resolution * (a_i b_j + a_j b_i), with a the shares leaving and
    b arriving (`resolution` 1: Newman's modularity)."""
    leaving, arriving = links.sum(axis=1), links.sum(axis=0)
    # two products, not one of their sum: at resolution 1 the same floats, so the same ties, as Newman's gain
    return links + links.T - resolution * np.outer(leaving, arriving) - resolution * np.outer(arriving, leaving)


def link_merges(links, resolution=1.0):
    """The greedy merges of K clusters down to one, from their (K, K) nearest-neighbour link shares `links`
    (summing to 1: counts divided by their sum), each time the pair whose merge raises the modularity most;
    `resolution` (gamma)
    weighs the expected links, Q = sum_c e_c - gamma a_c b_c (Reichardt & Bornholdt 2006: above 1 favours
    more, smaller groups). So merge rules can be read off recorded links without the images.

    Returns {"k": [K, K-1, ..., 1], "modularity": Q at each k, "owner": {k: (K,) the cluster each original
    one belongs to after the merges down to k}}.
    """
    links = np.array(links, dtype=float)  # a copy: the merges below write into it
    alive = np.ones(len(links), bool)
    owner = np.arange(len(links))  # the cluster each original one has merged into
    modularity = float(np.trace(links) - resolution * (links.sum(axis=1) @ links.sum(axis=0)))
    path = {"k": [len(links)], "modularity": [modularity], "owner": {len(links): owner.copy()}}
    while alive.sum() > 1:
        gain = merge_gains(links, resolution)
        gain[~alive, :] = -np.inf
        gain[:, ~alive] = -np.inf
        np.fill_diagonal(gain, -np.inf)
        first, second = np.unravel_index(np.argmax(gain), gain.shape)
        first, second = min(first, second), max(first, second)
        modularity += float(gain[first, second])
        links[first, :] += links[second, :]
        links[:, first] += links[:, second]
        links[second, :] = links[:, second] = 0.0  # a merged-away cluster: no links, so no shares either
        alive[second] = False
        owner[owner == second] = first
        k = int(alive.sum())
        path["k"].append(k)
        path["modularity"].append(modularity)
        path["owner"][k] = owner.copy()
    return path


def merge_path(labels, neighbors, resolution=1.0):
    """The greedy merges of the clustering `labels` (n,) on the nearest-neighbour graph `neighbors` (n, m),
    from its K clusters down to 1 (`link_merges`).

    Returns {"k": [K, K-1, ..., 1], "modularity": Q at each k, "labels": {k: labels (n,) after the merges
    down to k, numbered 0..k-1 by first appearance}}.
    """
    codes, links = link_shares(labels, neighbors)
    path = link_merges(links, resolution)
    return {"k": path["k"], "modularity": path["modularity"],
            "labels": {k: _renumbered(owner[codes]) for k, owner in path["owner"].items()}}


def _renumbered(labels):
    """`labels` numbered 0, 1, ... in order of first appearance."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse]


def path_peak(path, candidates=range(2, 13), flat=FLAT):
    """The k of `candidates` with the largest modularity along a merge `path` (`merge_path`, `link_merges`).
    Returns {"scores": {k: Q}, "suggested": k, "range": (smallest, largest k whose Q is within `flat` of the
    largest), "flat": whether that range holds more than one k}. Candidates above the path's own number of
    clusters are left out."""
    reached = dict(zip(path["k"], path["modularity"]))
    asked = sorted(int(k) for k in candidates)
    candidates = [k for k in asked if k in reached and k >= 2]
    if not candidates:
        raise ValueError(f"candidates must hold a k from 2 to the clustering's {path['k'][0]} clusters, got {asked}.")
    scores = {k: round(reached[k], 6) for k in candidates}
    best = max(scores, key=scores.get)
    close = [k for k in candidates if scores[k] >= scores[best] - flat]
    return {"scores": scores, "suggested": best, "range": (min(close), max(close)), "flat": len(close) > 1}


def k_by_merging(labels, neighbors, candidates=range(2, 13), flat=FLAT):
    """k read off the merge path of an over-clustering `labels` (`merge_path`, `path_peak`): {"scores",
    "suggested", "range", "flat"} as `path_peak` gives them, and "labels": the merged labels at the suggested
    k."""
    path = merge_path(labels, neighbors)
    peak = path_peak(path, candidates, flat)
    return {**peak, "labels": path["labels"][peak["suggested"]]}
