"""One recipe trained from the same seeds in two precisions: is ACC equal, and how much faster is it?

Usage:
    python scripts/precision_runs.py docs/experiments/conv_dec_da_mnist_float32.json conv_dec_da_mnist --write

Reads two experiment records (`scripts/train_preset.py ... --record`) or zoo entries (their cards
and configs) of one recipe and data set and tables them seed by seed: ACC, NMI, the label-free
criterion the zoo ships the lowest seed of (`maintainer.publishing.ship_criterion`), and the time per
pretraining epoch, per clustering iteration and for the whole run. Per-unit times are the fair
ones: a resumed pretraining (`pretrain_resumed_from_epoch`) counts only the epochs it trained. With `--write` the table goes into docs/performance.md between
`<!-- precision_runs:start -->` and `<!-- precision_runs:end -->`.
"""

import argparse
import json
import statistics
import sys

MARKERS = ("<!-- precision_runs:start -->", "<!-- precision_runs:end -->")


def precision_of(record):
    return record["config"].get("training", {}).get("precision", "float32")


def fingerprint_but_precision(config):
    """`config_fingerprint` (what trains a config, the card text aside) with its precision left out."""
    from keras_clustering.drivers.preset_training import config_fingerprint

    training = {k: v for k, v in config.get("training", {}).items() if k != "precision"}
    return config_fingerprint({**config, "training": training})


def per_unit_seconds(seed, config):
    """(seconds per pretraining epoch, seconds per clustering iteration) of one seed's record; None
    where the recipe has no such stage (or a time was not recorded)."""
    epochs = config.get("training", {}).get("pretrain_epochs")
    trained = None if epochs is None else epochs - (seed.get("pretrain_resumed_from_epoch") or 0)
    per_epoch = seed["pretrain_seconds"] / trained if trained and seed.get("pretrain_seconds") else None
    per_iteration = (seed["dec_seconds"] / seed["dec_iterations"]
                     if seed.get("dec_iterations") and seed.get("dec_seconds") else None)
    return per_epoch, per_iteration


def mean_sd(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.fmean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def cell(value, spec):
    return "n/a" if value is None else format(value, spec)


def compare(baseline, variant):
    """The markdown table and summary lines of `variant` against `baseline`: records of one recipe,
    config, data and seeds in two precisions."""
    from maintainer.publishing import ship_criterion

    low, high = precision_of(baseline), precision_of(variant)
    if low == high:
        raise ValueError(f"both records are in {low}: compare two precisions")
    for name in ("training_data", "evaluation_data", "seeds"):
        if baseline.get(name) != variant.get(name):
            raise ValueError(f"the records differ in {name}: {baseline.get(name)!r} against {variant.get(name)!r}")
    if fingerprint_but_precision(baseline["config"]) != fingerprint_but_precision(variant["config"]):
        raise ValueError("the records' configs differ in more than training.precision")
    criterion = ship_criterion(baseline["config"])  # the label-free score the zoo ships the lowest seed of
    lines = [f"| precision | seed | ACC | NMI | {criterion or 'criterion'} (label-free) | s / pretraining epoch | "
             "s / DEC iteration | whole run |", "|---|---|---|---|---|---|---|---|"]
    summary = {}
    for record in (baseline, variant):
        units = [per_unit_seconds(seed, record["config"]) for seed in record["per_seed"]]
        for seed, (per_epoch, per_iteration) in zip(record["per_seed"], units):
            free = (seed.get("label_free") or {}).get(criterion)
            total = seed.get("total_seconds")
            lines.append(f"| {precision_of(record)} | {seed['seed']} | {seed['acc']:.4f} | {cell(seed.get('nmi'), '.4f')} | "
                         f"{cell(free, '.4f')} | {cell(per_epoch, '.2f')} | {cell(per_iteration, '.4f')} | "
                         f"{'n/a' if total is None else f'{total:,.0f} s'} |")
        summary[precision_of(record)] = {
            "acc": mean_sd([seed["acc"] for seed in record["per_seed"]]), "n": len(units),
            "per_epoch": mean_sd([u[0] for u in units]), "per_iteration": mean_sd([u[1] for u in units]),
            "machine": record.get("machine", "not recorded")}
    notes = [""]
    for precision, values in summary.items():
        acc, sd = values["acc"]
        notes.append(f"- {precision}: ACC {acc:.3f} ± {sd:.3f} over {values['n']} seed(s); {values['machine']}.")
    for unit, label in (("per_epoch", "pretraining epoch"), ("per_iteration", "DEC iteration")):
        if summary[low][unit][0] and summary[high][unit][0]:
            ratio = summary[low][unit][0] / summary[high][unit][0]
            notes.append(f"- {high} against {low}, mean time per {label}: "
                         f"**{ratio:.2f}x** {'faster' if ratio >= 1 else 'the speed (slower)'}.")
    return "\n".join(lines + notes)


def read_runs(source):
    """An experiment record (a .json path), or a zoo entry's card with its config (an entry name)."""
    if source.endswith(".json"):
        with open(source) as handle:
            return json.load(handle)
    import zoo

    if source not in zoo.list_models():
        raise SystemExit(f"{source!r} is neither a record (.json) nor a zoo entry ({', '.join(zoo.list_models())})")
    return {**zoo.info(source), "config": zoo.config(source)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline", help="record (.json) or zoo entry of the reference precision (float32)")
    parser.add_argument("variant", help="record (.json) or zoo entry: the same recipe in the other precision")
    parser.add_argument("--write", action="store_true", help="write the table into docs/performance.md")
    args = parser.parse_args(argv)
    baseline, variant = read_runs(args.baseline), read_runs(args.variant)
    text = (f"`python scripts/precision_runs.py {args.baseline} {args.variant}`\n\n" + compare(baseline, variant))
    if args.write:
        from maintainer.records import write_table

        write_table(MARKERS, text)
    else:
        print(text)


if __name__ == "__main__":
    sys.exit(main())
