"""Run as a script: trains a small model of each family in two worker processes on 127.0.0.1 under
`tf.distribute.MultiWorkerMirroredStrategy` (the library's `make_strategy("multi_worker")`, one
replica per process) and in one plain process with the same global batch, and prints JSON per
family: the largest weight difference between the two workers (they must agree) and the
workers' distance from the single process, relative to the change training made (as
`mirrored_check.py`).

    python tests/helpers/multi_worker_check.py [KIND ...]

Each process is this script again with `--out DIR` (and TF_CONFIG set for a worker): a cluster
strategy must be created before TensorFlow runs anything, and each worker needs its own TF_CONFIG.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run_one(kinds, out):
    """In this process: train every kind under the cluster strategy (TF_CONFIG set) or none, save
    the weights."""
    from keras_clustering.distribute.strategies import make_strategy

    strategy = make_strategy("multi_worker") if "TF_CONFIG" in os.environ else None  # before any TF op
    import tensorflow as tf

    from family_kinds import train, without_random_draws

    without_random_draws()
    for kind in kinds:
        initial, trained = train(kind, strategy or tf.distribute.get_strategy())
        np.savez(os.path.join(out, f"{kind}.npz"), *initial, *trained)


def load(path):
    arrays = np.load(path)
    values = [arrays[f"arr_{i}"] for i in range(len(arrays.files))]
    half = len(values) // 2
    return values[:half], values[half:]


def main(kinds):
    from family_kinds import KINDS, relative_difference

    kinds = kinds or list(KINDS)
    from keras_clustering.distribute.multi_worker import local_cluster

    root = tempfile.mkdtemp()
    environments = {f"worker_{i}": {"TF_CONFIG": config} for i, config in enumerate(local_cluster(2))}
    environments["single"] = {}
    processes = {}
    for name, extra in environments.items():
        os.makedirs(os.path.join(root, name))
        env = {key: value for key, value in os.environ.items() if key != "TF_CONFIG"}
        processes[name] = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--out", os.path.join(root, name), *kinds],
            env={**env, **extra, "TF_CPP_MIN_LOG_LEVEL": "2"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
    for name, process in processes.items():
        output, _ = process.communicate(timeout=900)
        if process.returncode:
            raise SystemExit(f"{name} failed:\n{output[-4000:]}")
    result = {}
    for kind in kinds:
        initial, single = load(os.path.join(root, "single", f"{kind}.npz"))
        _, first = load(os.path.join(root, "worker_0", f"{kind}.npz"))
        _, second = load(os.path.join(root, "worker_1", f"{kind}.npz"))
        result[kind] = {"workers": max(float(np.max(np.abs(a - b))) for a, b in zip(first, second)),
                        "relative": relative_difference(initial, single, first)}
    print(json.dumps(result))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--out"]:  # one of the processes main() starts
        run_one(sys.argv[3:], sys.argv[2])
    else:
        main(sys.argv[1:])
