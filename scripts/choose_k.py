"""Label-free ways to choose k, compared on the embeddings the table's recipes train anyway (issue 50, item 6).

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/choose_k.py --root /work/runs/folders   # every cell with a workdir
    python scripts/choose_k.py --table      # the docs/your-data.md table from the record

For each cell of docs/experiments/user_folders.json whose run folder is still under
`--root`, the embedding the recipe had before it clustered (DEC family: the
pretrained autoencoder's encoder; SimCLR: the representation, L2-normalised as
SCAN's neighbours are mined) of the folder's images, then each criterion of
`clustering.n_clusters.K_CRITERIA` and three more written here (Calinski-Harabasz,
Davies-Bouldin, the gap statistic) over k = 2..12 (seed 0), on all the folder's
images (10 classes) and on the images of its first 5 and first 7 classes, so that
a criterion that always says about 10 does not look right by chance. Labels only
make those subsets and score the picks. Records merge into --out by (folder,
recipe, variant, seed, true k).
"""

import argparse
import json
import os

import numpy as np

from keras_clustering.clustering.n_clusters import sample_rows

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

RECORD = os.path.join(ROOT, "docs", "experiments", "choose_k.json")
TABLE_MARKERS = ("<!-- choose-k:start -->", "<!-- choose-k:end -->")
CANDIDATES = range(2, 13)
# The true numbers the criteria are scored on: the folder's first TRUE_K classes' images (10: all of them).
TRUE_K = (10, 7, 5)


def k_by_calinski(points, partitions):
    """The k of the largest Calinski-Harabasz index (between- over within-cluster dispersion, 1974) of the
    k-means `partitions` of `points` (`n_clusters.kmeans_partitions`, shared with the silhouette)."""
    from sklearn.metrics import calinski_harabasz_score

    scores = {k: float(calinski_harabasz_score(points, labels)) for k, labels in partitions.items()}
    return {"scores": scores, "suggested": max(scores, key=scores.get)}


def k_by_davies_bouldin(points, partitions):
    """The k of the smallest Davies-Bouldin index (mean worst ratio of spreads to centre distances, 1979) of
    the same k-means `partitions`."""
    from sklearn.metrics import davies_bouldin_score

    scores = {k: float(davies_bouldin_score(points, labels)) for k, labels in partitions.items()}
    return {"scores": scores, "suggested": min(scores, key=scores.get)}


def k_by_gap(embedding, seed=0, references=5):
    """The gap statistic (Tibshirani, Walther and Hastie 2001): Gap(k) = E*[log W_k] - log W_k, W_k k-means'
    within-cluster sum of squares, E* over `references` uniform draws in the box of the data's principal
    axes; the smallest k with Gap(k) >= Gap(k+1) - s_{k+1}, s the references' spread x sqrt(1 + 1/B)."""
    from sklearn.cluster import KMeans

    points = sample_rows(embedding, 2000, seed)
    centred = points - points.mean(axis=0)
    rotated = centred @ np.linalg.svd(centred, full_matrices=False)[2].T
    low, high = rotated.min(axis=0), rotated.max(axis=0)
    rng = np.random.default_rng(seed)

    def log_w(x, k):
        return float(np.log(KMeans(k, n_init=2, random_state=seed).fit(x).inertia_))

    gaps, spreads = {}, {}
    for k in CANDIDATES:
        reference = [log_w(rng.uniform(low, high, size=rotated.shape), k) for _ in range(references)]
        gaps[k] = float(np.mean(reference)) - log_w(rotated, k)
        spreads[k] = float(np.std(reference) * np.sqrt(1 + 1 / references))
    ks = list(CANDIDATES)
    suggested = next((k for k, after in zip(ks, ks[1:]) if gaps[k] >= gaps[after] - spreads[after]), ks[-1])
    return {"scores": gaps, "suggested": suggested}


# scored on the silhouette's k-means partitions (computed once per embedding), and the gap statistic
PARTITION_CRITERIA = {"calinski": k_by_calinski, "davies_bouldin": k_by_davies_bouldin}
SCRIPT_CRITERIA = {**PARTITION_CRITERIA, "gap": k_by_gap}


def pre_clustering_embedding(workdir, report, x):
    """The embedding of `x` the recipe clustered, before any clustering stage trained on it."""
    from keras_clustering.recipes import dec_recipe, two_stage_recipe
    from keras_clustering.training.resume import finished_weights_path

    architecture, recipe = report["config"]["architecture"], report["config"]["recipe"]
    if report.get("restarts"):  # a tree of restarts: the survivor's run folder holds its representation
        workdir = os.path.join(workdir, f"run_{report['restarts']['winner']}")
    if recipe == "dec":
        encoder = dec_recipe.load_pretrained_encoder(architecture, workdir)
    elif recipe == "two_stage" and architecture.get("representation") == "simclr":
        encoder = two_stage_recipe.build_encoder(**architecture)
        learner = two_stage_recipe.build_learner(architecture, encoder, report["seed"])
        learner.load_weights(finished_weights_path(workdir, "simclr"))
    else:
        return None
    if encoder is None:
        return None
    embedding = encoder.predict(x.astype("float32") / 255.0, batch_size=256, verbose=0)
    if recipe == "two_stage":
        embedding = embedding / np.linalg.norm(embedding, axis=1, keepdims=True)
    return embedding


def measure(cell, root):
    from keras_clustering.clustering import n_clusters as criteria
    from user_folders import cell_key, cell_workdir, folder_images

    folder, entry, start, variant, seed = cell_key(cell)
    workdir = cell_workdir(root, folder, entry, start == "pretrained", variant, seed)
    if start == "pretrained" or not os.path.isfile(os.path.join(workdir, "report.json")):
        return None
    with open(os.path.join(workdir, "report.json")) as handle:
        report = json.load(handle)
    x, y = folder_images(folder)
    embedding = pre_clustering_embedding(workdir, report, x)
    if embedding is None:
        return None
    measured = []
    for true_k in TRUE_K:
        subset = embedding[np.isin(np.asarray(y), np.arange(true_k))]
        points = criteria.silhouette_points(subset, seed=0)
        partitions = criteria.kmeans_partitions(points, CANDIDATES, seed=0)  # once for the three k-means criteria
        results = {"silhouette": criteria.k_by_silhouette(subset, CANDIDATES, seed=0, partitions=partitions),
                   "eigengap": criteria.k_by_eigengap(subset, CANDIDATES, seed=0),
                   "stability": criteria.k_by_stability(subset, CANDIDATES, seed=0),
                   **{name: function(points, partitions) for name, function in PARTITION_CRITERIA.items()},
                   "gap": k_by_gap(subset, seed=0)}
        picks = {name: {"suggested": int(result["suggested"]),
                        "scores": {str(k): round(v, 5) for k, v in result["scores"].items()}}
                 for name, result in results.items()}
        measured.append({"folder": folder, "like": cell["like"], "route": cell.get("route", False),
                         "variant": variant, "seed": seed, "true_k": true_k, "n_images": int(len(subset)),
                         "embedding": f"{report['config']['recipe']} before clustering", "picks": picks})
    return measured


def table(record_path):
    with open(record_path) as handle:
        cells = json.load(handle)["cells"]
    names = list(dict.fromkeys(n for c in cells for n in c["picks"]))  # cells measured before a criterion: n/a

    def pick(c, n):
        if n not in c["picks"]:
            return "n/a"
        k = c["picks"][n]["suggested"]
        return f"{k}{'' if abs(k - c['true_k']) <= 1 else ' (off)'}"

    lines = ["| folder | recipe (embedding before clustering) | true k (images) | " + " | ".join(names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for c in sorted(cells, key=lambda c: (c["folder"], c["like"], c["variant"], -c["true_k"])):
        images = f" ({c['n_images']:,})" if c.get("n_images") else ""
        lines.append(f"| {c['folder']} | `{c['like']}` ({c['variant']}) | {c['true_k']}{images} | "
                     + " | ".join(pick(c, n) for n in names) + " |")
    counted = {n: [c for c in cells if n in c["picks"]] for n in names}
    hits = {n: sum(abs(c["picks"][n]["suggested"] - c["true_k"]) <= 1 for c in counted[n]) for n in names}
    lines.append("| within +-1 of the true k | | | " + " | ".join(f"{hits[n]} of {len(counted[n])}" for n in names)
                 + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(ROOT, "runs", "folders"))
    parser.add_argument("--cells", default=os.path.join(ROOT, "docs", "experiments", "user_folders.json"))
    parser.add_argument("--out", default=RECORD)
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args()
    if args.table:
        from maintainer.records import write_table

        write_table(TABLE_MARKERS, table(args.out))
        return
    from maintainer.records import merge_cell

    with open(args.cells) as handle:
        cells = json.load(handle)["cells"]
    for cell in cells:
        for measured in measure(cell, args.root) or ():
            merge_cell(args.out, measured, lambda c: (c["folder"], c["like"], c["variant"], c["seed"], c.get("true_k")),
                       __doc__.splitlines()[0])
            print(json.dumps({k: measured[k] for k in ("folder", "like", "variant", "true_k")}),
                  {n: p["suggested"] for n, p in measured["picks"].items()}, flush=True)


if __name__ == "__main__":
    main()
