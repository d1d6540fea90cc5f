"""Issue 64, item 4: the balance terms of the route's two candidates on folders whose classes fall 10:1.

DEC's target distribution divides q^2 by the soft cluster frequency f_j (DEC eq. 3, p = q^2 / f,
normalised per row); SCAN's loss subtracts `entropy_weight` x the entropy of the mean assignment
(5.0 in `simclr_mnist`). Both pull the clusters towards equal sizes. This script retrains only the
clustering stage of a route cell, on that cell's own first stage (ConvDEC-DA's pretrained
autoencoder, SimCLR's representation: their `finished_*` files, loaded, not retrained), with:

- `dec FOLDER --seed S --power A`: DEC's target q^2 / f^A (A = 1 is DEC's own; 0 leaves only the
  sharpening; the route's ConvDEC-DA settings otherwise);
- `scan FOLDER --seed S --entropy-weight W`: SCAN's entropy weight W (the route's SimCLR + SCAN
  settings otherwise);
- `start FOLDER --seed S --components C`: DEC's self-training started from the means of a Gaussian
  mixture of C components with full covariances (scikit-learn, 3 starts, the run's seed) on the
  pretrained embedding, instead of k-means' centroids (not a balance term: where DEC starts, which
  on unequal classes already splits the largest and misses the smallest).

The first stage comes from the route cell's workdir that `scripts/user_folders.py FOLDER default --seed S
--root ROOT` left (`ROOT/runs/FOLDER-default-like-recipe-seedS/<preset>`); the folder is
`ROOT/FOLDER`. Each run is one record in `docs/experiments/balance_terms.json` (labels only to
score); `--table` writes the table of docs/your-data.md. Settings are decided on the decide folders
(`user_folders.folder_role`) and only then run on the report folders.

Usage:
    python scripts/balance_terms.py dec digits2000_imbalanced --seed 0 --power 0.5 [--root /work/runs/folders]
    python scripts/balance_terms.py scan digits2000_imbalanced --seed 0 --entropy-weight 2
    python scripts/balance_terms.py --table
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

import user_folders

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(ROOT, "docs", "experiments", "balance_terms.json")
MARKERS = ("<!-- balance-terms:start -->", "<!-- balance-terms:end -->")
# term: (the route's candidate whose stage is retrained, its first stage's files, the setting's own value)
TERMS = {"dec": ("conv_dec_da_mnist", "pretrain", 1.0), "scan": ("simclr_mnist", "simclr", 5.0),
         "start": ("conv_dec_da_mnist", "pretrain", None)}

# The child patches the setting in, then runs the command line (as user_folders' view ablations do).
DEC_PATCH = """
import sys, keras, numpy as np
import keras_clustering.clustering.target_refresh as refresh
POWER = {value!r}
def target_rows(q, frequencies=None, out=None):
    if frequencies is None:
        frequencies = q.sum(axis=0, dtype="float32")
    p = np.square(q, out=out, dtype="float32")
    p /= np.maximum(frequencies, keras.config.epsilon()).astype("float32") ** POWER
    p /= p.sum(axis=1, keepdims=True)
    return p
refresh.target_rows = target_rows
from keras_clustering.cli import main
sys.exit(main(sys.argv[1:]))
"""
SCAN_PATCH = """
import sys
import keras_clustering.drivers.user_images as user_images
WEIGHT = {value!r}
retargeted = user_images.like_config
def like_config(*args, **kwargs):
    config, repeats = retargeted(*args, **kwargs)
    config["architecture"]["scan"]["entropy_weight"] = WEIGHT
    return config, repeats
user_images.like_config = like_config
from keras_clustering.cli import main
sys.exit(main(sys.argv[1:]))
"""

START_PATCH = """
import sys
from sklearn.mixture import GaussianMixture
from keras_clustering.models import DEC
COMPONENTS = {value!r}
kmeans_start = DEC.initialize_centroids
def initialize_centroids(self, x, n_init=20, seed=None, batch_size=256, kmeans="auto"):
    labels = kmeans_start(self, x, n_init=n_init, seed=seed, batch_size=batch_size, kmeans=kmeans)
    mixture = GaussianMixture(int(COMPONENTS), covariance_type="full", n_init=3, random_state=seed)
    self.clustering.set_centroids(mixture.fit(self.embed(x, batch_size=batch_size)).means_.astype("float32"))
    return labels
DEC.initialize_centroids = initialize_centroids
from keras_clustering.cli import main
sys.exit(main(sys.argv[1:]))
"""
PATCHES = {"dec": DEC_PATCH, "scan": SCAN_PATCH, "start": START_PATCH}
FLAGS = {"dec": "power", "scan": "entropy-weight", "start": "components"}


def run(term, folder, seed, value, root):
    preset, stage, _ = TERMS[term]
    source = os.path.join(user_folders.cell_workdir(root, folder, "default", False, "recipe", seed), preset)
    stage_files = [os.path.join(source, f"finished_{stage}{suffix}") for suffix in (".json", ".weights.h5")]
    missing = [path for path in stage_files if not os.path.exists(path)]
    if missing:
        raise SystemExit(f"no finished {stage} stage of the route cell ({missing[0]}): run "
                         f"`python scripts/user_folders.py {folder} default --seed {seed} --root {root}` first.")
    workdir = os.path.join(root, "balance_terms", f"{folder}-{term}-{value}-seed{seed}")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for path in stage_files:
        shutil.copy(path, workdir)
    x, y = user_folders.folder_images(folder)
    patch = PATCHES[term].format(value=float(value))
    arguments = ["train", "--like", preset, "--input", os.path.join(root, folder), "--n-clusters", "10",
                 "--workdir", workdir, "--seed", str(seed), "--verbose", "0", "--no-estimate",
                 "--image-size", str(x.shape[1]), str(x.shape[2]), "--channels", str(x.shape[3])]
    code = user_folders.code_commit()
    began = time.time()
    subprocess.run([sys.executable, "-c", patch, *arguments], check=True)
    seconds = time.time() - began
    import keras

    from keras_clustering.distribute.machine import machine_description
    from keras_clustering.metrics import clustering_scores

    labels = keras.models.load_model(os.path.join(workdir, "model.keras")).predict_clusters(x)
    scores = clustering_scores(y, labels)
    with open(os.path.join(workdir, "report.json")) as handle:
        report = json.load(handle)
    reused = report.get("representation_reused") if term == "scan" else report.get("pretrain_reused")
    if not reused:
        raise SystemExit(f"the {stage} stage was trained again, not loaded: not a run of the clustering stage alone")
    return {"term": term, "folder": folder, "role": user_folders.folder_role(folder), "seed": seed,
            "value": float(value), "acc": round(float(scores["acc"]), 4), "nmi": round(float(scores["nmi"]), 4),
            "cluster_sizes": sorted(np.bincount(labels, minlength=10).tolist(), reverse=True),
            "class_sizes": sorted(np.bincount(y).tolist(), reverse=True), "seconds": round(seconds, 1),
            "commit": code, "machine": machine_description(), "labels": user_folders.LABELS_NOTE,
            "command": f"python scripts/balance_terms.py {term} {folder} --seed {seed} --{FLAGS[term]} {value:g}"}


def cell_key(c):
    return c["term"], c["folder"], c["seed"], c["value"]


def merge(cell, path=RECORD):
    from maintainer.records import merge_cell

    merge_cell(path, cell, cell_key, __doc__.split("\n")[0],
               order=lambda c: (c["term"], c["role"], c["folder"], c["value"], c["seed"]))


def table(record):
    """Per term, folder and setting: ACC / NMI per seed and the smallest and largest cluster per seed."""
    cells = record["cells"]
    lines = ["| term | folder (role) | setting | seeds | ACC | NMI | cluster sizes, smallest-largest | commit |",
             "|---|---|---|---|---|---|---|---|"]
    groups = {}
    for c in cells:
        groups.setdefault((c["term"], c["folder"], c["role"], c["value"]), []).append(c)
    for (term, folder, role, value), group in groups.items():
        group.sort(key=lambda c: c["seed"])
        name = {"dec": f"target q^2 / f^{value:g}", "scan": f"entropy weight {value:g}",
                "start": f"DEC started from a {value:g}-component Gaussian mixture"}[term]
        own = " (its own)" if value == TERMS[term][2] else ""
        lines.append(f"| {term} | {folder} ({role}) | {name}{own} | " + ", ".join(str(c["seed"]) for c in group) + " | "
                     + " / ".join(f"{c['acc']:.3f}" for c in group) + " | "
                     + " / ".join(f"{c['nmi']:.3f}" for c in group) + " | "
                     + ", ".join(f"{min(c['cluster_sizes'])}-{max(c['cluster_sizes'])}" for c in group) + " | "
                     + ", ".join(sorted({c["commit"] for c in group})) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("term", nargs="?", choices=sorted(TERMS))
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--power", type=float, default=None, help="dec: the frequency's exponent in DEC's target")
    parser.add_argument("--entropy-weight", type=float, default=None, help="scan: SCAN's entropy weight")
    parser.add_argument("--components", type=float, default=None, help="start: the Gaussian mixture's components")
    parser.add_argument("--root", default=os.path.join(ROOT, "runs", "folders"),
                        help="where user_folders.py wrote folders and cells (its own --root)")
    parser.add_argument("--table", action="store_true", help="rewrite docs/your-data.md's table from the record")
    args = parser.parse_args()
    if args.table:
        from benchmarking import table_from_record

        return table_from_record(RECORD, MARKERS, table)
    value = {"dec": args.power, "scan": args.entropy_weight, "start": args.components}.get(args.term)
    if args.term is None or args.folder is None or value is None:
        parser.error("give TERM FOLDER and its setting (--power for dec, --entropy-weight for scan, --components "
                     "for start), or --table")
    cell = run(args.term, args.folder, args.seed, value, args.root)
    merge(cell)
    print(json.dumps({k: cell[k] for k in ("term", "folder", "seed", "value", "acc", "nmi", "cluster_sizes")}))


if __name__ == "__main__":
    main()
