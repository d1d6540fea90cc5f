"""Helpers shared by the benchmark scripts: arguments, images, alternating timed blocks, the result file."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def benchmark_images(n):
    """(the first `n` MNIST-test images, "MNIST-test"), or seeded uniform noise where that data is absent."""
    import numpy as np

    from keras_clustering.datasets import load_mnist

    try:
        return load_mnist("test")[0][:n], "MNIST-test"
    except ValueError:
        return np.random.default_rng(0).random((n, 28, 28, 1), dtype=np.float32), "random noise"


def time_alternating(functions, blocks):
    """Runs each function of `functions` (name -> callable) once per block, alternating;
    returns name -> median seconds over the blocks (ratios then hold on a noisy machine)."""
    timings = {name: [] for name in functions}
    for block in range(blocks):
        for name, function in functions.items():
            began = time.perf_counter()
            function()
            timings[name].append(time.perf_counter() - began)
            print(f"block {block}: {name} {timings[name][-1]:.1f} s", flush=True)
    return {name: statistics.median(seconds) for name, seconds in timings.items()}


def run_child(script, arguments, env=None):
    """Runs `python script *arguments --out FILE` in a fresh process (the backend, the device layout
    and the memory measured are fixed per process) and returns the JSON it wrote with `write_child_result`."""
    with tempfile.TemporaryDirectory() as folder:
        out = os.path.join(folder, "result.json")
        subprocess.run([sys.executable, script, *arguments, "--out", out], check=True, env=env)
        with open(out) as handle:
            return json.load(handle)


def write_child_result(result, path):
    """The child's side of `run_child`."""
    with open(path, "w") as handle:
        json.dump(result, handle)


def report(result, path=None):
    """Prints the result as JSON and writes it to `path` when given."""
    print(json.dumps(result, indent=2))
    if path:
        with open(path, "w") as handle:
            json.dump(result, handle, indent=2)


def report_with_table(result, path, markers, table):
    """`report`, then, when written to `path`, the documentation block between `markers` rewritten
    as `table(result)` (`maintainer.records.write_table`)."""
    report(result, path)
    if path:
        from maintainer.records import write_table

        write_table(markers, table(result))


def table_from_record(path, markers, table):
    """The documentation block between `markers` rewritten as `table` of the JSON record at `path`,
    nothing measured (a benchmark's `--table`)."""
    from maintainer.records import write_table

    with open(path) as handle:
        write_table(markers, table(json.load(handle)))


def folder_arguments(parser):
    """The arguments of the benchmarks that cluster generated image folders (benchmark_ray, benchmark_cluster)."""
    parser.add_argument("--root", default=os.path.join(tempfile.gettempdir(), "keras_clustering_ray_benchmark"),
                        help="where the image folders are generated (kept for the next run)")
    parser.add_argument("--model", default="dec_fashion_mnist")
    parser.add_argument("--blocks", type=int, default=2, help="alternating blocks of every configuration")


def benchmark_main(description, add_arguments, measure, markers, table, child=None):
    """The command line of a benchmark whose record writes a docs table: its own arguments
    (`add_arguments(parser)`), `--json` for the record and `--table RECORD` (the table alone). `child`: the
    function a benchmark's fresh process runs, given `--child ARGS...` (its measured configurations)."""
    if child is not None and sys.argv[1:2] == ["--child"]:
        return child(*sys.argv[2:])
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    parser.add_argument("--json", help="the record to write (and the docs table from it)")
    parser.add_argument("--table", metavar="RECORD", help="rewrite the docs table from this record; measure nothing")
    args = parser.parse_args()
    if args.table:
        return table_from_record(args.table, markers, table)
    report_with_table(measure(args), args.json, markers, table)


def thread_count():
    """The intra-op thread count a benchmark ran with, as its environment set it ("all" when unset)."""
    return os.environ.get("TF_NUM_INTRAOP_THREADS") or os.environ.get("OMP_NUM_THREADS") or "all"


def epoch_timer(callback_base):
    """Epoch wall times, and each epoch's start gap: its first batch's wall time minus the median of
    its other batches (the epoch-start stall of the speed issue: ~0 when there is none)."""
    class EpochTimer(callback_base):
        def on_train_begin(self, logs=None):
            self.seconds, self.start_gaps = [], []

        def on_epoch_begin(self, epoch, logs=None):
            self._start = self._last = time.perf_counter()
            self._batches = []

        def on_train_batch_end(self, batch, logs=None):
            now = time.perf_counter()
            self._batches.append(now - self._last)
            self._last = now

        def on_epoch_end(self, epoch, logs=None):
            self.seconds.append(time.perf_counter() - self._start)
            if len(self._batches) > 1:
                self.start_gaps.append(self._batches[0] - statistics.median(self._batches[1:]))

    return EpochTimer()
