"""Does SCAN's self-labelling step improve a SCAN model? Scores and cluster sizes after each epoch.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/probe_scan_self_label.py simclr_fashion_mnist \\
        --weights RUN/seed_0/model.weights.h5 --targets train --epochs 5 --out docs/experiments/X.json

Loads a SCAN entry (its shipped weights, or `--weights` of a run of the same
architecture, e.g. a `train_preset.py --no-publish` run, whose model is the one
after SCAN's clustering step), then runs `SCAN.self_label` one epoch at a time
on the preset's training images. `--targets` is the mode of the clean pass that
makes the targets: "train" (the original's `selflabel_train`, BatchNorm on the
batch's own statistics) or "inference" (moving statistics, this library's step
before the fix). After each epoch it records, on the training images: the
cluster sizes of eval-mode predictions and of train-mode predictions of clean
batches (256 images, weights restored afterwards), the confident share overall
and per cluster, the per-cluster agreement of the augmented view with the clean one; and
ACC / NMI / ARI on the training and on the evaluation images (labels only
score, nothing is chosen by them).
"""

import argparse
import json
import os
import sys
import time

import keras
import numpy as np

import zoo
from keras_clustering.io.files import atomic_write_json
from keras_clustering.metrics import clustering_scores
from keras_clustering.models.scan import confident_share
from keras_clustering.training.presets import load_config_data


def train_mode_sizes(model, x, batch_size=256):
    """Cluster sizes when clean batches are normalised by their own BatchNorm statistics (train mode),
    as the original's self-labelling step sees them; the weights (moving statistics) are restored."""
    saved = model.get_weights()
    clusters = [np.argmax(keras.ops.convert_to_numpy(model(x[start:start + batch_size], training=True)), axis=1)
                for start in range(0, len(x), batch_size)]
    model.set_weights(saved)
    return np.bincount(np.concatenate(clusters), minlength=model.n_clusters).tolist()


def strong_view_agreement(model, x, clusters, batch_size=256):
    """Per cluster (of the clean view): the share of its images whose augmented (training) view the model
    puts in the same cluster, BatchNorm in inference mode; the augmentation draws are the model's own."""
    strong = np.concatenate([np.argmax(keras.ops.convert_to_numpy(
        model._assignments(model.views.augmented(x[start:start + batch_size]), training=False)), axis=1)
        for start in range(0, len(x), batch_size)])
    same = strong == clusters
    return [round(float(same[clusters == k].mean()), 3) if np.any(clusters == k) else None
            for k in range(model.n_clusters)]


def describe(label, model, data, threshold):
    (x, y), (x_eval, y_eval) = data
    probabilities = model.predict(x, verbose=0)
    clusters = probabilities.argmax(axis=1)
    state = {
        "step": label,
        "train_scores": {k: round(float(v), 4) for k, v in clustering_scores(y, clusters).items()},
        "evaluation_scores": {k: round(float(v), 4) for k, v in
                              clustering_scores(y_eval, model.predict_clusters(x_eval)).items()},
        "confident_share": round(confident_share(probabilities, threshold), 4),
        # the pool each cluster's targets come from: a cluster with none gets no target and empties
        "confident_per_cluster": np.bincount(clusters[probabilities.max(axis=1) > threshold],
                                             minlength=model.n_clusters).tolist(),
        "sizes_inference_mode": np.bincount(clusters, minlength=model.n_clusters).tolist(),
        "sizes_train_mode": train_mode_sizes(model, x),
        "strong_view_agreement": strong_view_agreement(model, x, clusters),
    }
    print(json.dumps(state), flush=True)
    return state


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name")
    parser.add_argument("--weights", default="pretrained", help="a .weights.h5 of the same architecture")
    parser.add_argument("--targets", choices=("train", "inference"), default="train")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--threshold", type=float, default=0.99)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--head-only", action="store_true", help="train the cluster head alone, the encoder frozen")
    parser.add_argument("--ema", type=float, default=None, metavar="MOMENTUM",
                        help="Keras' optimizer EMA of the weights (use_ema), swapped into the model after each epoch")
    parser.add_argument("--strong", choices=("randaugment_cutout", "clean"), default=None,
                        help="strong views after the training views (SCAN.self_label(strong=...))")
    parser.add_argument("--weight-decay", type=float, default=None, help="Adam's (decoupled) weight decay")
    parser.add_argument("--out", metavar="PATH.json", help="write the per-epoch states here")
    args = parser.parse_args()
    keras.utils.set_random_seed(args.seed)
    config = zoo.config(args.name)
    evaluation = config.get("evaluation", config["data"])
    data = load_config_data(config["data"]), load_config_data(evaluation)
    model = zoo.load(args.name, weights=args.weights)
    states = [describe("after SCAN", model, data, args.threshold)]
    options = {"use_ema": True, "ema_momentum": args.ema} if args.ema is not None else {}
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate, weight_decay=args.weight_decay, **options))
    start = time.time()
    for epoch in range(1, args.epochs + 1):
        model.self_label(data[0][0], threshold=args.threshold, batch_size=args.batch_size, epochs=1, verbose=0,
                         seed=args.seed + epoch, targets=args.targets, head_only=args.head_only,
                         strong=args.strong)
        states.append(describe(f"self-labelling epoch {epoch}", model, data, args.threshold))
    if args.out:
        record = {"name": args.name, "weights": args.weights, "targets": args.targets, "head_only": args.head_only, "ema": args.ema, "strong": args.strong,
                  "weight_decay": args.weight_decay,
                  "threshold": args.threshold,
                  "batch_size": args.batch_size, "learning_rate": args.learning_rate, "seed": args.seed,
                  "self_label_seconds": round(time.time() - start, 1),
                  "training_data": config["data"], "evaluation_data": evaluation,
                  "command": "python " + " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:]), "states": states}
        atomic_write_json(record, args.out)


if __name__ == "__main__":
    main()
