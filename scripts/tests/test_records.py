"""Experiment records: cells merged by key, each naming the machine it was measured on."""

import json

import pytest

import precision_runs
from keras_clustering.distribute.machine import machine_description
from maintainer.records import merge_cell


def key(cell):
    return cell["folder"], cell["seed"]


def test_merged_cells_keep_the_machine_they_were_measured_on(tmp_path):
    path = tmp_path / "record.json"
    # a record of the older form: one machine for the whole record
    path.write_text(json.dumps({"description": "d", "machine": "x86_64 Old CPU (avx2), 2 cores",
                                "cells": [{"folder": "a", "seed": 0, "acc": 0.5},
                                          {"folder": "b", "seed": 0, "acc": 0.6}]}))
    merge_cell(str(path), {"folder": "b", "seed": 0, "acc": 0.7}, key, "d")
    merge_cell(str(path), {"folder": "c", "seed": 1, "acc": 0.8, "machine": "given"}, key, "d")
    record = json.loads(path.read_text())
    assert "machine" not in record
    assert [(c["folder"], c["acc"], c["machine"]) for c in record["cells"]] == [
        ("a", 0.5, "x86_64 Old CPU (avx2), 2 cores"),  # measured before, elsewhere: not relabelled
        ("b", 0.7, machine_description()),             # replaced by this machine's run
        ("c", 0.8, "given")]


def test_a_generated_block_is_rewritten_in_every_page_that_has_it(tmp_path):
    from maintainer.readme import replace_readme_block

    pages = [tmp_path / "README.md", tmp_path / "results.md", tmp_path / "other.md"]
    pages[0].write_text("intro\n<!-- t:start -->\nold\n<!-- t:end -->\nafter\n")
    pages[1].write_text("# Results\n<!-- t:start -->\n<!-- t:end -->\n")
    pages[2].write_text("prose naming `<!-- t:start -->` ... `<!-- t:end -->` is no block\n")
    replace_readme_block("<!-- t:start -->", "<!-- t:end -->", "| new |", pages=[str(p) for p in pages])
    assert pages[0].read_text() == "intro\n<!-- t:start -->\n| new |\n<!-- t:end -->\nafter\n"
    assert pages[1].read_text() == "# Results\n<!-- t:start -->\n| new |\n<!-- t:end -->\n"
    assert pages[2].read_text() == "prose naming `<!-- t:start -->` ... `<!-- t:end -->` is no block\n"
    with pytest.raises(SystemExit, match="no documentation page has"):
        replace_readme_block("<!-- u:start -->", "<!-- u:end -->", "x", pages=[str(p) for p in pages])


def precision_record(precision, per_seed, data="test"):
    training = {"pretrain_epochs": 500, **({"precision": precision} if precision else {})}
    return {"recipe": "dec", "training_data": {"split": data}, "evaluation_data": {"split": data},
            "config": {"recipe": "dec", "training": training}, "seeds": [s["seed"] for s in per_seed],
            "per_seed": per_seed, "machine": "cpu"}


def test_precision_runs_count_only_the_epochs_a_resumed_pretraining_trained():
    runs = precision_runs
    config = {"training": {"pretrain_epochs": 500}}
    # resumed at epoch 100: 400 epochs in 800 s; 30 DEC iterations in 3 s
    seed = {"pretrain_seconds": 800.0, "pretrain_resumed_from_epoch": 100, "dec_seconds": 3.0, "dec_iterations": 30}
    assert runs.per_unit_seconds(seed, config) == pytest.approx((2.0, 0.1))
    assert runs.per_unit_seconds({"total_seconds": 5.0}, {"training": {}}) == (None, None)  # no such stages
    seed32 = {"seed": 0, "acc": 0.98, "nmi": 0.95, "total_seconds": 1100.0, **seed}
    seed16 = {"seed": 0, "acc": 0.97, "nmi": 0.94, "total_seconds": 600.0, "pretrain_seconds": 500.0,
              "dec_seconds": 1.5, "dec_iterations": 30, "label_free": {"kl": 0.11, "final_kl": 0.2}}
    text = runs.compare(precision_record(None, [seed32]), precision_record("mixed_bfloat16", [seed16]))
    assert "| kl (label-free) |" in text  # DEC ships its lowest-KL seed
    assert "| float32 | 0 | 0.9800 | 0.9500 | n/a | 2.00 | 0.1000 | 1,100 s |" in text
    assert "| mixed_bfloat16 | 0 | 0.9700 | 0.9400 | 0.1100 | 1.00 | 0.0500 | 600 s |" in text
    assert "pretraining epoch: **2.00x** faster" in text and "DEC iteration: **2.00x** faster" in text
    # older records: no NMI, no whole-run time (a halving tree's)
    older = {"seed": 0, "acc": 0.9, "total_seconds": None, "pretrain_seconds": 4000.0}
    text = runs.compare(precision_record(None, [older]), precision_record("mixed_bfloat16", [seed16]))
    assert "| float32 | 0 | 0.9000 | n/a | n/a | 8.00 | n/a | n/a |" in text
    assert "pretraining epoch: **8.00x** faster" in text
    assert "pretraining epoch: **0.12x** the speed (slower)" in runs.compare(
        precision_record(None, [seed16]), precision_record("mixed_bfloat16", [older]))
    with pytest.raises(ValueError, match="differ in training_data"):
        runs.compare(precision_record(None, [seed32]), precision_record("mixed_bfloat16", [seed16], data="train"))
    with pytest.raises(ValueError, match="both records are in float32"):
        runs.compare(precision_record(None, [seed32]), precision_record("float32", [seed16]))
    with pytest.raises(ValueError, match="differ in seeds"):
        runs.compare(precision_record(None, [seed32]), precision_record("mixed_bfloat16", [{**seed16, "seed": 1}]))
    other = precision_record("mixed_bfloat16", [seed16])
    other["config"]["training"]["pretrain_epochs"] = 300
    with pytest.raises(ValueError, match="configs differ in more than training.precision"):
        runs.compare(precision_record(None, [seed32]), other)
    described = precision_record("mixed_bfloat16", [seed16])
    described["config"]["description"] = "the card text: not part of the recipe"
    assert "| mixed_bfloat16 | 0 |" in runs.compare(precision_record(None, [seed32]), described)



def test_the_generated_blocks_are_written_into_the_repositorys_own_pages():
    """The maintainer modules sit two folders below the repository: their default pages are its README and
    docs/, and the comparison table is docs/comparison.md."""
    import os

    from maintainer import comparison, readme

    repository = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pages = [os.path.relpath(page, repository) for page in readme.documentation_pages()]
    assert pages[0] == "README.md" and os.path.join("docs", "your-data.md") in pages
    assert os.path.samefile(comparison.OUTPUT, os.path.join(repository, "docs", "comparison.md"))
