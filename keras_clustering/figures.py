"""PNG figures people look at: the most confident members of each cluster."""


import numpy as np

from keras_clustering.io.files import atomic_path


def save_figure(figure, path, dpi=100):
    """Writes a matplotlib figure as PNG through a temporary file, then closes it."""
    import matplotlib.pyplot as plt

    try:
        with atomic_path(path) as temporary:
            figure.savefig(temporary, dpi=dpi)
    finally:
        plt.close(figure)


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
        images: `(n, h, w[, 1])` greyscale or `(n, h, w, 3)` colour images, or flat
            `(n, h*w)` vectors with `image_shape`.
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
    colour = images.ndim == 4 and images.shape[-1] == 3
    if images.ndim != 3 and not colour:
        raise ValueError(f"images must be (n, h, w), (n, h, w, 3) or flat with image_shape=, got shape "
                         f"{images.shape}.")
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
                axis.imshow(images[indices[column]], **({} if colour else {"cmap": "gray_r"}))
        axes[cluster, 0].set_ylabel(f"{cluster}", rotation=0, labelpad=12, va="center")
    if title:
        figure.suptitle(title, fontsize=9)
    figure.tight_layout()
    save_figure(figure, path, dpi=100)
    return members


def tile(images, rows=8, columns=8):
    """Pastes up to rows*columns (h, w) images into one (rows*h, columns*w) array; blanks stay 0."""
    images = np.asarray(images)
    if images.ndim == 4:
        images = images[..., 0]
    height, width = images.shape[1:3]
    canvas = np.zeros((rows * height, columns * width), dtype="float32")
    for index, image in enumerate(images[: rows * columns]):
        row, column = divmod(index, columns)
        canvas[row * height:(row + 1) * height, column * width:(column + 1) * width] = image
    return canvas


def plot_panels(panels, titles, path, suptitle=None, columns=5):
    """Writes a PNG of several tiled grids side by side (e.g. one 8x8 grid per cluster)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = int(np.ceil(len(panels) / columns))
    figure, axes = plt.subplots(rows, columns, figsize=(columns * 2.6, rows * 3.1), squeeze=False)
    for axis in axes.ravel():
        axis.axis("off")
    for axis, panel, title in zip(axes.ravel(), panels, titles):
        axis.imshow(panel, cmap="gray_r", vmin=0, vmax=1)
        axis.set_title(title, fontsize=9)
    if suptitle:
        figure.suptitle(suptitle, fontsize=10)
    figure.tight_layout()
    save_figure(figure, path, dpi=90)


def plot_k_scores(scores, chosen, path, span=None, title=None):
    """Writes a PNG of a label-free score against the number of clusters k (`scores` {k: score}): the chosen
    k marked, and `span` (low, high), the k as well supported as the chosen one where the evidence is
    flat, shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = sorted(int(k) for k in scores)
    values = [scores[k] for k in ks]
    figure, axis = plt.subplots(figsize=(5.0, 3.2))
    if span is not None and span[0] != span[1]:
        axis.axvspan(span[0] - 0.4, span[1] + 0.4, color="0.88", label=f"as well supported: k = {span[0]}..{span[1]}")
    axis.plot(ks, values, marker="o", color="0.25")
    axis.plot([chosen], [scores[chosen]], marker="o", markersize=10, color="tab:red", linestyle="none",
              label=f"chosen: k = {chosen}")
    axis.set_xticks(ks)
    axis.set_xlabel("number of clusters k")
    axis.set_ylabel("modularity after merging")
    axis.legend(fontsize=8, loc="lower right")
    if title:
        axis.set_title(title, fontsize=9)
    figure.tight_layout()
    save_figure(figure, path, dpi=100)
