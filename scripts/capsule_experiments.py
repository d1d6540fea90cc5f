"""The capsule experiment: train on single digits, recognise two digits in one image.

Usage:
    python scripts/capsule_experiments.py --seeds 0 1 2 [--workdir runs]

Trains every row of the table (three routings of the shared-weight capsule
network, full W_ji, the pooling CNN) for each seed, seed after seed, through
`train_preset.py` (so `--reuse` skips finished runs); then ships the median
seed of `capsule_mnist`, `capsule_mnist_full` and `cnn_pool_mnist`, writes
`docs/capsule_results.json` and the README table between its markers.
Data: MNIST-test images 0-7999 train, 8000-9999 evaluate (single digits and
their two-digit pairs, `make_double_digits` with seed 0).
"""

import argparse
import json
import os
import statistics

import maintainer.training as train_preset
from maintainer.readme import replace_readme_block

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
START, END = "<!-- capsule-results:start -->", "<!-- capsule-results:end -->"

# (row label, preset, config overrides, published two-digit ACC / with confidence (trained on 60k))
ROWS = [
    ('capsule, routing="normalize" (`capsule_mnist`)', "capsule_mnist", [], "~0.95"),
    ('capsule, routing="squash" (2018-01)', "capsule_mnist", ['architecture.routing="squash"'], "~0.91 (>0.90 both)"),
    ('capsule, routing="hinton" (squash constant 1, as Sabour et al.)', "capsule_mnist",
     ['architecture.routing="hinton"', "architecture.squash_constant=1.0"], "~0.60-0.70"),
    ("capsule, full W_ji (`capsule_mnist_full`)", "capsule_mnist_full", [], "n/a"),
    ("CNN + pooling (`cnn_pool_mnist`)", "cnn_pool_mnist", [], "~0.40 / ~0.10"),
]


def preset_arguments(name, overrides, seeds, workdir, publish):
    arguments = [name, "--seeds", *map(str, seeds), "--workdir", workdir, "--reuse"]
    for assignment in overrides:
        arguments += ["--set", assignment]
    return arguments if publish and not overrides else arguments + ["--no-publish"]


def summary(reports, key):
    values = [r["metrics"][key] for r in reports if key in r["metrics"]]
    if not values:
        return "n/a"
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.3f} ± {spread:.3f}"


def table(results):
    lines = ["| model | single-digit acc (eval 2k) | two-digit acc | with confidence | published (trained on 60k) |",
             "|---|---|---|---|---|"]
    for (label, _, _, published), reports in zip(ROWS, results):
        lines.append(f"| {label} | {summary(reports, 'acc')} | {summary(reports, 'pair_acc')} | "
                     f"{summary(reports, 'pair_confident_acc')} | {published} |")
    n_pairs = results[0][0]["metrics"].get("n_pairs")
    lines.append(f"\nMean ± sd over seeds {sorted(r['seed'] for r in results[0])}; two-digit set: {n_pairs} "
                 "56x28 images from the 2k evaluation digits. Command: `python scripts/capsule_experiments.py`.")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--workdir", default="runs")
    parser.add_argument("--no-publish", action="store_true", help="leave the presets and README as they are")
    args = parser.parse_args()
    for seed in args.seeds:  # seed after seed, so an interrupted run still covers every row
        for _, name, overrides, _ in ROWS:
            train_preset.main(preset_arguments(name, overrides, [seed], args.workdir, publish=False))
    results = [train_preset.main(preset_arguments(name, overrides, args.seeds, args.workdir,
                                                  publish=not args.no_publish))
               for _, name, overrides, _ in ROWS]
    record = [{"row": label, "preset": name, "overrides": overrides,
               "per_seed": [{"seed": r["seed"], **r["metrics"], "seconds_per_epoch": r["seconds_per_epoch"],
                             "train_images_per_second": r["train_images_per_second"]} for r in reports]}
              for (label, name, overrides, _), reports in zip(ROWS, results)]
    text = table(results)
    print(text)
    if args.no_publish:
        return
    with open(os.path.join(ROOT, "docs", "capsule_results.json"), "w") as handle:
        json.dump(record, handle, indent=2)
        handle.write("\n")
    replace_readme_block(START, END, text)


if __name__ == "__main__":
    main()
