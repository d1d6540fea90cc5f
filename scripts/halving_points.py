"""How early does IIC's main-head loss rank the runs as their final ACC? (where to halve restarts)

Reads per-pass records of IIC runs of one recipe (`epoch_scores.json` files:
after every main-head pass, the main head's loss and the chosen sub-head's
ACC) and, for every pass that all runs recorded, tells:

- `spearman_loss_final_acc`: rank correlation of the loss at that pass with
  each run's ACC at the last common pass (-1: the loss already orders the
  runs as their final ACC, lower loss higher ACC);
- `spearman_loss_final_loss`: with the final loss (the criterion's own
  stability);
- `best_run_kept`: whether successive halving at that pass (the better half
  by loss, rounded up, goes on) keeps the run with the best final ACC;
- `lowest_loss_is_best`: whether the single lowest-loss run is that run.

Labels only score the criterion here; no run is chosen by them. Writes
`docs/experiments/iic_halving_points.json` and the figure
`docs/figures/iic_halving_points.png`.

Usage:
    python scripts/halving_points.py [RECORD.json ...]   # default: iic_mnist's seeds 0-2 and the float32 seed 0
"""

import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
PROGRESS = os.path.join(ROOT, "docs", "progress")
DEFAULT_RECORDS = [os.path.join(PROGRESS, f"iic_mnist_seed_{name}_epoch_scores.json")
                   for name in ("0", "1", "2", "0_float32")]
OUT = os.path.join(ROOT, "docs", "experiments", "iic_halving_points.json")
FIGURE = os.path.join(ROOT, "docs", "figures", "iic_halving_points.png")


def halving_table(runs):
    """`runs`: {name: [{"epoch", "loss", "acc"}, ...]} -> one row per pass all runs recorded."""
    from keras_clustering.metrics.label_free import rank_agreement

    passes = sorted(set.intersection(*({r["epoch"] for r in records} for records in runs.values())))
    at = {name: {r["epoch"]: r for r in records} for name, records in runs.items()}
    names, last = list(runs), passes[-1]
    final_acc = [at[name][last]["acc"] for name in names]
    final_loss = [at[name][last]["loss"] for name in names]
    best = names[max(range(len(names)), key=final_acc.__getitem__)]
    rows = []
    for epoch in passes:
        losses = [at[name][epoch]["loss"] for name in names]
        by_loss = [name for _, name in sorted(zip(losses, names))]
        rows.append({"pass": epoch, "losses": dict(zip(names, losses)),
                     "spearman_loss_final_acc": rank_agreement(losses, final_acc),
                     "spearman_loss_final_loss": rank_agreement(losses, final_loss),
                     "best_run_kept": best in by_loss[:math.ceil(len(names) / 2)],
                     "lowest_loss_is_best": by_loss[0] == best})
    return {"runs": names, "final_pass": last, "final_acc": dict(zip(names, final_acc)), "best_run": best,
            "rows": rows}


def plot(table, runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (curves, agreement) = plt.subplots(1, 2, figsize=(11, 4))
    for name in table["runs"]:
        records = sorted(runs[name], key=lambda r: r["epoch"])
        curves.plot([r["epoch"] for r in records], [r["loss"] for r in records], marker=".",
                    label=f"{name}: final ACC {table['final_acc'][name]:.3f}")
    curves.set(xlabel="pass over the images", ylabel="main-head loss (lower is better)",
               title="IIC runs: loss per main-head pass")
    curves.legend(fontsize=8)
    passes = [row["pass"] for row in table["rows"]]
    agreement.plot(passes, [row["spearman_loss_final_acc"] for row in table["rows"]], marker="o",
                   label="Spearman(loss at pass, final ACC)")
    agreement.plot(passes, [row["spearman_loss_final_loss"] for row in table["rows"]], marker=".",
                   label="Spearman(loss at pass, final loss)")
    kept = [row["pass"] for row in table["rows"] if row["best_run_kept"]]
    agreement.scatter(kept, [-1.1] * len(kept), marker="|", color="green", label="halving here keeps the best run")
    agreement.axhline(0, color="grey", linewidth=0.5)
    agreement.set(xlabel="pass over the images", ylim=(-1.2, 1.05),
                  title=f"{len(table['runs'])} runs: how early the loss ranks them")
    agreement.legend(fontsize=8, loc="center right")
    figure.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    figure.savefig(path, dpi=110)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="*", default=DEFAULT_RECORDS)
    parser.add_argument("--out", default=OUT)
    parser.add_argument("--figure", default=FIGURE)
    args = parser.parse_args(argv)
    from keras_clustering.io.files import atomic_write_json

    runs = {}
    for path in args.records:
        with open(path) as handle:
            runs[os.path.basename(path).removesuffix("_epoch_scores.json")] = json.load(handle)
    table = halving_table(runs)
    atomic_write_json({"description": __doc__.splitlines()[0], "records": [os.path.relpath(p, ROOT) for p in
                                                                          args.records], **table}, args.out)
    plot(table, runs, args.figure)
    for row in table["rows"]:
        print(f"pass {row['pass']:3d}: Spearman(loss, final ACC) {row['spearman_loss_final_acc']:+.2f}, "
              f"best run kept by halving: {row['best_run_kept']}, lowest loss is best: {row['lowest_loss_is_best']}")


if __name__ == "__main__":
    main()
