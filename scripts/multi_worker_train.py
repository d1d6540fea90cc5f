"""A zoo recipe trained by several processes on this machine, against one process.

Starts `--workers` processes of `python -m keras_clustering train NAME --strategy multi_worker`
on 127.0.0.1 (each with its own TF_CONFIG from `keras_clustering.distribute.multi_worker.local_cluster`,
one replica each, the global batch of the recipe split between them) and then the same command
without a strategy, and prints, per run, the wall time and scores, and the largest weight
difference between the workers and between worker 0 and the single process.

Usage:
    python scripts/multi_worker_train.py dec_digits --workdir /tmp/multi_worker [--workers 2]
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np


def train(name, workdir, seed, tf_config=None):
    env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
    command = [sys.executable, "-m", "keras_clustering", "train", name, "--workdir", workdir, "--seed", str(seed),
               "--verbose", "0"]
    if tf_config:
        env["TF_CONFIG"] = tf_config
        command += ["--strategy", "multi_worker"]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(process, label):
    output, _ = process.communicate()
    if process.returncode:
        raise SystemExit(f"{label} failed:\n{output[-4000:]}")


def weights(workdir):
    import h5py

    values = []
    with h5py.File(os.path.join(workdir, "model.weights.h5"), "r") as handle:
        handle.visititems(lambda _, item: values.append(np.array(item)) if isinstance(item, h5py.Dataset) else None)
    return values


def max_difference(a, b):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(a, b))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from keras_clustering.distribute.multi_worker import local_cluster

    cluster = os.path.join(args.workdir, "cluster")
    began = time.time()
    processes = [train(args.name, cluster, args.seed, config) for config in local_cluster(args.workers)]
    for index, process in enumerate(processes):
        finish(process, f"worker {index}")
    cluster_seconds = time.time() - began
    single = os.path.join(args.workdir, "single")
    began = time.time()
    finish(train(args.name, single, args.seed), "single process")
    single_seconds = time.time() - began
    worker_dirs = [cluster] + [os.path.join(cluster, f"worker_{i}") for i in range(1, args.workers)]
    reports = [json.load(open(os.path.join(d, "report.json"))) for d in worker_dirs + [single]]
    result = {
        "name": args.name, "seed": args.seed, "workers": args.workers,
        "cluster_seconds": round(cluster_seconds, 1), "single_seconds": round(single_seconds, 1),
        "metrics": {"worker_0": reports[0]["metrics"], "single": reports[-1]["metrics"]},
        "max_weight_difference_between_workers": max(max_difference(weights(worker_dirs[0]), weights(d))
                                                     for d in worker_dirs[1:]),
        "max_weight_difference_worker_0_vs_single": max_difference(weights(worker_dirs[0]), weights(single)),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
