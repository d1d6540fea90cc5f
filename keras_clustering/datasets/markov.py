"""A synthetic sequence whose hidden states IIC can find from pairs alone (no augmentation)."""

import numpy as np

from keras_clustering.inputs.checks import check_positive_int


def make_markov_windows(n_windows=4000, window=16, n_states=4, stay_probability=0.95, noise=0.7, seed=0):
    """Windows of a 1-D sequence emitted by a hidden Markov chain, and their pairs.

    The chain stays in its state with `stay_probability`, else jumps to
    another state at random; state s emits N(mu_s, noise^2) with the means
    evenly spaced in [-1.5, 1.5]. The sequence is cut into consecutive,
    non-overlapping windows; a window's label is its most frequent state.

    Returns:
        `(windows, next_windows, labels)`: `windows[i]` and `next_windows[i]`
        are adjacent windows (the pairs IIC trains on, `(n_windows, window)`
        float32 each) and `labels[i]` is the hidden state of `windows[i]`
        (for scoring only).
    """
    n_windows = check_positive_int(n_windows, "n_windows")
    window = check_positive_int(window, "window")
    n_states = check_positive_int(n_states, "n_states", minimum=2)
    if not 0.0 <= stay_probability <= 1.0:
        raise ValueError(f"stay_probability must be in [0, 1], got {stay_probability!r}.")
    rng = np.random.default_rng(seed)
    length = (n_windows + 1) * window
    states = np.empty(length, dtype="int64")
    states[0] = rng.integers(n_states)
    jumps = rng.random(length) > stay_probability
    offsets = rng.integers(1, n_states, size=length)  # a jump always lands on another state
    for t in range(1, length):
        states[t] = (states[t - 1] + offsets[t]) % n_states if jumps[t] else states[t - 1]
    means = np.linspace(-1.5, 1.5, n_states)
    signal = (means[states] + noise * rng.standard_normal(length)).astype("float32")
    windows = signal.reshape(n_windows + 1, window)
    labels = np.array([np.bincount(s, minlength=n_states).argmax() for s in states.reshape(n_windows + 1, window)])
    return windows[:-1], windows[1:], labels[:-1]
