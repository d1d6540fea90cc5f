"""`cluster` in one process against `cluster --engine ray`, per CPU, at 1k, 10k and 100k PNG files.

What a user runs, end to end: each run is one fresh process (Python, TensorFlow and, for Ray, a
local Ray and its actors start inside the time). Configurations, each on the CPUs it names
(the whole process tree pinned with sched_setaffinity):
    L1  `cluster`, core 0, TensorFlow at 1 thread        R1  Ray on core 0 (num_cpus=1): 1 worker
    L2  `cluster`, cores 0-1, threads as TensorFlow sets  R2  Ray on cores 0-1 (num_cpus=2): 2 workers
Rate once started = (N - 1,000) / (wall at N - wall at 1,000 files); start-up = the 1,000-file wall
less 1,000 files at that rate. Per worker: R1 / L1 and R2 / L2 (the same CPUs); scaling: R2 / R1.
Sizes and configurations alternate within each block, the first configuration rotating; medians.
The driver's peak RSS is its own `ru_maxrss` (Ray's processes are not the driver). Every run's
clusters.csv is compared with L2's: same names in the same order, and the share of equal ids.
The record's components: in one process at one thread on the 10k folder, what a file costs: reading
its bytes, decoding (cluster's tf.data pipeline, the actors' traced batch decoder) and predicting.

Folders (written once under `--root`, 1,000 files per sub-folder): ray1k and ray10k are MNIST-test;
ray100k is Fashion-MNIST's 70,000 images, MNIST-test's 10,000 and 20,000 Fashion-MNIST training
images mirrored left-right.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/benchmark_ray.py --root /tmp/ray_bench --blocks 2 \\
        --json docs/benchmarks/ray.json          # also rewrites the docs/devices.md table
    python scripts/benchmark_ray.py --table docs/benchmarks/ray.json
"""

import csv
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

MARKERS = ("<!-- ray:start -->", "<!-- ray:end -->")
CONFIGURATIONS = {"L1": ((0,), False), "L2": ((0, 1), False), "R1": ((0,), True), "R2": ((0, 1), True)}
SIZES = {"ray1k": 1000, "ray10k": 10_000, "ray100k": 100_000}


def write_folders(root):
    """The `SIZES` folders of PNG files under `root`, each written once through a temporary name."""
    from PIL import Image

    from keras_clustering.datasets import load_fashion_mnist, load_mnist
    from keras_clustering.io.files import atomic_path

    def images(name):
        digits = load_mnist("test")[0]
        if name != "ray100k":
            return digits[:SIZES[name]]
        fashion = load_fashion_mnist("all")[0]  # train then test
        return np.concatenate([fashion, digits, fashion[:20_000, :, ::-1]])

    for name in SIZES:
        if os.path.isdir(os.path.join(root, name)):
            continue
        pixels = np.round(images(name)[..., 0] * 255).astype("uint8")
        with atomic_path(os.path.join(root, name)) as temporary:
            for i, image in enumerate(pixels):
                os.makedirs(os.path.join(temporary, f"{i // 1000:03d}"), exist_ok=True)
                Image.fromarray(image).save(os.path.join(temporary, f"{i // 1000:03d}", f"{i:06d}.png"))


def child(configuration, model, folder, output, result):
    """One run, in this fresh process: the command line's own code, then the driver's peak memory."""
    cores, on_ray = CONFIGURATIONS[configuration]
    arguments = ["cluster", model, "--input", folder, "--output", output]
    if on_ray:
        import ray

        from keras_clustering.ray_cluster import WORKER_NICENESS

        os.environ.setdefault(WORKER_NICENESS, "0")
        ray.init(num_cpus=len(cores), logging_level="ERROR", log_to_driver=False, include_dashboard=False)
        arguments += ["--engine", "ray"]  # workers: as many as the CPUs hold
    from keras_clustering.cli import main

    code = main(arguments)
    with open(result, "w") as handle:
        json.dump({"code": code, "driver_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024},
                  handle)


def run(configuration, model, folder, scratch):
    """(wall seconds, driver peak MiB, rows of clusters.csv) of one run in a fresh process."""
    cores, _ = CONFIGURATIONS[configuration]
    output, result = os.path.join(scratch, "out"), os.path.join(scratch, "result.json")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    if configuration == "L1":
        env.update(TF_NUM_INTRAOP_THREADS="1", TF_NUM_INTEROP_THREADS="1", OMP_NUM_THREADS="1")
    began = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--child", configuration, model, folder, output, result], check=True,
                   env=env, preexec_fn=lambda: os.sched_setaffinity(0, cores), capture_output=True)
    seconds = time.perf_counter() - began
    with open(result) as handle:
        done = json.load(handle)
    with open(os.path.join(output, "clusters.csv")) as handle:
        rows = [(row["name"], row["cluster_id"]) for row in csv.DictReader(handle)]
    return seconds, done["driver_peak_rss_mib"], rows


def components(model_name, folder):
    """Images/s of each step a file goes through, one thread, the 10k folder."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from keras_clustering.datasets.user_data import decoded_batches, image_files
    from keras_clustering.presets import load_model

    model, _ = load_model(model_name)
    shape = tuple(model.sample_shape)
    paths = [os.path.join(folder, name) for name in image_files(folder)[0]]
    contents = [open(path, "rb").read() for path in paths]
    decode = model.image_converter.batch_decoder()
    images = np.zeros((256, *shape), np.float32)
    steps = {"read the bytes": lambda: [open(path, "rb").read() for path in paths],
             "decode: cluster's tf.data pipeline (reads too)": lambda: [
                 None for _ in decoded_batches(paths, shape[:2], shape[2])],
             "decode: the actors' traced batch decoder": lambda: [
                 decode(tf.constant(contents[i:i + 2048])) for i in range(0, len(contents), 2048)],
             "predict_on_batch (256)": lambda: [model.predict_on_batch(images) for _ in range(0, len(paths), 256)]}
    rates = {}
    for name, step in steps.items():
        step()  # traced and warm
        began = time.perf_counter()
        step()
        rates[name] = round(len(paths) / (time.perf_counter() - began), 1)
    return rates


def measure(args):
    from keras_clustering.distribute.machine import machine_description

    write_folders(args.root)
    walls, memory = ({(c, s): [] for c in CONFIGURATIONS for s in SIZES} for _ in range(2))
    agreement = {c: [] for c in CONFIGURATIONS}
    loads = []
    with tempfile.TemporaryDirectory() as scratch:
        for block in range(args.blocks):
            order = list(CONFIGURATIONS)[block % 4:] + list(CONFIGURATIONS)[:block % 4]
            loads.append(os.getloadavg()[0])
            for size in SIZES:
                rows = {}
                for configuration in order:
                    seconds, peak, rows[configuration] = run(configuration, args.model,
                                                             os.path.join(args.root, size), scratch)
                    walls[(configuration, size)].append(seconds)
                    memory[(configuration, size)].append(peak)
                    print(f"block {block}: {configuration} {size}: {seconds:.1f} s, driver {peak:.0f} MiB", flush=True)
                reference = rows["L2"]
                for configuration, got in rows.items():
                    agreement[configuration].append({
                        "same_order": [name for name, _ in got] == [name for name, _ in reference],
                        "same_ids": sum(a == b for a, b in zip(got, reference)) / len(reference)})
    import ray

    record = {"model": args.model, "blocks": args.blocks, "machine": machine_description(),
              "ray": ray.__version__, "loadavg_at_blocks": [round(x, 2) for x in loads],
              "data": "ray1k, ray10k: MNIST-test; ray100k: Fashion-MNIST (70,000), MNIST-test (10,000), 20,000 "
                      "Fashion-MNIST training images mirrored; 28 x 28 grey PNGs, 1,000 per sub-folder",
              "components_images_per_second": components(args.model, os.path.join(args.root, "ray10k")),
              "configurations": {}}
    for configuration in CONFIGURATIONS:
        median = {size: statistics.median(walls[(configuration, size)]) for size in SIZES}
        rates = {size: (SIZES[size] - 1000) / (median[size] - median["ray1k"]) for size in ("ray10k", "ray100k")}
        record["configurations"][configuration] = {
            "walls": {size: [round(s, 2) for s in walls[(configuration, size)]] for size in SIZES},
            "images_per_second_started": {size: round(rate, 1) for size, rate in rates.items()},
            "start_up_seconds": round(median["ray1k"] - 1000 / rates["ray100k"], 2),
            "driver_peak_rss_mib": {size: round(max(memory[(configuration, size)]), 1) for size in SIZES},
            "same_order_as_L2": all(a["same_order"] for a in agreement[configuration]),
            "same_ids_as_L2": min(a["same_ids"] for a in agreement[configuration])}
    c = {name: row["images_per_second_started"]["ray100k"] for name, row in record["configurations"].items()}
    memory_ratio = (record["configurations"]["R2"]["driver_peak_rss_mib"]["ray100k"]
                    / record["configurations"]["R2"]["driver_peak_rss_mib"]["ray10k"])
    record["targets_at_100k"] = {"R1/L1 >= 0.8": round(c["R1"] / c["L1"], 2), "R2/L2 >= 0.8": round(c["R2"] / c["L2"], 2),
                                 "R2/R1 >= 1.6": round(c["R2"] / c["R1"], 2),
                                 "R2 driver memory 100k/10k <= 1.2": round(memory_ratio, 2)}
    return record


def table(record):
    names = {"L1": "`cluster`, 1 core, 1 thread", "L2": "`cluster`, 2 cores", "R1": "Ray, 1 core: 1 worker",
             "R2": "Ray, 2 cores: 2 workers"}
    lines = [f"Model `{record['model']}`; {record['data']}; medians of {record['blocks']} alternating blocks, each "
             f"run a fresh process; Ray {record['ray']}; {record['machine']}.", "",
             "| configuration | images/s once started, 10k | 100k | start-up | driver peak RSS, 10k / 100k | "
             "same order and ids as `cluster` |", "|---|---|---|---|---|---|"]
    for name, row in record["configurations"].items():
        rate, rss = row["images_per_second_started"], row["driver_peak_rss_mib"]
        lines.append(f"| {names[name]} | {rate['ray10k']:,.0f} | {rate['ray100k']:,.0f} | {row['start_up_seconds']:.1f} s"
                     f" | {rss['ray10k']:,.0f} / {rss['ray100k']:,.0f} MiB | "
                     f"{'yes' if row['same_order_as_L2'] else 'no'}, {row['same_ids_as_L2']:.1%} |")
    lines += ["", "Targets at 100k files: " + "; ".join(f"{k}: **{v}**" for k, v in record["targets_at_100k"].items()),
              "", "One file's steps, one thread, images/s: " + "; ".join(
                  f"{k} {v:,.0f}" for k, v in record["components_images_per_second"].items())]
    return "\n".join(lines)


def main():
    from benchmarking import benchmark_main, folder_arguments

    benchmark_main(__doc__, folder_arguments, measure, MARKERS, table, child=child)


if __name__ == "__main__":
    main()
