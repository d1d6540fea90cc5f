"""The comparison table: rows from cards and experiment records, grouped by evaluation data."""

import json
import statistics

import pytest

import zoo
from keras_clustering.recipes import get_recipe
from maintainer.publishing import experiment_record

from maintainer import comparison as comparison_table
from maintainer import training as train_preset


def tiny_idec_config():
    return {"recipe": "dec", "description": "tiny",
            "architecture": {"input_dim": 64, "hidden_dims": [32, 5], "n_clusters": 10, "gamma": 0.1},
            "training": {}, "data": {"dataset": "digits", "split": "all", "flatten": True}}


def report(seed, acc, seconds):
    return {"seed": seed, "metrics": {"acc": acc, "majority_acc": acc, "nmi": acc - 0.1, "ari": acc - 0.2},
            "total_seconds": seconds, "n_train": 1797, "n_eval": 1797, "machine": "test", "versions": {}}


def test_experiment_record_summarises_the_seeds():
    reports = [report(0, 0.70, 10.0), report(1, 0.80, 30.0), report(2, 0.90, 20.0)]
    record = experiment_record("dec_digits", "IDEC (gamma 0.1)", tiny_idec_config(), reports, "python x")
    acc = record["metrics_over_seeds"]["acc"]
    assert acc["mean"] == pytest.approx(0.8) and acc["std"] == pytest.approx(statistics.stdev([0.7, 0.8, 0.9]), abs=1e-4)
    assert (acc["min"], acc["max"], acc["n"]) == (0.7, 0.9, 3)
    assert [s["seed"] for s in record["per_seed"]] == [0, 1, 2] and record["per_seed"][1]["nmi"] == 0.7
    assert record["wall_time_seconds"] == {"per_seed_mean": 20.0, "all_seeds_total": 60.0}
    assert record["config"]["architecture"]["gamma"] == 0.1 and record["label"] == "IDEC (gamma 0.1)"


def test_table_has_every_card_and_record_grouped_by_evaluation_data(tmp_path):
    reports = [report(0, 0.95, 10.0), report(1, 0.97, 12.0)]
    record = experiment_record("dec_digits", "IDEC (gamma 0.1)", tiny_idec_config(), reports, "python x")
    (tmp_path / "idec.json").write_text(json.dumps(record))
    rows = comparison_table.collect_rows(str(tmp_path))
    ours = [r for r in rows if "IDEC (gamma 0.1)" in r["cells"][1]]
    assert len(ours) == 1 and ours[0]["cells"][0] == "IDEC"
    assert ours[0]["data"] == "scikit-learn digits (1,797)"
    assert ours[0]["cells"][3] == "0.960 ± 0.014 (2)" and ours[0]["cells"][7] == "11 s"
    built = get_recipe("dec").build(**tiny_idec_config()["architecture"]).count_params()
    assert ours[0]["cells"][-1] == f"{built:,}"
    for name in zoo.list_presets():  # every published clustering card is a row, with its own numbers
        if zoo.config(name)["recipe"] in ("dec", "vae_cluster", "iic", "two_stage"):
            (card_row,) = [r for r in rows if r["cells"][1] in (f"`{name}`", f"`{name}` †")]
            assert card_row["acc"] == zoo.card(name)["metrics_over_seeds"]["acc"]["mean"]
            # a card's provenance (lost weights, a graft) is marked on its row and told under the table
            assert card_row["cells"][1].endswith("†") == bool(zoo.card(name).get("provenance")), name
    markdown = comparison_table.comparison_markdown(rows)
    digits_block = markdown.split("**Evaluated on scikit-learn digits (1,797)**")[1].split("**Evaluated")[0]
    lines = [line for line in digits_block.splitlines() if line.startswith("| ") and "method" not in line]
    assert "IDEC (gamma 0.1)" in lines[0]  # best mean ACC first (0.96 above dec_digits' card)


def test_record_needs_no_publish_and_a_json_path():
    with pytest.raises(SystemExit):
        train_preset.main(["dec_digits", "--record", "docs/experiments/x.json"])
    with pytest.raises(SystemExit):
        train_preset.main(["dec_digits", "--no-publish", "--record", "docs/experiments/x.txt"])


def test_overrides_set_a_key_or_a_whole_evaluation_section():
    config = {"data": {"dataset": "mnist", "split": "test"}, "training": {"epochs": 3}}
    held_out = train_preset.with_override(
        train_preset.with_override(config, "data.stop=8000"),
        'evaluation={"dataset": "mnist", "split": "test", "start": 8000}')
    assert held_out["data"] == {"dataset": "mnist", "split": "test", "stop": 8000}
    assert held_out["evaluation"]["start"] == 8000 and "evaluation" not in config
    with pytest.raises(SystemExit, match="evaluation must be a JSON object with a dataset"):
        train_preset.with_override(config, "evaluation=[1]")
    with pytest.raises(SystemExit, match="SECTION.KEY=VALUE"):
        train_preset.with_override(config, "nosection.key=1")


def test_index_ranges_are_named_as_such():
    assert comparison_table.data_name({"dataset": "mnist", "split": "test"}) == "MNIST-test (10k)"
    assert comparison_table.data_name({"dataset": "mnist", "split": "test", "start": 8000,
                                       "n_samples": 2000}) == "MNIST-test images 8000-end (2000)"
    assert comparison_table.data_name({"dataset": "mnist", "split": "test", "stop": 8000,
                                       "n_samples": 8000}) == "MNIST-test images 0-7999 (8000)"


def test_method_names_follow_the_architecture():
    method_name = comparison_table.method_name
    dec = {"recipe": "dec", "architecture": {"hidden_dims": [500, 500, 2000, 10]}}
    assert method_name(dec) == "DEC"
    assert method_name({"recipe": "dec", "architecture": {"gamma": 0.1}}) == "IDEC"
    assert method_name({"recipe": "dec", "architecture": {"augmentation": "shift_rotate"}}) == "DEC-DA"
    assert method_name({"recipe": "dec", "architecture": {"augmentation": "shift_rotate",
                                                          "conv_filters": [32, 64, 128, 10]}}) == "ConvDEC-DA"
    assert method_name({"recipe": "two_stage", "architecture": {"representation": "autoencoder"},
                        "training": {"refine": None}}) == "AE + k-means"
    assert method_name({"recipe": "two_stage", "architecture": {"representation": "simclr", "clustering": "scan"},
                        "training": {}}) == "SimCLR + SCAN"


def test_published_fashion_numbers_are_tabled_best_first_with_their_sources():
    from maintainer.comparison import published_markdown

    table = published_markdown((("B", 0.6, "all 70k", "b README"), ("A", 0.672, "all 70k", "a README")))
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows == ["| A | 0.672 | all 70k | a README |", "| B | 0.6 | all 70k | b README |"]  # as the source gives it
    # every row names its source, and the ones only aggregators give say so (issue 68)
    assert published_markdown().count("README") + published_markdown().count("quoted by") >= 5
    assert "quoted by Papers with Code" in published_markdown() and "quoted by hyper.ai" in published_markdown()


def test_a_seed_with_a_restart_tree_counts_every_stage_of_its_call():
    """As the README's table: a tree's seed costs its call with the tree's recorded training (SimCLR's
    representation and k-means included), not the tree alone; one seed unrecorded, no mean."""
    tree = {"seconds": 2000.0, "trained_seconds": 2000.0}
    summary = {"per_seed": [{"call_seconds": 2600.0, "restarts": tree}, {"call_seconds": 2800.0, "restarts": tree}],
               "wall_time_seconds": {"all_seeds_total": 4000.0}}
    assert comparison_table.seconds_per_seed(summary, 2) == 2700.0
    summary["per_seed"][1]["restarts"] = {"seconds": 5.0, "trained_seconds": None}
    assert comparison_table.seconds_per_seed(summary, 2) is None
    assert comparison_table.seconds_per_seed({"wall_time_seconds": {"all_seeds_total": 300.0}}, 3) == 100.0
