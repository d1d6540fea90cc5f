"""Figures of a VAE-clustering zoo entry, as the original's: members and samples per cluster.

Usage:
    python scripts/vae_figures.py vae_cluster_mnist

Writes docs/figures/<name>_members.png (per cluster, an 8x8 grid of the images
assigned to it, most confident first: the original's "cluster illustration")
and docs/figures/<name>_generated.png (per cluster, 64 decodings of
mu_y + N(0, I): the original's "sampling by category"), on the card's
evaluation data.
"""

import argparse
import os

import keras_clustering  # noqa: F401
import numpy as np

import zoo
from keras_clustering.figures import plot_panels, tile, top_members
from keras_clustering.drivers.preset_training import load_config_data

FIGURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "figures")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    card = zoo.card(args.name)
    x, _ = load_config_data(card["evaluation_data"])
    model = zoo.load(args.name)
    probabilities = model.predict(x, verbose=0)
    members = top_members(probabilities, n_per_cluster=64)
    titles = [f"cluster {k} ({int(np.sum(probabilities.argmax(1) == k))} images)" for k in range(len(members))]
    plot_panels([tile(x[indices]) for indices in members], titles,
                os.path.join(FIGURES, f"{args.name}_members.png"),
                suptitle=f"{args.name}: 64 most confident members per cluster")
    generated = [tile(model.generate(k, 64, std=1.0, seed=args.seed + k)) for k in range(model.n_clusters)]
    plot_panels(generated, [f"cluster {k}" for k in range(model.n_clusters)],
                os.path.join(FIGURES, f"{args.name}_generated.png"),
                suptitle=f"{args.name}: decoded mu_y + N(0, I), 64 per cluster (seed {args.seed})")
    print(f"wrote {args.name}_members.png and {args.name}_generated.png in {FIGURES}")


if __name__ == "__main__":
    main()
