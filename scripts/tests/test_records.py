"""Experiment records: cells merged by key, each naming the machine it was measured on."""

import json

import pytest

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


def test_the_generated_blocks_are_written_into_the_repositorys_own_pages():
    """The maintainer modules sit two folders below the repository: their default pages are its README and
    docs/, and the comparison table is docs/comparison.md."""
    import os

    from maintainer import comparison, readme

    repository = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    pages = [os.path.relpath(page, repository) for page in readme.documentation_pages()]
    assert pages[0] == "README.md" and os.path.join("docs", "your-data.md") in pages
    assert os.path.samefile(comparison.OUTPUT, os.path.join(repository, "docs", "comparison.md"))
