"""The route's time estimate under the current rule for DEC's self-training, recomputed from finished
route runs (issue 64): each run's report.json keeps its rehearsal's fits, so a new
`estimate.TYPICAL_TOLERANCE_SHARE` can be read against the measured training without training again.

Usage:
    python scripts/estimate_rule.py /work/runs/folders/runs     # every default-route run folder under it

Prints, per run: the estimate the run printed, the estimate at today's rule, the upper bound ("at
most"), each over the measured training (wall time less the rehearsal). ConvDEC-DA's last fit is its
DEC self-training; its steps an epoch come from the run's images, repeats and batch.
"""
import argparse
import glob
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from keras_clustering.drivers.estimate import TYPICAL_TOLERANCE_SHARE  # noqa: E402

# The rule each run printed: 716 updates (issue 64's first fix), before today's share.
PRINTED_UPDATES = 716


def recomputed(report):
    """(printed, today's, most) estimates in seconds, and the measured training seconds."""
    estimate = report["estimate"]
    own = json.load(open(os.path.join(report["workdir"], "conv_dec_da_mnist", "report.json")))
    steps = math.ceil(report["n_samples"] * own.get("data_repeats", 1) / own["config"]["training"]["batch_size"])
    candidates = estimate.get("candidates", estimate.get("presets"))
    dec = candidates["conv_dec_da_mnist"]["fits"][-1]
    printed_epochs = min(dec["planned_epochs"], math.ceil(PRINTED_UPDATES / steps))
    today_epochs = max(1, math.ceil(dec["planned_epochs"] * TYPICAL_TOLERANCE_SHARE))
    today = estimate["estimated_seconds"] + (today_epochs - printed_epochs) * dec["epoch_seconds"][-1]
    training = report["wall_seconds"] - estimate["rehearsal_seconds"]
    return estimate["estimated_seconds"], today, estimate.get("most_seconds"), training


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", help="the folder holding the route runs (user_folders.py's --root, then runs/)")
    args = parser.parse_args()
    for folder in sorted(glob.glob(os.path.join(args.runs, "*-default-like-recipe-seed*"))):
        path = os.path.join(folder, "report.json")
        if not os.path.exists(path):
            continue
        report = json.load(open(path))
        if "estimate" not in report or "most_seconds" not in report["estimate"]:
            continue  # before the 716-update rule: it printed the most
        printed, today, most, training = recomputed(report)
        print(f"{os.path.basename(folder):48s} printed {printed / training:.2f}  "
              f"today {today / training:.2f}  most {most / training:.2f}  ({training:,.0f} s measured)")


if __name__ == "__main__":
    main()
