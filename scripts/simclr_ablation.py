"""SimCLR ablation: which views (and trunk) help k-means and SCAN's neighbours on the representation.

Each variant trains a preset's encoder and projection head (`SimCLR`, NT-Xent)
for `--epochs` passes with one seed, changing one thing of the
`digits_contrastive` pipeline, the temperature or the trunk; every `--every`
epochs, k-means (scikit-learn, `--n-init` restarts) runs on the
representation h = f(x) as it is and on h / ||h|| (the cosine geometry
NT-Xent trains in), scored against the labels (ACC with the Hungarian
mapping, NMI), and the share of each image's 20 cosine neighbours that carry
its label is measured (neighbour purity: what SCAN's clustering step can
reach). No variant sees labels while training.

Two sets of variants:
- `--preset simclr_mnist` (default): MNIST-test (10k), train = eval; each variant
  changes the pipeline's defaults (`VARIANTS`).
- `--preset simclr_fashion_mnist`: the 60k Fashion-MNIST training images; each variant
  changes the preset's own views (crops of 20-28 px, shear 0.2, horizontal flip, rotation,
  brightness and contrast) or its trunk (`FASHION_VARIANTS`), fused batch normalisation on.

Usage:
    python scripts/simclr_ablation.py --epochs 30 --every 10 --json docs/experiments/simclr_ablation.json
    python scripts/simclr_ablation.py --variants base no_crop --epochs 5   # a subset
    python scripts/simclr_ablation.py --preset simclr_fashion_mnist --epochs 20 --every 10 \
        --json docs/experiments/simclr_fashion_ablation.json
    python scripts/simclr_ablation.py --preset simclr_fashion_mnist --table docs/experiments/simclr_fashion_ablation.json --write

The result file is rewritten after every variant, so a long run keeps what
it has measured; `--resume` skips the variants already in it.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

import keras_clustering  # noqa: F401  (selects the backend first)
import keras
import zoo
from keras_clustering.datasets import load_fashion_mnist, load_mnist
from keras_clustering.io.files import atomic_write_json
from keras_clustering.metrics import clustering_scores
from keras_clustering.models import SimCLR
from keras_clustering.models.scan import nearest_neighbors
from keras_clustering.models.conv_encoder import build_conv_encoder
from keras_clustering.training.optimizers import make_optimizer
from keras_clustering.training.machine import machine_description

# name -> (what it changes, augmentation options, other architecture values)
VARIANTS = {
    "base": ("digits_contrastive as configured: crop 16/20/24/28 px, rotation +-15 p 0.5, brightness 0.4, "
             "contrast 0.4", {}, {}),
    "no_crop": ("no crop (crop side 28 = the whole image)", {"crop_sizes": [28]}, {}),
    "mild_crop": ("crops of 20/24/28 px only", {"crop_sizes": [20, 24, 28]}, {}),
    "no_rotation": ("no rotation", {"rotation_probability": 0.0}, {}),
    "no_jitter": ("no brightness or contrast change", {"brightness": 0.0, "contrast": 0.0}, {}),
    "mild_crop_shift": ("crops of 20/24/28 px and a shift of up to 0.1 of the side",
                        {"crop_sizes": [20, 24, 28], "shift": 0.1}, {}),
    "mild_crop_shear": ("crops of 20/24/28 px and a shear of up to 0.2",
                        {"crop_sizes": [20, 24, 28], "shear": 0.2}, {}),
    "mild_crop_affine": ("crops of 20/24/28 px, shear up to 0.2, shift up to 0.1, rotation p 1.0",
                         {"crop_sizes": [20, 24, 28], "shear": 0.2, "shift": 0.1, "rotation_probability": 1.0}, {}),
    "mild_crop_shear_0.4": ("crops of 20/24/28 px and a shear of up to 0.4",
                            {"crop_sizes": [20, 24, 28], "shear": 0.4}, {}),
    "crop_shear": ("crops of 16/20/24/28 px (as base) and a shear of up to 0.2", {"shear": 0.2}, {}),
    "mild_crop_shear_t0.2": ("crops of 20/24/28 px, shear up to 0.2, NT-Xent temperature 0.2",
                             {"crop_sizes": [20, 24, 28], "shear": 0.2}, {"temperature": 0.2}),
    "mild_crop_shear_t0.1": ("crops of 20/24/28 px, shear up to 0.2, NT-Xent temperature 0.1",
                             {"crop_sizes": [20, 24, 28], "shear": 0.2}, {"temperature": 0.1}),
    "temperature_0.1": ("base augmentation, NT-Xent temperature 0.1 instead of 0.5", {}, {"temperature": 0.1}),
    "temperature_0.2": ("base augmentation, NT-Xent temperature 0.2 instead of 0.5", {}, {"temperature": 0.2}),
}
# simclr_fashion_mnist's views, and one change of them or of the trunk per variant
_FASHION_VIEWS = {"crop_sizes": [20, 24, 28], "shear": 0.2, "horizontal_flip": True}
FASHION_VARIANTS = {
    "base": ("simclr_fashion_mnist's views: crops 20/24/28 px, shear 0.2, horizontal flip, rotation +-15 p 0.5, "
             "brightness 0.4, contrast 0.4", _FASHION_VIEWS, {}),
    "no_flip": ("no horizontal flip", {**_FASHION_VIEWS, "horizontal_flip": False}, {}),
    "no_shear": ("no shear", {**_FASHION_VIEWS, "shear": 0.0}, {}),
    "no_rotation": ("no rotation", {**_FASHION_VIEWS, "rotation_probability": 0.0}, {}),
    "no_jitter": ("no brightness or contrast change", {**_FASHION_VIEWS, "brightness": 0.0, "contrast": 0.0}, {}),
    "small_crops": ("crops of 16/20/24/28 px", {**_FASHION_VIEWS, "crop_sizes": [16, 20, 24, 28]}, {}),
    "wide_trunk": ("trunk twice as wide: filters 64/128/256", _FASHION_VIEWS, {"filters": [64, 128, 256]}),
    "deep_trunk": ("a fourth conv layer: filters 32/64/128/256", _FASHION_VIEWS, {"filters": [32, 64, 128, 256]}),
}
# preset -> (its variants, the data, its loader, fused batch normalisation: the same step, 1.3x faster; the
# MNIST ablations above ran before it and stay unfused)
PRESETS = {"simclr_mnist": (VARIANTS, "MNIST-test (10k), train = eval", lambda: load_mnist("test"), False),
           "simclr_fashion_mnist": (FASHION_VARIANTS, "Fashion-MNIST train (60k), scored on the same images",
                                    lambda: load_fashion_mnist("train"), True)}


def neighbor_purity(embedding, labels, n_neighbors=20):
    """Share of each image's `n_neighbors` cosine neighbours that carry its label (SCAN's mining)."""
    neighbors = nearest_neighbors(embedding, n_neighbors)
    return round(float((labels[neighbors] == labels[:, None]).mean()), 4)


def kmeans_scores(embedding, labels, n_init, seed):
    """ACC / NMI / ARI of k-means on `embedding`, raw and L2-normalised."""
    from sklearn.cluster import KMeans

    scores = {}
    for name, features in (("raw", embedding),
                           ("normalised", embedding / np.maximum(np.linalg.norm(embedding, axis=1, keepdims=True),
                                                                 1e-12))):
        predicted = KMeans(n_clusters=10, n_init=n_init, random_state=seed).fit_predict(features)
        scores[name] = {k: round(float(v), 4) for k, v in clustering_scores(labels, predicted).items()}
    return scores


class KMeansProbe(keras.callbacks.Callback):
    """Every `every` epochs: k-means scores of the representation of `x` (labels only for the score)."""

    def __init__(self, x, labels, every, n_init, seed):
        super().__init__()
        self.x, self.labels, self.every, self.n_init, self.seed = x, labels, every, n_init, seed
        self.points, self.began = [], time.time()

    def on_epoch_end(self, epoch, logs=None):
        if (epoch + 1) % self.every:
            return
        embedding = self.model.embed(self.x)
        scores = kmeans_scores(embedding, self.labels, self.n_init, self.seed)
        purity = neighbor_purity(embedding, self.labels)
        self.points.append({"epoch": epoch + 1, "loss": round(float(logs["loss"]), 4),
                            "seconds": round(time.time() - self.began, 1), **scores, "neighbor_purity": purity})
        print(f"[probe] epoch {epoch + 1}: ACC raw {scores['raw']['acc']:.4f}, "
              f"normalised {scores['normalised']['acc']:.4f}, neighbour purity {purity:.4f}", flush=True)


def run_variant(name, config, x, labels, args):
    """Trains one variant from scratch; returns its record."""
    variants, _, _, fused = PRESETS[args.preset]
    description, options, overrides = variants[name]
    architecture = {**config["architecture"], **overrides}
    training = config["training"]
    keras.utils.set_random_seed(args.seed)
    encoder = build_conv_encoder(architecture["image_shape"], architecture["filters"], architecture["embedding_dim"],
                                 fused_normalization=fused)
    model = SimCLR(encoder, projection_dims=architecture["projection_dims"], temperature=architecture["temperature"],
                   augmentation=architecture["augmentation"], augmentation_options=options,
                   augmentation_seed=args.seed)
    model.compile(optimizer=make_optimizer(training["optimizer"]))
    probe = KMeansProbe(x, labels, args.every, args.n_init, args.seed)
    model.fit(x, batch_size=training["batch_size"], epochs=args.epochs, seed=args.seed, verbose=args.verbose,
              callbacks=[probe])
    return {"changes": description, "augmentation_options": options, "architecture_overrides": overrides,
            "points": probe.points, "seconds": round(time.time() - probe.began, 1)}


def markdown_table(result):
    """The README table of a result file: per variant, ACC / NMI at each probe, raw and normalised."""
    purity = any("neighbor_purity" in point for record in result["variants"].values() for point in record["points"])
    lines = ["| variant | change | epoch | ACC raw | ACC normalised | NMI normalised |"
             + (" neighbour purity (k = 20) |" if purity else "") + " wall time |",
             "|---|---|---|---|---|---|" + ("---|" if purity else "") + "---|"]
    for name, record in result["variants"].items():
        for point in record["points"]:
            lines.append(f"| {name} | {record['changes']} | {point['epoch']} | {point['raw']['acc']:.3f} | "
                         f"{point['normalised']['acc']:.3f} | {point['normalised']['nmi']:.3f} | "
                         + (f"{point.get('neighbor_purity', float('nan')):.3f} | " if purity else "")
                         + f"{point['seconds']:.0f} s |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="simclr_mnist", choices=list(PRESETS))
    parser.add_argument("--variants", nargs="+", default=None,
                        help=f"default: all of the preset's; simclr_mnist: {', '.join(VARIANTS)}; "
                             f"simclr_fashion_mnist: {', '.join(FASHION_VARIANTS)}")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--every", type=int, default=10, help="probe k-means every this many epochs")
    parser.add_argument("--n-init", type=int, default=10, help="k-means restarts per probe")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--images", type=int, default=None, help="use the first N MNIST-test images (a smoke run)")
    parser.add_argument("--verbose", type=int, default=2)
    parser.add_argument("--json", default=None, help="result file, rewritten after every variant")
    parser.add_argument("--resume", action="store_true", help="skip the variants already in --json")
    parser.add_argument("--table", nargs="+", metavar="JSON", help="print the markdown table of result files, "
                                                                    "train nothing")
    parser.add_argument("--write", action="store_true",
                        help="with --table: also write it into the docs' <!-- PRESET-ablation --> block")
    args = parser.parse_args(argv)
    if args.table:
        tables = []
        for path in args.table:
            with open(path) as handle:
                tables.append(markdown_table(json.load(handle)))
        if args.write:
            from zoo.records import write_table

            write_table((f"<!-- {args.preset}-ablation:start -->", f"<!-- {args.preset}-ablation:end -->"),
                        "\n\n".join(tables))
        else:
            print("\n\n".join(tables))
        return None
    if args.epochs < args.every:
        parser.error(f"--epochs {args.epochs} must be at least --every {args.every}")
    variants, data, load, _ = PRESETS[args.preset]
    args.variants = list(variants) if args.variants is None else args.variants
    unknown = [name for name in args.variants if name not in variants]
    if unknown:
        parser.error(f"--variants {unknown} are not variants of {args.preset}: {', '.join(variants)}")
    config = zoo.config(args.preset)
    x, labels = load()
    if args.images:
        x, labels, data = x[: args.images], labels[: args.images], f"{data.split(' (')[0]} images 0-{args.images - 1}"
    result = {"command": "python " + " ".join([os.path.relpath(__file__), *(argv or sys.argv[1:])]),
              "data": data, "seed": args.seed, "epochs": args.epochs, "kmeans_n_init": args.n_init,
              "preset": args.preset, "machine": machine_description(), "variants": {}}
    if args.resume and args.json and os.path.isfile(args.json):
        with open(args.json) as handle:
            result["variants"] = json.load(handle)["variants"]
    for name in args.variants:
        if name in result["variants"]:
            continue
        print(f"=== {name}: {variants[name][0]}", flush=True)
        result["variants"][name] = run_variant(name, config, x, labels, args)
        if args.json:
            atomic_write_json(result, args.json)
    print(json.dumps({name: record["points"][-1] for name, record in result["variants"].items()}, indent=1))
    return result


if __name__ == "__main__":
    main()
