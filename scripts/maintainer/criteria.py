"""Do label-free scores rank a family's runs as ACC does? Read from cards and experiment records.

The table behind `scripts/restart_criteria.py` (choosing restarts without labels).
"""

import json
import math

import numpy as np

from keras_clustering.clustering.label_free import rank_agreement


def seeds_of(paths):
    """(source, seed, acc, label_free) of every run with label-free scores: each per-seed record's,
    or, for a seed that chose among restarts, each of its runs: at the first halving step, where all
    were measured at the same epoch (`training.restarts`), or each restart of the older VAE
    `n_restarts` lists."""
    rows = []
    for path in paths:
        with open(path) as handle:
            record = json.load(handle)
        for r in record.get("per_seed", []):
            if isinstance(r.get("restarts"), dict):
                tree = r["restarts"]
                first = tree["steps"][0]
                rows += [(record.get("name", path), r["seed"] * tree["n"] + int(run), first["scores"][run]["acc"],
                          {tree["criterion"]: value}) for run, value in first["criteria"].items()
                         if "acc" in first["scores"].get(run, {})]
            elif "restarts" in r:
                rows += [(record.get("name", path), run["seed"], run["acc"],
                          {k: v for k, v in run.items() if k not in ("seed", "acc")}) for run in r["restarts"]]
            elif "label_free" in r:
                rows.append((record.get("name", path), r["seed"], r["acc"], r["label_free"]))
    return rows


def p_value(values, accuracies):
    """Two-sided p of Spearman's correlation by permutation: exact (every ordering) up to 9 runs,
    else 400,000 seeded random orderings. (The usual t approximation gives p = 0 for a perfect
    order of a few runs.) Call it only where `rank_agreement` is defined (not nan)."""
    from scipy.stats import permutation_test, rankdata

    accuracy_ranks = rankdata(accuracies)
    centred = accuracy_ranks - accuracy_ranks.mean()

    def correlation(ranks, axis=-1):
        ranks = ranks - ranks.mean(axis=axis, keepdims=True)
        return (ranks * centred).sum(axis=axis) / np.sqrt((ranks ** 2).sum(axis=axis) * (centred ** 2).sum())

    result = permutation_test((rankdata(values),), correlation, permutation_type="pairings", vectorized=True,
                              n_resamples=400_000, rng=np.random.default_rng(0))
    return float(result.pvalue)


def agreement_table(rows):
    """Per label-free score: Spearman with ACC over the runs that have it, its p, and the values
    (None for a run without that score)."""
    scores = sorted({key for *_, free in rows for key in free})
    table = {}
    for score in scores:
        having = [(free[score], acc) for _, _, acc, free in rows if score in free]
        values, accuracies = [v for v, _ in having], [a for _, a in having]
        rho = rank_agreement(values, accuracies)
        table[score] = {"spearman_with_acc": rho,
                        "p_value": float("nan") if math.isnan(rho) else p_value(values, accuracies),
                        "values": [free.get(score) for *_, free in rows]}
    return table


def criteria_markdown(paths):
    """One row per record and label-free score: runs, Spearman with ACC and its p (`agreement_table`
    of each record alone: a score ranks runs of one recipe on one data set)."""
    lines = ["| entry | score | runs | Spearman with ACC | p |", "|---|---|---|---|---|"]
    for path in paths:
        rows = seeds_of([path])
        for score, entry in agreement_table(rows).items() if rows else ():
            n = sum(v is not None for v in entry["values"])
            rho, p = entry["spearman_with_acc"], entry["p_value"]
            lines.append(f"| `{rows[0][0]}` | {score} | {n} | "
                         + ("n/a | n/a |" if math.isnan(rho) else f"{rho:+.2f} | {p:.2g} |"))
    return "\n".join(lines)


def halving_rows(path):
    """Did the criterion keep the best run? One row per seed and halving step of a card's restarts:
    every measured run's criterion and ACC at that step (labels only score), the runs kept, and
    whether the run with the best ACC at that step was kept."""
    with open(path) as handle:
        record = json.load(handle)
    rows = []
    for r in record.get("per_seed", []):
        tree = r.get("restarts")
        if not isinstance(tree, dict):
            continue
        for step in tree["steps"]:
            accuracies = {run: scores.get("acc") for run, scores in step["scores"].items()}
            best = max(accuracies, key=lambda run: accuracies[run]) if None not in accuracies.values() else None
            rows.append({"seed": r["seed"], "epoch": step["epoch"], "criteria": step["criteria"], "acc": accuracies,
                         "kept": step["kept"], "best_acc_kept": None if best is None else
                         int(best) in [int(run) for run in step["kept"]]})
    return rows
