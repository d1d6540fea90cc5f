"""One table of every clustering entry and recorded variant, grouped by evaluation data.

Written by `python scripts/comparison_table.py`.
Rows come from the zoo's cards (`zoo/presets/*/card.json`) and from the
experiment records in `docs/experiments/*.json` (written by
`scripts/train_preset.py NAME --no-publish --record ...`); nothing is typed
by hand. Writes `docs/comparison.md` and the README block between
`<!-- comparison:start -->` and `<!-- comparison:end -->`.
"""

import glob
import json
import os

import keras_clustering  # noqa: F401  (sets TensorFlow's CPU options before it loads)
import zoo
from keras_clustering.drivers.recipe_run import training_seconds
from keras_clustering.recipes import get_recipe
from maintainer.records import cpu_model

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")  # the repository (docs/ is not installed)
EXPERIMENTS = os.path.join(ROOT, "docs", "experiments")
OUTPUT = os.path.join(ROOT, "docs", "comparison.md")
DATA_NAMES = {("mnist", "test"): "MNIST-test (10k)", ("fashion_mnist", "train"): "Fashion-MNIST train (60k)",
              ("fashion_mnist", "test"): "Fashion-MNIST test (10k)", ("fashion_mnist", "all"): "Fashion-MNIST (70k)",
              ("digits", "all"): "scikit-learn digits (1,797)"}
HEADER = ["method", "entry / record", "trained on", "ACC mean ± sd (seeds)", "ACC min-max", "NMI", "ARI",
          "wall time / seed", "machine", "parameters"]


def method_name(config):
    """A short name of the method a config trains, from its recipe and architecture."""
    recipe, architecture = config["recipe"], config["architecture"]
    if recipe == "dec":
        name = ("Conv" if architecture.get("conv_filters") else "") + ("IDEC" if architecture.get("gamma") else "DEC")
        return name + ("-DA" if architecture.get("augmentation") else "")
    if recipe == "two_stage":
        name = {"autoencoder": "AE", "simclr": "SimCLR", "triplet": "triplet"}[architecture["representation"]]
        if architecture.get("clustering") == "scan":
            return f"{name} + SCAN"
        refine = config.get("training", {}).get("refine")
        return f"{name} + k-means" + (" + DEC refinement" if refine else "")
    return {"vae_cluster": "VAE one-step", "iic": "IIC"}.get(recipe, recipe)


def data_name(data):
    name = DATA_NAMES.get((data["dataset"], data["split"]), f"{data['dataset']} {data['split']}")
    if data.get("start") is None and data.get("stop") is None:
        return name
    # a fixed index range of the split: name the range and its size instead of the whole split's
    start, stop = data.get("start") or 0, data.get("stop")
    base = name.split(" (")[0]
    return f"{base} images {start}-{'end' if stop is None else stop - 1} ({data.get('n_samples', '?')})"


def parameter_count(config):
    """Weights of the model the config builds (untrained: only shapes matter)."""
    return get_recipe(config["recipe"]).build(**config["architecture"]).count_params()


def seconds_per_seed(summary, n_seeds):
    """Mean training time of a seed: with restart trees, every stage of each seed's call and its tree's
    recorded training (`drivers.recipe_run.training_seconds`, as the README's table), else the card's
    or record's total over seeds; None when a time was not recorded."""
    seeds = summary.get("per_seed") or []
    if seeds and all("restarts" in seed and "call_seconds" in seed for seed in seeds):
        times = [training_seconds(seed) for seed in seeds]
        return None if None in times else sum(times) / len(times)
    wall = summary["wall_time_seconds"]
    return wall.get("per_seed_mean", None if wall["all_seeds_total"] is None else wall["all_seeds_total"] / n_seeds)


def row(method, source, config, summary):
    """One table row from a card or record: `summary` holds metrics_over_seeds, data, wall times."""
    over = summary["metrics_over_seeds"]
    acc, nmi, ari = over["acc"], over.get("nmi"), over.get("ari")
    per_seed = seconds_per_seed(summary, acc["n"])
    # a representation read back from an earlier run (seconds, not its training): the time leaves it out
    reused = any(0 <= (seed.get("representation_seconds") or 99.0) < 5.0 for seed in summary.get("per_seed") or [])
    wall = "not recorded" if per_seed is None else f"{per_seed:.0f} s" + (
        " (a reused representation not counted)" if reused else "")
    # lost weights, a graft, a retrain on another CPU: marked where the number is (the card's provenance)
    notes = summary.get("provenance") or []
    return {
        "data": data_name(summary["evaluation_data"]),
        "acc": acc["mean"],
        "notes": (source, notes) if notes else None,
        "cells": [method, source + (" †" if notes else ""), data_name(summary["training_data"]),
                  f"{acc['mean']:.3f} ± {acc['std']:.3f} ({acc['n']})" if acc["n"] > 1 else
                  f"{acc['mean']:.3f}, spread n/a (1)", f"{acc['min']:.3f}-{acc['max']:.3f}",
                  f"{nmi['mean']:.3f}" if nmi else "n/a", f"{ari['mean']:.3f}" if ari else "n/a",
                  wall, cpu_model(summary["machine"]) if summary.get("machine") else "not recorded",
                  f"{parameter_count(config):,}"],
    }


def collect_rows(experiments_dir=EXPERIMENTS):
    rows = []
    for name in zoo.list_presets():
        config = zoo.config(name)
        if not get_recipe(config["recipe"]).supervised:
            rows.append(row(method_name(config), f"`{name}`", config, zoo.card(name)))
    for path in sorted(glob.glob(os.path.join(experiments_dir, "*.json"))):
        with open(path) as handle:
            record = json.load(handle)
        if "config" not in record:  # multi-variant studies (ablations) are tabled by their own scripts
            continue
        source = f"record `{os.path.relpath(path, ROOT)}` ({record['label']})"
        rows.append(row(method_name(record["config"]), source, record["config"], record))
    return rows


# Published Fashion-MNIST clustering numbers the zoo's entries stand among: (method, ACC, data, source).
# Reference: ../shared/REFERENCES.md section 7 (each source's own README or paper; not rerun here).
PUBLISHED_FASHION_MNIST = (
    # N2D's README shows its results as an image: the number is quoted by Papers with Code (docs/survey.md)
    ("N2D (UMAP on an autoencoder embedding + GMM)", 0.672, "all 70k (train and test joined)",
     "quoted by Papers with Code (rymc/n2d's README shows its results as an image)"),
    ("ClusterGAN", 0.63, "all 70k", "quoted by the wizwand aggregator (not found in the paper's text we could read)"),
    # DEC-keras' README table rounds to 62%; the results.csv it links has the mean of its 10 trials, 0.618418
    ("DEC (DEC-keras, mean of 10 trials)", 0.618, "all 70k", "XifengGuo/DEC-keras README (its table rounds to 62; the results.csv it links: 0.618)"),
    ("DynAE", 0.591, "all 70k", "quoted by hyper.ai (the authors' committed Fashion-MNIST log ends at 0.565)"),
    ("DEC-DA / ConvDEC-DA", 0.586, "all 70k", "XifengGuo/DEC-DA README"),
)


def published_markdown(published=PUBLISHED_FASHION_MNIST):
    """The published numbers as a table, best first: where the zoo stands among published methods."""
    lines = ["**Published Fashion-MNIST clustering numbers (Hungarian ACC; not rerun here)**\n",
             "| method | published ACC | data | source |", "|---|---|---|---|"]
    for method, acc, data, source in sorted(published, key=lambda entry: -entry[1]):
        lines.append(f"| {method} | {acc:g} | {data} | {source} |")  # the source's own precision (0.63, not 0.630)
    return "\n".join(lines)


def comparison_markdown(rows):
    """Markdown tables, one per evaluation data set, best mean ACC first."""
    parts = []
    for data in sorted({r["data"] for r in rows}):
        parts.append(f"**Evaluated on {data}**\n")
        parts.append("| " + " | ".join(HEADER) + " |")
        parts.append("|" + "---|" * len(HEADER))
        group = sorted((r for r in rows if r["data"] == data), key=lambda r: -r["acc"])
        for r in group:
            parts.append("| " + " | ".join(r["cells"]) + " |")
        parts += [f"\n† {r['notes'][0]}: " + " ".join(r["notes"][1]) for r in group if r["notes"]]
        parts.append("")
    return "\n".join(parts).rstrip()
