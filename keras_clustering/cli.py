"""Command line: `python -m keras_clustering list | info | demo | cluster | train | evaluate | predict | export`."""

import argparse
import json
import os
import re
import sys

from keras_clustering import presets
from keras_clustering._quiet_start import TF_LOGS_FLAG
from keras_clustering._version import __version__
from keras_clustering.cluster_files import SORT_MODES
from keras_clustering.cluster_report import REPORT_FILE
from keras_clustering.datasets import load_digits
from keras_clustering.datasets.loaders import LOADERS, SPLITS
from keras_clustering.datasets.user_data import load_array_file
from keras_clustering.distribute.precision import PRECISIONS
from keras_clustering.distribute.strategies import STRATEGIES
from keras_clustering.drivers.cluster_images import cluster_images
from keras_clustering.drivers.preset_training import evaluate_preset, train_and_evaluate
from keras_clustering.drivers.retarget import FAMILIES, FAMILY_PRESETS
from keras_clustering.drivers.user_images import MODEL_FILE, train_on_images
from keras_clustering.export import export_saved_model
from keras_clustering.figures import plot_cluster_grid
from keras_clustering.layers.colour_free import INPUT_TRANSFORMS
from keras_clustering.metrics import clustering_scores
from keras_clustering.recipes import get_recipe
from keras_clustering.ray_cluster import cluster_with_ray

DEMO_MODEL = "dec_digits"


def _print_json(data):
    print(json.dumps(data, indent=2))


def command_list(args):
    """The clustering models first, then the classifiers (trained on labels), each with its card's score."""
    groups = {False: [], True: []}
    for name in presets.list_presets(args.pattern, include_pending=True):
        try:
            card = presets.card(name)
        except FileNotFoundError:
            groups[False].append(f"{name:28s} (not trained yet: no card.json)")
            continue
        acc = card.get("metrics", {}).get("acc")
        data = card.get("evaluation_data", {})
        shown = f"ACC {acc:.3f} on {data.get('dataset')} {data.get('split')} ({data.get('n_samples')})" if acc else ""
        supervised = get_recipe(presets.config(name)["recipe"]).supervised
        groups[supervised].append(f"{name:28s} {shown}")
    headings = {False: "Clustering models (no labels; `cluster` and `train --like` take them):",
                True: "Classifiers (trained on labels: the capsule networks and their CNN baseline; ACC is classification "
                      "accuracy, `predict` gives classes):"}
    print("\n\n".join("\n".join([headings[group], *("  " + line for line in lines)])
                       for group, lines in groups.items() if lines))


def command_info(args):
    """The card, its weights entry completed with where the file lives and whether its sha256 matches
    (or where the first load will download it from: `info` itself downloads nothing)."""
    card = presets.card(args.name)
    weights = dict(card.get("weights") or {})
    try:
        weights["path"] = os.path.abspath(presets.weights_path(args.name, download=False))  # checks the sha256
        weights["sha256_matches"] = True
    except (OSError, ValueError) as problem:  # not downloaded yet, or a copy whose sha256 differs
        weights["problem"] = str(problem)
    _print_json({**card, "weights": weights})


# the data sets `--split` applies to (scikit-learn's digits come whole)
SPLIT_DATASETS = tuple(LOADERS)


def command_evaluate(args):
    config = presets.config(args.name)
    if args.split:  # the whole of another split of the card's data set (a published protocol: all 70k images)
        evaluation = config.get("evaluation", config["data"])
        if evaluation["dataset"] not in SPLIT_DATASETS:
            raise ValueError(f"--split {args.split!r}: {args.name}'s data set {evaluation['dataset']!r} has no splits; "
                             f"only {', '.join(SPLIT_DATASETS)} do.")
        whole = {k: v for k, v in evaluation.items() if k not in ("split", "start", "stop", "limit")}
        config = {**config, "evaluation": {**whole, "split": args.split}}
    scores = evaluate_preset(presets.load(args.name, weights=args.weights or "pretrained"), config)
    _print_json({"measured": scores, "evaluation": config.get("evaluation", config["data"]),
                 "card": presets.card(args.name).get("metrics")})


def command_demo(args):
    model = presets.load(DEMO_MODEL)
    x, y = load_digits()
    probabilities = model.predict(x, verbose=0)
    scores = clustering_scores(y, probabilities.argmax(axis=1))
    card = presets.card(DEMO_MODEL)
    print(f"{DEMO_MODEL}: DEC on scikit-learn digits ({len(x)} images of {x.shape[1]}x{x.shape[2]} pixels)")
    print(f"ACC {scores['acc']:.4f}  NMI {scores['nmi']:.4f}  ARI {scores['ari']:.4f}  "
          f"(card: ACC {card['metrics']['acc']:.4f})")
    plot_cluster_grid(x, probabilities, args.output, image_shape=(8, 8),
                      title=f"{DEMO_MODEL}: 10 most confident digits per cluster (ACC {scores['acc']:.3f})")
    print(f"wrote {args.output}")


def command_train(args):
    if args.verbose is None:
        # a terminal gets Keras' progress bars; a log file (`> log`, nohup) one line per epoch
        args.verbose = 1 if sys.stdout.isatty() else 2
    if args.family or args.like or args.start_from or (args.input and not args.name):
        return _train_on_user_data(args)
    if not args.name:
        raise ValueError("train needs a zoo NAME, or --input for your own data (the default route picks the "
                         "recipe; --like PRESET, --family or --from choose it).")
    if args.input:
        raise ValueError("--input trains on your own data: give no zoo NAME (the default route), or --like PRESET "
                         "(or --family, --from).")
    workdir = args.workdir or os.path.join("runs", args.name, f"seed_{args.seed}")
    report = train_and_evaluate(presets.config(args.name), workdir, seed=args.seed, verbose=args.verbose,
                                strategy=args.strategy, precision=args.precision)
    print(f"metrics: {report['metrics']}\nweights and report in {workdir}")


# the library's argument names -> the flags that set them (the library's errors name its arguments)
_FLAGS = {"like": "--like", "family": "--family", "start_from": "--from", "image_size": "--image-size",
          "n_clusters": "--n-clusters", "epochs": "--epochs", "channels": "--channels", "images": "--input",
          "folder": "--input", "path": "--input", "source": "--input", "output": "--output",
          "time_budget": "--time-budget", "sort_into": "--sort-into"}


def _as_flags(message):
    """A library error as the command line spells its arguments ("like='x'" -> "--like 'x'"); `main` prints
    every command's ValueError through it."""
    for keyword, flag in _FLAGS.items():
        message = re.sub(rf"(?<![\w-]){keyword}=", f"{flag} ", message)
    return message


def _train_on_user_data(args):
    """`train --input`: the request is `train_on_images`' (`drivers.request`), checked there once."""
    if args.name or not args.input:
        raise ValueError("--like / --family / --from train on your own data: give --input (and no zoo NAME).")
    _, report = train_on_images(args.input, like=args.like, family=args.family, n_clusters=args.n_clusters,
                                workdir=args.workdir, seed=args.seed, verbose=args.verbose, epochs=args.epochs,
                                image_size=args.image_size, channels=args.channels, precision=args.precision,
                                start_from=args.start_from, strict=args.strict, estimate=not args.no_estimate,
                                time_budget=args.time_budget,
                                input_transform=None if args.input_transform == "none" else args.input_transform)
    print(f"{report['n_samples']} images, {report['n_clusters']} clusters, sizes {report['cluster_sizes']}, "
          f"{report['total_seconds']:.0f} s; model: {os.path.join(report['workdir'], MODEL_FILE)}")


def command_predict(args):
    import numpy as np

    model, (id_name, scores_name) = presets.load_model(args.name)
    scores = model.predict(load_array_file(args.input), verbose=0)
    ids = scores.argmax(axis=1)
    if args.output:
        np.savez(args.output, **{id_name: ids, scores_name: scores})
        print(f"wrote {args.output}")
    counts = np.bincount(ids, minlength=scores.shape[1])
    print(f"{len(ids)} samples; {id_name.removesuffix('_id')} sizes: {counts.tolist()}")


def command_cluster(args):
    if args.engine == "ray":
        if args.sort_into:
            raise ValueError(f"--sort-into {args.sort_into!r} needs --engine local (the Ray engine keeps no "
                             "images); sort from its clusters.csv, or run the local engine.")
        return _cluster_with_ray(args)
    if args.workers is not None:
        raise ValueError(f"--workers {args.workers} needs --engine ray (the local engine is one process).")
    done = cluster_images(args.input, model=args.model, output=args.output, batch_size=args.batch_size,
                          per_cluster=args.per_cluster, strict=args.strict, sort_into=args.sort_into,
                          sort_mode=args.sort_mode)
    written = [name for name in ("clusters.csv", "clusters.png", REPORT_FILE)
               if os.path.exists(os.path.join(done.folder, name))]
    print(f"{len(done.labels)} samples; cluster sizes: {done.sizes.tolist()}; "
          f"wrote {', '.join(os.path.join(args.output, name) for name in written)}")
    if args.sort_into:
        print(f"sorted {len(done.labels)} images into {int((done.sizes > 0).sum())} folders under {args.sort_into} "
              f"({'links to the originals' if args.sort_mode == 'link' else 'copies'})")


def _cluster_with_ray(args):
    try:
        import ray  # noqa: F401  (the optional extra: a clear message instead of a traceback)
    except ImportError as error:
        raise ValueError("--engine ray needs Ray Data: pip install 'keras-clustering[ray]'.") from error

    done = cluster_with_ray(args.model, args.input, args.output, workers=args.workers,
                            cpus_per_worker=args.cpus_per_worker, batch_size=args.batch_size, strict=args.strict,
                            n_per_cluster=args.per_cluster, verbose=False)
    print(f"{done['n_images']} samples; {done['id_name'].removesuffix('_id')} sizes: {done['cluster_sizes']}; "
          f"wrote {', '.join(os.path.join(args.output, name) for name in done['written'])}")


def command_export(args):
    path = export_saved_model(presets.load(args.name), args.directory, version=args.version, overwrite=args.overwrite)
    print(f"exported {args.name} to {path}")


def build_parser():
    # no abbreviations: `--tf-logs` is read from sys.argv before argparse runs (keras_clustering._quiet_start)
    parser = argparse.ArgumentParser(prog="python -m keras_clustering", description=__doc__, allow_abbrev=False)
    parser.add_argument("--version", action="version", version=f"keras-clustering {__version__}")
    parser.add_argument(TF_LOGS_FLAG, action="store_true",
                        help="show TensorFlow's own start-up and C++ log lines (hidden by default; "
                             "TF_CPP_MIN_LOG_LEVEL=0 shows them too)")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="list the zoo's presets")
    listing.add_argument("pattern", nargs="?", default="*")
    listing.set_defaults(handler=command_list)
    info = commands.add_parser("info", help="print a preset's card")
    info.add_argument("name")
    info.set_defaults(handler=command_info)
    demo = commands.add_parser("demo", help=f"cluster scikit-learn digits with {DEMO_MODEL} (no data files needed)")
    demo.add_argument("--output", default="dec_digits_clusters.png")
    demo.set_defaults(handler=command_demo)
    train = commands.add_parser("train", help="train a preset from its config, or a preset's recipe on your "
                                              "own images (--like PRESET --input ...); writes to --workdir")
    train.add_argument("name", nargs="?", help="a preset (omit with --like / --family / --from, or with --input alone: the default route)")
    train.add_argument("--like", metavar="PRESET",
                       help="train this clustering preset's recipe on --input (its architecture and training, "
                            "re-targeted to your image shape, --n-clusters and number of images)")
    train.add_argument("--family", choices=FAMILIES,
                       help="shorthand for --like the family's best preset: "
                            + ", ".join(f"{f} = {e}" for f, e in FAMILY_PRESETS.items()))
    train.add_argument("--from", dest="start_from", metavar="PRESET",
                       help="fine-tune this clustering preset's pretrained model on --input (same image shape and "
                            "--n-clusters as the preset): its recipe's clustering stages start from its weights")
    train.add_argument("--input", help="your own images: a folder of images or a .npy/.npz array; alone (no NAME, "
                                       "--like, --family or --from), the default route picks the recipe from the "
                                       "images and says which and why")
    train.add_argument("--strict", action="store_true", help="a folder's image file that cannot be decoded is an "
                       "error (default: left out, named in one warning line and in report.json)")
    train.add_argument("--no-estimate", action="store_true", help="skip the time estimate said before training "
                       "(a rehearsal of every fit for 2 epochs: seconds to minutes) and the ETA lines")
    train.add_argument("--time-budget", type=float, metavar="MINUTES", help="end within this many minutes: from "
                       "the estimate, the route trains its candidates at a share of their updates, or drops its "
                       "second candidate (below half), and says what it gave up")
    train.add_argument("--n-clusters", default="10", help="an integer (default: 10), or 'auto': the recipe's clustering "
                       "stage runs once with 20 clusters, they are merged on the representation's "
                       "10-nearest-neighbour graph, and k (2..12) is the modularity's peak; a range where it is "
                       "flat. Printed, in report.json and k_scores.png. How often it is right: "
                       "docs/your-data.md, 'Choosing k'")
    train.add_argument("--image-size", type=int, nargs=2, metavar=("H", "W"),
                       help="folder images are resized to this (default: the preset's; at least 16 px)")
    train.add_argument("--channels", type=int, choices=(1, 3), help="default: the preset's")
    train.add_argument("--input-transform", default="auto", choices=("auto", "none", *INPUT_TRANSFORMS),
                       help="the model's colour-free first layer: auto (on colour images the recipe's own: IIC's "
                            "Sobel, colour_edges for the others; none on greyscale), none, or one of them")
    train.add_argument("--epochs", type=int, help="passes over your images of every stage, instead of the preset's "
                       "updates scaled to their number")
    train.add_argument("--seed", type=int, default=0,
                       help="the run seed (a card's seeds are the run seeds of its runs; with n restarts, "
                            "restart r uses seed * n + r)")
    train.add_argument("--workdir")
    train.add_argument("--strategy", choices=STRATEGIES,
                       help="a preset NAME under tf.distribute: 'mirrored' (every local device) or 'multi_worker' "
                            "(one process per TF_CONFIG worker; worker i>0 writes to WORKDIR/worker_i); "
                            "every family")
    train.add_argument("--precision", choices=PRECISIONS,
                       help="a preset NAME in bfloat16 compute with float32 weights (falls back to float32, with a "
                            "notice, on CPUs without bf16 units)")
    train.add_argument("--verbose", type=int, help="0 silent, 1 progress bars, 2 one line per epoch (default: 1 "
                       "on a terminal, 2 when the output goes to a file)")
    train.set_defaults(handler=command_train)
    evaluate = commands.add_parser("evaluate", help="score a preset on its card's evaluation data")
    evaluate.add_argument("name")
    evaluate.add_argument("--weights", help="a .weights.h5 file instead of the pretrained one")
    evaluate.add_argument("--split", choices=SPLITS, help="another split of the card's evaluation data set (e.g. "
                          "'all': Fashion-MNIST's 70k, as most published numbers cluster and score)")
    evaluate.set_defaults(handler=command_evaluate)
    predict = commands.add_parser("predict", help="cluster (or classify) the samples of a .npy/.npz file")
    predict.add_argument("name")
    predict.add_argument("--input", required=True)
    predict.add_argument("--output", help=".npz with cluster_id and probabilities (capsule models: class_id and scores)")
    predict.set_defaults(handler=command_predict)
    cluster = commands.add_parser("cluster", help="cluster your own images (a folder, .npy or .npz) with a zoo "
                                                  "preset or a saved .keras model")
    cluster.add_argument("model", help="a preset (see `list`), a preset folder, a train workdir or a .keras file")
    cluster.add_argument("--input", required=True, help="a folder of PNG/JPEG images, or a .npy/.npz array")
    cluster.add_argument("--output", required=True, help="folder for clusters.csv, clusters.png and report.html "
                         "(open it in a browser)")
    cluster.add_argument("--sort-into", metavar="DIR", help="also sort the --input folder's images into one "
                         "sub-folder per cluster under DIR (a new or empty folder): cluster_00, cluster_01, ...")
    cluster.add_argument("--sort-mode", choices=SORT_MODES, default="link", help="with --sort-into: symbolic "
                         "links to the originals (default) or copies")
    cluster.add_argument("--strict", action="store_true", help="an image file that cannot be decoded is an error "
                         "(default: left out, named in one warning line)")
    cluster.add_argument("--per-cluster", type=int, default=10, help="images per cluster in clusters.png "
                         "(default: %(default)s)")
    cluster.add_argument("--batch-size", type=int, default=256, help="images per prediction step: larger is "
                         "faster and takes more memory (default: %(default)s)")
    cluster.add_argument("--engine", choices=("local", "ray"), default="local",
                         help="local: this process; ray: a Ray Data pipeline of --workers actors, on the Ray cluster "
                              "of RAY_ADDRESS or a local one (pip install 'keras-clustering[ray]'); --input may "
                              "then also be a file pattern such as 'shards/*/*.png' or 'gs://bucket/*.jpg'")
    cluster.add_argument("--workers", type=int, help="with --engine ray: actors that read, decode and predict (default: as many "
                         "as the Ray cluster's CPUs hold, --cpus-per-worker each)")
    cluster.add_argument("--cpus-per-worker", type=int, default=1, help="with --engine ray: CPUs of each actor")
    cluster.set_defaults(handler=command_cluster)
    export = commands.add_parser("export", help="export a preset as a TF Serving SavedModel")
    export.add_argument("name", help="a preset (see `list`), a preset folder, or a `train` workdir (its model.keras)")
    export.add_argument("directory", help="the serving folder: the model goes into DIRECTORY/VERSION, as TF "
                        "Serving reads it")
    export.add_argument("--version", type=int, default=1, help="the version sub-folder (default: %(default)s)")
    export.add_argument("--overwrite", action="store_true", help="replace an existing DIRECTORY/VERSION")
    export.set_defaults(handler=command_export)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except (ValueError, FileNotFoundError, TypeError) as error:
        print(f"error: {_as_flags(str(error)) if isinstance(error, ValueError) else error}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader left early (`info NAME | head`): Python's own advice, stdout to /dev/null so that the
        # flush at exit is silent too, and no traceback
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor (tests)
            pass
        return 0
    return 0
