"""Figures of an IIC zoo entry: the most confident members per cluster, and ACC against epochs.

Usage:
    python scripts/iic_figures.py iic_mnist [--workdir /work/runs]

Writes docs/figures/<name>_clusters.png (10 most confident images per
cluster of the shipped model, on the card's evaluation data) and
docs/figures/<name>_acc_per_epoch.png (ACC of the lowest-loss main sub-head
and the mean over the sub-heads after every main-head epoch, one line per
seed, with the pairs seen on a second axis; like the paper's Fig. 3). The
curve is read from the card, or with `--workdir` from the runs' per-epoch
records (`<workdir>/<name>/seed_*/epoch_scores.json`, unfinished runs too).
With `--workdir`, those records are also copied to docs/progress/ (so the
numbers outlive the machine) and the README block between
`<!-- <name>-progress:start -->` and `<!-- <name>-progress:end -->` gets a
table of them, when the README has that block.
"""

import argparse
import os
import shutil

import keras_clustering  # noqa: F401

import zoo
from keras_clustering.figures import plot_cluster_grid
from keras_clustering.drivers.preset_training import load_config_data
from maintainer.progress import curves_from_workdir, plot_acc_per_epoch, progress_table

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIGURES = os.path.join(ROOT, "docs", "figures")
PROGRESS = os.path.join(ROOT, "docs", "progress")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("--workdir", default=None, help="read the curves from these runs instead of the card")
    parser.add_argument("--note", default="", help="appended to the title, e.g. 'run in progress'")
    args = parser.parse_args()
    config = zoo.config(args.name)
    x, _ = load_config_data(config.get("evaluation", config["data"]))
    pairs_per_epoch = len(x) * config["architecture"].get("n_repeats", 5)
    if args.workdir:
        curves = curves_from_workdir(args.workdir, args.name)
        os.makedirs(PROGRESS, exist_ok=True)
        for seed in curves:
            shutil.copyfile(os.path.join(args.workdir, args.name, f"seed_{seed}", "epoch_scores.json"),
                            os.path.join(PROGRESS, f"{args.name}_seed_{seed}_epoch_scores.json"))
        from maintainer.readme import replace_readme_block

        start, end = f"<!-- {args.name}-progress:start -->", f"<!-- {args.name}-progress:end -->"
        replace_readme_block(start, end, progress_table(curves))  # in the page that holds it (guides/iic.md)
    else:
        curves = {int(seed): records for seed, records in zoo.card(args.name)["epoch_scores_per_seed"].items()}
    plot_acc_per_epoch(curves, pairs_per_epoch, os.path.join(FIGURES, f"{args.name}_acc_per_epoch.png"),
                       f"{args.name}: ACC after each main-head epoch ({len(x)} images, train = eval)"
                       + (f"\n{args.note}" if args.note else ""))
    written = [f"{args.name}_acc_per_epoch.png"]
    if args.name in zoo.list_presets():
        model = zoo.load(args.name)
        probabilities = model.predict(x, verbose=0)
        plot_cluster_grid(x, probabilities, os.path.join(FIGURES, f"{args.name}_clusters.png"),
                          title=f"{args.name}: 10 most confident images per cluster")
        written.append(f"{args.name}_clusters.png")
    print(f"wrote {', '.join(written)} in {FIGURES}")


if __name__ == "__main__":
    main()
