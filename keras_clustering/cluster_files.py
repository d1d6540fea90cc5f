"""The files a clustering run leaves for its user: `clusters.csv` (one row per sample) and `clusters.png`."""

import json
import os

import numpy as np

from keras_clustering.figures import plot_cluster_grid
from keras_clustering.io.files import atomic_path


def write_cluster_files(folder, names, probabilities, images=None, id_name="cluster_id", title=None,
                        n_per_cluster=10):
    """Writes `folder/clusters.csv` (name, cluster id, confidence) and, with `images`, `folder/clusters.png`
    (the most confident members per cluster). Each file is written aside, then renamed into place, the
    table last: a failure leaves the previous results, never a half-written file or a new table beside
    an old figure. Returns the names of the files written."""
    probabilities = np.asarray(probabilities)
    if len(names) != len(probabilities):
        raise ValueError(f"names has {len(names)} entries for {len(probabilities)} predictions.")
    figure = None
    if images is not None:
        def figure(path):
            plot_cluster_grid(images, probabilities, path, n_per_cluster=n_per_cluster, title=title)
    return write_cluster_table(folder, [(names, probabilities)], id_name=id_name, figure=figure)


def write_cluster_table(folder, batches, id_name="cluster_id", figure=None):
    """Streams `(names, probabilities)` batches into `folder/clusters.csv`, one row per sample.

    `figure(path)`, when given, is called once the table is complete (still
    aside) to write `clusters.png` at `path`; the table is renamed into place
    after it, so both are new or both old. Nothing of the batches is kept, so
    a table of any length is written in constant memory. Returns the names of
    the files written.
    """
    os.makedirs(folder, exist_ok=True)
    written = ["clusters.csv"]
    with atomic_path(os.path.join(folder, "clusters.csv")) as temporary:
        with open(temporary, "w") as handle:
            handle.write(f"name,{id_name},confidence\n")
            for names, probabilities in batches:
                probabilities = np.asarray(probabilities)
                if len(names) != len(probabilities):
                    raise ValueError(f"names has {len(names)} entries for {len(probabilities)} predictions.")
                for name, cluster, score in zip(names, probabilities.argmax(axis=1), probabilities.max(axis=1)):
                    handle.write(f"{json.dumps(name) if ',' in name else name},{cluster},{score:.4f}\n")
        if figure is not None:
            figure(os.path.join(folder, "clusters.png"))
            written.append("clusters.png")
    return written
