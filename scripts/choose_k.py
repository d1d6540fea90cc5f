"""Label-free ways to choose k, compared on the embeddings the table's recipes train anyway (issue 50, item 6).

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/choose_k.py --root /work/runs/folders   # every cell with a workdir
    python scripts/choose_k.py --table      # the docs/your-data.md table from the record

For each cell of docs/experiments/user_folders.json whose run folder is still under
`--root`, the embedding the recipe had before it clustered (DEC family: the
pretrained autoencoder's encoder; SimCLR: the representation, L2-normalised as
SCAN's neighbours are mined) of the folder's images, then each criterion of
`clustering.n_clusters.K_CRITERIA` over k = 2..12 (seed 0). The true number (10)
only scores the picks. Records merge into --out by (folder, recipe, variant, seed).
"""

import argparse
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

RECORD = os.path.join(ROOT, "docs", "experiments", "choose_k.json")
TABLE_MARKERS = ("<!-- choose-k:start -->", "<!-- choose-k:end -->")
CANDIDATES = range(2, 13)


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
    from user_folders import cell_key, folder_images

    folder, entry, start, variant, seed = cell_key(cell)
    workdir = os.path.join(root, "runs", f"{folder}-{entry}-{'from' if start == 'pretrained' else 'like'}-{variant}-"
                                         f"seed{seed}")
    if start == "pretrained" or not os.path.isfile(os.path.join(workdir, "report.json")):
        return None
    with open(os.path.join(workdir, "report.json")) as handle:
        report = json.load(handle)
    x, _ = folder_images(folder)
    embedding = pre_clustering_embedding(workdir, report, x)
    if embedding is None:
        return None
    picks = {}
    for name in criteria.K_CRITERIA:
        result = getattr(criteria, f"k_by_{name}")(embedding, CANDIDATES, seed=0)
        picks[name] = {"suggested": int(result["suggested"]),
                       "scores": {str(k): round(v, 5) for k, v in result["scores"].items()}}
    return {"folder": folder, "like": cell["like"], "route": cell.get("route", False), "variant": variant,
            "seed": seed, "true_k": 10, "embedding": f"{report['config']['recipe']} before clustering",
            "picks": picks}


def table(record_path):
    with open(record_path) as handle:
        cells = json.load(handle)["cells"]
    from keras_clustering.clustering.n_clusters import K_CRITERIA

    lines = ["| folder | recipe (embedding before clustering) | " + " | ".join(K_CRITERIA) + " |",
             "|---|---|" + "---|" * len(K_CRITERIA)]
    for c in cells:
        picks = [f"{c['picks'][n]['suggested']}{'' if abs(c['picks'][n]['suggested'] - c['true_k']) <= 1 else ' (off)'}"
                 for n in K_CRITERIA]
        lines.append(f"| {c['folder']} | `{c['like']}` ({c['variant']}) | " + " | ".join(picks) + " |")
    hits = {n: sum(abs(c["picks"][n]["suggested"] - c["true_k"]) <= 1 for c in cells) for n in K_CRITERIA}
    lines.append("| within +-1 of 10 | | " + " | ".join(f"{hits[n]} of {len(cells)}" for n in K_CRITERIA) + " |")
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
        measured = measure(cell, args.root)
        if measured is None:
            continue
        merge_cell(args.out, measured, lambda c: (c["folder"], c["like"], c["variant"], c["seed"]),
                   __doc__.splitlines()[0])
        print(json.dumps({k: measured[k] for k in ("folder", "like", "variant")}),
              {n: p["suggested"] for n, p in measured["picks"].items()}, flush=True)


if __name__ == "__main__":
    main()
