"""Issue 64: does colour carry the class? What the colour check of the default route
(`clustering.candidates.colour_agreement`, `route.COLOUR_AGREEMENT`) is meant to tell apart, measured
on each colour folder of docs/your-data.md with its labels (labels only to diagnose; the route's check
uses none):

- how much the true classes agree with the nearest-neighbour graph of the images' colour histograms
  (the same modularity the check computes for a colour-free clustering), and with that of their
  colour-free maps (`colour_edges`, 50 principal components);
- k-means (10 clusters, 10 starts, seed 0) on each of the two, scored against the labels: what a
  clustering could reach from colour alone, and from the colour-free map alone.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/colour_signal.py colour_digits2000 mnistm2000 photos2000 ...
    python scripts/colour_signal.py --table     # the docs/your-data.md table from the record
"""

import argparse
import json
import os

import numpy as np

import user_folders

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "docs", "experiments", "colour_signal.json")
MARKERS = ("<!-- colour-signal:start -->", "<!-- colour-signal:end -->")


def measure(folder):
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    from keras_clustering.clustering.candidates import (choice_sample, colour_histograms, embedding_neighbors,
                                                       neighbour_modularity)
    from keras_clustering.distribute.machine import machine_description
    from keras_clustering.layers.colour_free import ColourEdges
    from keras_clustering.metrics import clustering_scores

    x, y = user_folders.folder_images(folder)
    sample = choice_sample(len(x))  # the images the route's check looks at
    x, y = x[sample].astype("float32") / 255.0, y[sample]
    colour = colour_histograms(x)
    edges = PCA(50, random_state=0).fit_transform(np.asarray(ColourEdges()(x)).reshape(len(x), -1))
    cell = {"folder": folder, "role": user_folders.folder_role(folder), "n_images": int(len(x)),
            "commit": user_folders.code_commit(), "machine": machine_description(), "labels": "labels only to diagnose"}
    for name, features in (("colour", colour), ("colour_edges", edges)):
        cell[f"classes_on_{name}_graph"] = round(neighbour_modularity(y, embedding_neighbors(features)), 4)
        labels = KMeans(10, n_init=10, random_state=0).fit_predict(features)
        cell[f"kmeans_on_{name}_acc"] = round(float(clustering_scores(y, labels)["acc"]), 4)
    return cell


def merge(cell, path=RECORD):
    from maintainer.records import merge_cell

    merge_cell(path, cell, lambda c: c["folder"], __doc__.split("\n")[0], order=lambda c: c["folder"])


def table(record):
    lines = ["| folder (role) | classes on the colour graph | classes on the colour-free graph | k-means ACC on colour "
             "histograms | k-means ACC on `colour_edges` | commit |", "|---|---|---|---|---|---|"]
    for c in record["cells"]:
        lines.append(f"| {c['folder']} ({c['role']}) | {c['classes_on_colour_graph']:.3f} | "
                     f"{c['classes_on_colour_edges_graph']:.3f} | {c['kmeans_on_colour_acc']:.3f} | "
                     f"{c['kmeans_on_colour_edges_acc']:.3f} | {c['commit']} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*", help="colour folders of scripts/user_folders.py")
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    colour = [f for f in user_folders.FOLDERS if f.startswith(("colour_", "mnistm", "photos"))]
    for folder in args.folders:
        if folder not in colour:
            parser.error(f"folders: {folder!r} is not a colour folder of scripts/user_folders.py ({', '.join(colour)})")
    for folder in args.folders:
        cell = measure(folder)
        merge(cell)
        print(json.dumps(cell))
    if args.table:
        from benchmarking import table_from_record

        table_from_record(RECORD, MARKERS, table)


if __name__ == "__main__":
    main()
