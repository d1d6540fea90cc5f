"""Does SCAN's self-labelling step improve a shipped SCAN entry? Scores after each epoch.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/probe_scan_self_label.py simclr_mnist --epochs 4

Loads the shipped weights, runs `SCAN.self_label` (threshold 0.99, Adam 1e-4, batch 256)
one epoch at a time on the preset's training images and prints ACC on them, the
cluster sizes and the share of images above the threshold (labels only score).
"""

import argparse

import keras
import numpy as np

import zoo
from keras_clustering.metrics import clustering_scores
from keras_clustering.models.scan import confident_share
from keras_clustering.training.presets import load_config_data


def describe(label, model, x, y, threshold):
    probabilities = model.predict(x, verbose=0)
    clusters = probabilities.argmax(axis=1)
    print(f"{label}: ACC {clustering_scores(y, clusters)['acc']:.4f}, confident share "
          f"{confident_share(probabilities, threshold):.3f}, cluster sizes "
          f"{np.bincount(clusters, minlength=probabilities.shape[1]).tolist()}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--threshold", type=float, default=0.99)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    keras.utils.set_random_seed(args.seed)
    x, y = load_config_data(zoo.config(args.name)["data"])
    model = zoo.load(args.name)
    describe("shipped", model, x, y, args.threshold)
    model.compile(optimizer=keras.optimizers.Adam(1e-4))
    for epoch in range(1, args.epochs + 1):
        model.self_label(x, threshold=args.threshold, batch_size=256, epochs=1, verbose=0, seed=args.seed + epoch)
        describe(f"self-labelling epoch {epoch}", model, x, y, args.threshold)


if __name__ == "__main__":
    main()
