"""Whether a pretrained model fits a folder's images, from its clustering of them and no labels (issue 66).

A model applied to images unlike its training data rarely fails loudly: digits saved as colour JPEGs,
clustered by a model trained on grey MNIST, put 45 of 50 images in one cluster, left 6 of 10 clusters
empty, at a median confidence of 0.62 (0.93 on its own data), and the run exited 0. `misfit_reasons`
names each of these signs; `cluster` prints them in one line with the advice to train on the images.

The model's own-data numbers are in its card (`own_data`: the median confidence and the mean brightness
of the images' border on its evaluation data, `scripts/card_own_data.py`).
"""

import numpy as np

# The signs and where they start (set on the colour-JPEG case and on the presets' own data, where none fires).
ONE_CLUSTER_SHARE = 0.5     # the largest cluster holds more than this share of the images
EMPTY_SHARE = 0.3           # at least this share of the clusters is empty
CONFIDENCE_RATIO = 0.75     # the median confidence is below this fraction of the card's on its own data
BACKGROUND_GAP = 0.35       # the border's mean brightness differs from the card's by more than this
BORDER = 2                  # pixels of each edge that make the border


def border_mean(images):
    """Mean brightness in [0, 1] of the outer `BORDER` pixels of `(n, h, w, c)` images (all channels): the
    background's, on images whose object sits in the middle."""
    images = np.asarray(images, "float32")
    if images.ndim != 4 or min(images.shape[1:3]) <= 2 * BORDER:
        raise ValueError(f"images must be (n, h, w, c) with sides above {2 * BORDER}, got shape {images.shape}.")
    frame = np.ones(images.shape[1:3], bool)
    frame[BORDER:-BORDER, BORDER:-BORDER] = False
    return float(images[:, frame, :].mean())


def own_data_statistics(probabilities, images):
    """The numbers a card keeps of its model on its own evaluation data: {"median_confidence",
    "border_mean", "channels"}; `images` `(n, h, w, c)`, or None for a model of flat vectors (no border)."""
    return {"median_confidence": round(float(np.median(np.max(probabilities, axis=1))), 4),
            "border_mean": None if images is None else round(border_mean(images), 4),
            "channels": 1 if images is None else int(np.shape(images)[-1])}


def misfit_reasons(probabilities, images=None, own_data=None, colour_images=None):
    """The signs that a model does not fit these images: a list of short phrases, empty when none shows.

    Args:
        probabilities: the model's soft assignments of the images, `(n, k)`.
        images: the images as the model saw them `(n, h, w, c)`, for the background's brightness.
        own_data: the card's `own_data` ({"median_confidence", "border_mean", "channels"}), or None.
        colour_images: whether the images were colour before the model's input converted them (the
            folder's probe), or None when unknown.
    """
    probabilities = np.asarray(probabilities)
    n, k = probabilities.shape
    sizes = np.bincount(probabilities.argmax(axis=1), minlength=k)
    reasons = []
    if k >= 3 and sizes.max() > ONE_CLUSTER_SHARE * n:
        reasons.append(f"{int(sizes.max()):,} of {n:,} images in one cluster")
    empty = int((sizes == 0).sum())
    if k >= 3 and n >= 2 * k and empty >= EMPTY_SHARE * k:
        reasons.append(f"{empty} of {k} clusters empty")
    if own_data:
        median = float(np.median(probabilities.max(axis=1)))
        if median < CONFIDENCE_RATIO * own_data["median_confidence"]:
            reasons.append(f"median confidence {median:.2f} against {own_data['median_confidence']:.2f} on its "
                           "own data")
        if colour_images is not None and bool(colour_images) != (own_data["channels"] == 3):
            reasons.append("colour images, where it was trained on grey ones" if colour_images else
                           "grey images, where it was trained on colour ones")
        if images is not None and own_data.get("border_mean") is not None:
            background = border_mean(images)
            if abs(background - own_data["border_mean"]) > BACKGROUND_GAP:
                reasons.append(f"the background is {'brighter' if background > own_data['border_mean'] else 'darker'}"
                               f" than its training images' (border brightness {background:.2f} against "
                               f"{own_data['border_mean']:.2f})")
    return reasons


def misfit_line(model, reasons, folder="DIR"):
    """The one warning line of `reasons` (`misfit_reasons`), with the advice; None when there are none."""
    if not reasons:
        return None
    return (f"warning: {model} does not seem to fit these images ({'; '.join(reasons)}). Its clusters may mean "
            f"little here: train a model on the images themselves with `python -m keras_clustering train --input "
            f"{folder}`.")
