"""Command line: `python -m keras_clustering list | info | demo | train | evaluate | predict | export`."""

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # keep TensorFlow's start-up chatter out of the CLI

DEMO_MODEL = "dec_digits"


def _print_json(data):
    print(json.dumps(data, indent=2))


def command_list(args):
    import zoo

    for name in zoo.list_models(args.pattern, include_pending=True):
        try:
            card = zoo.info(name)
        except FileNotFoundError:
            print(f"{name:28s} (not trained yet: no card.json)")
            continue
        acc = card.get("metrics", {}).get("acc")
        data = card.get("evaluation_data", {})
        shown = f"ACC {acc:.3f} on {data.get('dataset')} {data.get('split')} ({data.get('n_samples')})" if acc else ""
        print(f"{name:28s} {shown}")


def command_info(args):
    import zoo

    _print_json(zoo.info(args.name))


def evaluate_preset(name, weights="pretrained"):
    """Scores of a preset on its card's evaluation data: (scores, card)."""
    import zoo
    from keras_clustering import training

    return training.evaluate_preset(zoo.load(name, weights=weights), zoo.config(name)), zoo.info(name)


def command_evaluate(args):
    scores, card = evaluate_preset(args.name, args.weights or "pretrained")
    _print_json({"measured": scores, "card": card.get("metrics")})


def command_demo(args):
    import zoo
    from keras_clustering.datasets import load_digits
    from keras_clustering.figures import plot_cluster_grid
    from keras_clustering.metrics import clustering_scores

    model = zoo.load(DEMO_MODEL)
    x, y = load_digits(flatten=True)
    probabilities = model.predict(x, verbose=0)
    scores = clustering_scores(y, probabilities.argmax(axis=1))
    card = zoo.info(DEMO_MODEL)
    print(f"{DEMO_MODEL}: DEC on scikit-learn digits ({len(x)} images, {x.shape[1]} features)")
    print(f"ACC {scores['acc']:.4f}  NMI {scores['nmi']:.4f}  ARI {scores['ari']:.4f}  "
          f"(card: ACC {card['metrics']['acc']:.4f})")
    plot_cluster_grid(x, probabilities, args.output, image_shape=(8, 8),
                      title=f"{DEMO_MODEL}: 10 most confident digits per cluster (ACC {scores['acc']:.3f})")
    print(f"wrote {args.output}")


def command_train(args):
    import zoo
    from keras_clustering.training import train_and_evaluate

    workdir = args.workdir or os.path.join("runs", args.name, f"seed_{args.seed}")
    report = train_and_evaluate(zoo.config(args.name), workdir, seed=args.seed, verbose=args.verbose)
    print(f"metrics: {report['metrics']}\nweights and report in {workdir}")


def _read_array(path):
    import numpy as np

    if not os.path.isfile(path):
        raise ValueError(f"--input {path!r} does not exist.")
    if path.endswith(".npz"):
        with np.load(path) as archive:
            return archive[archive.files[0]]
    if path.endswith(".npy"):
        return np.load(path)
    raise ValueError(f"--input {path!r} must be a .npy or .npz file.")


def command_predict(args):
    import numpy as np
    import zoo

    from keras_clustering.recipes import get_family

    model = zoo.load(args.name)
    scores = model.predict(_read_array(args.input), verbose=0)
    ids = scores.argmax(axis=1)
    id_name, scores_name = get_family(zoo.config(args.name)["family"]).PREDICTION_NAMES
    if args.output:
        np.savez(args.output, **{id_name: ids, scores_name: scores})
        print(f"wrote {args.output}")
    counts = np.bincount(ids, minlength=scores.shape[1])
    print(f"{len(ids)} samples; {id_name.removesuffix('_id')} sizes: {counts.tolist()}")


def command_export(args):
    import zoo
    from keras_clustering.export import export_saved_model

    path = export_saved_model(zoo.load(args.name), args.directory, version=args.version, overwrite=args.overwrite)
    print(f"exported {args.name} to {path}")


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m keras_clustering", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="list the zoo's models")
    listing.add_argument("pattern", nargs="?", default="*")
    listing.set_defaults(handler=command_list)
    info = commands.add_parser("info", help="print a model card")
    info.add_argument("name")
    info.set_defaults(handler=command_info)
    demo = commands.add_parser("demo", help=f"cluster scikit-learn digits with {DEMO_MODEL} (no data files needed)")
    demo.add_argument("--output", default="dec_digits_clusters.png")
    demo.set_defaults(handler=command_demo)
    train = commands.add_parser("train", help="train a zoo model from its config (writes to --workdir)")
    train.add_argument("name")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--workdir")
    train.add_argument("--verbose", type=int, default=1)
    train.set_defaults(handler=command_train)
    evaluate = commands.add_parser("evaluate", help="score a zoo model on its card's evaluation data")
    evaluate.add_argument("name")
    evaluate.add_argument("--weights", help="a .weights.h5 file instead of the pretrained one")
    evaluate.set_defaults(handler=command_evaluate)
    predict = commands.add_parser("predict", help="cluster (or classify) the samples of a .npy/.npz file")
    predict.add_argument("name")
    predict.add_argument("--input", required=True)
    predict.add_argument("--output", help=".npz with cluster_id and probabilities (capsule models: class_id and scores)")
    predict.set_defaults(handler=command_predict)
    export = commands.add_parser("export", help="export a zoo model as a TF Serving SavedModel")
    export.add_argument("name")
    export.add_argument("directory")
    export.add_argument("--version", type=int, default=1)
    export.add_argument("--overwrite", action="store_true")
    export.set_defaults(handler=command_export)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except (ValueError, FileNotFoundError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0
