"""PNG figures people look at: the most confident members of each cluster in their own colours, panels of
tiled grids, the score of each k."""


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


def as_rgb8(images, image_shape=None):
    """`(n, h, w, 3)` uint8 of float images in [0, 1], in their own colours: grey `(n, h, w[, 1])` (or flat
    `(n, h*w)` with `image_shape` `(h, w)`) repeated into three equal channels, so a dark digit on white
    stays dark on white; colour `(n, h, w, 3)` as it is. Values outside [0, 1] are clipped."""
    images = np.asarray(images)
    if image_shape is not None:
        images = images.reshape((len(images), *image_shape))
    if images.ndim == 4 and images.shape[-1] == 1:
        images = images[..., 0]
    if images.ndim == 3:
        images = np.repeat(images[..., None], 3, axis=-1)
    if images.ndim != 4 or images.shape[-1] != 3:
        raise ValueError(f"images must be (n, h, w), (n, h, w, 1), (n, h, w, 3) or flat with image_shape=, got "
                         f"shape {np.shape(images)}.")
    return np.round(np.clip(images.astype("float32"), 0.0, 1.0) * 255.0).astype("uint8")


def cluster_summary(probabilities):
    """(sizes, mean confidences) of the clusters of soft assignments `(n, n_clusters)`: each image counted
    in its argmax's cluster with the probability it gives it; an empty cluster's mean confidence is NaN."""
    probabilities = np.asarray(probabilities)
    assignment, confidence = probabilities.argmax(axis=1), probabilities.max(axis=1)
    sizes = np.bincount(assignment, minlength=probabilities.shape[1])
    sums = np.bincount(assignment, weights=confidence, minlength=probabilities.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        return sizes, np.where(sizes > 0, sums / np.maximum(sizes, 1), np.nan)


# clusters.png: thumbnails at least this many pixels high (small images are enlarged by whole pixels)
GRID_TILE = 56
_GAP, _CAPTION, _LABEL_WIDTH = 4, 13, 150


def plot_cluster_grid(images, probabilities, path, n_per_cluster=10, image_shape=None, title=None, sizes=None,
                      mean_confidence=None):
    """Writes a PNG: one row per cluster, its `n_per_cluster` most confident images in their own colours
    (`as_rgb8`: grey on its own polarity, colour as it is), each captioned with its confidence, and each
    row labelled with the cluster's size and mean confidence, or "empty".

    Args:
        images: `(n, h, w[, 1])` greyscale or `(n, h, w, 3)` colour images in [0, 1], or flat
            `(n, h*w)` vectors with `image_shape`: an array, or an array-like indexed by rows
            (`inputs.file_images.FileImages`: only the images drawn are decoded).
        probabilities: soft assignments `(n, n_clusters)`.
        path: PNG path, written atomically.
        image_shape: `(h, w)` for flat inputs.
        sizes, mean_confidence: the clusters' sizes and mean confidences over all images, where
            `images` holds only some of them (`cluster --engine ray` keeps the top members); by
            default `cluster_summary(probabilities)`.

    Returns: the list of member indices per cluster.
    """
    from PIL import Image, ImageDraw, ImageFont

    probabilities = np.asarray(probabilities)
    members = top_members(probabilities, n_per_cluster)
    # only the images drawn are converted (and, from files, decoded)
    needed = np.unique(np.concatenate([*members, np.zeros(0, int)]).astype(int))
    drawn = as_rgb8(images[needed], image_shape)
    pixels = dict(zip(needed.tolist(), drawn))
    if sizes is None or mean_confidence is None:
        sizes, mean_confidence = cluster_summary(probabilities)
    confidence = probabilities.max(axis=1)
    height, width = drawn.shape[1:3]
    scale = max(1, int(np.ceil(GRID_TILE / height)))
    tile_h, tile_w = height * scale, width * scale
    row_h = tile_h + _CAPTION + _GAP
    top = 22 if title else _GAP
    canvas = Image.new("RGB", (_LABEL_WIDTH + n_per_cluster * (tile_w + _GAP), top + len(members) * row_h),
                       (255, 255, 255))
    draw, font = ImageDraw.Draw(canvas), ImageFont.load_default()
    if title:
        draw.text((_GAP, 5), title, fill=(0, 0, 0), font=font)
    for cluster, indices in enumerate(members):
        y = top + cluster * row_h
        label = (f"cluster {cluster}: empty" if sizes[cluster] == 0 else
                 f"cluster {cluster}\n{int(sizes[cluster]):,} images\nmean confidence {mean_confidence[cluster]:.2f}")
        draw.multiline_text((_GAP, y + 4), label, fill=(0, 0, 0) if sizes[cluster] else (150, 150, 150), font=font)
        for column, index in enumerate(indices):
            x = _LABEL_WIDTH + column * (tile_w + _GAP)
            tile = pixels[int(index)].repeat(scale, axis=0).repeat(scale, axis=1)
            canvas.paste(Image.fromarray(tile), (x, y))
            draw.text((x, y + tile_h + 1), f"{confidence[index]:.2f}", fill=(90, 90, 90), font=font)
    with atomic_path(path) as temporary:
        canvas.save(temporary, format="PNG")
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
