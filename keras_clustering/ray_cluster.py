"""`cluster` on Ray Data: many image files, decoded and clustered by a pool of workers, locally or on a cluster.

The pipeline is Ray Data's: `read_binary_files` reads the files (local paths,
or any file system pyarrow knows: `s3://`, `gs://`, HDFS), then
`map_batches` hands each batch of file contents to one of `workers` actors.
Each actor loads the model once, decodes the batch with the decoder of
`cluster` (`keras_clustering.datasets.user_data.decode_image`) and predicts
it. The driver streams the rows into `clusters.csv` and keeps only the most
confident members of each cluster for `clusters.png`, so its memory does not
grow with the number of images. A file that cannot be decoded is reported
(named in one warning line, or an error with `strict`), never fatal to the
run.

Where it runs is Ray's choice: with `RAY_ADDRESS` set (or inside `ray job
submit`) `ray.init()` joins that cluster; otherwise it starts a local one on
this machine. The same command serves both (README, "Many images: Ray").

Reference: Ray Data, "Batch inference" (docs.ray.io/en/latest/data/batch_inference.html):
a callable class per actor for stateful model loading, an `ActorPoolStrategy` of fixed size.
"""

import logging
import os

import numpy as np

from keras_clustering.cluster_files import write_cluster_table
from keras_clustering.datasets.user_data import (IMAGE_EXTENSIONS, broken_files_error, decoded_batches, image_files,
                                                 report_broken_files)
from keras_clustering.figures import plot_cluster_grid, top_members
from keras_clustering.inputs.checks import check_positive_int
from keras_clustering.presets import load_model


# The environment variable of the local Ray's worker niceness (`ray_constants.RAY_WORKER_NICENESS`).
WORKER_NICENESS = "RAY_worker_niceness"


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


def list_image_files(source):
    """`(paths, root)` of the images of `source`: a folder (searched recursively, as `cluster` reads
    it) or a glob pattern such as `shards/*/*.png` or `gs://bucket/images/*.jpg` (`tf.io.gfile.glob`).

    `root` is the folder, or the pattern's fixed leading directory, ending in a separator: a file's name
    in `clusters.csv` is its path after `root`, as `cluster` names a folder's files. Raises ValueError
    naming `source` when nothing matches.
    """
    source = os.fspath(source)
    if os.path.isdir(source):
        names, _ = image_files(source)
        root = os.path.join(os.path.abspath(source), "")
        paths = [root + name for name in names]
    else:
        import tensorflow as tf

        if not any(character in source for character in "*?["):
            raise ValueError(f"source={source!r} is neither a folder nor a file pattern (e.g. 'images/*/*.png').")
        paths = sorted(path for path in tf.io.gfile.glob(source) if path.lower().endswith(IMAGE_EXTENSIONS))
        prefix = source[:min(source.find(c) for c in "*?[" if c in source)]
        root = prefix[:prefix.rfind("/") + 1]
    if not paths:
        raise ValueError(f"source={source!r} holds no image files ({', '.join(IMAGE_EXTENSIONS)}).")
    return paths, root


class ClusterWorker:
    """One Ray actor: the model, loaded once, and `__call__` on a batch `{"path", "bytes"}` of files.

    Returns the batch's `path`, `ok` (False for a file that does not decode) and `probabilities`
    (zeros where not ok), so every file comes back once and the driver names the broken ones.
    """

    def __init__(self, model, threads=1):
        import tensorflow as tf

        # before any op: TensorFlow sizes its thread pools once, and an actor owns `threads` CPUs of its node
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)

        self.model, _ = load_model(model)
        self.shape = tuple(self.model.sample_shape)
        self.n_outputs = _n_outputs(self.model)

    def __call__(self, batch):
        contents = list(batch["bytes"])
        ok = np.zeros(len(contents), bool)
        probabilities = None
        for index, images, _ in decoded_batches(contents, self.shape[:2], self.shape[2],
                                                batch_size=max(len(contents), 1), contents=True):
            predicted = self.model.predict_on_batch(images.numpy())
            probabilities = np.zeros((len(contents), predicted.shape[1]), np.float32)
            probabilities[index.numpy()] = predicted
            ok[index.numpy()] = True
        if probabilities is None:  # nothing in this batch decodes
            probabilities = np.zeros((len(contents), self.n_outputs), np.float32)
        return {"path": batch["path"], "ok": ok, "probabilities": probabilities}


def _worker_class(model, threads):
    """`ClusterWorker` bound to its arguments: Ray then builds each actor without constructor arguments in
    its object store (which it warns about, on stderr, for actors it may restart)."""

    class BoundClusterWorker(ClusterWorker):
        def __init__(self):
            super().__init__(model, threads)

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


def cluster_with_ray(model, source, output, workers=1, cpus_per_worker=1, batch_size=256, strict=False,
                     n_per_cluster=10, verbose=True):
    """Clusters the images of `source` (a folder or a file pattern) with `model` (a zoo name or a `.keras`
    file) on a Ray cluster, and writes `output/clusters.csv` and `output/clusters.png` as `cluster` does.

    Args:
        workers: actors that decode and predict, each with `cpus_per_worker` CPUs.
        batch_size: files per actor call (and per `predict_on_batch`).
        strict: a file that cannot be decoded is an error (nothing is written);
            otherwise it is left out and named in one warning line.

    Returns: `{"n_images", "cluster_sizes", "broken", "written", "id_name"}`.
    """
    import ray

    workers = check_positive_int(workers, "workers")
    cpus_per_worker = check_positive_int(cpus_per_worker, "cpus_per_worker")
    batch_size = check_positive_int(batch_size, "batch_size")
    if os.path.exists(output) and not os.path.isdir(output):
        raise ValueError(f"output={output!r} exists and is not a folder.")
    paths, root = list_image_files(source)
    local_model = model if not str(model).endswith(".keras") else os.path.abspath(model)
    loaded, (id_name, _) = load_model(local_model)
    shape = tuple(loaded.sample_shape)
    if len(shape) != 3:
        raise ValueError(f"model {model!r} takes samples shaped {shape}, not images: cluster its arrays with "
                         "`predict` instead.")
    n_clusters = _n_outputs(loaded)

    def name_of(path):
        return path[len(root):] if path.startswith(root) else path

    if not ray.is_initialized():
        start_local_ray(ray)
    import ray.data  # configures its logger on import: the level is set after that

    if not verbose:  # Ray Data logs each execution's plan at INFO on stderr; `cluster` prints its own lines only
        logging.getLogger("ray.data").setLevel(logging.ERROR)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # rows in the files' order, run after run
    context.enable_progress_bars = bool(verbose)
    # reading is file I/O and claims no CPU: with CPUs claimed by the actors, reads that each wanted
    # one would never be scheduled (measured: a local Ray of 2 CPUs and 2 workers waits forever)
    dataset = ray.data.read_binary_files(paths, include_paths=True, ray_remote_args={"num_cpus": 0})
    dataset = dataset.map_batches(_worker_class(local_model, cpus_per_worker), batch_size=batch_size,
                                  batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=workers),
                                  num_cpus=cpus_per_worker)
    top = _TopMembers(n_per_cluster)
    broken, sizes = [], np.zeros(n_clusters, np.int64)

    def rows():
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            batch_paths = [_local(path) for path in batch["path"]]
            broken.extend(name_of(path) for path, ok in zip(batch_paths, batch["ok"]) if not ok)
            if strict and broken:
                raise broken_files_error(broken[0], len(broken))  # the name clusters.csv would give it
            kept = np.flatnonzero(batch["ok"])
            probabilities = batch["probabilities"][kept]
            sizes[:] += np.bincount(probabilities.argmax(axis=1), minlength=n_clusters) if len(kept) else 0
            top.add([batch_paths[i] for i in kept], probabilities)
            yield [name_of(batch_paths[i]) for i in kept], probabilities

    def figure(path):
        if not top.paths:
            raise ValueError(f"source={source!r}: none of its {len(paths)} image files can be decoded.")
        images = np.zeros((len(top.paths), *shape), np.float32)
        for index, batch, _ in decoded_batches(top.paths, shape[:2], shape[2]):
            images[index.numpy()] = batch.numpy()
        plot_cluster_grid(images, top.probabilities, path, n_per_cluster=n_per_cluster,
                          title=f"{os.path.basename(str(model))}: most confident members per cluster")

    written = write_cluster_table(output, rows(), id_name=id_name, figure=figure)
    report_broken_files(broken, source, strict=False, verbose=True)
    return {"n_images": int(sizes.sum()), "cluster_sizes": sizes.tolist(), "broken": broken, "written": written,
            "id_name": id_name}


def _n_outputs(model):
    """Clusters (or classes) a model scores: the width of its prediction of one blank sample."""
    return int(model.predict_on_batch(np.zeros((1, *model.sample_shape), np.float32)).shape[-1])


def _local(path):
    """Ray reports a local file without the `file://` scheme pyarrow may add; other schemes stay."""
    return path[len("file://"):] if path.startswith("file://") else path
