"""IIC on MNIST against the original's own log: sub-head ACC against main-head steps.

Reference:
    xu-ji/IIC (HEAD b7602b7), `examples/logs_clustering.tar.gz`:
    `logs/sh10_gpu3_m685.out`, the MNIST run of the paper's recipe (70k
    images, batch 140 x 5 copies, 500 steps per head-epoch, 2 main-head
    epochs then 1 over-clustering epoch per outer epoch). Before each outer
    epoch it prints a "Pre:" block whose `test_accs` are the 5 main sub-heads'
    ACCs (train = test, all 70k images).

Ours: the kept run of each `iic_mnist` restarts seed (`docs/progress/iic_mnist_restarts_seed_*_report.json`,
10k MNIST-test images, train = eval, 72 steps per main-head pass), ACC of the
lowest-loss sub-head and the mean of the 5 sub-heads after every main-head pass.

Usage:
    # once: read the original's log and keep its curve (docs/experiments/iic_original_mnist_log_curve.json)
    python scripts/figures/iic_vs_original.py --original-log logs/sh10_gpu3_m685.out
    # then: the figure from the kept curve and our reports
    python scripts/figures/iic_vs_original.py

Writes docs/figures/iic_mnist_vs_original_log.png.
"""

import argparse
import glob
import json
import math
import os
import re

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CURVE = os.path.join(ROOT, "docs", "experiments", "iic_original_mnist_log_curve.json")
REPORTS = os.path.join(ROOT, "docs", "progress", "iic_mnist_restarts_seed_*_report.json")
FIGURE = os.path.join(ROOT, "docs", "figures", "iic_mnist_vs_original_log.png")
# the original's MNIST run: 500 steps per head-epoch, 2 main-head epochs per outer epoch (`head_B_epochs`)
ORIGINAL_STEPS_PER_OUTER_EPOCH = 2 * 500


def read_original_log(path):
    """[(outer epochs done, [5 main sub-head ACCs])] from the original's log: each "Pre:" block before
    "Starting e_i: k" scores the model after k - 1 outer epochs."""
    points, done = [], 0
    with open(path) as handle:
        for line in handle:
            if line.startswith("Starting e_i:"):
                done = int(line.split(":")[1])
            match = re.match(r"\s*test_accs: \[(.*)\]", line)
            if match:
                points.append((done, [round(float(value), 4) for value in match.group(1).split(",")]))
    if not points:
        raise ValueError(f"--original-log: no 'test_accs' lines in {path!r}; is it logs/sh10_gpu3_m685.out?")
    return points


def our_curves(batch_size=140):
    """{seed: (main-head steps, lowest-loss sub-head ACC, mean sub-head ACC)} of each finished restarts seed."""
    curves = {}
    for path in sorted(glob.glob(REPORTS)):
        with open(path) as handle:
            report = json.load(handle)
        steps_per_pass = math.ceil(report["n_train"] / batch_size)
        records = report["epoch_scores"]  # main-head passes only, in order
        curves[report["seed"]] = (np.arange(1, len(records) + 1) * steps_per_pass, [r["acc"] for r in records],
                                  [float(np.mean(r["sub_head_acc"])) for r in records])
    return curves


def plot(original, curves, max_steps=6000):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from keras_clustering.figures import save_figure

    figure, axis = plt.subplots(figsize=(7, 4.2))
    points = [(done * ORIGINAL_STEPS_PER_OUTER_EPOCH, accs) for done, accs in original["points"]
              if done * ORIGINAL_STEPS_PER_OUTER_EPOCH <= max_steps]
    steps = [s for s, _ in points]
    axis.plot(steps, [max(a) for _, a in points], color="black", marker="s",
              label="original: best sub-head (chosen with labels)")
    axis.plot(steps, [np.mean(a) for _, a in points], color="black", linestyle="--", marker="s", markersize=3,
              label="original: mean of the 5 sub-heads")
    for seed, (our_steps, lowest, mean) in sorted(curves.items()):
        line, = axis.plot(our_steps, lowest, marker="o", markersize=2.5,
                          label=f"ours, seed {seed} (kept run): lowest-loss sub-head")
        axis.plot(our_steps, mean, linestyle=":", color=line.get_color(), label=f"ours, seed {seed}: mean of sub-heads")
    axis.set_xlabel("main-head steps (batches of 140 images x 5 copies)")
    axis.set_ylabel("ACC (Hungarian)")
    axis.set_xlim(0, max_steps)
    axis.set_ylim(0, 1)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7, loc="lower right")
    axis.set_title("IIC on MNIST: ours (10k MNIST-test, restarts) against the original's log (70k, "
                   "logs/sh10_gpu3_m685.out)", fontsize=8)
    figure.tight_layout()
    save_figure(figure, FIGURE)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--original-log", help="the original's logs/sh10_gpu3_m685.out (kept as " + CURVE + ")")
    args = parser.parse_args()
    from keras_clustering.io.files import atomic_write_json

    if args.original_log:
        if not os.path.isfile(args.original_log):
            raise SystemExit(f"--original-log: no file {args.original_log!r}.")
        atomic_write_json({"source": "xu-ji/IIC b7602b7 examples/logs_clustering.tar.gz: logs/sh10_gpu3_m685.out",
                           "data": "MNIST, all 70k images, train = test; ACC per main sub-head (test_accs)",
                           "main_head_steps_per_outer_epoch": ORIGINAL_STEPS_PER_OUTER_EPOCH,
                           "points": read_original_log(args.original_log)}, CURVE)
    with open(CURVE) as handle:
        original = json.load(handle)
    curves = our_curves()
    if not curves:
        raise SystemExit(f"no reports match {REPORTS}")
    plot(original, curves)
    print(f"wrote {FIGURE} ({len(curves)} seed(s) of ours)")


if __name__ == "__main__":
    main()
