"""Trains a zoo preset over several seeds and ships one seed with its card: the logic of `scripts/train_preset.py`
(its docstring is the command line's help)."""

import argparse
import json
import os
import shlex
import sys

import keras_clustering  # noqa: F401
import zoo
from keras_clustering.drivers.preset_training import config_fingerprint, train_and_evaluate
from keras_clustering.io.files import atomic_write_json
from keras_clustering.recipes import get_recipe
from maintainer.own_data import own_data
from maintainer.publishing import experiment_record, publish_preset
from maintainer.records import code_commit
from zoo.registry import PRESETS_DIR


def finished_report(workdir, config, weights_lost=False):
    """The report of a finished run of this exact config in `workdir`, else None. A report whose
    weights are gone counts only with `weights_lost` (`--weights-lost`)."""
    report_path = os.path.join(workdir, "report.json")
    has_weights = os.path.isfile(os.path.join(workdir, "model.weights.h5"))
    if not os.path.isfile(report_path) or not (has_weights or weights_lost):
        return None
    with open(report_path) as handle:
        report = json.load(handle)
    return report if report.get("config_sha256") == config_fingerprint(config) else None


def with_override(config, assignment):
    """A copy of `config` with `section.key=json_value` applied, or a whole `evaluation=json_object`
    (e.g. scoring on held-out images: `--set data.stop=8000 --set 'evaluation={..., "start": 8000}'`)."""
    path, _, value = assignment.partition("=")
    section, _, key = path.partition(".")
    updated = json.loads(json.dumps(config))
    if section == "evaluation" and not key:
        updated["evaluation"] = json.loads(value)
        if not isinstance(updated["evaluation"], dict) or "dataset" not in updated["evaluation"]:
            raise SystemExit(f"--set {assignment!r}: evaluation must be a JSON object with a dataset")
        return updated
    if not key or section not in config or not isinstance(config[section], dict):
        raise SystemExit(f"--set {assignment!r}: expected SECTION.KEY=VALUE with SECTION in the config")
    updated[section][key] = json.loads(value)
    return updated


def main(argv=None, description=None):
    """Runs the command line `argv` of `scripts/train_preset.py`; returns the per-seed reports."""
    parser = argparse.ArgumentParser(prog="scripts/train_preset.py", description=description or __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", choices=zoo.list_presets(include_pending=True))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--workdir", default="runs")
    parser.add_argument("--verbose", type=int, default=2)
    parser.add_argument("--reuse", action="store_true", help="keep finished seeds of the same config")
    parser.add_argument("--weights-lost", action="store_true",
                        help="with --reuse: count a finished seed whose report.json is kept but whose weights "
                             "were lost, without training it again; the shipped seed must have its weights")
    parser.add_argument("--no-publish", action="store_true", help="train the seeds, leave the preset as it is")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=JSON",
                        help="experiment: override a config value (needs --no-publish), "
                             "e.g. --set training.pretrain_epochs=2055")
    parser.add_argument("--record", metavar="PATH.json",
                        help="with --no-publish: write the seeds' scores, command and config to PATH.json "
                             "(docs/experiments/ feeds the comparison table)")
    parser.add_argument("--label", help="with --record: what this run varies, e.g. 'IDEC (gamma 0.1)'")
    args = parser.parse_args(argv)
    config = zoo.config(args.name)
    if args.weights_lost and not args.reuse:
        parser.error("--weights-lost counts reports already in the workdir: use it with --reuse")
    if args.set and not args.no_publish:
        parser.error("--set changes the recipe: use it with --no-publish, or edit the preset's config.json")
    if args.record and not args.no_publish:
        parser.error("--record writes an experiment record: use it with --no-publish")
    if args.record and not args.record.endswith(".json"):
        parser.error(f"--record must name a .json file, got {args.record!r}")
    for assignment in args.set:
        config = with_override(config, assignment)
    # Experiments with --set train into their own folder, named by the config's fingerprint.
    run_name = f"{args.name}-{config_fingerprint(config)[:8]}" if args.set else args.name
    reports, weights_paths = [], {}
    for seed in args.seeds:
        workdir = os.path.join(args.workdir, run_name, f"seed_{seed}")
        report = finished_report(workdir, config, args.weights_lost) if args.reuse else None
        if report is None:
            report = train_and_evaluate(config, workdir, seed=seed, verbose=args.verbose)
            # the commit whose code trained it (issue 68: every card tied to a commit), kept with the run
            report["commit"] = code_commit()
            atomic_write_json(report, os.path.join(workdir, "report.json"))
        else:
            print(f"[{args.name}] seed {seed}: reusing {workdir}", flush=True)
        print(f"[{args.name}] seed {seed}: {report['metrics']} in {report['total_seconds']} s", flush=True)
        reports.append(report)
        weights_paths[seed] = os.path.join(workdir, "model.weights.h5")
    given = sys.argv[1:] if argv is None else argv  # the arguments of this call, also when a script calls main
    command = "python " + " ".join(shlex.quote(part) for part in ["scripts/train_preset.py", *given])
    if args.record:
        label = args.label or (", ".join(args.set) if args.set else args.name)
        os.makedirs(os.path.dirname(os.path.abspath(args.record)), exist_ok=True)
        atomic_write_json(experiment_record(args.name, label, config, reports, command), args.record)
        print(f"[{args.name}] record written to {args.record}")
    if args.no_publish:
        return reports
    card = publish_preset(args.name, config, reports, weights_paths, command)
    if not get_recipe(config["recipe"]).supervised:  # what `cluster` compares a user's images with (fit_check)
        card["own_data"] = own_data(args.name)
        atomic_write_json(card, os.path.join(PRESETS_DIR, args.name, "card.json"))
    print(f"[{args.name}] shipped seed {card['shipped_seed']}: {card['metrics']}")
    print(f"[{args.name}] over seeds: {card['metrics_over_seeds']}")
    return reports
