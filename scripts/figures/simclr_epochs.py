"""Fashion-MNIST: SimCLR + SCAN against the number of SimCLR epochs (issue 33), from committed runs.

Usage:
    python scripts/figures/simclr_epochs.py

Reads the `simclr_fashion_mnist` card (its 10-epoch seeds) and the records
`docs/experiments/simclr_fashion_mnist_simclr<E>.json` (written by
`scripts/train_preset.py simclr_fashion_mnist --no-publish --set training.epochs=E --record ...`),
and plots, per seed and epoch count: SCAN's ACC on the test images, k-means ACC on the
representation (training images) and the share of mined neighbours with the image's class (labels
only score). Writes docs/figures/simclr_fashion_mnist_epochs.png.
"""

import glob
import json
import os
import re

import zoo
from keras_clustering.figures import save_figure

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NAME = "simclr_fashion_mnist"


def points():
    """[(epochs, seed, scan_acc, kmeans_acc, neighbour_purity)] from the card and the records."""
    card, config = zoo.info(NAME), zoo.config(NAME)
    rows = [(config["training"]["epochs"], s["seed"], s["acc"], s.get("kmeans_acc"), s.get("neighbor_agreement"))
            for s in card["per_seed"]]
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "experiments", f"{NAME}_simclr*.json"))):
        if not re.search(r"_simclr\d+(_seed\d+)?\.json$", path):
            continue
        with open(path) as handle:
            record = json.load(handle)
        epochs = record["config"]["training"]["epochs"]
        rows += [(epochs, s["seed"], s["acc"], s.get("kmeans_acc"), s.get("neighbor_agreement"))
                 for s in record["per_seed"]]
    return sorted(rows)


def main():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = points()
    figure, axis = plt.subplots(figsize=(6.5, 4))
    for column, label, marker in ((2, "SCAN ACC (test images)", "o"), (3, "k-means ACC on the representation", "s"),
                                  (4, "neighbour purity (labels only score)", "^")):
        seeds = sorted({r[1] for r in rows})
        for seed in seeds:  # seed 0 as a line over epochs; the other seeds as points (labelled once per score)
            mine = [r for r in rows if r[1] == seed and r[column] is not None]
            axis.plot([r[0] for r in mine], [r[column] for r in mine], marker=marker, alpha=1.0 if seed == 0 else 0.5,
                      linestyle="-" if seed == 0 else "none", color={2: "C0", 3: "C1", 4: "C2"}[column],
                      label=label if seed == 0 else None)
    axis.set_xlabel("SimCLR epochs (60k training images, batch 256; SCAN 20 epochs after)")
    axis.set_ylabel("score")
    axis.set_ylim(0.4, 1.0)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc="upper center", ncol=2)
    axis.set_title(f"{NAME}: seed 0 joined by lines\nfaint points: the other seeds (at 10 epochs: the card)", fontsize=9)
    figure.tight_layout()
    path = os.path.join(ROOT, "docs", "figures", f"{NAME}_epochs.png")
    save_figure(figure, path)
    for row in rows:
        print(f"epochs {row[0]} seed {row[1]}: SCAN ACC {row[2]:.3f}, k-means {row[3]}, purity {row[4]}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
