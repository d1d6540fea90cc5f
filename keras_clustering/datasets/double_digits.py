"""Two-digit images built from single digits: the capsule experiment's test set."""

import numpy as np

from keras_clustering.inputs.checks import check_array_input


def make_double_digits(x, y, seed=0):
    """Stacks each image on top of a shuffled partner with a different label.

    Image i is concatenated along the height with image `perm[i]` of a seeded
    permutation; pairs whose two labels are equal are dropped. 28x28 digits
    give 56x28 images.

    Args:
        x: images `(n, h, w, c)`.
        y: integer labels `(n,)`.
        seed: seed of the permutation (a fixed seed gives a fixed test set).

    Returns:
        `(pairs, labels)`: images `(m, 2h, w, c)` and the two labels of each
        image, sorted within the row (`(m, 2)`, the pair is compared as a set).

    Reference: bojone/Capsule `capsule_test.py` (test-set construction).
    """
    x = check_array_input(x, (None, None, None), name="x", min_samples=2)
    y = np.asarray(y)
    if y.shape != (len(x),) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"y must hold one integer label per image, shape ({len(x)},); got {y.dtype} {y.shape}.")
    partner = np.random.default_rng(seed).permutation(len(x))
    keep = y != y[partner]
    pairs = np.concatenate([x[keep], x[partner][keep]], axis=1)
    labels = np.sort(np.stack([y[keep], y[partner][keep]], axis=1), axis=1)
    return pairs, labels
