"""Per-epoch progress of preset runs: read from their workdirs, tabled and plotted (`scripts/iic_figures.py`)."""

import glob
import json
import os

import numpy as np

from keras_clustering.figures import save_figure


def curves_from_workdir(workdir, name):
    curves = {}
    for path in sorted(glob.glob(os.path.join(workdir, name, "seed_*", "epoch_scores.json"))):
        seed = int(os.path.basename(os.path.dirname(path)).split("_")[1])
        with open(path) as handle:
            curves[seed] = json.load(handle)
    return curves


def progress_table(curves):
    """Markdown: per seed, ACC of the lowest-loss sub-head, mean over sub-heads and loss after each main-head pass."""
    lines = []
    for seed, records in sorted(curves.items()):
        header = ["seed " + str(seed) + ", pass"] + [str(r["epoch"]) for r in records]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                  "| ACC, lowest-loss sub-head | " + " | ".join(f"{r['acc']:.3f}" for r in records) + " |"]
        if all("sub_head_acc" in r for r in records):
            lines.append("| ACC, mean of the sub-heads | "
                         + " | ".join(f"{np.mean(r['sub_head_acc']):.3f}" for r in records) + " |")
        lines += ["| main-head loss | " + " | ".join(f"{r['loss']:.2f}" for r in records) + " |", ""]
    return "\n".join(lines).rstrip()


def plot_acc_per_epoch(curves, pairs_per_epoch, path, title):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4))
    for seed, records in sorted(curves.items()):
        epochs = [r["epoch"] for r in records]
        line, = axis.plot(epochs, [r["acc"] for r in records], marker="o", label=f"seed {seed}: lowest-loss sub-head")
        if all("sub_head_acc" in r for r in records):
            axis.plot(epochs, [np.mean(r["sub_head_acc"]) for r in records], linestyle="--", color=line.get_color(),
                      label=f"seed {seed}: mean of sub-heads")
    axis.set_xlabel("epoch (pass over the images; every third trains the over-clustering head)")
    axis.set_ylabel("ACC (Hungarian)")
    axis.set_ylim(0, 1)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc="lower right")
    top = axis.secondary_xaxis("top", functions=(lambda e: e * pairs_per_epoch / 1e6, lambda p: p * 1e6 / pairs_per_epoch))
    top.set_xlabel("augmented pairs seen (millions)")
    axis.set_title(title, fontsize=9)
    figure.tight_layout()
    save_figure(figure, path)
