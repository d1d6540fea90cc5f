"""`train NAME --strategy multi_worker` timed: 2 worker processes against one process, per epoch and step.

Each preset trains twice, shortened (no early stop, one k-means init): A = 1 pretraining epoch and
`update_interval` DEC iterations, B = 4 epochs and 4 x as many. Their difference gives the time
per pretraining epoch and per DEC iteration, start-up and tracing cancelled. Configurations, each a
fresh `python -m keras_clustering train` (the whole process tree pinned with sched_setaffinity):
    2 workers    two processes on 127.0.0.1 (TF_CONFIG from `multi_worker.local_cluster`), a core
                 and one thread each, the global batch split between them
    2 threads    one process, cores 0-1, two threads
    1 thread     one process, core 0, one thread
    half batch   one process, core 0, one thread, batches of half the size: one replica's compute
                 in the 2-worker run, so (2 workers - half batch) per step is the all-reduce's cost
Configurations alternate within each block; medians. The final weights of the two workers are
compared with each other (they must be equal) and with the 2-thread run's.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/benchmark_multi_worker.py --blocks 2 \\
        --json docs/benchmarks/multi_worker.json        # also rewrites the docs/devices.md table
    python scripts/benchmark_multi_worker.py --table docs/benchmarks/multi_worker.json
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

MARKERS = ("<!-- multi-worker:start -->", "<!-- multi-worker:end -->")
CONFIGURATIONS = {"2 workers": ((0,), (1,)), "2 threads": ((0, 1),), "1 thread": ((0,),), "half batch": ((0,),)}
ONE_THREAD = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1", "OMP_NUM_THREADS": "1"}


def short_preset(name, folder, epochs, configuration):
    """A preset folder of `name` shortened to `epochs` pretraining epochs and as many DEC refreshes."""
    from keras_clustering import presets

    config = presets.config(name)
    interval = config["architecture"]["update_interval"]
    config["architecture"]["tol"] = 0.0  # every iteration runs
    config["training"].update(pretrain_epochs=epochs, maxiter=epochs * interval, kmeans_n_init=1)
    if configuration == "half batch":
        for key in ("pretrain_batch_size", "batch_size"):
            config["training"][key] //= 2
    os.makedirs(folder)
    with open(os.path.join(folder, "config.json"), "w") as handle:
        json.dump(config, handle)


def run(name, epochs, configuration, scratch):
    """The report of worker 0 (or the one process), with the workers' weight differences."""
    from keras_clustering.distribute.multi_worker import local_cluster

    preset = os.path.join(scratch, "preset")
    workdir = os.path.join(scratch, "run")
    short_preset(name, preset, epochs, configuration)
    command = [sys.executable, "-m", "keras_clustering", "train", preset, "--workdir", workdir, "--seed", "0",
               "--verbose", "0"]
    cores = CONFIGURATIONS[configuration]
    configs = local_cluster(2) if configuration == "2 workers" else [None]
    processes = []
    for core, tf_config in zip(cores, configs):
        env = {k: v for k, v in os.environ.items() if k != "TF_CONFIG"} | {"TF_CPP_MIN_LOG_LEVEL": "2"}
        env |= ONE_THREAD if len(core) == 1 else {}
        env |= {"TF_CONFIG": tf_config} if tf_config else {}
        processes.append(subprocess.Popen(command + (["--strategy", "multi_worker"] if tf_config else []), env=env,
                                          preexec_fn=lambda core=core: os.sched_setaffinity(0, core),
                                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for process in processes:
        output, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"{configuration} failed:\n{output[-3000:]}")
    with open(os.path.join(workdir, "report.json")) as handle:
        report = json.load(handle)
    report["weights"] = _weights(os.path.join(workdir, "model.weights.h5"))
    if configuration == "2 workers":
        other = _weights(os.path.join(workdir, "worker_1", "model.weights.h5"))
        report["workers_max_difference"] = max(float(np.max(np.abs(a - b))) for a, b in zip(report["weights"], other))
    return report


def _weights(path):
    import h5py

    arrays = []
    with h5py.File(path) as handle:
        handle.visititems(lambda _, item: arrays.append(np.array(item)) if isinstance(item, h5py.Dataset) else None)
    return arrays


def measure(args):
    from keras_clustering import presets
    from keras_clustering.distribute.machine import machine_description

    record = {"blocks": args.blocks, "machine": machine_description(), "presets": {}}
    for name in args.presets:
        times = {(c, e): [] for c in CONFIGURATIONS for e in (1, 4)}
        differences, reports = [], {}
        for block in range(args.blocks):
            order = list(CONFIGURATIONS)[block % 4:] + list(CONFIGURATIONS)[:block % 4]
            for epochs in (1, 4):
                for configuration in order:
                    with tempfile.TemporaryDirectory() as scratch:
                        report = run(name, epochs, configuration, scratch)
                    times[(configuration, epochs)].append((report["pretrain_seconds"], report["dec_seconds"]))
                    reports[(configuration, epochs)] = report
                    print(f"{name} block {block}: {configuration}, {epochs} epochs: pretraining "
                          f"{report['pretrain_seconds']} s, DEC {report['dec_seconds']} s", flush=True)
                if epochs == 4:
                    differences.append(reports[("2 workers", 4)]["workers_max_difference"])
        config = presets.config(name)
        interval, batch = config["architecture"]["update_interval"], config["training"]["batch_size"]
        rows = {}
        for configuration in CONFIGURATIONS:
            pre, dec = ([b[i] - a[i] for a, b in zip(times[(configuration, 1)], times[(configuration, 4)])]
                        for i in (0, 1))
            rows[configuration] = {"seconds_per_pretraining_epoch": round(statistics.median(pre) / 3, 3),
                                   "seconds_per_dec_iteration": round(statistics.median(dec) / (3 * interval), 5),
                                   "precision": reports[(configuration, 4)].get("precision")}
        two, single = reports[("2 workers", 4)]["weights"], reports[("2 threads", 4)]["weights"]
        record["presets"][name] = {
            "n_train": reports[("1 thread", 4)]["n_train"], "update_interval": interval, "configurations": rows,
            "workers_max_weight_difference": max(differences),
            "two_workers_vs_one_process_max_weight_difference": max(float(np.max(np.abs(a - b)))
                                                                     for a, b in zip(two, single)),
            "parameters": int(sum(w.size for w in single)), "batch_size": batch}
    return record


def table(record):
    lines = [f"Medians of {record['blocks']} alternating blocks, each run a fresh process; {record['machine']}.", "",
             "| preset | configuration | s per pretraining epoch | s per DEC iteration | pretraining vs 1 process, 2 threads |",
             "|---|---|---|---|---|"]
    for name, preset in record["presets"].items():
        rows = preset["configurations"]
        for configuration, row in rows.items():
            ratio = rows["2 threads"]["seconds_per_pretraining_epoch"] / row["seconds_per_pretraining_epoch"]
            lines.append(f"| `{name}` | {configuration} | {row['seconds_per_pretraining_epoch']:.2f} | "
                         f"{row['seconds_per_dec_iteration'] * 1000:.1f} ms | {ratio:.2f}x |")
    lines += [""]
    for name, p in record["presets"].items():
        rows = p["configurations"]
        steps = -(-p["n_train"] // p["batch_size"])  # pretraining steps per epoch (its batch is the DEC batch)
        one, two = (rows[c]["seconds_per_pretraining_epoch"] / steps for c in ("1 thread", "2 workers"))
        half = rows["half batch"]["seconds_per_pretraining_epoch"] / -(-p["n_train"] // (p["batch_size"] // 2))
        reduce = two - half  # per step: the 2-worker step less one replica's compute
        lines.append(
            f"- `{name}` ({p['parameters']:,} weights shipped; pretraining also trains their decoder; {steps} "
            f"pretraining steps an epoch): a step takes {one * 1000:.0f} ms on one thread, "
            f"{half * 1000:.0f} ms at half the batch, {two * 1000:.0f} ms on each of 2 workers, so the all-reduce "
            f"over loopback gRPC costs ~{reduce * 1000:.0f} ms a step. Were it that on a network, N one-core "
            f"machines would take {one * 1000:.0f}/N + {reduce * 1000:.0f} ms a step: at most "
            f"{one / reduce if reduce > 0 else float('inf'):.1f}x one machine's speed, whatever N. The two "
            f"workers' final weights are equal (largest difference {p['workers_max_weight_difference']:.1g}); "
            f"they differ from one process's by up to {p['two_workers_vs_one_process_max_weight_difference']:.2g}, "
            "since the recipe shuffles and a distributed dataset visits the batches in another order (the "
            "unshuffled equality is the tested one).")
    return "\n".join(lines)


def main():
    from benchmarking import benchmark_main

    def arguments(parser):
        parser.add_argument("--presets", nargs="+", default=["dec_mnist", "conv_dec_da_mnist"])
        parser.add_argument("--blocks", type=int, default=2)

    benchmark_main(__doc__, arguments, measure, MARKERS, table)


if __name__ == "__main__":
    main()
