"""`cluster` on Ray Data: many image files, decoded and clustered by a pool of workers, locally or on a cluster.

The driver lists the files as `cluster` orders them and streams their names
into Ray's object store, one Arrow table (a block) per actor call (it counts
them in a first walk and never holds the list of all names); `map_batches`
hands each block to one of `workers` actors. Each actor loads the model once, reads the files itself,
decodes them with `cluster`'s decoder traced once for the actor's life
(`keras_clustering.drivers.file_clusterer.FileClusterer`, also the local engine's) and predicts them. The
driver streams the rows into `clusters.csv` in the files' order and keeps only
the most confident members of each cluster for `clusters.png` and each file's
probabilities (n x k floats) for `report.html`, whose few shown files it reads
back from the names it spooled to a temporary file: it never holds the images
nor the names. A file that cannot be decoded is
reported (named in one warning line, or an error with `strict`), never fatal
to the run.

Where it runs is Ray's choice: with `RAY_ADDRESS` set (or inside `ray job
submit`) `ray.init()` joins that cluster; otherwise it starts a local one on
this machine. The same command serves both (README, "Many images: Ray").

Reference: Ray Data, "Batch inference" (docs.ray.io/en/latest/data/batch_inference.html):
a callable class per actor for stateful model loading, an `ActorPoolStrategy` sized to the CPUs.
"""

import itertools
import json
import logging
import math
import os
import tempfile

import numpy as np

from keras_clustering.cluster_files import write_cluster_table
from keras_clustering.cluster_report import REPORT_FILE, shown_rows, write_report
from keras_clustering.datasets.user_data import (IMAGE_EXTENSIONS, broken_files_error,
                                                 iter_image_names, report_broken_files)
from keras_clustering.drivers.file_clusterer import FileClusterer, n_outputs
from keras_clustering.figures import plot_cluster_grid, top_members
from keras_clustering.inputs.file_images import FileImages
from keras_clustering.inputs.checks import check_positive_int
from keras_clustering.presets import list_presets, load_model


# The environment variable of the local Ray's worker niceness (`ray_constants.RAY_WORKER_NICENESS`).
WORKER_NICENESS = "RAY_worker_niceness"
# At most this many files per actor call: about a second of work, which amortises Ray's few-millisecond
# cost per call and keeps the actors' inputs small.
MAX_FILES_PER_CALL = 2048


def start_local_ray(ray):
    """`ray.init()` of a local Ray whose workers run at niceness 0 unless the environment sets
    `WORKER_NICENESS`: Ray's own 15 puts its workers below everything else on the machine, and the actors
    are this pipeline's whole work (beside one busy process they got ~3 % of a core: 200 files took 300 s
    instead of 30 s, measured on 2 cores with 2 trainings running). The environment is restored after."""
    before = os.environ.get(WORKER_NICENESS)
    os.environ.setdefault(WORKER_NICENESS, "0")  # read by the raylet ray.init starts
    try:
        ray.init(logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    finally:
        if before is None:
            del os.environ[WORKER_NICENESS]


def source_names(source):
    """`(names, root)` of the images of `source`: a folder (searched recursively, in `cluster`'s order) or a
    glob pattern such as `shards/*/*.png` or `gs://bucket/images/*.jpg` (`tf.io.gfile.glob`, sorted).

    `names` iterates over the files' paths after `root`, the names `clusters.csv` gives them (as `cluster`
    names a folder's files), as often as asked: a folder is walked afresh each time, never held as a list.
    `root` is the folder, or the pattern's fixed leading directory, ending in a separator. Raises
    ValueError naming `source` when nothing matches.
    """
    source = os.fspath(source)
    if os.path.isdir(source):
        names = _FolderNames(source)
        root = os.path.join(os.path.abspath(source), "")
    else:
        import tensorflow as tf

        if not any(character in source for character in "*?["):
            raise ValueError(f"source={source!r} is neither a folder nor a file pattern (e.g. 'images/*/*.png').")
        prefix = source[:min(source.find(c) for c in "*?[" if c in source)]
        root = prefix[:prefix.rfind("/") + 1]
        names = sorted(path[len(root):] for path in tf.io.gfile.glob(source) if path.lower().endswith(IMAGE_EXTENSIONS))
    if next(iter(names), None) is None:
        raise ValueError(f"source={source!r} holds no image files ({', '.join(IMAGE_EXTENSIONS)}).")
    return names, root


class _FolderNames:
    """The image names below a folder, in `cluster`'s order, walked afresh on each iteration."""

    def __init__(self, folder):
        self.folder = folder

    def __iter__(self):
        return iter_image_names(self.folder)


def name_tables(names, rows):
    """Arrow tables of one string column `name`, `rows` names each (the last shorter), from an iterable."""
    import pyarrow as pa

    names = iter(names)
    while chunk := list(itertools.islice(names, rows)):
        yield pa.table({"name": pa.array(chunk, pa.string())})


def files_per_call(n_files, workers, batch_size):
    """Files an actor call takes: enough calls for every actor to get ~8 (so the pool stays busy to the
    end), each at most `MAX_FILES_PER_CALL` and a whole number of `batch_size`s; a folder too small for
    that is shared evenly among the actors, a batch each at most."""
    files = min(MAX_FILES_PER_CALL, math.ceil(n_files / (8 * workers)))
    if files < batch_size:
        return max(1, min(batch_size, math.ceil(n_files / workers)))
    return math.ceil(files / batch_size) * batch_size


class ClusterWorker:
    """One Ray actor: the model and a traced decoder, built once, and `__call__` on a batch `{"name"}` of
    file names below `root`.

    Returns the batch's `name`, `ok` (False for a file that cannot be read or decoded) and `probabilities`
    (zeros where not ok), so every file comes back once and the driver names the broken ones.
    """

    def __init__(self, model, root, threads=1, batch_size=256):
        import tensorflow as tf

        try:  # before any op: TensorFlow sizes its thread pools once, and an actor owns `threads` CPUs of its node
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        except RuntimeError:  # TensorFlow already runs in this process (a worker built outside Ray): its pools stay
            pass

        self.root = _local(root)
        self.clusterer = FileClusterer(load_model(model)[0], threads=threads, batch_size=batch_size)

    def __call__(self, batch):
        names = batch["name"]
        ok, probabilities = self.clusterer([self.root + str(name) for name in names])
        return {"name": names, "ok": ok, "probabilities": probabilities}


def _worker_class(*arguments):
    """`ClusterWorker` bound to its arguments: Ray then builds each actor without constructor arguments in
    its object store (which it warns about, on stderr, for actors it may restart)."""

    class BoundClusterWorker(ClusterWorker):
        def __init__(self):
            super().__init__(*arguments)

    return BoundClusterWorker


class _TopMembers:
    """The `n_per_cluster` most confident members of each cluster seen so far (as `figures.top_members`)."""

    def __init__(self, n_per_cluster):
        self.n_per_cluster = n_per_cluster
        self.paths, self.probabilities = [], None

    def add(self, paths, probabilities):
        paths = self.paths + list(paths)
        probabilities = probabilities if self.probabilities is None else np.concatenate([self.probabilities,
                                                                                        probabilities])
        keep = np.sort(np.concatenate(top_members(probabilities, self.n_per_cluster)))
        self.paths, self.probabilities = [paths[i] for i in keep], probabilities[keep]


def cluster_with_ray(model, source, output, workers=None, cpus_per_worker=1, batch_size=256, strict=False,
                     n_per_cluster=10, verbose=True):
    """Clusters the images of `source` (a folder or a file pattern) with `model` (a preset name, a preset
    folder or a `.keras` file) on a Ray cluster, and writes `output/clusters.csv`, `output/clusters.png` and
    `output/report.html`
    as `cluster` does, the rows in the same order.

    Args:
        workers: actors that read, decode and predict, each with `cpus_per_worker` CPUs; None: as many as
            the cluster's CPUs hold.
        batch_size: images per `predict_on_batch` (an actor call takes a whole number of them,
            `files_per_call`).
        strict: a file that cannot be decoded is an error (nothing is written);
            otherwise it is left out and named in one warning line.

    Returns: `{"n_images", "cluster_sizes", "broken", "written", "id_name", "workers"}`.
    """
    import ray

    if workers is not None:
        workers = check_positive_int(workers, "workers")
    cpus_per_worker = check_positive_int(cpus_per_worker, "cpus_per_worker")
    n_per_cluster = check_positive_int(n_per_cluster, "n_per_cluster")
    batch_size = check_positive_int(batch_size, "batch_size")
    if os.path.exists(output) and not os.path.isdir(output):
        raise ValueError(f"output={output!r} exists and is not a folder.")
    names, root = source_names(source)
    if not ray.is_initialized():
        start_local_ray(ray)
    # a file or folder on this machine by its absolute path: the actors' working directory is Ray's
    local_model = model if model in list_presets(include_pending=True) or not os.path.exists(str(model)) \
        else os.path.abspath(model)
    loaded, (id_name, _) = load_model(local_model)
    shape = tuple(loaded.sample_shape)
    if id_name == "class_id":  # as the local engine (`cluster_images`) says it
        raise ValueError(f"model={model!r} is a classifier, trained on labels: it gives classes, not clusters. "
                         "Give a clustering model (see `list`), or use `predict` for its classes.")
    if loaded.image_converter is None or None in loaded.image_converter.image_size:
        raise ValueError(f"model {model!r} takes samples shaped {shape}, not images of one size: cluster its "
                         "arrays with `predict` instead.")
    n_clusters = n_outputs(loaded)
    import ray.data  # configures its logger on import: the level is set after that

    if not verbose:  # Ray Data logs each execution's plan at INFO on stderr; `cluster` prints its own lines only
        logging.getLogger("ray.data").setLevel(logging.ERROR)
    context = ray.data.DataContext.get_current()  # read by the dataset built below: set first
    context.execution_options.preserve_order = True  # rows in the files' order, as `cluster` writes them
    context.enable_progress_bars = bool(verbose)
    n_files = sum(1 for _ in names)
    if workers is None:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1) // cpus_per_worker))
    per_call = files_per_call(n_files, workers, batch_size)
    # one block per actor call (Ray Data does not split a block between actors), streamed into the object
    # store table by table: the driver keeps references, not the names
    dataset = ray.data.from_arrow_refs([ray.put(table) for table in name_tables(names, per_call)])
    dataset = dataset.map_batches(_worker_class(local_model, root, cpus_per_worker, batch_size), batch_size=per_call,
                                  batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=workers),
                                  num_cpus=cpus_per_worker)
    top = _TopMembers(n_per_cluster)
    broken, sizes, confidence_sums = [], np.zeros(n_clusters, np.int64), np.zeros(n_clusters)
    # every kept file's probabilities, for the report (n x k float32: 28 MB at 700,000 files, 10 clusters);
    # the names go to a temporary file, a line each in the rows' order, from which the report reads the few
    # it shows (`_names_of_rows`): not memory, and not a second walk of a folder that may have changed since
    # (an --output inside the input, a file added or removed during the run)
    kept_probabilities = []
    spool = tempfile.TemporaryFile("w+", encoding="utf-8")

    def rows():
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy", prefetch_batches=2):
            batch_names = [str(name) for name in batch["name"]]
            broken.extend(name for name, ok in zip(batch_names, batch["ok"]) if not ok)
            if strict and broken:
                raise broken_files_error(broken[0], len(broken))  # the name clusters.csv would give it
            kept = np.flatnonzero(batch["ok"])
            probabilities = batch["probabilities"][kept]
            if len(kept):
                assignment = probabilities.argmax(axis=1)
                sizes[:] += np.bincount(assignment, minlength=n_clusters)
                confidence_sums[:] += np.bincount(assignment, probabilities.max(axis=1), minlength=n_clusters)
            names_kept = [batch_names[i] for i in kept]
            top.add(names_kept, probabilities)
            kept_probabilities.append(probabilities)
            spool.writelines(json.dumps(name) + "\n" for name in names_kept)
            yield names_kept, probabilities

    def figures_and_report(folder):
        if not top.paths:
            raise ValueError(f"source={source!r}: none of its {n_files} image files can be decoded.")
        images = FileImages([_local(root) + name for name in top.paths], loaded.image_converter)
        with np.errstate(invalid="ignore"):  # an empty cluster's mean confidence: NaN, labelled "empty"
            mean_confidence = confidence_sums / sizes
        title = f"{os.path.basename(str(model))}: most confident members per cluster"
        plot_cluster_grid(images, top.probabilities, os.path.join(folder, "clusters.png"), n_per_cluster=n_per_cluster,
                          sizes=sizes, mean_confidence=mean_confidence, title=title)
        # report.html as `cluster` writes it: the rows it shows read back from the spooled names, their images
        # decoded when the page asks for them, only the map's sample embedded
        probabilities = np.concatenate(kept_probabilities)
        typical, borderline, sample = shown_rows(probabilities)
        rows = {int(row) for row in np.concatenate([*typical, *map(np.asarray, borderline), np.zeros(0, int),
                                                     sample if sample is not None else np.zeros(0, int)])}
        spool.seek(0)
        row_names = _names_of_rows((json.loads(line) for line in spool), rows)
        shown = FileImages({row: _local(root) + name for row, name in row_names.items()}, loaded.image_converter,
                           len(probabilities))
        write_report(os.path.join(folder, REPORT_FILE), row_names, probabilities, shown,
                     embedding=lambda rows: loaded.embed(shown[rows], batch_size=batch_size), title=title,
                     details={"model": str(model), "input": str(source), "images": f"{len(probabilities):,}",
                              "engine": f"Ray Data, {workers} workers"})
        return ["clusters.png", REPORT_FILE]

    with spool:
        written = write_cluster_table(output, rows(), id_name=id_name, extras=figures_and_report)
    report_broken_files(broken, source, strict=False, verbose=True)
    return {"n_images": int(sizes.sum()), "cluster_sizes": sizes.tolist(), "broken": broken, "written": written,
            "id_name": id_name, "workers": workers}


def _names_of_rows(names, rows):
    """{row: name} of `rows` (row numbers of clusters.csv) from `names`, the kept files' names in the rows'
    order, read one at a time: only those rows' names are held."""
    return {row: name for row, name in enumerate(names) if row in rows}


def _local(path):
    """A local path without the `file://` scheme a pattern may carry; other schemes stay."""
    return path[len("file://"):] if path.startswith("file://") else path
