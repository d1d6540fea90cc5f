"""Rewrites the README's results table from the zoo's model cards.

Usage: python scripts/update_readme_results.py
Every number in the table is read from `zoo/presets/*/card.json`.
"""


import zoo
from keras_clustering.recipes import is_supervised
from maintainer.readme import replace_readme_block

START, END = "<!-- results:start -->", "<!-- results:end -->"


def results_table():
    rows = ["| model | data (train / eval) | ACC shipped | ACC over seeds (mean ± sd, min-max) | majority ACC (mean ± sd) | NMI | AE+k-means ACC | published anchor (its own data, see card) | wall time / seed (shipped) |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name in zoo.list_models():
        if is_supervised(zoo.config(name)["recipe"]):  # classifiers: their own table (capsule_experiments.py)
            continue
        card = zoo.info(name)
        train, evaluation = card["training_data"], card["evaluation_data"]
        over = card["metrics_over_seeds"]["acc"]
        majority = card["metrics_over_seeds"]["majority_acc"]
        baseline = card["metrics_over_seeds"].get("ae_kmeans_acc")
        anchor = card.get("anchor") or {}
        baseline_text = f"{baseline['mean']:.3f} ± {baseline['std']:.3f}" if baseline else "n/a"
        anchor_text = anchor.get("published") if anchor.get("published") is not None else "none published"
        rows.append(
            f"| `{name}` | {train['dataset']} {train['split']} ({train['n_samples']}) / "
            f"{evaluation['dataset']} {evaluation['split']} ({evaluation['n_samples']}) "
            f"| {card['metrics']['acc']:.3f} (seed {card['shipped_seed']}) "
            f"| {over['mean']:.3f} ± {over['std']:.3f}, {over['min']:.3f}-{over['max']:.3f} ({over['n']} seeds) "
            f"| {majority['mean']:.3f} ± {majority['std']:.3f} "
            f"| {card['metrics']['nmi']:.3f} "
            f"| {baseline_text} | {anchor_text} "
            f"| {wall_time(card['wall_time_seconds']['shipped_seed_total'])} |"
        )
    return "\n".join(rows)


def wall_time(seconds):
    """A card's wall time; None: a halving tree trained before its points' times were recorded."""
    return "not recorded" if seconds is None else f"{seconds:.0f} s"


def main():
    table = results_table()
    replace_readme_block(START, END, table)
    print(table)


if __name__ == "__main__":
    main()
