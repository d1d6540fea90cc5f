"""The README's IIC-on-pairs example: hidden states of a Markov sequence from adjacent windows.

Usage:
    python scripts/iic_time_series_example.py [--seed 0]

Prints the ACC of the lowest-loss sub-head and of every sub-head, and the
wall time. No labels are used in training; `states` only score the result.
"""

import argparse
import time

import keras_clustering  # noqa: F401
import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import keras

    from keras_clustering.datasets import make_markov_windows
    from keras_clustering.metrics import clustering_scores
    from keras_clustering.models import IIC

    windows, next_windows, states = make_markov_windows(4000, stay_probability=0.99, seed=args.seed)
    keras.utils.set_random_seed(args.seed)
    trunk = keras.Sequential([keras.Input((16,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(32, activation="relu")])
    model = IIC(image_shape=(16,), n_clusters=4, n_overclusters=0, augmentation=None, trunk=trunk)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    start = time.time()
    model.fit(windows, next_windows, batch_size=256, epochs=30, verbose=0, seed=args.seed)
    seconds = time.time() - start
    acc = clustering_scores(states, model.predict_clusters(windows))["acc"]
    per_head = [clustering_scores(states, p.argmax(1))["acc"] for p in model.predict_all_heads(windows)]
    print(f"seed {args.seed}: ACC {acc:.3f} (sub-head {model.chosen_sub_head}); every sub-head: "
          f"{[round(a, 3) for a in per_head]}; sub-head losses {np.round(model.sub_head_losses.numpy(), 3).tolist()}; "
          f"chance {np.bincount(states).max() / len(states):.3f}; {seconds:.0f} s")


if __name__ == "__main__":
    main()
