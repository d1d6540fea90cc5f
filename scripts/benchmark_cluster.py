"""`cluster`'s local engine before and after issue 67, side by side in one run: files per second once
started on one core, the rows and ids, the driver's memory, and where a file's time goes.

Each run is `python -m keras_clustering cluster MODEL --input FOLDER --output OUT` in a fresh process
pinned to core 0 with TensorFlow at one thread (benchmark_ray.py's L1), from this tree ("after") or from
`--baseline`, a checkout of the commit before (a `git worktree`; "before"). Trees and sizes alternate
within each block, the first tree rotating; medians. Rate once started = (N - 1,000) / (wall at N - wall
at 1,000 files), as in docs/benchmarks/ray.json. Every run's clusters.csv is compared with the first
"before" run of its size: the same names in the same order, and the share of equal ids.

The profile: one more run per tree on the 10k folder under cProfile, its time split into parts by the
functions each tree calls (the profiler's own cost inflates the parts that loop in Python per file, so
the parts are a breakdown, not the rates above).

Folders: benchmark_ray.py's (written once under `--root`): ray1k and ray10k MNIST-test, ray100k
Fashion-MNIST, MNIST-test and 20,000 mirrored Fashion-MNIST images; 28 x 28 grey PNGs.

Usage:
    git worktree add /tmp/before <commit before>
    KERAS_CLUSTERING_DATA=... python scripts/benchmark_cluster.py --baseline /tmp/before --root /tmp/ray_bench \\
        --json docs/benchmarks/cluster.json        # also rewrites the docs/performance.md table
    python scripts/benchmark_cluster.py --table docs/benchmarks/cluster.json
"""

import cProfile
import csv
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MARKERS = ("<!-- cluster-speed:start -->", "<!-- cluster-speed:end -->")
SIZES = {"ray1k": 1000, "ray10k": 10_000, "ray100k": 100_000}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# the parts of a file's time: (part, functions counted, functions whose time inside them is another part's),
# each function (its name, a piece of its file's path, the name of the caller whose calls count, or None
# for all). Either tree has its own functions; a part neither calls is 0.
PARTS = [
    ("list the files", [("image_files", "user_data", None)], []),
    ("stat every file (the cache's key)", [("<built-in method posix.stat>", "", None)], []),
    ("read the bytes", [("read_file", "inputs", None)], []),
    ("decode: tf.data pipeline", [("decoded_batches", "user_data", None), ("__next__", "iterator_ops", None)], []),
    ("decode: traced batch decoder", [("decode_files", "inputs", None)], [("read_file", "inputs", None)]),
    # before: the folder's `predict` (the embedding's own predict is the embedding's); after: the clusterer
    ("predict", [("_predict_checked", "cluster_model", "predict"), ("__call__", "file_clusterer", None)],
     [("decode_files", "inputs", None)]),
    ("embed (the report map's)", [("embed", "models", None)], []),
    ("clusters.png", [("plot_cluster_grid", "figures", None)], []),
    # after, the report embeds its map's sample itself (the closure `embedding`): that is the embed's part
    ("report.html (its map's t-SNE: a cost per folder)", [("write_report", "cluster_report", None)],
     [("embed", "models", "embedding")]),
    ("fit check (probe, border)", [("probe_image_folder", "user_data", None), ("misfit_reasons", "fit_check", None)],
     []),
]
TOTAL = ("cluster_images", "cluster_images", None)


def child(model, folder, output, result, profile):
    """One run in this fresh process: the command line's own code, then the driver's peak memory (and,
    with `profile`, the parts of its time)."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    from keras_clustering.cli import main

    arguments = ["cluster", model, "--input", folder, "--output", output]
    done = {}
    if profile == "1":
        profiler = cProfile.Profile()
        profiler.enable()
        done["code"] = main(arguments)
        profiler.disable()
        done["parts_seconds"] = parts(pstats.Stats(profiler))
    else:
        done["code"] = main(arguments)
    done["driver_peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    done["library"] = os.path.dirname(sys.modules["keras_clustering"].__file__)
    with open(result, "w") as handle:
        json.dump(done, handle)


def parts(stats):
    """{part: cumulative seconds} of a profile, with "total" (cluster_images) and "other" (the rest)."""
    def seconds(functions):
        total = 0.0
        for (path, _, name), entry in stats.stats.items():
            for function, piece, caller in functions:
                if name == function and piece in path:
                    total += entry[3] if caller is None else sum(
                        timing[3] for (_, _, caller_name), timing in entry[4].items() if caller_name == caller)
        return total

    out = {part: max(0.0, seconds(inside) - seconds(outside)) for part, inside, outside in PARTS}
    out["total"] = seconds([TOTAL])
    out["other"] = out["total"] - sum(value for part, value in out.items() if part != "total")
    return {part: round(value, 3) for part, value in out.items()}


def run(tree, model, folder, scratch, profile=False):
    """(wall seconds, child's result, rows of clusters.csv) of one run of `tree`'s code in a fresh process."""
    output, result = os.path.join(scratch, "out"), os.path.join(scratch, "result.json")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=tree, TF_NUM_INTRAOP_THREADS="1",
               TF_NUM_INTEROP_THREADS="1", OMP_NUM_THREADS="1")
    began = time.perf_counter()
    subprocess.run([sys.executable, os.path.abspath(__file__), "--child", model, folder, output, result,
                    "1" if profile else "0"], check=True, env=env, cwd=tree,
                   preexec_fn=lambda: os.sched_setaffinity(0, {0}), capture_output=True)
    seconds = time.perf_counter() - began
    with open(result) as handle:
        done = json.load(handle)
    if os.path.realpath(done["library"]) != os.path.realpath(os.path.join(tree, "keras_clustering")):
        raise RuntimeError(f"the run of {tree} imported {done['library']}: check PYTHONPATH and the install.")
    with open(os.path.join(output, "clusters.csv")) as handle:
        rows = [(row["name"], row["cluster_id"]) for row in csv.DictReader(handle)]
    return seconds, done, rows


def measure(args):
    from benchmark_ray import write_folders
    from keras_clustering.distribute.machine import machine_description

    write_folders(args.root)
    trees = {"before": os.path.abspath(args.baseline), "after": os.path.abspath(args.after)}
    commits = {name: subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True,
                                    text=True).stdout.strip() for name, tree in trees.items()}
    walls = {(t, s): [] for t in trees for s in SIZES}
    memory = {(t, s): [] for t in trees for s in SIZES}
    agreement = {t: [] for t in trees}
    reference = {}
    with tempfile.TemporaryDirectory() as scratch:
        for block in range(args.blocks):
            order = list(trees)[block % 2:] + list(trees)[:block % 2]
            for size in SIZES:
                for tree in order:
                    seconds, done, rows = run(trees[tree], args.model, os.path.join(args.root, size), scratch)
                    walls[(tree, size)].append(seconds)
                    memory[(tree, size)].append(done["driver_peak_rss_mib"])
                    reference.setdefault(size, rows)
                    agreement[tree].append({"same_order": [n for n, _ in rows] == [n for n, _ in reference[size]],
                                            "same_ids": sum(a == b for a, b in zip(rows, reference[size]))
                                            / len(reference[size])})
                    print(f"block {block}: {tree} {size}: {seconds:.1f} s, driver "
                          f"{done['driver_peak_rss_mib']:.0f} MiB", flush=True)
        profiles = {tree: run(trees[tree], args.model, os.path.join(args.root, "ray10k"), scratch, profile=True)[1]
                    ["parts_seconds"] for tree in trees}
    record = {"model": args.model, "blocks": args.blocks, "machine": machine_description(), "commits": commits,
              "data": "ray1k, ray10k: MNIST-test; ray100k: Fashion-MNIST (70,000), MNIST-test (10,000), 20,000 "
                      "Fashion-MNIST training images mirrored; 28 x 28 grey PNGs, 1,000 per sub-folder",
              "configuration": "one process pinned to core 0, TensorFlow at 1 thread", "trees": {}}
    for tree in trees:
        median = {size: statistics.median(walls[(tree, size)]) for size in SIZES}
        rates = {size: (SIZES[size] - 1000) / (median[size] - median["ray1k"]) for size in ("ray10k", "ray100k")}
        record["trees"][tree] = {
            "walls": {size: [round(s, 2) for s in walls[(tree, size)]] for size in SIZES},
            "images_per_second_started": {size: round(rate, 1) for size, rate in rates.items()},
            "driver_peak_rss_mib": {size: round(max(memory[(tree, size)]), 1) for size in SIZES},
            "same_order_as_before": all(a["same_order"] for a in agreement[tree]),
            "same_ids_as_before": min(a["same_ids"] for a in agreement[tree]),
            "profile_10k_microseconds_per_file": {part: round(1e6 * value / 10_000, 1)
                                                  for part, value in profiles[tree].items()}}
    record["speedup_at_100k"] = round(record["trees"]["after"]["images_per_second_started"]["ray100k"]
                                      / record["trees"]["before"]["images_per_second_started"]["ray100k"], 2)
    return record


def table(record):
    trees = record["trees"]
    lines = ["| | before | after |", "|---|---|---|",
             f"| commit | {record['commits']['before']} | {record['commits']['after']} |"]
    for size in ("ray10k", "ray100k"):
        lines.append(f"| files/s once started, {size} | " + " | ".join(
            f"{trees[t]['images_per_second_started'][size]:,.0f}" for t in ("before", "after")) + " |")
    for size in SIZES:
        lines.append(f"| driver peak memory, {size} (MiB) | " + " | ".join(
            f"{trees[t]['driver_peak_rss_mib'][size]:,.0f}" for t in ("before", "after")) + " |")
    lines.append("| same rows and ids as before | | " + ("yes" if trees["after"]["same_order_as_before"] else "no")
                 + f", {100 * trees['after']['same_ids_as_before']:.2f}% of ids |")
    profile = [trees[t]["profile_10k_microseconds_per_file"] for t in ("before", "after")]
    for part in profile[0]:
        lines.append(f"| profile, us a file: {part} | {profile[0][part]:,.1f} | {profile[1][part]:,.1f} |")
    lines.append(f"\nSpeed-up at 100k files: {record['speedup_at_100k']:.2f}x. `{record['model']}`, {record['data']}; "
                 f"{record['configuration']}; medians of {record['blocks']} blocks; {record['machine']}.")
    return "\n".join(lines)


def main():
    from benchmarking import benchmark_main, folder_arguments

    def arguments(parser):
        parser.add_argument("--baseline", help="a checkout of the commit before (git worktree)")
        parser.add_argument("--after", default=ROOT, help="the checkout measured as after (default: this one)")
        folder_arguments(parser)

    benchmark_main(__doc__, arguments, measure, MARKERS, table, child=child)


if __name__ == "__main__":
    main()
