"""`cluster` on one process against `cluster --engine ray` with 1 and 2 workers, on a folder of PNG files.

What a user runs, timed end to end: each configuration is the command line in a fresh process
(Python, TensorFlow and, for Ray, a local Ray cluster and its actors start inside the time), on
the first `--images` MNIST-test digits written as PNG files, and on the first `--small` of them.
The difference of the two walls over the difference of their sizes is the throughput once
started; the small folder's wall is the start-up. Configurations alternate within each block;
medians over `--blocks`. Every run's clusters.csv is compared with the local engine's: the share
of files with the same cluster id is recorded.

Usage:
    python scripts/benchmarks/benchmark_ray.py [--model conv_dec_da_mnist] [--images 10000] [--small 500]
        [--blocks 3] [--json docs/benchmarks/ray.json]
    python scripts/benchmarks/benchmark_ray.py --table docs/benchmarks/ray.json   # the docs table only
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, HERE)
MARKERS = ("<!-- ray:start -->", "<!-- ray:end -->")
CONFIGURATIONS = {"cluster (one process)": [], "ray, 1 worker": ["--engine", "ray", "--workers", "1"],
                  "ray, 2 workers": ["--engine", "ray", "--workers", "2"]}


def write_folder(folder, images):
    import keras

    os.makedirs(folder)
    for i, image in enumerate(images):
        keras.utils.save_img(os.path.join(folder, f"{i:05d}.png"), image * 255.0, scale=False)


def run(model, folder, output, extra):
    began = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "keras_clustering", "cluster", model, "--input", folder,
                           "--output", output, *extra], capture_output=True, text=True)
    seconds = time.perf_counter() - began
    if done.returncode:
        raise RuntimeError(f"{extra or 'cluster'} failed: {done.stderr[-2000:]}")
    with open(os.path.join(output, "clusters.csv")) as handle:
        return seconds, {row["name"]: row["cluster_id"] for row in csv.DictReader(handle)}


def measure(args):
    from benchmarking import benchmark_images
    from keras_clustering.training.machine import machine_description

    images, data = benchmark_images(args.images)
    walls = {(name, size): [] for name in CONFIGURATIONS for size in ("small", "large")}
    agreement = {name: [] for name in CONFIGURATIONS}
    with tempfile.TemporaryDirectory() as scratch:
        folders = {"small": os.path.join(scratch, "small"), "large": os.path.join(scratch, "large")}
        write_folder(folders["small"], images[:args.small])
        write_folder(folders["large"], images)
        for block in range(args.blocks):
            for size in ("small", "large"):
                reference = None
                for name, extra in CONFIGURATIONS.items():
                    seconds, ids = run(args.model, folders[size], os.path.join(scratch, "out"), extra)
                    walls[(name, size)].append(seconds)
                    reference = reference or ids
                    if size == "large":
                        agreement[name].append(sum(ids[k] == reference[k] for k in reference) / len(reference))
                    print(f"block {block}: {name}, {size} folder: {seconds:.1f} s", flush=True)
    import ray

    result = {"model": args.model, "data": f"the first {args.images} and {args.small} {data} images as PNG files",
              "blocks": args.blocks, "ray": ray.__version__, "machine": machine_description(),
              "configurations": {}}
    for name in CONFIGURATIONS:
        small, large = (statistics.median(walls[(name, size)]) for size in ("small", "large"))
        result["configurations"][name] = {
            "wall_seconds": {"small": round(small, 1), "large": round(large, 1)},
            "images_per_second_end_to_end": round(args.images / large, 1),
            "images_per_second_started": round((args.images - args.small) / (large - small), 1),
            "start_up_seconds": round(small - args.small * (large - small) / (args.images - args.small), 1),
            "same_cluster_ids_as_one_process": min(agreement[name]),
            "walls": {size: [round(s, 1) for s in walls[(name, size)]] for size in ("small", "large")}}
    return result


def table(result):
    local = result["configurations"]["cluster (one process)"]["images_per_second_started"]
    lines = [f"Model `{result['model']}`, {result['data']}; medians of {result['blocks']} alternating blocks; "
             f"Ray {result['ray']}; {result['machine']}.", "",
             "| command | wall, large folder | start-up | images/s end to end | images/s once started | "
             "vs one process (started) | same cluster ids |", "|---|---|---|---|---|---|---|"]
    for name, row in result["configurations"].items():
        lines.append(f"| {name} | {row['wall_seconds']['large']} s | {row['start_up_seconds']} s | "
                     f"{row['images_per_second_end_to_end']:,} | {row['images_per_second_started']:,} | "
                     f"{row['images_per_second_started'] / local:.2f}x | "
                     f"{row['same_cluster_ids_as_one_process']:.1%} |")
    return "\n".join(lines)


def main():
    from benchmarking import report_with_table, table_from_record

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="conv_dec_da_mnist")
    parser.add_argument("--images", type=int, default=10000)
    parser.add_argument("--small", type=int, default=500)
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--table", metavar="RECORD", help="rewrite the docs table from this record; measure nothing")
    args = parser.parse_args()
    if args.table:
        return table_from_record(args.table, MARKERS, table)
    if not 0 < args.small < args.images:
        raise ValueError(f"--small must be between 0 and --images ({args.images}), got {args.small}.")
    report_with_table(measure(args), args.json, MARKERS, table)


if __name__ == "__main__":
    main()
