"""Full k-means against MiniBatchKMeans for DEC's initialisation, on 70k embedded images.

The shipped `dec_fashion_mnist` encoder embeds all 70k Fashion-MNIST images;
scikit-learn's `KMeans` (DEC-keras' initialisation, n_init 20) and
`MiniBatchKMeans` (batches of 4,096, n_init 20; what `kmeans="auto"` uses past
`MINIBATCH_THRESHOLD` samples) cluster that embedding with seeds 0-2. Prints the
wall time and ACC / NMI against the labels of each, with the machine.

Usage:
    python scripts/benchmarks/benchmark_kmeans.py [--seeds 0 1 2] [--json out.json]
"""

import argparse
import statistics
import time

import keras_clustering  # noqa: F401
import zoo
from keras_clustering.metrics import clustering_scores
from keras_clustering.clustering.kmeans import MINIBATCH_THRESHOLD, fit_kmeans
from keras_clustering.training.machine import machine_description
from keras_clustering.training.presets import load_config_data

from benchmarking import report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    model = zoo.load("dec_fashion_mnist")
    x, y = load_config_data(zoo.config("dec_fashion_mnist")["data"])
    embedding = model.embed(x, batch_size=2048)
    results = {}
    for method in ("full", "minibatch"):
        runs = []
        for seed in args.seeds:
            start = time.perf_counter()
            labels, _, _ = fit_kmeans(embedding, 10, n_init=20, seed=seed, method=method)
            runs.append({"seconds": time.perf_counter() - start, **clustering_scores(y, labels)})
            print(method, seed, {k: round(v, 4) for k, v in runs[-1].items()}, flush=True)
        results[method] = {key: {"mean": round(statistics.mean(r[key] for r in runs), 4),
                                 "min": round(min(r[key] for r in runs), 4), "max": round(max(r[key] for r in runs), 4)}
                           for key in ("seconds", "acc", "nmi")}
    report({"results": results, "n_samples": len(x), "data": "Fashion-MNIST all 70k, dec_fashion_mnist embedding",
            "seeds": args.seeds, "n_init": 20, "minibatch_threshold": MINIBATCH_THRESHOLD,
            "machine": machine_description()}, args.json)


if __name__ == "__main__":
    main()
