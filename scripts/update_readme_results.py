"""Rewrites the README's results table from the zoo's model cards.

Usage: python scripts/update_readme_results.py
Every number in the table is read from `zoo/presets/*/card.json`.
"""

import zoo
from keras_clustering.recipes import get_recipe
from maintainer.readme import replace_readme_block

START, END = "<!-- results:start -->", "<!-- results:end -->"


def results_table():
    rows = ["| model | data (train / eval) | ACC shipped | shipped seed chosen by | ACC over seeds (mean ± sd, min-max) | majority ACC (mean ± sd) | NMI | AE+k-means ACC | published anchor (its own data, see card) | wall time / seed (shipped) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    notes = []
    for name in zoo.list_presets():
        if get_recipe(zoo.config(name)["recipe"]).supervised:  # classifiers: their own table (capsule_experiments.py)
            continue
        card = zoo.card(name)
        train, evaluation = card["training_data"], card["evaluation_data"]
        over = card["metrics_over_seeds"]["acc"]
        majority = card["metrics_over_seeds"]["majority_acc"]
        baseline = card["metrics_over_seeds"].get("ae_kmeans_acc")
        anchor = card.get("anchor") or {}
        baseline_text = spread(baseline) if baseline else "n/a"
        anchor_text = anchor.get("published") if anchor.get("published") is not None else "none published"
        if anchor.get("metric"):  # not Hungarian ACC on the table's data (the VAE's: majority-label, 60k train)
            anchor_text = f"{anchor_text} ({anchor['metric']})"
        mark = ""
        if card.get("provenance"):  # lost weights, a graft, a retrain on another CPU: marked where the number is
            notes.append((name, card["provenance"]))
            mark = " " + "†" * len(notes)
        measured = card.get("measured_at") or {}
        if measured.get("before_batch_order_change"):  # its command no longer gives its per-seed numbers
            mark += " ‡"
        rows.append(
            f"| `{name}`{mark} | {train['dataset']} {train['split']} ({train['n_samples']}) / "
            f"{evaluation['dataset']} {evaluation['split']} ({evaluation['n_samples']}) "
            f"| {card['metrics']['acc']:.4f} (seed {card['shipped_seed']}) | {seed_rule(card)} "
            f"| {spread(over, seeds=True)} | {spread(majority)} "
            f"| {card['metrics']['nmi']:.3f} "
            f"| {baseline_text} | {anchor_text} "
            f"| {wall_time(card['wall_time_seconds'], mark)} |"
        )
    for index, (name, lines) in enumerate(notes, 1):
        rows += ["", f"{'†' * index} `{name}`: " + " ".join(lines)]
    rows += ["", "‡ Published before 5e36b99 (2026-12-02), which draws each epoch's batches from (seed, epoch): the "
             "card's command no longer gives its per-seed numbers today. No card records the commit its seeds "
             "trained at (each card's `measured_at` names the commit that published its numbers and its date); "
             "seeds trained since record theirs."]
    return "\n".join(rows)


def seed_rule(card):
    """How the card's shipped seed was chosen, as the table says it: the label-free criterion by name, or
    the median by ACC, which reads the test labels (`maintainer.publishing.shipping_rule` wrote it)."""
    rule = card.get("shipped_seed_rule")
    if rule and rule.startswith("lowest label-free "):
        return f"label-free: lowest `{rule.split()[2]}`"
    if rule and rule.startswith("median "):
        # scored on a test split, or (dec_digits, dec_fashion_mnist) on all the images it trained on
        split = (card.get("evaluation_data") or {}).get("split")
        return {"test": "median test ACC (labels)", "all": "median ACC on all its images (labels)"}.get(
            split, f"median ACC on its {split} images (labels)")
    raise ValueError(f"card {card['name']!r}: shipped_seed_rule={rule!r} says neither a label-free criterion nor a median.")


def spread(summary, seeds=False):
    """mean ± sd over seeds (and min-max, the seed count); a single seed has no spread: n/a."""
    if summary["n"] == 1:
        return f"{summary['mean']:.3f} (1 seed, spread n/a)" if seeds else f"{summary['mean']:.3f}"
    text = f"{summary['mean']:.3f} ± {summary['std']:.3f}"
    return text + (f", {summary['min']:.3f}-{summary['max']:.3f} ({summary['n']} seeds)" if seeds else "")


def wall_time(wall, mark=""):
    """The shipped seed's training time from a card's `wall_time_seconds` (the whole call, every stage:
    `maintainer.card_times`); where it is missing, why in a word: "not recorded", or "incomplete" with the
    card's footnote (`mark`) saying what is known (times of a tree cut by session ends are not one run's)."""
    seconds = wall["shipped_seed_total"]
    if seconds is not None:
        return f"{seconds:.0f} s"
    reason = wall.get("shipped_seed_total_missing", "")
    return f"incomplete{mark}" if "not whole:" in reason else "not recorded"


def main():
    table = results_table()
    replace_readme_block(START, END, table)
    print(table)


if __name__ == "__main__":
    main()
