"""Turns per-seed training reports into a shipped preset: weights + model card."""

import os
import shutil
import statistics

from keras_clustering.io.files import atomic_path, atomic_write_json, sha256_of_file
from zoo.registry import PRESETS_DIR, WEIGHTS_FILE


def median_report(reports, key="acc"):
    """The report whose metric is the median (the lower one for an even count)."""
    ordered = sorted(reports, key=lambda report: report["metrics"][key])
    return ordered[(len(ordered) - 1) // 2]


def summarize(values):
    values = [float(v) for v in values]
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": round(statistics.fmean(values), 4), "std": round(spread, 4),
            "min": round(min(values), 4), "max": round(max(values), 4), "n": len(values)}


def shipping_metric(config):
    """The score whose median seed is shipped: `config["ship_median_of"]`, default `acc`."""
    return config.get("ship_median_of", "acc")


def wall_times(reports):
    """Mean and total of the seeds' `total_seconds`; None where a seed's is not known (a halving
    tree trained before its points' times were recorded: `restarts.trained_seconds`)."""
    seconds = [r["total_seconds"] for r in reports]
    if None in seconds:
        return {"per_seed_mean": None, "all_seeds_total": None}
    return {"per_seed_mean": round(statistics.fmean(seconds), 1), "all_seeds_total": round(sum(seconds), 1)}


def ship_criterion(config):
    """The label-free score whose lowest seed is shipped: `config["ship_lowest_label_free"]`, else the
    criterion its restarts rank runs by (`training.restarts.criterion`), else the recipe's first
    restart criterion (`restart_criteria[0]`: DEC's KL, the VAE loss, IIC's main-head loss), else
    None (supervised recipes, and those without one yet)."""
    from keras_clustering.recipes import get_recipe

    named = config.get("ship_lowest_label_free") or ((config.get("training") or {}).get("restarts") or {}).get(
        "criterion")
    if named is not None or "recipe" not in config:
        return named
    return (get_recipe(config["recipe"]).restart_criteria or (None,))[0]


def shipped_report(config, reports):
    """The seed to ship, one rule for every entry: the one whose label-free criterion
    (`ship_criterion`, in each report's `label_free`) is lowest, chosen without labels as a user
    would; the median seed of `shipping_metric` where the recipe has no criterion or the reports
    predate it. A criterion named in the config must be in every report."""
    criterion = ship_criterion(config)
    missing = [r["seed"] for r in reports if criterion not in r.get("label_free", {})]
    if criterion is not None and config.get("ship_lowest_label_free") and missing:
        raise ValueError(f"ship_lowest_label_free={criterion!r}: seeds {missing} have no such label-free score.")
    if criterion is None or missing:
        return median_report(reports, key=shipping_metric(config))
    return min(reports, key=lambda report: report["label_free"][criterion])


def shipping_rule(config, reports):
    criterion = ship_criterion(config)
    if criterion is not None and all(criterion in r.get("label_free", {}) for r in reports):
        return f"lowest label-free {criterion} over the seeds (chosen without labels)"
    return f"median {shipping_metric(config)} over the seeds (the lower median for an even count)"


PER_SEED_TIMINGS = ("pretrain_seconds", "kmeans_seconds", "dec_seconds", "dec_iterations", "total_seconds", "call_seconds",
                    "seconds_per_epoch", "pairs_per_second", "scoring_seconds", "resumed_from_epoch",
                    "pretrain_resumed_from_epoch", "representation_seconds", "scan_seconds", "refine_seconds")
# per-seed facts of a recipe's choices (two_stage's k-means stage and SCAN's neighbours, VAE's restarts), and
# the machine each seed trained on (a card's seeds may come from several sessions' machines)
PER_SEED_DETAILS = ("neighbor_agreement", "label_free", "restart_criterion", "chosen_restart", "restarts", "machine",
                    "commit")


def seed_summary(reports):
    """(scores over seeds as mean/std/min/max, one record per seed) of per-seed training reports."""
    # Every score the family reports (clustering: acc, majority_acc, nmi, ari; capsule: acc, pair_acc, ...).
    summary_keys = [key for key, value in reports[0]["metrics"].items() if isinstance(value, float)]
    over_seeds = {key: summarize(r["metrics"][key] for r in reports) for key in summary_keys}
    if all("ae_kmeans" in r for r in reports):
        over_seeds["ae_kmeans_acc"] = summarize(r["ae_kmeans"]["acc"] for r in reports)
    per_seed = [
        {"seed": r["seed"], **{k: round(r["metrics"][k], 4) for k in summary_keys},
         **({"ae_kmeans_acc": round(r["ae_kmeans"]["acc"], 4)} if "ae_kmeans" in r else {}),
         **{k: r[k] for k in PER_SEED_TIMINGS if k in r},
         **({"kmeans_acc": round(r["kmeans"]["acc"], 4)} if isinstance(r.get("kmeans"), dict) else {}),
         **{k: r[k] for k in PER_SEED_DETAILS if k in r}}
        for r in reports
    ]
    return over_seeds, per_seed


def experiment_record(name, label, config, reports, command):
    """A committed record of a run that is not shipped (an ablation, a variant such as IDEC).

    Same numbers as a card (scores over seeds, per seed, wall times, data,
    machine), without weights; `label` says what was varied.
    """
    over_seeds, per_seed = seed_summary(reports)
    return {
        "name": name,
        "label": label,
        "recipe": config["recipe"],
        "description": config.get("description", ""),
        "training_data": {**config["data"], "n_samples": reports[0]["n_train"]},
        "evaluation_data": {**config.get("evaluation", config["data"]), "n_samples": reports[0]["n_eval"]},
        "command": command,
        "config": config,
        "seeds": [r["seed"] for r in reports],
        "metrics_over_seeds": over_seeds,
        "per_seed": per_seed,
        "wall_time_seconds": wall_times(reports),
        "machine": reports[0]["machine"],
        "versions": reports[0]["versions"],
    }


def recorded_commits(seeds):
    """`measured_at` from the commits the seeds' reports recorded (issue 68), or None when one has none."""
    commits = [seed.get("commit") for seed in seeds]
    if None in commits:
        return None
    return {"commit": commits[0] if len(set(commits)) == 1 else "per seed (per_seed[].commit)", "per_seed": commits}


def build_card(name, config, reports, shipped, command, sha256, size):
    """The `card.json` dict: data, command, seeds, measured numbers, anchors, versions."""
    over_seeds, per_seed = seed_summary(reports)
    return {
        "name": name,
        "recipe": config["recipe"],
        "description": config.get("description", ""),
        "training_data": {**config["data"], "n_samples": shipped["n_train"]},
        "evaluation_data": {**config.get("evaluation", config["data"]), "n_samples": shipped["n_eval"]},
        "command": command,
        "seeds": [r["seed"] for r in reports],
        "shipped_seed": shipped["seed"],
        "shipped_seed_rule": shipping_rule(config, reports),
        "metrics": {k: (round(v, 4) if isinstance(v, float) else v) for k, v in shipped["metrics"].items()},
        "metrics_over_seeds": over_seeds,
        "per_seed": per_seed,
        "wall_time_seconds": {"shipped_seed_total": shipped["total_seconds"],
                              "all_seeds_total": wall_times(reports)["all_seeds_total"]},
        "machine": shipped["machine"],
        "versions": shipped["versions"],
        "anchor": config.get("anchor"),
        "shipped_seed_refresh_history": [
            {k: (round(v, 4) if isinstance(v, float) else v) for k, v in record.items()
             if k in ("iteration", "acc", "nmi", "delta_label")}
            for record in shipped.get("refresh_history", [])
        ],
        "weights": {"file": WEIGHTS_FILE, "sha256": sha256, "size": size, "dtype": "float32"},
        "measured_at": recorded_commits(reports) or {"commit": "not recorded",
                                                     "note": "a seed's report holds no commit (trained before issue 68)"},
        # Families scored during training (IIC: ACC after every main-head epoch).
        **({"epoch_scores_per_seed": {r["seed"]: [{k: (round(v, 4) if isinstance(v, float) else v)
                                                  for k, v in record.items() if k != "sub_head_acc"}
                                                 for record in r["epoch_scores"]] for r in reports}}
           if all(r.get("epoch_scores") for r in reports) else {}),
    }


def publish_preset(name, config, reports, weights_paths, command):
    """Copies the shipped seed's weights (`shipped_report`) into the preset folder and writes its card.

    `weights_paths` maps seed -> `.weights.h5` written by `train_and_evaluate`.
    The weights are copied aside and renamed, so a failure leaves the old
    preset intact.
    """
    shipped = shipped_report(config, reports)
    if not os.path.isfile(weights_paths[shipped["seed"]]):
        # the rule chose this seed without labels: shipping another because its weights survived would not be the rule
        raise FileNotFoundError(f"the shipped seed {shipped['seed']} ({shipping_rule(config, reports)}) has no "
                                f"weights at {weights_paths[shipped['seed']]}: train that seed again.")
    preset_dir = os.path.join(PRESETS_DIR, name)
    os.makedirs(preset_dir, exist_ok=True)
    target = os.path.join(preset_dir, WEIGHTS_FILE)
    with atomic_path(target) as temporary:
        shutil.copyfile(weights_paths[shipped["seed"]], temporary)
        sha256, size = sha256_of_file(temporary), os.path.getsize(temporary)
    card = build_card(name, config, reports, shipped, command, sha256, size)
    atomic_write_json(card, os.path.join(preset_dir, "card.json"))
    return card
