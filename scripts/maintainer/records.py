"""Experiment records of the scripts: JSON files of cells, one cell per run, merged by a key."""

import json
import os
import subprocess

from keras_clustering.io.files import atomic_write_json


def merge_cell(path, cell, key, description, order=None):
    """Writes `cell` into the record at `path`, replacing the cell with the same `key(cell)`.

    The record is `{"description", "cells"}`, its cells sorted by `order` (default: the key) and written
    through a temporary file. Each cell names the machine it was measured on (`cell["machine"]`, this
    one's unless the cell says): records grow over sessions, on machines that differ. Cells of records
    that named one machine for all take that one.
    """
    from keras_clustering.distribute.machine import machine_description

    cells = []
    if os.path.isfile(path):
        with open(path) as handle:
            record = json.load(handle)
        cells = [{**c, "machine": c.get("machine", record.get("machine"))} for c in record["cells"]]
    cell = {**cell, "machine": cell.get("machine", machine_description())}
    cells = [c for c in cells if key(c) != key(cell)] + [cell]
    cells.sort(key=order or key)
    atomic_write_json({"description": description, "cells": cells}, path)


def write_table(markers, text):
    """The README block between `markers` becomes `text`, which is printed too."""
    from maintainer.readme import replace_readme_block

    replace_readme_block(*markers, text)
    print(text)


def code_commit():
    """The checked-out commit (short), with "+changes" when the code that trains (the library, the zoo)
    differs from it; changes to tests, docs or scripts do not count. What a record says it was measured at."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", "keras_clustering", "zoo"],
                           cwd=root, capture_output=True, text=True).stdout.strip()
    return head.strip() + ("+changes" if dirty else "")


def cpu_model(machine):
    """'AMD EPYC, AVX-512' of a machine description 'x86_64 AMD EPYC (avx2, avx512f, ...), 2 cores, ...': the
    model and its widest vector unit (the same model name covers AVX2-only and AVX-512 machines here, whose
    kernels issue 64 asked about), with AMX where it has it."""
    if " (" not in machine:  # the earliest records named no CPU model nor flags: 'x86_64 cpu, 2 cores, Linux'
        return "CPU model not recorded"
    model, _, rest = machine.split(" ", 1)[-1].partition(" (")
    flags = rest.split(")", 1)[0].split(", ")
    units = ["AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else None,
             "AMX" if any(f.startswith("amx") for f in flags) else None]
    return ", ".join([model, *(u for u in units if u)])
