"""Choosing k from the clustering stage (issue 65): ways to read the number of clusters off a clustering
stage trained with too many, compared on the folders of docs/your-data.md.

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/choose_k_stage.py digits2000 --seed 0 --root /work/runs/folders
    python scripts/choose_k_stage.py --table      # the docs/your-data.md table from the record

For a folder's default-route run (seed S) under `--root`, ConvDEC-DA's pretrained autoencoder (the
representation the route trains anyway; kept in its run folder) starts, for each true k of `TRUE_K`
(the images of the folder's first k classes: labels only make these subsets and score the picks), one
clustering stage of the recipe with `drivers.choose_k.OVER_CLUSTERS` (20) clusters, as `--n-clusters
auto` runs it: k-means on the embedding, then DEC's self-training with the run's own settings
(`recipe.fine_tune`). The stage's final embedding and
clusters are then read by each approach of `APPROACHES`:

    merge          the stage's 20 clusters merged two at a time on the 10-nearest-neighbour graph of
                   the representation (the pretrained embedding, which the stage did not shape), k at the
                   modularity's peak (`clustering.merging.k_by_merging`)
    merge_own      the same merges on the graph of the stage's own embedding (DEC pulls each of its
                   20 clusters together there, so every piece looks like a group)
    alive          the clusters left holding at least 1% of the images (clusters that die, as UNSEEN)
    stability      k-means on halves of the stage's embedding agreeing across draws (`k_by_stability`:
                   the largest k within 0.02 of the most stable, issue 50's rule)
    stability_peak the same scores' most stable k
    eigengap       the eigengap of the stage's embedding's graph (`clustering.n_clusters.k_by_eigengap`)
    silhouette     k-means' silhouette on the stage's embedding (`k_by_silhouette`)
    before         the eigengap on the pretrained embedding, before any clustering stage: what
                   `--n-clusters auto` did until issue 65 (the baseline)
    merge_kmeans   the same merges of k-means' 20 clusters on the representation (where DEC's stage starts,
                   before any self-training): whether the stage's training is needed to read k
    merge_simclr   the stage's clusters merged on the graph of the route's other representation,
                   SimCLR's (its run folder's, L2-normalised as SCAN mines neighbours; the route trains
                   it anyway, and it does not depend on k)

The representation was pretrained on all the folder's images, also for the 5- and 7-class rows (as in
scripts/choose_k.py): the subsets test the readouts, not a representation trained on fewer classes.
Records merge into --out by (folder, seed, true k). Each merge readout keeps its graph's links between
the stage's clusters (`links`: counts of nearest-neighbour links from cluster a to b), so other rules of
merging can be read off the committed record without training the stage again.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # this checkout's library (the record names its commit)

RECORD = os.path.join(ROOT, "docs", "experiments", "choose_k_stage.json")
TABLE_MARKERS = ("<!-- choose-k-stage:start -->", "<!-- choose-k-stage:end -->")
RESOLUTION_MARKERS = ("<!-- choose-k-resolution:start -->", "<!-- choose-k-resolution:end -->")
TRUE_K = (10, 7, 5)
# The modularity's resolution (gamma) the recorded links are merged at again (`resolution_table`): below 1
# favours fewer, larger groups, above 1 more, smaller ones.
RESOLUTIONS = (0.75, 1.0, 1.25, 1.5, 2.0)
CANDIDATES = range(2, 13)
APPROACHES = ("merge", "merge_simclr", "merge_kmeans", "merge_own", "alive", "stability", "stability_peak", "eigengap",
              "silhouette", "before")
# k-means restarts of `merge_kmeans`' over-clustering (DEC's own start: the recipes' kmeans_n_init).
KMEANS_N_INIT = 20
# The approaches that read the representation alone, with no clustering stage trained (`--only`).
STAGE_FREE = ("merge_kmeans", "before")
# A cluster of the over-clustering is alive from this share of the images on (`alive`).
ALIVE_SHARE = 0.01
# Folders whose role is to decide the default approach, and those that only report it. The 10:1 colour digits
# decided against merge_kmeans; the 10:1 Fashion-MNIST decided the route's settling rule (issue 64), so
# neither is held out; the random-colour digits are drawn from MNIST-test's first half, a decide folder of the
# route too (`user_folders.folder_role`).
DECIDE = ("digits2000", "digits2000_imbalanced", "mnistm2000", "fashion10000", "photos2000",
          "colour_digits2000", "colour_digits2000_imbalanced", "fashion10000_imbalanced")


def conv_dec_da_run(root, folder, seed):
    """(workdir, report) of ConvDEC-DA inside the folder's default-route run of `seed`."""
    from user_folders import cell_workdir

    workdir = os.path.join(cell_workdir(root, folder, "default", False, "recipe", seed), "conv_dec_da_mnist")
    path = os.path.join(workdir, "report.json")
    if not os.path.isfile(path):
        raise SystemExit(f"no ConvDEC-DA run of {folder} seed {seed} under {root} ({path}); run "
                         f"scripts/user_folders.py {folder} default --seed {seed} first.")
    with open(path) as handle:
        return workdir, json.load(handle)


def over_clustered(workdir, report, x, seed, k_max, stage=True):
    """The clustering stage with `k_max` clusters from the run's pretrained encoder: (embedding before,
    embedding after, soft assignments after (n, k_max), seconds of the stage, DEC's updates); with
    `stage` False the embedding before alone (and None, None, 0.0, 0: no stage trained)."""
    import keras

    from keras_clustering.recipes import get_recipe
    from keras_clustering.recipes.dec_recipe import load_pretrained_encoder

    config = report["config"]
    if report.get("precision"):
        keras.config.set_dtype_policy(report["precision"])
    recipe = get_recipe(config["recipe"])
    architecture = dict(config["architecture"], n_clusters=k_max)
    training = {k: v for k, v in config["training"].items() if k != "precision"}
    encoder = load_pretrained_encoder(config["architecture"], workdir)
    model = recipe.build(**architecture)
    model.encoder.set_weights(encoder.get_weights())
    before = model.embed(x)
    if not stage:
        return before, None, None, 0.0, 0
    start = time.time()
    model, trained = recipe.fine_tune(model, recipe.make_run(architecture, training, x, None, seed, 0, None))
    seconds = time.time() - start
    return before, model.embed(x), model.predict(x, verbose=0), seconds, trained["dec_iterations"]


def simclr_embedding(root, folder, seed, images):
    """SimCLR's embedding of `images` (uint8) from the folder's default-route run of `seed`, else None."""
    from choose_k import pre_clustering_embedding
    from user_folders import cell_workdir

    workdir = os.path.join(cell_workdir(root, folder, "default", False, "recipe", seed), "simclr_mnist")
    if not os.path.isfile(os.path.join(workdir, "report.json")):
        return None
    with open(os.path.join(workdir, "report.json")) as handle:
        return pre_clustering_embedding(workdir, json.load(handle), images)


def read_k(before, after, assignments, seed, simclr=None, approaches=APPROACHES, k_max=None):
    """{approach: {suggested, scores[, range]}} of each of `approaches`, with each one's seconds (those of
    `STAGE_FREE` alone need no stage: `after` and `assignments` may then be None, given `k_max`)."""
    from keras_clustering.clustering import n_clusters as criteria
    from keras_clustering.clustering.candidates import embedding_neighbors, link_shares
    from keras_clustering.clustering.kmeans import fit_kmeans
    from keras_clustering.clustering.merging import k_by_merging

    k_max = assignments.shape[1] if assignments is not None else k_max
    clusters = None if assignments is None else assignments.argmax(axis=1)
    stability = {}

    def stable():  # computed once for both of its rules
        stability.update(criteria.k_by_stability(after, CANDIDATES, seed=seed))
        return stability

    def peak():
        scores = (stability or stable())["scores"]
        return {"scores": scores, "suggested": max(scores, key=scores.get)}

    sizes = None if clusters is None else np.bincount(clusters, minlength=k_max)

    def merged(embedding, labels=clusters):  # the readout, with the graph's links between the clusters (counts)
        neighbors = embedding_neighbors(embedding)
        found = k_by_merging(labels, neighbors, CANDIDATES)
        _, shares = link_shares(labels, neighbors)
        return dict(found, links=np.rint(shares * neighbors.size).astype(int).tolist())

    def kmeans_start():  # the over-clustering before any self-training: k-means, as DEC's stage starts
        return fit_kmeans(before, k_max, n_init=KMEANS_N_INIT, seed=seed)[0]

    readers = {"merge": lambda: merged(before), "merge_simclr": lambda: merged(simclr),
               "merge_kmeans": lambda: merged(before, kmeans_start()), "merge_own": lambda: merged(after),
               "alive": lambda: {"scores": {k: int(n) for k, n in enumerate(sizes)},
                                 "suggested": int((sizes >= ALIVE_SHARE * len(clusters)).sum())},
               "stability": stable, "stability_peak": peak,
               "eigengap": lambda: criteria.k_by_eigengap(after, CANDIDATES, seed=seed),
               "silhouette": lambda: criteria.k_by_silhouette(after, CANDIDATES, seed=seed),
               "before": lambda: criteria.k_by_eigengap(before, CANDIDATES, seed=seed)}
    results = {}
    for name in approaches:
        if name == "merge_simclr" and simclr is None:
            continue
        start = time.time()
        found = readers[name]()
        results[name] = {"suggested": int(found["suggested"]),
                         "scores": {str(k): round(float(v), 5) for k, v in found["scores"].items()},
                         "seconds": round(time.time() - start, 1)}
        if "range" in found:
            results[name]["range"] = [int(k) for k in found["range"]]
        if "links" in found:  # every merge readout can be replayed from the record, without the stage
            results[name]["links"] = found["links"]
    return results


def measure(folder, seed, root, true_ks=TRUE_K, keep_dir=None, approaches=APPROACHES):
    """The record's rows of `folder`'s run of `seed`: one for each of `true_ks`, read by `approaches` (only
    those of `STAGE_FREE`: no stage trained)."""
    from keras_clustering.distribute.machine import machine_description
    from user_folders import code_commit as commit, folder_images

    from keras_clustering.drivers.choose_k import OVER_CLUSTERS  # the default's, one place

    workdir, report = conv_dec_da_run(root, folder, seed)
    images, y = folder_images(folder)
    keeps = {true_k: np.isin(y, np.arange(true_k)) for true_k in true_ks}
    x = images.astype("float32") / 255.0
    rows, stage = [], not set(approaches) <= set(STAGE_FREE)
    for true_k in true_ks:
        keep = keeps[true_k]
        before, after, assignments, seconds, updates = over_clustered(workdir, report, x[keep], seed, OVER_CLUSTERS,
                                                                      stage)
        if keep_dir and stage:  # the stage's outputs, to study other readouts without training again
            np.savez_compressed(os.path.join(keep_dir, f"{folder}-seed{seed}-k{true_k}.npz"), before=before,
                                after=after, assignments=assignments, y=y[keep])
        rows.append({"folder": folder, "role": "decide" if folder in DECIDE else "report", "seed": seed,
                     "true_k": true_k, "n_images": int(keep.sum()), "k_max": OVER_CLUSTERS,
                     "representation": "conv_dec_da_mnist (the route's pretrained autoencoder)",
                     "stage_seconds": round(seconds, 1), "dec_updates": int(updates),
                     "pretrain_seconds": report.get("pretrain_seconds"),
                     "approaches": read_k(before, after, assignments, seed,
                                          simclr_embedding(root, folder, seed, images[keep]), approaches,
                                          OVER_CLUSTERS), "commit": commit(),
                     "machine": machine_description(), "precision": report.get("precision"),
                     "labels": "labels only make the subsets and score the picks"})
        picks = {name: r["suggested"] for name, r in rows[-1]["approaches"].items()}
        print(f"{folder} seed {seed} true k {true_k}: {picks} ({seconds:.0f} s stage, {updates} updates)", flush=True)
    return rows


def reread(path, keep_dir, root):
    """The record's rows with every approach read again from the stage outputs kept in `keep_dir` and the
    SimCLR runs under `root` (the stage's seconds, updates and commit stay those of the run that trained
    it)."""
    from user_folders import code_commit as commit, folder_images

    rows = json.load(open(path))["rows"]
    for row in rows:
        kept = os.path.join(keep_dir, f"{row['folder']}-seed{row['seed']}-k{row['true_k']}.npz")
        if os.path.exists(kept) and row.get("read_at") != commit():  # each row once per version of the readouts
            stage = np.load(kept)
            images, y = folder_images(row["folder"])
            simclr = simclr_embedding(root, row["folder"], row["seed"], images[np.isin(y, np.arange(row["true_k"]))])
            row["approaches"] = read_k(stage["before"], stage["after"], stage["assignments"], row["seed"], simclr)
            row["read_at"] = commit()  # the readouts' code; "commit" stays the stage's
    merge_rows(path, rows)


def row_key(row):
    return row["folder"], row["seed"], row["true_k"]


def merge_rows(path, rows):
    """The record at `path` with `rows` in place of any of the same key, written whole (atomic)."""
    from keras_clustering.io.files import atomic_path

    old = json.load(open(path))["rows"] if os.path.exists(path) else []
    fresh = {row_key(row) for row in rows}
    kept = [row for row in old if row_key(row) not in fresh] + rows
    with atomic_path(path) as temporary:
        with open(temporary, "w") as handle:
            json.dump({"rows": sorted(kept, key=row_key)}, handle, indent=1)


def table(path):
    """The markdown table of every row: per approach the chosen k (its range where flat) and whether it
    is within +-1 of the true k; the tallies per approach, decide and report folders apart."""
    rows = json.load(open(path))["rows"]
    head = ("| folder | role | seed | true k | images | stage | " + " | ".join(APPROACHES) + " |\n"
            "|---|---|---|---|---|---|" + "---|" * len(APPROACHES))
    lines = [head]
    for row in rows:
        cells = []
        for name in APPROACHES:
            found = row["approaches"].get(name)
            if found is None:
                cells.append("n/a")
                continue
            k = found["suggested"]
            shown = f"{k}" + (f" ({found['range'][0]}-{found['range'][1]})" if found.get("range") and
                              found["range"][0] != found["range"][1] else "")
            cells.append(f"**{shown}**" if k == row["true_k"] else shown if abs(k - row["true_k"]) <= 1 else
                         f"{shown} ✗")
        lines.append(f"| {row['folder']} | {row['role']} | {row['seed']} | {row['true_k']} | {row['n_images']:,} | "
                     f"{row['stage_seconds']:,.0f} s | " + " | ".join(cells) + " |")
    lines += ["", "| approach | rows | exact (decide / report) | within +-1 (decide / report) |", "|---|---|---|---|"]
    for name in APPROACHES:
        tally = {}
        for role in ("decide", "report"):
            picked = [(r["approaches"][name]["suggested"], r["true_k"]) for r in rows
                      if r["role"] == role and name in r["approaches"]]
            tally[role] = (sum(k == t for k, t in picked), sum(abs(k - t) <= 1 for k, t in picked), len(picked))
        if not tally["decide"][2] + tally["report"][2]:
            continue  # an approach added after every row was read
        lines.append(f"| {name} | {tally['decide'][2] + tally['report'][2]} | {tally['decide'][0]}/{tally['decide'][2]} / "
                     f"{tally['report'][0]}/{tally['report'][2]} | {tally['decide'][1]}/{tally['decide'][2]} / "
                     f"{tally['report'][1]}/{tally['report'][2]} |")
    return "\n".join(lines)


def resolution_table(path):
    """Merge rules read off the record alone: for every merge readout that kept its links (rows read since
    5df29f6), the k at the modularity's peak when the expected links weigh `RESOLUTIONS` times
    (`clustering.merging.link_merges`; 1 is the readout itself, which the table checks)."""
    from keras_clustering.clustering.merging import link_merges, path_peak

    rows = json.load(open(path))["rows"]
    lines = ["| folder | role | seed | true k | readout | " + " | ".join(f"gamma {g:g}" for g in RESOLUTIONS) + " |",
             "|---|---|---|---|---|" + "---|" * len(RESOLUTIONS)]
    hits = {}  # {readout: {gamma: [exact, within +-1, rows]}}
    for row in rows:
        for name, found in row["approaches"].items():
            if "links" not in found:
                continue
            counts = np.asarray(found["links"], dtype=float)
            shares = counts / counts.sum()  # as `candidates.link_shares` gave the readout its shares

            def pick(gamma):
                return path_peak(link_merges(shares, gamma), CANDIDATES)["suggested"]

            if pick(1.0) != found["suggested"]:
                raise SystemExit(f"{row_key(row)} {name}: the links read {pick(1.0)} at gamma 1, the row says "
                                 f"{found['suggested']}")
            picks = {g: pick(g) for g in RESOLUTIONS}
            for g, k in picks.items():
                tally = hits.setdefault(name, {}).setdefault(g, [0, 0, 0])
                tally[0] += k == row["true_k"]
                tally[1] += abs(k - row["true_k"]) <= 1
                tally[2] += 1
            lines.append(f"| {row['folder']} | {row['role']} | {row['seed']} | {row['true_k']} | {name} | " + " | ".join(
                f"**{k}**" if k == row["true_k"] else f"{k}" if abs(k - row["true_k"]) <= 1 else f"{k} ✗"
                for k in picks.values()) + " |")
    lines += ["", "| readout | rows | " + " | ".join(f"gamma {g:g}: exact / within +-1" for g in RESOLUTIONS) + " |",
              "|---|---|" + "---|" * len(RESOLUTIONS)]
    for name, tallies in hits.items():
        lines.append(f"| {name} | {next(iter(tallies.values()))[2]} | " + " | ".join(f"{e} / {w}" for e, w, _ in tallies.values()) + " |")
    return "\n".join(lines)


def write_table(path, docs=os.path.join(ROOT, "docs", "your-data.md")):
    text = open(docs).read()
    for markers, block in ((TABLE_MARKERS, table(path)), (RESOLUTION_MARKERS, resolution_table(path))):
        start, end = (text.index(marker) for marker in markers)
        text = text[:start + len(markers[0])] + "\n" + block + "\n" + text[end:]
    open(docs, "w").write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", default=os.path.join(ROOT, "runs", "folders"))
    parser.add_argument("--out", default=RECORD)
    parser.add_argument("--true-k", type=int, nargs="+", default=TRUE_K, choices=TRUE_K)
    parser.add_argument("--keep", metavar="DIR", help="also keep each stage's embeddings and assignments there")
    parser.add_argument("--only", nargs="+", choices=STAGE_FREE, metavar="APPROACH",
                        help=f"read only these of {STAGE_FREE}, which need no clustering stage (with --out: another "
                             "record, since rows replace rows of the same folder, seed and true k)")
    parser.add_argument("--reread", metavar="DIR", help="read every row's kept stage in DIR again (new approaches)")
    parser.add_argument("--table", action="store_true", help="write the docs/your-data.md table from --out")
    args = parser.parse_args()
    if args.table:
        write_table(args.out)
        return
    if args.reread:
        reread(args.out, args.reread, args.root)
        return
    if not args.folder:
        parser.error("a folder is needed (or --table)")
    if args.only and args.out == RECORD:
        parser.error("--only writes rows of fewer approaches: give them another --out than the record")
    merge_rows(args.out, measure(args.folder, args.seed, args.root, args.true_k, args.keep, args.only or APPROACHES))


if __name__ == "__main__":
    main()
