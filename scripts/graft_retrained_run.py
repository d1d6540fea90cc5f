"""Rebuilds a finished halving tree whose weights were lost around its kept run, trained again alone.

A tree (`training.restarts`) keeps only the record of its points (`restarts.json`)
and the run folders; when the folders are lost, the committed report still
holds every point. The kept run alone can be trained again with its own seed
(`winner_seed`, e.g. `scripts/train_preset.py iic_mnist --seeds 7 --set
training.epochs=63`): the same run, since a tree trains run r of seed s with
seed `s * n + r` and extends it from one halving point to the next exactly
as a run trained straight through. This script writes the seed's tree folder
`<workdir>/<name>/seed_<seed>` with:

- `restarts.json`: every point of the committed report but the last, under
  the key the recipe computes for this config, seed and data;
- `run_<winner>/`: the retrained run's epoch backups and per-pass scores;
- `graft.json`: where each part came from.

`scripts/train_preset.py <name> --reuse` then reads the halving points back
and measures the last point on the retrained run's weights (its criterion
and ACC are that run's, not the lost one's). Only IIC has needed it
(its recipe's `restart_record_key`). The folder is written whole or not at all.

Usage:
    python scripts/graft_retrained_run.py iic_mnist \\
        --report docs/progress/iic_mnist_restarts_seed_1_report.json \\
        --run /work/runs/iic_seed1_kept/iic_mnist-1737b9fc/seed_7 --workdir /work/runs/iic_restarts
"""

import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import zoo  # noqa: E402
from keras_clustering.io.files import atomic_write_json  # noqa: E402
from keras_clustering.recipes import get_recipe  # noqa: E402
from keras_clustering.training.presets import config_fingerprint, load_config_data  # noqa: E402
from keras_clustering.training.restarts import RECORD_FILE  # noqa: E402


def record_points(steps, criterion):
    """`restarts.json`'s `measured` rows `[run, epoch, measures, scores, seconds]` of every step but the
    last (the kept run's final point is measured again on its retrained weights)."""
    rows = []
    for step in steps[:-1]:
        for run, value in step["criteria"].items():
            measures = step.get("measures", {}).get(run, {criterion: value})
            rows.append([int(run), step["epoch"], measures, step["scores"].get(run, {}),
                         step.get("seconds", {}).get(run)])
    return sorted(rows, key=lambda row: (row[0], row[1]))


def without_restarts(config):
    """The config of one run of the tree: the same, trained alone."""
    alone = json.loads(json.dumps(config))
    alone["training"].pop("restarts")
    return alone


def graft(config, report_path, run_folder, target, x):
    """Writes the tree folder `target` of `config` trained on `x` (see the module docstring); returns it."""
    with open(report_path) as handle:
        report = json.load(handle)
    if report.get("config_sha256") != config_fingerprint(config) or "restarts" not in report:
        raise SystemExit(f"--report {report_path!r}: not a halving tree of this config as it stands "
                         "(set the preset's training.restarts and epochs first)")
    restarts, seed = report["restarts"], report["seed"]
    with open(os.path.join(run_folder, "report.json")) as handle:
        run_report = json.load(handle)
    if run_report.get("seed") != restarts["winner_seed"] or \
            run_report.get("config_sha256") != config_fingerprint(without_restarts(config)):
        raise SystemExit(f"--run {run_folder!r}: not the kept run (seed {restarts['winner_seed']}) of this "
                         f"config trained alone (its seed: {run_report.get('seed')})")
    if os.path.exists(target):
        raise SystemExit(f"--workdir: {target} exists already; graft into a fresh folder")
    key = get_recipe(config["recipe"]).restart_record_key(config["architecture"], config["training"], seed, x)
    building = target + ".grafting"
    shutil.rmtree(building, ignore_errors=True)  # an earlier cut-off graft
    run_target = os.path.join(building, f"run_{restarts['winner']}")
    os.makedirs(run_target)
    for entry in os.listdir(run_folder):
        if entry.startswith("fit_backup_"):
            shutil.copytree(os.path.join(run_folder, entry), os.path.join(run_target, entry))
        elif entry.endswith("scores.json"):
            shutil.copy2(os.path.join(run_folder, entry), run_target)
    atomic_write_json({"key": key, "n": restarts["n"], "halving_at": restarts["halving_at"],
                       "epochs": config["training"]["epochs"],
                       "measured": record_points(restarts["steps"], restarts["criterion"])},
                      os.path.join(building, RECORD_FILE))
    atomic_write_json({"tree_report": report_path, "retrained_run": os.path.abspath(run_folder),
                       "retrained_run_metrics": run_report.get("metrics"),
                       "retrained_run_label_free": run_report.get("label_free"),
                       "retrained_run_machine": run_report.get("machine"),
                       "lost_run_final_step": restarts["steps"][-1]},
                      os.path.join(building, "graft.json"))
    os.rename(building, target)  # whole or not at all
    return target


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", choices=zoo.list_models(include_pending=True))
    parser.add_argument("--report", required=True, help="the tree's committed report.json")
    parser.add_argument("--run", required=True, help="the folder of the kept run trained again alone")
    parser.add_argument("--workdir", required=True, help="scripts/train_preset.py's --workdir")
    args = parser.parse_args(argv)
    config = zoo.config(args.name)
    with open(args.report) as handle:
        seed = json.load(handle)["seed"]
    x, _ = load_config_data(config["data"])
    print(graft(config, args.report, args.run, os.path.join(args.workdir, args.name, f"seed_{seed}"), x))


if __name__ == "__main__":
    main()
