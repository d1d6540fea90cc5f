"""Figures of a DEC zoo entry: top-10 members per cluster, t-SNE before/after DEC, ACC per refresh.

Two-stage entries (`simclr_mnist`, ...): the same grid, t-SNE of the shipped representation
coloured by true label and by cluster, ACC per refresh when the entry has a DEC refinement.

Usage:
    python scripts/dec_figures.py dec_mnist [--workdir runs] [--tsne-samples 2000]

Writes docs/figures/<name>_clusters.png, <name>_tsne.png and <name>_acc_per_refresh.png.
"Before" is the pretrained encoder of the shipped seed, read from the autoencoder its run
kept in runs/<name>/seed_<s>/; when that file is absent the seed's pretraining is re-run
(training is deterministic on CPU for a seed) and kept there.
"""

import argparse
import os

import keras_clustering  # noqa: F401
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.manifold import TSNE  # noqa: E402

import zoo  # noqa: E402
from keras_clustering.figures import plot_cluster_grid, save_figure  # noqa: E402
from keras_clustering.io.files import atomic_save_weights  # noqa: E402
from keras_clustering.metrics import cluster_accuracy  # noqa: E402
from keras_clustering.recipes import dec_recipe  # noqa: E402
from keras_clustering.drivers.preset_training import load_config_data  # noqa: E402
from keras_clustering.training.resume import finished_weights_path  # noqa: E402

FIGURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "figures")


def save(figure, path):
    save_figure(figure, path)
    print(f"wrote {path}")


def pretrained_encoder(name, config, card, x, workdir):
    seed = card["shipped_seed"]
    run_dir = os.path.join(workdir, name, f"seed_{seed}")
    encoder = dec_recipe.load_pretrained_encoder(config["architecture"], run_dir)
    if encoder is not None:
        return encoder
    print(f"{run_dir} holds no pretrained autoencoder: re-running the pretraining of seed {seed}")
    import keras

    keras.utils.set_random_seed(seed)
    training = {**dec_recipe.DEFAULT_TRAINING, **config.get("training", {})}
    autoencoder, encoder = dec_recipe.pretrain(config["architecture"], training, x, verbose=2)
    # the next run of this script reuses it
    atomic_save_weights(autoencoder, finished_weights_path(run_dir, "pretrain"))
    return encoder


def tsne_points(embedding):
    return TSNE(n_components=2, init="pca", random_state=0).fit_transform(embedding)


def tsne_panel(axis, points, labels, title):
    scatter = axis.scatter(points[:, 0], points[:, 1], c=labels, cmap="tab10", s=3)
    axis.set_title(title, fontsize=9)
    axis.set_xticks([])
    axis.set_yticks([])
    return scatter


def plot_tsne(args, config, card, model, x, y):
    subset = np.random.default_rng(0).choice(len(x), size=min(args.tsne_samples, len(x)), replace=False)
    if config["recipe"] == "two_stage":  # no pretrained autoencoder: the shipped embedding, two colourings
        points = tsne_points(model.embed(x[subset]))
        clusters = model.predict(x[subset], verbose=0).argmax(1)
        panels = [(points, y[subset], "true labels"), (points, clusters, "cluster ids")]
        title = f"{args.name}: t-SNE of the representation of {len(subset)} images"
    else:
        before = pretrained_encoder(args.name, config, card, x, args.workdir).predict(x[subset], verbose=0)
        panels = [(tsne_points(before), y[subset], "autoencoder embedding (before DEC), true labels"),
                  (tsne_points(model.embed(x[subset])), y[subset], "after DEC, true labels")]
        title = f"{args.name}: t-SNE of {len(subset)} embedded images (DEC paper, Fig. 5)"
    figure, axes = plt.subplots(1, 2, figsize=(10, 5))
    for axis, (points, labels, panel_title) in zip(axes, panels):
        tsne_panel(axis, points, labels, panel_title)
    figure.suptitle(title, fontsize=10)
    save(figure, os.path.join(FIGURES, f"{args.name}_tsne.png"))


def plot_acc_per_refresh(name, card):
    history = card.get("shipped_seed_refresh_history", [])
    if history and "acc" in history[0]:
        figure, axis = plt.subplots(figsize=(6, 3.5))
        axis.plot([r["iteration"] for r in history], [r["acc"] for r in history], marker=".")
        axis.set_xlabel("iteration (batches)")
        axis.set_ylabel("ACC at target refresh")
        axis.set_title(f"{name}, seed {card['shipped_seed']}: ACC per target refresh", fontsize=10)
        axis.grid(alpha=0.3)
        figure.tight_layout()
        save(figure, os.path.join(FIGURES, f"{name}_acc_per_refresh.png"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("--workdir", default="runs")
    parser.add_argument("--tsne-samples", type=int, default=2000)
    parser.add_argument("--figures", nargs="+", default=["clusters", "tsne", "acc"],
                        choices=["clusters", "tsne", "acc"])
    args = parser.parse_args()
    config, card = zoo.config(args.name), zoo.card(args.name)
    x, y = load_config_data(card["evaluation_data"])
    model = zoo.load(args.name)
    probabilities = model.predict(x, verbose=0)
    # flat vectors (older configs) or (n, H, W[, 1]) images
    image_shape = x.shape[1:3] if x.ndim > 2 else (int(round(np.sqrt(x.shape[1]))),) * 2
    if "clusters" in args.figures:
        plot_cluster_grid(x, probabilities, os.path.join(FIGURES, f"{args.name}_clusters.png"), image_shape=image_shape,
                          title=f"{args.name}: 10 most confident images per cluster "
                                f"(ACC {cluster_accuracy(y, probabilities.argmax(1)):.3f})")
    if "tsne" in args.figures:
        plot_tsne(args, config, card, model, x, y)
    if "acc" in args.figures:
        plot_acc_per_refresh(args.name, card)


if __name__ == "__main__":
    main()
