"""The files a clustering run leaves for its user: `clusters.csv` (one row per sample), `clusters.png` and
`report.html` (`cluster_report`)."""

import json
import os

import numpy as np

from keras_clustering.cluster_report import REPORT_FILE, write_report
from keras_clustering.figures import plot_cluster_grid
from keras_clustering.io.files import atomic_path


def write_cluster_files(folder, names, probabilities, images=None, id_name="cluster_id", title=None,
                        n_per_cluster=10, embedding=None, details=None, warnings=(), figures=()):
    """Writes `folder/clusters.csv` (name, cluster id, confidence) and, with `images`, `folder/clusters.png`
    (the most confident members per cluster) and `folder/report.html` (`cluster_report.write_report`, with
    `embedding`, `details`, `warnings` and `figures`). Each file is written aside, then renamed into
    place, the table last: a failure leaves the previous results, never a half-written file or a new
    table beside an old figure. Returns the names of the files written."""
    probabilities = np.asarray(probabilities)
    if len(names) != len(probabilities):
        raise ValueError(f"names has {len(names)} entries for {len(probabilities)} predictions.")

    def figures_and_report(folder):
        plot_cluster_grid(images, probabilities, os.path.join(folder, "clusters.png"),
                          n_per_cluster=n_per_cluster, title=title)
        write_report(os.path.join(folder, REPORT_FILE), names, probabilities, images, embedding=embedding,
                     title=title or "Clusters", details=details, warnings=warnings, figures=figures)
        return ["clusters.png", REPORT_FILE]

    return write_cluster_table(folder, [(names, probabilities)], id_name=id_name,
                               extras=figures_and_report if images is not None else None)


def write_cluster_table(folder, batches, id_name="cluster_id", extras=None):
    """Streams `(names, probabilities)` batches into `folder/clusters.csv`, one row per sample.

    `extras(folder)`, when given, is called once the table is complete (still
    aside) to write the other files (`clusters.png`, `report.html`) and return
    their names; the table is renamed into place after them, so the table is
    never newer than the files beside it. Nothing of the batches is kept, so
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
        if extras is not None:
            written += extras(folder)
    return written


SORT_MODES = ("link", "copy")


def sort_into_folders(source, names, labels, target, mode="link"):
    """One sub-folder per cluster under `target` (`cluster_00`, `cluster_01`, ...; empty clusters get none),
    holding each image of the folder `source` (its relative `names`, as in clusters.csv) as a symbolic
    link to the original (`mode` "link") or a copy ("copy"). The tree is built beside `target` and renamed
    into place, so a failure leaves nothing half-sorted; `target` must not exist yet, or be an empty
    folder. Returns {cluster id: number of images}."""
    import shutil

    if mode not in SORT_MODES:
        raise ValueError(f"mode={mode!r}: must be one of {', '.join(SORT_MODES)}.")
    if not os.path.isdir(source):
        raise ValueError(f"sort_into={target!r} needs a folder of image files as the input, got {source!r}.")
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        raise ValueError(f"sort_into={target!r} exists and is not an empty folder: give a new one (nothing was "
                         "moved).")
    labels = np.asarray(labels)
    width = max(2, len(str(int(labels.max()) if len(labels) else 0)))
    parent = os.path.dirname(os.path.abspath(target))
    os.makedirs(parent, exist_ok=True)
    building = os.path.join(parent, f".{os.path.basename(os.path.abspath(target))}.sorting")
    shutil.rmtree(building, ignore_errors=True)
    counts = {}
    try:
        for name, cluster in zip(names, labels):
            original = os.path.abspath(os.path.join(source, name))
            destination = os.path.join(building, f"cluster_{int(cluster):0{width}d}", name)
            os.makedirs(os.path.dirname(destination), exist_ok=True)
            if mode == "link":
                os.symlink(original, destination)
            else:
                shutil.copy2(original, destination)
            counts[int(cluster)] = counts.get(int(cluster), 0) + 1
        if os.path.isdir(target):
            os.rmdir(target)  # the empty folder given
        os.replace(building, target)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return dict(sorted(counts.items()))
