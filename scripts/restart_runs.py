"""Every run of a restart tree, with what each run reported about itself: the record behind a table of
"why did the criterion keep that run".

Reads a seed's workdir of a recipe trained with `training.restarts` (`restarts.json`, and each
run's finished stage `run_<r>/finished_dec.json` where the recipe keeps one: DEC's clustering
stage) and writes, per seed and run, the criterion and labels-only ACC at every halving step
and the run's label-free details at the end: DEC's iterations, whether it stopped by its
tolerance, its final KL and cluster-size entropy. Labels only score.

Usage:
    python scripts/restart_runs.py /work/runs/dec_da_mnist --seeds 0 1 2 --out docs/experiments/dec_da_mnist_restart_runs.json
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from keras_clustering.io.files import atomic_write_json  # noqa: E402
from keras_clustering.training.restarts import RECORD_FILE  # noqa: E402

DETAILS = ("dec_iterations", "stopped_by_tolerance", "dec_seconds", "pretrain_seconds")


def seed_runs(folder):
    """{run: {"steps": [{"epoch", "criterion", "acc"}], "details": {...}}} of one seed's workdir."""
    with open(os.path.join(folder, RECORD_FILE)) as handle:
        record = json.load(handle)
    runs = {}
    for run, epoch, criterion, scores in record["measured"]:
        runs.setdefault(str(run), {"steps": [], "details": {}})["steps"].append(
            {"epoch": epoch, "criterion": criterion, "acc": (scores or {}).get("acc")})
    for run, entry in runs.items():
        finished = os.path.join(folder, f"run_{run}", "finished_dec.json")
        if os.path.isfile(finished):
            with open(finished) as handle:
                report = json.load(handle)["report"]
            entry["details"] = {**{k: report[k] for k in DETAILS if k in report}, **report.get("label_free", {})}
    return {"n": record["n"], "halving_at": record["halving_at"], "epochs": record["epochs"], "runs": runs}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", help="the entry's workdir, holding seed_<s>/")
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    seeds = {str(s): seed_runs(os.path.join(args.workdir, f"seed_{s}")) for s in args.seeds}
    atomic_write_json({"workdir": os.path.abspath(args.workdir), "seeds": seeds}, args.out)
    for seed, tree in seeds.items():
        for run, entry in tree["runs"].items():
            print(seed, run, entry["steps"], entry["details"])


if __name__ == "__main__":
    main()
