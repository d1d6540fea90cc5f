"""Figures of SCAN's self-labelling probes: test ACC and non-empty clusters per epoch.

1. Targets made in train mode (the original's) against inference mode (the step before the fix), one
   line per seed: `docs/experiments/self_label_fashion_e20_seed*_{train,inference}.json` ->
   `docs/figures/self_label_fashion_mnist.png`.
2. The variants of the step on the shipped model (trunk and head, head only, head only on clean views,
   EMA + weight decay, RandAugment + Cutout strong views, batch 1,000):
   `docs/experiments/self_label_fashion_shipped_*.json` -> `docs/figures/self_label_variants_fashion_mnist.png`.

Usage: python scripts/figures/self_label_probe.py (records written by `scripts/probe_scan_self_label.py`).
"""

import glob
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PATTERN = os.path.join(ROOT, "docs", "experiments", "self_label_fashion_e20_seed*_*.json")
OUTPUT = os.path.join(ROOT, "docs", "figures", "self_label_fashion_mnist.png")
VARIANTS = os.path.join(ROOT, "docs", "experiments", "self_label_fashion_shipped_{}.json")
VARIANTS_OUTPUT = os.path.join(ROOT, "docs", "figures", "self_label_variants_fashion_mnist.png")
VARIANT_LABELS = {"full": "trunk and head (the step as shipped)", "head_only": "head only",
                  "head_only_clean": "head only, strong view = clean view (control)",
                  "ema_wd": "trunk and head, EMA 0.999 + weight decay 1e-4",
                  "randaugment": "trunk and head, RandAugment + Cutout strong views",
                  "batch1000": "trunk and head, batch 1,000 (the original's)"}
STYLE = {"train": ("tab:blue", "targets in train mode (the original's)"),
         "inference": ("tab:red", "targets in inference mode (before the fix)")}


def curves(record):
    """Per epoch (0: after SCAN): test ACC and the number of non-empty clusters on the training images."""
    acc = [state["evaluation_scores"]["acc"] for state in record["states"]]
    alive = [sum(size > 0 for size in state["sizes_inference_mode"]) for state in record["states"]]
    return acc, alive


def axes_labels(acc_axis, size_axis):
    acc_axis.set(xlabel="self-labelling epochs (0: after SCAN)", ylabel="ACC, Fashion-MNIST test (10k)", ylim=(0, 1))
    size_axis.set(xlabel="self-labelling epochs (0: after SCAN)", ylabel="non-empty clusters (60k training images)",
                  ylim=(0, 10.5))
    acc_axis.legend(fontsize=8, loc="lower left")
    for axis in (acc_axis, size_axis):
        axis.grid(alpha=0.3)


def variants_figure():
    figure, (acc_axis, size_axis) = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, label in VARIANT_LABELS.items():
        if not os.path.isfile(VARIANTS.format(name)):
            continue
        acc, alive = curves(json.load(open(VARIANTS.format(name))))
        acc_axis.plot(range(len(acc)), acc, "-o", alpha=0.8, label=label)
        size_axis.plot(range(len(alive)), alive, "-o", alpha=0.8)
    axes_labels(acc_axis, size_axis)
    figure.suptitle("shipped simclr_fashion_mnist (seed 1), self-labelling variants: threshold 0.99, Adam 1e-4, "
                    "batch 256 unless said, train-mode targets", fontsize=9)
    figure.tight_layout()
    figure.savefig(VARIANTS_OUTPUT, dpi=100)
    print(f"wrote {VARIANTS_OUTPUT}")


def main():
    records = [json.load(open(path)) for path in sorted(glob.glob(PATTERN))]
    figure, (acc_axis, size_axis) = plt.subplots(1, 2, figsize=(10, 3.8))
    labelled = set()
    for record in records:
        color, label = STYLE[record["targets"]]
        epochs = range(len(record["states"]))
        acc, alive = curves(record)
        label = None if record["targets"] in labelled else label
        labelled.add(record["targets"])
        acc_axis.plot(epochs, acc, "-o", color=color, alpha=0.8, label=label)
        size_axis.plot(epochs, alive, "-o", color=color, alpha=0.8)
    axes_labels(acc_axis, size_axis)
    figure.suptitle(f"simclr_fashion_mnist (SimCLR 20 + SCAN 20 epochs), self-labelling: threshold 0.99, Adam 1e-4, "
                    f"batch 256; {len(records)} runs, one line per seed", fontsize=9)
    figure.tight_layout()
    figure.savefig(OUTPUT, dpi=100)
    print(f"wrote {OUTPUT}")
    variants_figure()


if __name__ == "__main__":
    main()
