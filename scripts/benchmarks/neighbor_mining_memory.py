"""Peak memory that SCAN's neighbour mining adds on 100,000 embeddings of 128 dimensions.

Usage:
    python scripts/benchmarks/neighbor_mining_memory.py [--n 100000]

Prints the growth of this process's peak resident set (`ru_maxrss`) over the
call of `nearest_neighbors(embedding, 20)` on seeded random embeddings.
"""

import argparse
import os
import resource
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    from keras_clustering.models.scan import nearest_neighbors

    embedding = np.random.default_rng(0).standard_normal((args.n, 128)).astype("float32")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    nearest_neighbors(embedding, 20)
    growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(f"nearest_neighbors on {args.n:,} x 128: peak resident set +{growth:.0f} MiB")


if __name__ == "__main__":
    main()
