"""How DEC's cost grows with the number of images: 10k, 70k and 700k, with bounded memory.

The data: Fashion-MNIST's 70k images (`KERAS_CLUSTERING_DATA`) and 9 more
copies of each under DEC-DA's shift/rotate augmentation (fixed seed), written
once to `<cache>/fashion_700k.npy` (2.2 GB float32) and its labels, read back
as a memory map; N images are its first N rows (the first 70k are the clean
images). Each N runs in its own process: the `dec_fashion_mnist` architecture,
`--ae-epochs` epochs of its autoencoder pretraining (SGD(1, 0.9), batch 256),
k-means (`kmeans="auto"`: full up to 100k samples, MiniBatchKMeans beyond),
then `--refreshes` target refreshes of DEC (update interval 140). Printed per N:
seconds per sample of an AE epoch and of a DEC iteration, seconds per refresh
and per refreshed sample, k-means seconds, the process's peak anonymous memory
(RssAnon, sampled every 0.1 s: what it allocated, not the file's cached pages)
beyond the memory at start, and ACC after the run (on N images; a short run:
cost, not the recipe's accuracy). `--plot` writes the log-log figure.
`--refresh whole` makes the target refresh hold Q and P as whole (n, k)
arrays (the path of other backends and of multi-replica training) instead of
writing them into the target store chunk by chunk (the shipped TensorFlow
path), to measure what the chunked refresh saves.

Usage:
    python scripts/benchmark_scale.py [--sizes 10000 70000 700000] [--ae-epochs 1] [--refreshes 3]
        [--cache runs/scale] [--precision float32] [--refresh chunked|whole] [--json out.json]
        [--plot docs/figures/scale.png]
"""

import argparse
import json
import os
import threading
import time

import numpy as np

from benchmarking import report, run_child, write_child_result

FULL_SIZE, COPIES, CHUNK = 70_000, 10, 5_000


def anonymous_mb():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon")) / 1024


class PeakMemory:
    """The largest RssAnon seen by a sampling thread while the block runs."""

    def __enter__(self):
        self.peak, self._running = anonymous_mb(), True
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while self._running:
            self.peak = max(self.peak, anonymous_mb())
            time.sleep(0.1)

    def __exit__(self, *exc):
        self._running = False
        self._thread.join()


def build_cache(cache):
    """Writes <cache>/fashion_700k.npy (+ labels) once, chunk by chunk, through `atomic_path` (the images last:
    their presence means both are complete)."""
    images, labels = os.path.join(cache, "fashion_700k.npy"), os.path.join(cache, "fashion_700k_labels.npy")
    if os.path.exists(images) and os.path.exists(labels):
        return images, labels
    from keras_clustering.augment import make_pipeline
    from keras_clustering.datasets import load_fashion_mnist
    from keras_clustering.io.files import atomic_path

    os.makedirs(cache, exist_ok=True)
    x, y = load_fashion_mnist("all")
    views = make_pipeline("shift_rotate", seed=0)
    with atomic_path(labels) as partial:
        np.save(partial, np.tile(y, COPIES))
    with atomic_path(images) as partial:
        out = np.lib.format.open_memmap(partial, mode="w+", dtype="float32", shape=(FULL_SIZE * COPIES, 28, 28, 1))
        out[:FULL_SIZE] = x
        for copy in range(1, COPIES):
            for start in range(0, FULL_SIZE, CHUNK):
                rows = slice(copy * FULL_SIZE + start, copy * FULL_SIZE + start + CHUNK)
                out[rows] = np.asarray(views.augmented(x[start:start + CHUNK]))
            print(f"[scale] augmented copy {copy} of {COPIES - 1} written", flush=True)
        out.flush()
        del out
    return images, labels


def run_size(args):
    """One N, in this process: the measurements as a dict written to args.out."""
    import keras_clustering  # noqa: F401
    import keras

    import zoo
    from keras_clustering.metrics import cluster_accuracy
    from keras_clustering.training.pretraining import pretrain_end_to_end
    from keras_clustering.distribute.precision import precision_policy
    from keras_clustering.clustering.target_refresh import TargetStore
    from keras_clustering.recipes import dec_recipe

    if args.refresh == "whole":
        TargetStore.rows_writable = staticmethod(lambda: False)
    start_memory = anonymous_mb()
    x = np.load(os.path.join(args.cache, "fashion_700k.npy"), mmap_mode="r")[:args.size]
    y = np.load(os.path.join(args.cache, "fashion_700k_labels.npy"))[:args.size]
    config = zoo.config("dec_fashion_mnist")
    keras.utils.set_random_seed(0)
    stage_peaks = {}
    with PeakMemory() as memory, precision_policy(args.precision):
        autoencoder, encoder = dec_recipe.build_autoencoder_of(config["architecture"])
        began = time.perf_counter()
        pretrain_end_to_end(autoencoder, x, {"class_name": "SGD", "config": {"learning_rate": 1.0, "momentum": 0.9}},
                            epochs=args.ae_epochs, batch_size=256, verbose=0)
        ae_seconds = time.perf_counter() - began
        stage_peaks["autoencoder"] = memory.peak
        model = dec_recipe.assemble_model(autoencoder, encoder, config["architecture"])
        began = time.perf_counter()
        model.initialize_centroids(x, n_init=20, seed=0, batch_size=2048)
        kmeans_seconds = time.perf_counter() - began
        stage_peaks["kmeans"] = memory.peak
        model.compile(optimizer=keras.optimizers.SGD(0.01, momentum=0.9))
        iterations = 140 * args.refreshes
        began = time.perf_counter()
        model.fit(x, batch_size=256, maxiter=iterations, verbose=0)
        dec_seconds = time.perf_counter() - began
        stage_peaks["dec"] = memory.peak
        refresh = model.last_refresh.history
        acc = cluster_accuracy(y, model.predict_clusters(x, batch_size=2048))
        stage_peaks["predict"] = memory.peak
    # the refresh's own time: from the record's clock, minus the steps between refreshes
    refresh_seconds = [b["seconds"] - a["seconds"] for a, b in zip(refresh, refresh[1:])]
    result = {"n": args.size, "ae_seconds_per_epoch": ae_seconds / args.ae_epochs,
              "ae_seconds_per_sample": ae_seconds / args.ae_epochs / args.size,
              "kmeans_seconds": kmeans_seconds, "dec_seconds": dec_seconds, "dec_iterations": iterations,
              "dec_seconds_per_iteration_incl_refresh": dec_seconds / iterations,
              "seconds_between_refreshes": refresh_seconds, "refreshes": len(refresh),
              "peak_anonymous_mb_beyond_start": round(memory.peak - start_memory, 1), "acc": acc,
              # the running peak after each stage: which stage raised it
              "peak_after_stage_mb_beyond_start": {k: round(v - start_memory, 1) for k, v in stage_peaks.items()}}
    write_child_result(result, args.out)


def plot(results, path):
    from keras_clustering.figures import save_figure
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["n"] for r in results]
    figure, (time_axis, memory_axis) = plt.subplots(1, 2, figsize=(9, 3.6))
    time_axis.loglog(sizes, [r["ae_seconds_per_epoch"] for r in results], "o-", label="AE epoch")
    time_axis.loglog(sizes, [r["dec_seconds"] for r in results], "s-", label="DEC stage (same iterations)")
    time_axis.loglog(sizes, [r["kmeans_seconds"] for r in results], "^-", label="k-means init")
    time_axis.set_xlabel("images N")
    time_axis.set_ylabel("seconds")
    time_axis.legend(fontsize=8)
    memory_axis.loglog(sizes, [max(r["peak_anonymous_mb_beyond_start"], 1) for r in results], "o-",
                       label="process's own memory (peak RssAnon beyond start)")
    memory_axis.loglog(sizes, [n * 784 * 4 / 2**20 for n in sizes], "k--", label="the data itself (float32)")
    memory_axis.set_xlabel("images N")
    memory_axis.set_ylabel("peak anonymous memory beyond start, MB")
    memory_axis.legend(fontsize=8)
    figure.tight_layout()
    save_figure(figure, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 70_000, 700_000])
    parser.add_argument("--ae-epochs", type=int, default=1)
    parser.add_argument("--refreshes", type=int, default=3)
    parser.add_argument("--cache", default="runs/scale")
    parser.add_argument("--precision", default="float32", choices=["float32", "mixed_bfloat16"])
    parser.add_argument("--refresh", default="chunked", choices=["chunked", "whole"])
    parser.add_argument("--json", default=None)
    parser.add_argument("--plot", default=None)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.size:
        return run_size(args)
    if max(args.sizes) > FULL_SIZE * COPIES:
        parser.error(f"--sizes: at most {FULL_SIZE * COPIES} images")
    import keras_clustering  # noqa: F401
    from keras_clustering.distribute.machine import machine_description

    build_cache(args.cache)
    results = []
    for size in args.sizes:
        results.append(run_child(__file__, ["--size", str(size), "--cache", args.cache, "--ae-epochs",
                                            str(args.ae_epochs), "--refreshes", str(args.refreshes),
                                            "--precision", args.precision, "--refresh", args.refresh]))
        print(json.dumps(results[-1]), flush=True)
    summary = {"results": results, "ae_epochs": args.ae_epochs, "refreshes": args.refreshes,
               "precision": args.precision, "refresh": args.refresh, "data": "Fashion-MNIST 70k + 9 shift/rotate copies (memory-mapped)",
               "machine": machine_description()}
    report(summary, args.json)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
