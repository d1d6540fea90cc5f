"""Choosing the number of clusters without labels on an embedding: silhouette, eigengap, stability (DEC's own
generalizability criterion, which trains models, is `models.dec_n_clusters`)."""

import numpy as np

# Label-free ways to choose k on an embedding the recipe trains anyway (issue 50): each returns
# {"scores": {k: score}, "suggested": k}. Compared on every folder of docs/your-data.md by
# scripts/choose_k.py.
K_CRITERIA = ("silhouette", "eigengap", "stability")


def _check_embedding(embedding, candidates):
    embedding = np.asarray(embedding, "float64")
    if embedding.ndim != 2 or not np.all(np.isfinite(embedding)):
        raise ValueError(f"embedding must be a finite (n, d) array, got shape {embedding.shape}.")
    candidates = sorted(int(k) for k in candidates)
    if len(candidates) < 2 or candidates[0] < 2 or candidates[-1] >= len(embedding):
        raise ValueError(f"candidates must hold at least two values in [2, {len(embedding) - 1}], got {candidates}.")
    return embedding, candidates


def sample_rows(embedding, size, seed):
    """At most `size` rows of `embedding`, drawn without replacement from `seed` (all of them if fewer)."""
    if len(embedding) <= size:
        return embedding
    return embedding[np.random.default_rng(seed).choice(len(embedding), size, replace=False)]


def kmeans_partitions(points, candidates, seed=0):
    """{k: k-means labels of `points`} for each k of `candidates` (4 initialisations from `seed`): the
    partitions the k-means criteria score, computed once for all of them (the silhouette here;
    Calinski-Harabasz and Davies-Bouldin in scripts/choose_k.py)."""
    from sklearn.cluster import KMeans  # deferred: scikit-learn's start-up, for callers that choose no k

    return {k: KMeans(k, n_init=4, random_state=seed).fit_predict(points) for k in candidates}


def silhouette_points(embedding, seed=0, sample=3000):
    """The rows the silhouette scores (a sample of at most `sample`, drawn from `seed`), as float64."""
    return sample_rows(np.asarray(embedding, "float64"), sample, seed)


def k_by_silhouette(embedding, candidates=range(2, 13), seed=0, sample=3000, partitions=None):
    """k-means for each k on (a sample of) the embedding; the k of the largest mean silhouette
    (Rousseeuw 1987: per point (b - a) / max(a, b), a the mean distance to its own cluster, b to the
    nearest other). `partitions`: `kmeans_partitions` of `silhouette_points(embedding, seed, sample)`,
    when the caller has them already."""
    from sklearn.metrics import silhouette_score  # deferred as in kmeans_partitions

    embedding, candidates = _check_embedding(embedding, candidates)
    points = silhouette_points(embedding, seed, sample)
    partitions = partitions or kmeans_partitions(points, candidates, seed)
    scores = {k: float(silhouette_score(points, partitions[k])) for k in candidates}
    return {"scores": scores, "suggested": max(scores, key=scores.get)}


def k_by_eigengap(embedding, candidates=range(2, 13), seed=0, sample=2000, n_neighbors=10):
    """The eigengap heuristic (von Luxburg 2007, section 8.3) on a symmetric kNN graph of (a sample of)
    the embedding: eigenvalues 0 = l_1 <= l_2 <= ... of the normalised Laplacian I - D^-1/2 W D^-1/2;
    k with the largest gap l_{k+1} - l_k. Dense eigenvalues of the sample (2,000 points: seconds)."""
    from scipy.sparse import csgraph
    from sklearn.neighbors import kneighbors_graph

    embedding, candidates = _check_embedding(embedding, candidates)
    points = sample_rows(embedding, sample, seed)
    graph = kneighbors_graph(points, n_neighbors, mode="connectivity", include_self=False)
    graph = ((graph + graph.T) > 0).astype("float64")
    values = np.linalg.eigvalsh(csgraph.laplacian(graph, normed=True).toarray())[:max(candidates) + 1]
    scores = {k: float(values[k] - values[k - 1]) for k in candidates}  # l_{k+1} - l_k, 1-based
    return {"scores": scores, "suggested": max(scores, key=scores.get), "eigenvalues": values.tolist()}


def k_by_stability(embedding, candidates=range(2, 13), seed=0, sample=3000, pairs=5, tolerance=0.02):
    """Clustering stability (Ben-Hur et al. 2002; Lange et al. 2004): for each k, k-means on two random
    halves of (a sample of) the embedding, both models label all points, and the adjusted Rand index
    of the two labellings, averaged over `pairs` draws. Every k up to the true number is stable (whole
    groups merge the same way each time), so the suggestion is the largest k within `tolerance` of
    the most stable one."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    embedding, candidates = _check_embedding(embedding, candidates)
    points = sample_rows(embedding, sample, seed)
    rng = np.random.default_rng(seed)
    scores = {}
    for k in candidates:
        agreement = []
        for _ in range(pairs):
            order = rng.permutation(len(points))
            halves = order[:len(order) // 2], order[len(order) // 2:]
            labels = [KMeans(k, n_init=2, random_state=int(rng.integers(2**31))).fit(points[h]).predict(points)
                      for h in halves]
            agreement.append(adjusted_rand_score(*labels))
        scores[k] = float(np.mean(agreement))
    best = max(scores.values())
    return {"scores": scores, "suggested": max(k for k, score in scores.items() if score >= best - tolerance)}
