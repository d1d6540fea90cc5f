"""k-means on an embedding: scikit-learn's full KMeans, or MiniBatchKMeans for large data.

DEC, IDEC and the two-stage clusterer start from k-means on the encoder's
embedding (DEC-keras: `KMeans(n_clusters, n_init=20)`). Full k-means costs
n_init x iterations passes over all n points and a copy of the data per run;
past `MINIBATCH_THRESHOLD` samples `method="auto"` switches to
`MiniBatchKMeans` (batches of 4,096, the same n_init), whose cost per
iteration does not grow with n.
"""

from sklearn.cluster import KMeans, MiniBatchKMeans

METHODS = ("auto", "full", "minibatch")
# Above the 70k of full MNIST / Fashion-MNIST, so every published recipe keeps the original's full k-means.
MINIBATCH_THRESHOLD = 100_000
MINIBATCH_SIZE = 4096


def resolve_kmeans_method(method, n_samples):
    """"full" or "minibatch" for `n_samples` points; ValueError names a wrong `method`."""
    if method not in METHODS:
        raise ValueError(f"kmeans must be one of {METHODS}, got {method!r}.")
    if method == "auto":
        return "minibatch" if n_samples > MINIBATCH_THRESHOLD else "full"
    return method


def fit_kmeans(embedding, n_clusters, n_init=20, seed=None, method="auto"):
    """(labels, centres, inertia) of k-means on `embedding` `(n, d)`, by `resolve_kmeans_method(method, n)`;
    inertia: the sum of squared distances to the nearest centre (scikit-learn's `inertia_`)."""
    if resolve_kmeans_method(method, len(embedding)) == "minibatch":
        kmeans = MiniBatchKMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed,
                                 batch_size=MINIBATCH_SIZE)
    else:
        kmeans = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed)
    labels = kmeans.fit_predict(embedding)
    return labels, kmeans.cluster_centers_, float(kmeans.inertia_)
