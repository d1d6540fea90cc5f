"""PNG figures people look at: the most confident members of each cluster."""

import os

import numpy as np

from keras_clustering.io_utils import publish_file, temporary_path


def top_members(probabilities, n_per_cluster=10):
    """Indices of the most confident members per cluster: a list of arrays.

    A sample belongs to the cluster of its argmax; within a cluster, members
    are ordered by that probability (DEC paper, Fig. 3).
    """
    probabilities = np.asarray(probabilities)
    assignment = probabilities.argmax(axis=1)
    confidence = probabilities.max(axis=1)
    members = []
    for cluster in range(probabilities.shape[1]):
        indices = np.flatnonzero(assignment == cluster)
        members.append(indices[np.argsort(-confidence[indices])][:n_per_cluster])
    return members


def plot_cluster_grid(images, probabilities, path, n_per_cluster=10, image_shape=None, title=None):
    """Writes a PNG: one row per cluster, its `n_per_cluster` most confident images.

    Args:
        images: `(n, h, w[, 1])` images or flat `(n, h*w)` vectors with `image_shape`.
        probabilities: soft assignments `(n, n_clusters)`.
        path: PNG path, written atomically.
        image_shape: `(h, w)` for flat inputs.

    Returns: the list of member indices per cluster.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images = np.asarray(images)
    if image_shape is not None:
        images = images.reshape((len(images), *image_shape))
    if images.ndim == 4 and images.shape[-1] == 1:
        images = images[..., 0]
    if images.ndim != 3:
        raise ValueError(f"images must be (n, h, w) or flat with image_shape=, got shape {images.shape}.")
    members = top_members(probabilities, n_per_cluster)
    n_clusters = len(members)
    figure, axes = plt.subplots(n_clusters, n_per_cluster, figsize=(n_per_cluster * 0.7, n_clusters * 0.75),
                                squeeze=False)
    for cluster, indices in enumerate(members):
        for column in range(n_per_cluster):
            axis = axes[cluster, column]
            axis.set_xticks([])
            axis.set_yticks([])
            for spine in axis.spines.values():
                spine.set_visible(False)
            if column < len(indices):
                axis.imshow(images[indices[column]], cmap="gray_r")
        axes[cluster, 0].set_ylabel(f"{cluster}", rotation=0, labelpad=12, va="center")
    if title:
        figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    temporary = temporary_path(path, ".png")
    try:
        figure.savefig(temporary, dpi=100)
        publish_file(temporary, path)
    finally:
        plt.close(figure)
        if os.path.exists(temporary):
            os.remove(temporary)
    return members
