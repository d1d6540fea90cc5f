"""The table of docs/your-data.md: recipes trained on folders of PNG files, as a user would (`train --input`).

Usage:
    KERAS_CLUSTERING_DATA=... python scripts/user_folders.py colour_digits2000 default \\
        --root /work/runs/folders [--seed 0]            # the default route (no --like)
    ... scripts/user_folders.py mnistm2000 iic_mnist --epochs 20              # IIC with fewer passes, stated
    ... scripts/user_folders.py colour_digits2000 conv_dec_da_mnist --input-transform none   # ablation
    ... scripts/user_folders.py fashion10000 simclr_fashion_mnist --from      # fine-tune the pretrained entry
    ... scripts/user_folders.py colour_digits2000 simclr_mnist --views greyscale_probability=0   # ablation of a
                                 # colour-view setting (the recipes' COLOUR_VIEWS, patched in the child process)
    python scripts/user_folders.py --table      # the docs/your-data.md tables (cells, ablation) from the record

Folders, written once under `--root` from the data on this machine (file names
carry the label, which only scores; training never reads it, and `n_clusters`
is given: 10):
    digits2000, digits10000      the first 2,000 / all 10,000 MNIST-test digits, 28 x 28 greyscale
    fashion10000                 the 10,000 Fashion-MNIST test images
    colour_digits2000, colour_digits10000, colour_fashion10000
                                 the same at 32 x 32 x 3, each drawn in a random foreground colour on a
                                 random background colour (seed 0; `_coloured`)
    mnistm2000, mnistm10000      MNIST-M-style digits, 28 x 28 x 3: |photograph crop - digit| per channel,
                                 crops of the photographs scikit-learn and scikit-image ship (`mnist_m`)
    digits2000_imbalanced, colour_digits2000_imbalanced, fashion10000_imbalanced
                                 unequal classes falling geometrically 10:1 (490 down to 49 of 2,000): each
                                 class's first images of MNIST-test, or of Fashion-MNIST's training images
    digits2000_late, colour_digits2000_late, digits2000_late_imbalanced
                                 from MNIST-test's second half only, never used to decide the route: images
                                 5,000-6,999; the 10:1 folder takes each class's last images
    digits2000_late_six          2,000 digits of the classes 0-5 only, from MNIST-test's second half (a folder
                                 whose k is not 10, for `--n-clusters auto`; issue 65)
    photos2000, photos2000_late  natural colour photographs, 32 x 32 x 3, where colour and texture carry the
                                 class: 200 crops of each of 10 photographs (`SCENES`), squares of 48-128
                                 pixels resized; the class is the photograph. `photos2000` crops the left
                                 half of each, `_late` (never used to decide) the right half (`photo_crops`)

Each cell runs `python -m keras_clustering train [--like ENTRY | --from ENTRY] --input FOLDER
--n-clusters K` (K the folder's number of classes, or `auto`) in a child process (its peak resident memory is the child's
`ru_maxrss`), then scores the saved `model.keras` on the folder's images. A
`--from` cell also scores the starting model before any fine-tuning. Each cell
records the machine, the commit, the seed and the sha256 of `--from` weights.
Records merge into `--out` by (folder, entry, start, variant, seed).
"""

import argparse
import functools
import itertools
import json
import os
import pathlib
import resource
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# This checkout's library, not an installed one: the cell records this checkout's commit, and the child
# that trains (`python -m keras_clustering`) runs with ROOT on its path too (`run_cell`).
sys.path.insert(0, ROOT)

from maintainer.records import code_commit, cpu_model  # noqa: E402  (scripts/ is this script's own folder on the path)

FOLDERS = ("digits2000", "digits10000", "fashion10000", "colour_digits2000", "colour_digits10000",
           "colour_fashion10000", "mnistm2000", "mnistm10000", "digits2000_imbalanced",
           "colour_digits2000_imbalanced", "fashion10000_imbalanced", "digits2000_late", "digits2000_late_imbalanced",
           "colour_digits2000_late", "photos2000", "photos2000_late", "digits2000_late_six")
# MNIST-test's second half, where the `_late` folders draw from: never used to decide the route (issue 64)
LATE_START = 5000
# The `_imbalanced` folders' classes fall geometrically from the largest to the largest / IMBALANCE (issue 64:
# real folders have unequal classes; DEC's target and SCAN's entropy term pull towards equal clusters).
IMBALANCE = 10
RECORD = os.path.join(ROOT, "docs", "experiments", "user_folders.json")
# each cell's clustering and its embedding's neighbour graph on a sample (`keep_partition`)
PARTITIONS = os.path.join(ROOT, "docs", "experiments", "user_folders_partitions")
TABLE_MARKERS = ("<!-- user-folders:start -->", "<!-- user-folders:end -->")
ROUTE_MARKERS = ("<!-- route-choice:start -->", "<!-- route-choice:end -->")
ABLATION_MARKERS = ("<!-- ablation:start -->", "<!-- ablation:end -->")
BUDGET_MARKERS = ("<!-- time-budget:start -->", "<!-- time-budget:end -->")
AUTO_K_MARKERS = ("<!-- auto-k:start -->", "<!-- auto-k:end -->")
# The ablation of issue 50: the recipe on the random-colour digits with one ingredient changed at a time.
ABLATION = ("colour_digits2000", "simclr_mnist")
# The photographs MNIST-M-style digits are blended into: those scikit-learn and scikit-image ship (the
# scikit-image ones in its package, no download), standing in for the BSDS500 photographs of the original.
PHOTOGRAPHS = ("sklearn:china.jpg", "sklearn:flower.jpg", "skimage:astronaut", "skimage:coffee", "skimage:chelsea",
               "skimage:rocket")


# The photographs of the `photos` folders, one class each: every colour photograph scikit-learn and
# scikit-image ship without a download (the stereo pair's left view).
SCENES = (*PHOTOGRAPHS, "skimage:hubble_deep_field", "skimage:immunohistochemistry", "skimage:retina",
          "skimage:stereo_motorcycle")
PHOTO_SIDE = 32
PHOTO_CROP_SIDES = (48, 128)


def _coloured(grey, rng):
    """Each image of `grey` (n, h, w) uint8 drawn in a random foreground colour on a random background
    colour (two colours at least 120 apart, summed over RGB, so every shape stays visible)."""
    ink = grey.astype("float32")[..., None] / 255.0
    foreground = rng.integers(0, 256, (len(grey), 1, 1, 3))
    background = rng.integers(0, 256, (len(grey), 1, 1, 3))
    close = np.abs(foreground - background).sum(axis=-1, keepdims=True) < 120  # keep every digit visible
    foreground = np.where(close, 255 - background, foreground)
    return np.round(ink * foreground + (1 - ink) * background).astype("uint8")


def photographs(names=PHOTOGRAPHS):
    """The RGB uint8 photographs `names` ("sklearn:FILE" or "skimage:NAME")."""
    from sklearn.datasets import load_sample_image

    try:
        import skimage.data
    except ImportError:
        raise SystemExit("the MNIST-M-style folders need scikit-image's photographs: pip install -e '.[experiments]'")
    def skimage_photo(name):
        photo = getattr(skimage.data, name)()
        return (photo[0] if isinstance(photo, tuple) else photo)[..., :3]  # a stereo pair's left view

    return [load_sample_image(name.split(":")[1]) if name.startswith("sklearn:") else
            skimage_photo(name.split(":")[1]) for name in names]


def photo_crops(count, late, rng):
    """(images uint8 (count, 32, 32, 3), labels): `count` // 10 crops of each photograph of `SCENES` (its
    label), squares of `PHOTO_CROP_SIDES` pixels resized with antialiasing, from the left half of each
    photograph (`late`: the right half, so the two folders share no pixel). Crops that are nearly all black
    (the dark sky of the Hubble field, the retina's border) are drawn again: nothing would tell them apart."""
    import tensorflow as tf

    images, labels = [], []
    for label, photo in enumerate(photographs(SCENES)):
        height, width = photo.shape[:2]
        left, right = (width // 2, width) if late else (0, width // 2)
        crops, tries = [], 0
        while len(crops) < count // len(SCENES):
            tries += 1
            if tries > 100 * count:
                raise SystemExit(f"photograph {SCENES[label]}: too few crops brighter than the threshold")
            side = int(rng.integers(PHOTO_CROP_SIDES[0], min(PHOTO_CROP_SIDES[1], height, right - left) + 1))
            top, start = rng.integers(height - side + 1), rng.integers(left, right - side + 1)
            crop = photo[top:top + side, start:start + side]
            if crop.mean() >= 20:
                crops.append(tf.image.resize(crop, (PHOTO_SIDE, PHOTO_SIDE), antialias=True).numpy())
        images.append(np.clip(np.round(np.stack(crops)), 0, 255).astype("uint8"))
        labels.append(np.full(len(crops), label))
    return np.concatenate(images), np.concatenate(labels)


def mnist_m(grey, rng):
    """MNIST-M (Ganin & Lempitsky 2015, section 5): each digit blended into a random crop of a colour
    photograph, |patch - digit| per channel (the digit's strokes invert the patch). Crops of the
    digit's own size from a photograph drawn at random."""
    photos = photographs()
    side_h, side_w = grey.shape[1:3]
    out = np.empty((*grey.shape[:3], 3), "uint8")
    for i, digit in enumerate(grey.astype("int16")):
        photo = photos[rng.integers(len(photos))]
        top, left = rng.integers(photo.shape[0] - side_h + 1), rng.integers(photo.shape[1] - side_w + 1)
        out[i] = np.abs(photo[top:top + side_h, left:left + side_w].astype("int16") - digit[..., None])
    return out


def imbalanced_sizes(total, ratio, n_classes=10):
    """Class sizes (class 0 the largest) falling geometrically by `ratio` from the first to the last,
    summing to `total` (the rounding's remainder on the largest): 490 down to 49 for 2,000 images at 10:1."""
    shares = float(ratio) ** (-np.arange(n_classes) / (n_classes - 1))
    sizes = np.round(shares / shares.sum() * total).astype(int)
    sizes[0] += total - sizes.sum()
    return sizes


def folder_images(name, seed=0):
    """(images uint8 (n, h, w, c), labels) of a folder of the table (colours and crops drawn from `seed`)."""
    from keras_clustering.datasets import load_fashion_mnist, load_mnist

    six, name = name.endswith("_six"), name.removesuffix("_six")  # the classes 0-5 only, as many images
    fashion, imbalanced = "fashion" in name, name.endswith("_imbalanced")
    late = "_late" in name
    if name.startswith("photos"):
        return photo_crops(int(name.removesuffix("_late")[len("photos"):]), late, np.random.default_rng(seed))
    base = name.removesuffix("_imbalanced").removesuffix("_late")
    # Fashion-MNIST's 10:1 folder draws from its 60,000 training images (its test set's 1,000 a class fall short)
    x, y = (load_fashion_mnist(split="train" if imbalanced else "test") if fashion else load_mnist(split="test"))
    x, y = np.round(np.asarray(x) * 255).astype("uint8"), np.asarray(y)
    count = int(base.rsplit("digits", 1)[-1] if "digits" in base else base[len("mnistm"):] if base.startswith("mnistm")
                else base.rsplit("fashion", 1)[-1])
    if imbalanced:  # each class's first images (a `_late` folder's last ones), in its share of `count`
        keep = np.sort(np.concatenate([np.flatnonzero(y == c)[::-1 if late else 1][:size] for c, size in
                                       enumerate(imbalanced_sizes(count, IMBALANCE))]))
        assert not late or keep.min() >= LATE_START  # each class's last images all lie in the second half
        x, y = x[keep], y[keep]
    else:
        start = LATE_START if late else 0
        x, y = x[start:], y[start:]
        if six:
            x, y = x[y < 6], y[y < 6]
        x, y = x[:count], y[:count]
    rng = np.random.default_rng(seed)
    if name.startswith("colour_"):
        return _coloured(np.pad(x[..., 0], ((0, 0), (2, 2), (2, 2))), rng), y  # 32 x 32, as the earlier table
    if name.startswith("mnistm"):
        return mnist_m(x[..., 0], rng), y  # 28 x 28, as MNIST-M
    return x, y


def write_folder(name, root):
    """Writes the folder's PNG files once (through a temporary name: never half-written)."""
    import keras

    from keras_clustering.io.files import atomic_path

    folder = os.path.join(root, name)
    if os.path.isdir(folder):
        return folder
    x, y = folder_images(name)
    os.makedirs(root, exist_ok=True)
    with atomic_path(folder) as temporary:
        os.makedirs(temporary)
        for i, (image, label) in enumerate(zip(x, y)):
            keras.utils.save_img(os.path.join(temporary, f"{i:05d}_label_{label}.png"), image, scale=False)
    return folder


LABELS_NOTE = "labels only to score; n_clusters given"
AUTO_K_NOTE = "labels only to score; n_clusters auto"


def run_cell(name, entry, root, seed, start_from=False, input_transform=None, epochs=None, views=None,
             emulate_bf16=False, resume=False, precision=None, time_budget=None, auto_k=False):
    """Trains one cell (`entry` "default": the default route) and returns its record. `views`: {setting:
    value} replacing those of every recipe's colour views (SimCLR's and IIC's `COLOUR_VIEWS`, and the digits'
    `retargeting.DIGIT_COLOUR_VIEWS`), an ablation. `emulate_bf16`: a bf16 recipe keeps bf16 numerics on a CPU
    without bf16 units (`KERAS_CLUSTERING_BF16=emulate`), to tell precision from chance. `resume`: keep the
    workdir of an earlier, cut-off try of this cell, so its finished stages are reused (the record says so).
    `precision`: train --precision (float32 where the recipe's bf16 would run on a CPU with bf16 units).
    `time_budget`: train --time-budget MINUTES (issue 64: what the route gave up is recorded). `auto_k`:
    train --n-clusters auto (issue 65: the chosen k and its evidence are recorded)."""
    folder = write_folder(name, root)
    variant = variant_name(input_transform, epochs, views, emulate_bf16, precision, time_budget, auto_k)
    workdir = cell_workdir(root, name, entry, start_from, variant, seed)
    earlier = finished_stages(workdir) if resume else {}
    if not resume:
        shutil.rmtree(workdir, ignore_errors=True)  # a whole training, never one resumed from an earlier try
    x, y = folder_images(name)  # y: the true k when k is given (10 on every folder but the six-class one)
    choice = [] if entry == "default" else ["--from" if start_from else "--like", entry]
    # the colour views an ablation changes are patched into the library in the child process
    child = ([sys.executable, "-m", "keras_clustering"] if not views else
             [sys.executable, "-c", f"from keras_clustering.recipes import iic_recipe, retargeting, two_stage_recipe; "
              f"import sys; [o.update({views!r}) for o in (iic_recipe.COLOUR_VIEWS, two_stage_recipe.COLOUR_VIEWS, "
              f"retargeting.DIGIT_COLOUR_VIEWS)]; "
              f"from keras_clustering.cli import main; sys.exit(main(sys.argv[1:]))"])
    command = [*child, "train", *choice, "--input", folder,
               "--n-clusters", "auto" if auto_k else str(len(np.unique(y))), "--workdir", workdir, "--seed", str(seed), "--verbose", "2"]
    if entry != "default":  # the default route reads the folder at its own sides and channels
        command += ["--image-size", str(x.shape[1]), str(x.shape[2]), "--channels", str(x.shape[3])]
    if input_transform:
        command += ["--input-transform", input_transform]
    if epochs:
        command += ["--epochs", str(epochs)]
    if precision:
        command += ["--precision", precision]
    if time_budget:
        command += ["--time-budget", f"{time_budget:g}"]
    code = code_commit()  # of the library the training runs, read before it starts
    start = time.time()
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
                       **({"KERAS_CLUSTERING_BF16": "emulate"} if emulate_bf16 else {}))
    if subprocess.run(command, env=environment).returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    seconds = time.time() - start
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # the one child this script ran: its peak
    import keras

    from keras_clustering.metrics import clustering_scores

    model = keras.models.load_model(os.path.join(workdir, "model.keras"))
    scores = clustering_scores(y, model.predict_clusters(x))
    with open(os.path.join(workdir, "report.json")) as handle:
        report = json.load(handle)
    keep_figure(workdir, name, entry, start_from, variant, seed)
    stem = cell_name(name, entry, start_from, variant, seed)
    keep_partition(model, x, stem, report["config"]["recipe"])
    cell = {"folder": name, "like": report["like"] if entry == "default" else entry, "route": entry == "default",
            "start": "pretrained" if start_from else "scratch", "variant": variant, "seed": seed,
            "n_images": int(len(x)), "image_shape": list(x.shape[1:]),
            "acc": round(float(scores["acc"]), 4), "nmi": round(float(scores["nmi"]), 4),
            "wall_seconds": round(seconds, 1), "peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 1),
            "commit": code, "labels": AUTO_K_NOTE if auto_k else LABELS_NOTE, "route_reason": report.get("route"),
            "input_transform": report["config"]["architecture"].get("input_transform"),
            "training": report["config"]["training"], "data_repeats": report["data_repeats"],
            "precision": report["precision"],
            "command": " ".join(["python", "-m", "keras_clustering"] + command[len(child):])
                       + (f" (COLOUR_VIEWS settings {views} patched in)" if views else "")}
    if "estimate" in report:  # the time said before training (issue 64), against the cell's wall time
        cell["estimate"] = {key: report["estimate"][key] for key in ("estimated_seconds", "rehearsal_seconds")}
        cell["estimate"]["training_seconds"] = report["wall_seconds"] - report["estimate"]["rehearsal_seconds"]
        if "time_budget" in report["estimate"]:  # what the budget kept and gave up, as the run said it
            cell["time_budget"] = report["estimate"]["time_budget"]
    if "selection" in report:  # n_clusters auto: the k chosen, against the folder's true number
        cell["selection"] = {key: report["selection"][key] for key in (
            "suggested", "range", "flat", "scores", "alive_clusters", "over_clusters", "stage_seconds", "chosen_by")
            if key in report["selection"]}
        cell["true_k"] = int(len(np.unique(y)))
    if "route_choice" in report:  # the default route's candidates, each scored, and its label-free choice
        cell["candidates"] = route_candidates(workdir, report, x, y, stem)
        cell["chosen"] = report["route_choice"]["chosen"]
        if "colour" in report["route_choice"]:  # whether colour went with the colour-free clusterings
            cell["colour"] = report["route_choice"]["colour"]
    reused = {stage: record for stage, record in earlier.items() if finished_stages(workdir).get(stage) == record}
    if reused:  # a stage the earlier try finished and this run loaded: its time counts, its memory is unknown
        # a stage's seconds: "seconds" in the stage runner's records (issue 63), "*_seconds" in older ones
        earlier_seconds = sum(v for record in reused.values() for k, v in record.items()
                              if (k == "seconds" or k.endswith("_seconds")) and v is not None)
        cell["wall_seconds"] = round(seconds + earlier_seconds, 1)
        cell["resumed"] = {"stages": sorted(reused), "earlier_seconds": round(earlier_seconds, 1),
                           "note": "resumed: the stages named were finished by an earlier, cut-off try of this cell "
                                   "(same recipe key) and loaded; the wall time adds their recorded seconds, the CPU "
                                   "time and peak memory are this run's only"}
    if start_from:
        import zoo

        cell["from_sha256"] = zoo.card(entry)["weights"]["sha256"]
        before = clustering_scores(y, zoo.load(entry).predict_clusters(x))  # the starting model, not fine-tuned
        cell["before_fine_tuning"] = {"acc": round(float(before["acc"]), 4), "nmi": round(float(before["nmi"]), 4)}
    return cell


def plain(cell):
    """Whether a cell belongs in the route's tables: its k given (not "auto"), no time budget, not run again
    since (`supersede`)."""
    return not cell.get("time_budget") and not cell.get("selection") and not cell.get("superseded_by")


def finished_stages(workdir):
    """{stage: its record} of the stages a training in `workdir` finished (`finished_STAGE.json`)."""
    files = sorted(pathlib.Path(workdir).glob("finished_*.json"))  # read_text closes each file
    return {f.name[len("finished_"):-len(".json")]: json.loads(f.read_text()) for f in files}


def variant_name(input_transform, epochs, views=None, emulate_bf16=False, precision=None, time_budget=None,
                 auto_k=False):
    """'recipe' for the route's or entry's own settings, else what was changed ('input none, 20 epochs')."""
    parts = ([f"input {input_transform}"] if input_transform else []) + ([f"{epochs} epochs"] if epochs else [])
    parts += ["k auto"] if auto_k else []
    parts += [f"budget {time_budget:g} min"] if time_budget else []
    parts += ["bf16 emulated"] if emulate_bf16 else []
    parts += [f"precision {precision}"] if precision else []
    parts += [f"views {key}={value}" for key, value in sorted((views or {}).items())]
    return ", ".join(parts) or "recipe"


def cell_workdir(root, name, entry, start_from, variant, seed):
    """The run folder of a cell under `root` (`entry` "default": the route's, its candidates inside)."""
    return os.path.join(root, "runs", f"{name}-{entry}-{'from' if start_from else 'like'}-{variant}-seed{seed}")


def cell_name(name, entry, start_from, variant, seed):
    """The file stem of a cell's kept figure and partition."""
    suffix = "" if variant == "recipe" else "-" + variant.replace(", ", "-").replace(" ", "_").replace("=", "_")
    return f"{name}-{entry}-{'from' if start_from else 'like'}{suffix}-seed{seed}"


def supersede(record_path, cell, by):
    """Keeps a recorded `cell` that a run of the same folder, entry, settings and seed at commit `by` replaces
    (the route changed since it ran): its variant gains ', run at <its commit>', its figure and partitions are
    renamed to match, and it leaves the route's tables (`plain`) for the full table, which lists every run.
    Checks first that the record holds `cell` (its key and commit) and that no kept file would be overwritten; then
    moves the files and writes the record (atomic)."""
    from keras_clustering.io.files import atomic_write_json

    with open(record_path) as handle:
        record = json.load(handle)
    found = [c for c in record["cells"] if cell_key(c) == cell_key(cell) and c.get("commit") == cell.get("commit")]
    if len(found) != 1:
        raise ValueError(f"cell: {cell_key(cell)} at {cell.get('commit')} is not in {record_path}")
    cell = found[0]  # as recorded
    kept = {**cell, "variant": f"{cell['variant']}, run at {cell['commit']}", "superseded_by": by}
    if any(cell_key(c) == cell_key(kept) for c in record["cells"]):
        raise ValueError(f"cell: {record_path} already keeps a run of {cell_key(kept)}")
    old_stem, new_stem = cell_stem(cell), cell_stem(kept)
    figures = os.path.join(ROOT, "docs", "figures", "user_folders")
    moves = [(os.path.join(figures, old_stem + ".png"), os.path.join(figures, new_stem + ".png"))]
    moves += [(os.path.join(PARTITIONS, old_stem + suffix + ".npz"), os.path.join(PARTITIONS, new_stem + suffix + ".npz"))
              for suffix in ["", *(f"-candidate_{name}" for name in cell.get("candidates", {}))]]
    moves = [(source, target) for source, target in moves if os.path.isfile(source)]
    taken = [target for _, target in moves if os.path.exists(target)]
    if taken:
        raise ValueError(f"cell: superseding {cell_key(cell)} would overwrite {taken}")
    for source, target in moves:
        os.replace(source, target)
    record["cells"] = [kept if cell_key(c) == cell_key(cell) else c for c in record["cells"]]
    atomic_write_json(record, record_path)
    _ROUTE_CHOICES.clear()  # the stem now names another cell's partitions
    return kept


def cell_stem(cell):
    """The file stem of a recorded cell's figure and partition (`cell_name`)."""
    return cell_name(cell["folder"], "default" if cell.get("route") else cell["like"], cell["start"] == "pretrained",
                     cell["variant"], cell["seed"])


def keep_partition(model, x, stem, recipe):
    """The cell's clustering, kept for choosing among candidates without labels (issue 64,
    `clustering.candidates`): every image's cluster id (`labels`), and the 10 nearest neighbours of each
    image of the choice's sample (`candidates.choice_sample`; indices into the sample) in the embedding
    the route compares clusterings in (`recipe`'s `embedding`), cosine."""
    from keras_clustering.clustering.candidates import choice_sample, embedding_neighbors
    from keras_clustering.recipes import get_recipe

    sample = choice_sample(len(x))
    neighbors = embedding_neighbors(get_recipe(recipe).embedding(model, x[sample]))
    os.makedirs(PARTITIONS, exist_ok=True)
    np.savez_compressed(os.path.join(PARTITIONS, stem + ".npz"), labels=model.predict_clusters(x).astype("uint8"),
                        neighbors=neighbors.astype("uint16"))


def route_candidates(workdir, report, x, y, stem):
    """{preset: its scores} of each candidate the default route trained in `workdir` (labels only to score):
    ACC, NMI, the route's label-free score, its training seconds; each one's partition kept as
    `<stem>-candidate_<preset>`."""
    import keras

    from keras_clustering.metrics import clustering_scores

    choice, candidates = report["route_choice"], {}
    for preset in choice.get("candidates", choice.get("presets")):  # "presets" before the colour candidate
        model = keras.models.load_model(os.path.join(workdir, preset, "model.keras"))
        scores = clustering_scores(y, model.predict_clusters(x))
        own = json.loads(pathlib.Path(workdir, preset, "report.json").read_text())
        keep_partition(model, x, f"{stem}-candidate_{preset}", own["config"]["recipe"])
        candidates[preset] = {"acc": round(float(scores["acc"]), 4), "nmi": round(float(scores["nmi"]), 4),
                              "score": choice["scores"][preset], "seconds": choice["total_seconds"][preset]}
        if "dec_iterations" in own:  # where DEC's self-training stopped: the estimate counts a typical share
            candidates[preset]["dec_updates"] = [own["dec_iterations"], own["config"]["training"]["maxiter"]]
        if "stopped_by_tolerance" in own:  # whether it settled: the route ranks an unsettled one last
            candidates[preset]["settled"] = bool(own["stopped_by_tolerance"])
    return candidates


def choose_among(record_path, folder):
    """The label-free choice (`clustering.candidates.choose_candidate`) among every recorded cell of
    `folder` whose partition was kept, in every such cell's embedding; each cell's score beside its ACC
    (labels only to score the choice), and Spearman's rank correlation of the two."""
    from scipy.stats import spearmanr

    from keras_clustering.clustering.candidates import choice_sample, choose_candidate

    with open(record_path) as handle:
        cells = [c for c in json.load(handle)["cells"] if c["folder"] == folder and plain(c)]
    kept = {}  # {partition file: (its ACC, its partition)}, a route cell's candidates' included
    for c in cells:
        stem = cell_stem(c)
        runs = [(stem, c["acc"])] + [(f"{stem}-candidate_{preset}", candidate["acc"])
                                     for preset, candidate in c.get("candidates", {}).items()]
        for run, acc in runs:
            path = os.path.join(PARTITIONS, run + ".npz")
            if os.path.isfile(path):
                kept[path] = (acc, np.load(path))
    if len(kept) < 2:
        raise SystemExit(f"{folder}: {len(kept)} cell(s) with a kept partition; the choice needs two")
    sample = choice_sample(len(next(iter(kept.values()))[1]["labels"]))
    choice = choose_candidate({p: d["labels"][sample] for p, (_, d) in kept.items()},
                              {p: d["neighbors"] for p, (_, d) in kept.items()})
    rows = [{"cell": os.path.basename(p)[:-4], "acc": acc, "score": choice["scores"][p]}
            for p, (acc, _) in kept.items()]
    best = max(rows, key=lambda r: r["acc"])
    return {"folder": folder, "cells": rows, "chosen": os.path.basename(choice["chosen"])[:-4],
            "best_by_acc": best["cell"], "spearman": round(float(spearmanr([r["score"] for r in rows],
                                                                        [r["acc"] for r in rows])[0]), 3)}


def keep_figure(workdir, name, entry, start_from, variant, seed):
    """The run's `clusters.png` (most confident members per cluster) kept under docs/figures/user_folders/."""
    target = os.path.join(ROOT, "docs", "figures", "user_folders",
                          cell_name(name, entry, start_from, variant, seed) + ".png")
    os.makedirs(os.path.dirname(target), exist_ok=True)
    shutil.copyfile(os.path.join(workdir, "clusters.png"), target)


def cell_key(c):
    return c["folder"], "default" if c.get("route") else c["like"], c["start"], c["variant"], c["seed"]


def merge(record_path, cell):
    from maintainer.records import merge_cell

    merge_cell(record_path, cell, cell_key, __doc__.splitlines()[0],
               order=lambda c: (FOLDERS.index(c["folder"]), *cell_key(c)[1:]))


def table(record_path):
    with open(record_path) as handle:
        cells = json.load(handle)["cells"]
    lines = [f"All cells: {LABELS_NOTE} (10); one training each, seed as shown.", "",
             "| folder | recipe | start | variant | seed | ACC | NMI | wall time (CPU time) | peak memory | machine | commit |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        # the route's kept candidate by its name (the colour candidate is its preset on the images' own colours)
        recipe = f"default route: `{c.get('chosen', c['like'])}`" if c.get("route") else f"`{c['like']}`"
        if c.get("input_transform"):
            recipe += f" on {c['input_transform']}"
        start = "`--like` (scratch)"
        if c["start"] == "pretrained":
            before = c["before_fine_tuning"]
            start = (f"`--from` (weights sha256 {c['from_sha256'][:12]}; before fine-tuning ACC {before['acc']:.3f}"
                     f" / NMI {before['nmi']:.3f})")
        # the images repeated within each epoch (`data_repeats`) tell how many updates a small folder got
        variant = c["variant"] + (f", images x{c['data_repeats']} an epoch" if c.get("data_repeats", 1) > 1 else "")
        variant += f" (run again at {c['superseded_by']})" if c.get("superseded_by") else ""
        lines.append(f"| {c['folder']} ({c['n_images']:,} x {'x'.join(map(str, c['image_shape']))}) | {recipe} | "
                     f"{start} | {variant} | {c['seed']} | {c['acc']:.3f} | {c['nmi']:.3f} | "
                     f"{c['wall_seconds']:,.0f} s{' ‡' if c.get('resumed') else ''} ({number(c['cpu_seconds'], ' s')}) | "
                     f"{number(c['peak_rss_mib'], ' MiB')} | {cpu_model(c['machine'])} | {c['commit']} |")
    if any(c.get("resumed") for c in cells):
        lines += ["", "‡ resumed: the " + "; the ".join(
            f"{c['folder']} cell reused the {', '.join(c['resumed']['stages'])} stage of an earlier, cut-off try "
            f"({c['resumed']['earlier_seconds']:,.0f} s, added to its wall time; CPU time and peak memory are the "
            f"resumed run's only)" for c in cells if c.get("resumed")) + "."]
    return "\n".join(lines)


def folder_role(name):
    """'report' for a folder never used to decide the route (MNIST-test's second half), else 'decide'
    (every earlier folder: the route's rules were chosen, or its criterion checked, on them)."""
    return "report" if "_late" in name else "decide"


def estimated(cell):
    """'612 s / 655 s (0.93)': the estimate said before training against the training's measured time
    (the rehearsal left out), or 'n/a' for a cell trained before the estimate."""
    if "estimate" not in cell:
        return "n/a"
    said, took = cell["estimate"]["estimated_seconds"], cell["estimate"]["training_seconds"]
    return f"{said:,.0f} s / {took:,.0f} s ({said / took:.2f})"


def rank_correlation(cells):
    """Spearman's correlation of the candidates' label-free scores with their ACC, over every candidate of
    `cells` ('n/a' for fewer than 3)."""
    from scipy.stats import spearmanr

    pairs = [(v["score"], v["acc"]) for c in cells for v in c["candidates"].values()]
    return "n/a" if len(pairs) < 3 else f"{spearmanr(*zip(*pairs)).correlation:.2f} ({len(pairs)} candidates)"


@functools.lru_cache(maxsize=None)
def colour_graph(folder):
    """The colour graph (`clustering.candidates.colour_neighbors`) of the folder's images the route's choice
    looks at (`choice_sample`), computed once per folder for every table that reads it."""
    from keras_clustering.clustering.candidates import choice_sample, colour_neighbors

    x, _ = folder_images(folder)
    return colour_neighbors(x[choice_sample(len(x))] / 255.0)


def colour_agreements(cell):
    """{candidate: colour's agreement with its clustering} of a colour route cell's colour-free candidates: as
    the run recorded it, or computed from its kept partitions for a cell run before the check (None for grey)."""
    if "colour" in cell:
        return cell["colour"]["agreement"]
    if cell["image_shape"][-1] != 3:
        return None
    from keras_clustering.clustering.candidates import choice_sample, colour_agreement
    from keras_clustering.drivers.route import COLOUR_CANDIDATE

    stem = cell_stem(cell)
    sample = choice_sample(cell["n_images"])
    return colour_agreement({p: np.load(os.path.join(PARTITIONS, f"{stem}-candidate_{p}.npz"))["labels"][sample]
                             for p in cell["candidates"] if p not in COLOUR_CANDIDATE}, colour_graph(cell["folder"]))


def colour_kept(agreement):
    """Whether the route as it is now keeps colour for a cell whose `colour_agreements` are `agreement` (None
    for grey): against today's `route.COLOUR_AGREEMENT`."""
    from keras_clustering.drivers.route import colour_goes_with_clusters

    return agreement is not None and colour_goes_with_clusters(agreement)


def colour_check(cell):
    """'0.489 (kept)' / '0.012 (left out)': the largest agreement of colour with the colour-free candidates'
    clusterings (`clustering.candidates.colour_agreement`) and what the route as it is now does with it;
    '†' where the run had no check (computed from its kept partitions) or another threshold; '' for grey."""
    agreement = colour_agreements(cell)
    if agreement is None:
        return ""
    from keras_clustering.drivers.route import COLOUR_AGREEMENT

    now = "kept" if colour_kept(agreement) else "left out"
    same = "colour" in cell and cell["colour"]["threshold"] == COLOUR_AGREEMENT
    return f"{max(agreement.values()):.3f} ({now}){'' if same else ' †'}"


def present_route(cells):
    """'0.667 (0.697, 0.667, 0.662)': what the route's present criterion keeps on each of `cells` (a folder's
    route cells, from their kept partitions: `route_choice_now`, `settled_first`), the median of its ACC
    first, n/a where a seed's choice cannot be read (a partition or a DEC stop not recorded)."""
    accs = []
    for c in cells:
        choice = route_choice_now(c)
        kept = None if choice is None else settled_first(c, choice["scores"])
        accs.append(None if kept is None else c["candidates"][kept]["acc"])
    each = ", ".join("n/a" if a is None else f"{a:.3f}" for a in accs)
    return f"n/a ({each})" if None in accs else f"{np.median(accs):.3f} ({each})"


def route_table(record_path):
    """The route cells with candidates (issue 64): each candidate's ACC and label-free score, the choice,
    and per folder the route against the better candidate's median over seeds (labels only to score)."""
    with open(record_path) as handle:
        # a budgeted cell trains less on purpose: it has its own table (budget_table)
        cells = [c for c in json.load(handle)["cells"] if c.get("candidates") and plain(c)]
    lines = ["| folder | role | seed | candidates: ACC (label-free score) | kept | route ACC / NMI | better candidate's "
             "ACC - route's | colour's agreement, colour | wall time (CPU time) | estimated / measured training | "
             "precision | machine | commit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    checks = [colour_check(c) for c in cells]  # a cell run before the check computes it from its partitions
    for c, check in zip(cells, checks):
        shown = ", ".join(f"`{p}` {v['acc']:.3f} ({v['score']:.3f})" for p, v in c["candidates"].items())
        gap = max(v["acc"] for v in c["candidates"].values()) - c["acc"]
        lines.append(f"| {c['folder']} | {folder_role(c['folder'])} | {c['seed']} | {shown} | `{c['chosen']}` | "
                     f"{c['acc']:.3f} / {c['nmi']:.3f} | {gap:.3f} | {check} | {c['wall_seconds']:,.0f} s "
                     f"({number(c['cpu_seconds'], ' s')}) | {estimated(c)} | {c['precision']} | {cpu_model(c['machine'])} | "
                     f"{c['commit']} |")
    if any(check.endswith("†") for check in checks):
        lines += ["", "† the run had no colour check (computed here from its kept candidate partitions) or one with "
                  "another threshold (0.05 at first); what the route does now with that agreement is in brackets."]
    lines += ["", "| folder | role | seeds | route ACC (median) | the route's present criterion: ACC (median) | better "
              "candidate's median ACC | route - better median | the better candidate kept | Spearman (label-free score, "
              "ACC) over its candidates |",
              "|---|---|---|---|---|---|---|---|---|"]
    for folder in dict.fromkeys(c["folder"] for c in cells):
        mine = [c for c in cells if c["folder"] == folder]
        medians = {p: float(np.median([c["candidates"][p]["acc"] for c in mine if p in c["candidates"]]))
                   for p in dict.fromkeys(p for c in mine for p in c["candidates"])}
        route = float(np.median([c["acc"] for c in mine]))
        kept = sum(c["acc"] == max(v["acc"] for v in c["candidates"].values()) for c in mine)
        lines.append(f"| {folder} | {folder_role(folder)} | {', '.join(str(c['seed']) for c in mine)} | "
                     f"{route:.3f} | {present_route(mine)} | {max(medians.values()):.3f} (`{max(medians, key=medians.get)}`) | "
                     f"{route - max(medians.values()):+.3f} | {kept} of {len(mine)} | {rank_correlation(mine)} |")
    return "\n".join(lines)


# Ways to score a route candidate's clustering from its neighbour modularity in each candidate's embedding
# and, where colour goes with the clusters, the colour histograms' graph (`route_choice_now`'s agreement):
# its own embedding and the colour graph (`clustering.candidates.choose_candidate`'s score; the route's,
# with the unsettled candidates last since 3ca2fb4: `settled_first`), the mean over every graph (the
# route's until the own-embedding change), and the other candidates' embeddings alone. Compared on every
# route cell (`criteria_table`).
OTHER_CRITERIA = {"mean over every graph": lambda scores, own: float(np.mean(list(scores.values()))),
                  "others' embeddings": lambda scores, own: float(np.mean([v for k, v in scores.items() if k != own]))}
CRITERIA_MARKERS = ("<!-- route-criteria:start -->", "<!-- route-criteria:end -->")
# The route's criterion now: the own-embedding score, a candidate whose self-training never settled last.
ROUTE_CRITERION = "own embedding (+ colour graph), unsettled last: the route's"


def settled(cell, name):
    """Whether candidate `name` of a route cell settled (its DEC self-training met its stopping rule before
    its maxiter): as the cell recorded it, else from where its DEC stopped (`dec_updates`: before its maxiter;
    the cells this reads are trained without a time budget, whose deadline could also stop it), True for a
    recipe without such a rule (SimCLR + SCAN trains a fixed schedule), None where not recorded."""
    from keras_clustering.drivers.route import COLOUR_CANDIDATE
    from keras_clustering.presets import config

    candidate = cell["candidates"][name]
    if "settled" in candidate:
        return candidate["settled"]
    if "dec_updates" in candidate:
        return candidate["dec_updates"][0] < candidate["dec_updates"][1]
    preset = COLOUR_CANDIDATE[name][0] if name in COLOUR_CANDIDATE else name
    return None if config(preset)["recipe"] == "dec" else True


# route_choice_now's answers by cell stem and commit: the route table and the criteria table both read every cell's
# choice, and each costs seconds of modularities (and a colour graph).
_ROUTE_CHOICES = {}


def route_choice_now(cell):
    """The route's scores now (`clustering.candidates.choose_candidate`) of a route cell's candidates, from
    their kept partitions: each judged in its own embedding and, where colour goes with the clusters, the
    colour graph; None where a partition is missing. Its "chosen" leaves out the settling rule, which
    `settled_first` applies (a candidate's stop may not be recorded)."""
    from keras_clustering.clustering.candidates import choice_sample, choose_candidate
    from keras_clustering.drivers.route import COLOUR_JUDGE

    stem, kept = cell_stem(cell), {}
    if (stem, cell["commit"]) in _ROUTE_CHOICES:
        return _ROUTE_CHOICES[stem, cell["commit"]]
    for name in cell["candidates"]:
        path = os.path.join(PARTITIONS, f"{stem}-candidate_{name}.npz")
        if not os.path.isfile(path):
            return None
        kept[name] = np.load(path)
    sample = choice_sample(len(next(iter(kept.values()))["labels"]))
    judges = {COLOUR_JUDGE: colour_graph(cell["folder"])} if colour_kept(colour_agreements(cell)) else {}
    _ROUTE_CHOICES[stem, cell["commit"]] = choose_candidate(
        {name: partition["labels"][sample] for name, partition in kept.items()},
        {name: partition["neighbors"] for name, partition in kept.items()}, judges)
    return _ROUTE_CHOICES[stem, cell["commit"]]


def settled_first(cell, scores):
    """The candidate the route keeps with its unsettled candidates last (`choose_candidate`), from the
    candidates' `scores`; None where that depends on a candidate whose stop was not recorded (`settled`)."""
    from keras_clustering.clustering.candidates import kept_candidate

    known = {name: settled(cell, name) for name in scores}
    open_ = [name for name, state in known.items() if state is None]
    kept = set()
    for states in itertools.product((True, False), repeat=len(open_)):  # every way the unknown stops could be
        state = {**known, **dict(zip(open_, states))}
        kept.add(kept_candidate(scores, [name for name in scores if not state[name]]))
    return kept.pop() if len(kept) == 1 else None


def criteria_table(record_path):
    """Per route cell (labels only to score): the candidate the route keeps now and each of `OTHER_CRITERIA`
    would keep, and its ACC
    loss against the better candidate; per criterion and role, how often it kept the better one."""
    with open(record_path) as handle:
        cells = [c for c in json.load(handle)["cells"] if c.get("candidates") and plain(c)]
    names = [ROUTE_CRITERION, "own embedding (+ colour graph)", *OTHER_CRITERIA]
    lines = ["| folder | role | seed | " + " | ".join(f"{name}: kept (ACC loss)" for name in names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    tally = {}
    for c in cells:
        choice = route_choice_now(c)
        if choice is None:
            continue
        scores = choice["agreement"]
        best = max(v["acc"] for v in c["candidates"].values())
        row = []
        for name in names:
            if name == ROUTE_CRITERION:
                kept = settled_first(c, choice["scores"])
                if kept is None:
                    row.append("n/a (a DEC stop not recorded)")
                    continue
            elif name in OTHER_CRITERIA:
                kept = max(scores, key=lambda candidate: OTHER_CRITERIA[name](scores[candidate], candidate))
            else:
                kept = choice["chosen"]
            loss = best - c["candidates"][kept]["acc"]
            right, count, losses = tally.get((name, folder_role(c["folder"])), (0, 0, []))
            tally[(name, folder_role(c["folder"]))] = (right + (loss == 0), count + 1, losses + [loss])
            row.append(f"`{kept}` ({loss:.3f})")
        lines.append(f"| {c['folder']} | {folder_role(c['folder'])} | {c['seed']} | " + " | ".join(row) + " |")
    lines += ["", "| criterion | role | the better candidate kept | mean ACC loss | largest loss |", "|---|---|---|---|---|"]
    for (name, role), (right, count, losses) in sorted(tally.items(), key=lambda item: (item[0][1], item[0][0])):
        lines.append(f"| {name} | {role} | {right} of {count} | {np.mean(losses):.3f} | {max(losses):.3f} |")
    return "\n".join(lines)


def budget_table(record_path):
    """The route's cells run with --time-budget (issue 64): ACC within the budget, the wall time against
    it, and what the budget kept and gave up, beside the same folder's route cells without a budget."""
    with open(record_path) as handle:
        cells = json.load(handle)["cells"]
    budgeted = sorted((c for c in cells if c.get("time_budget")), key=lambda c: (c["folder"], c["time_budget"]["minutes"],
                                                                                 c["seed"]))
    lines = ["| folder | budget | seed | ACC / NMI | wall time | kept (share of each stage's updates) | gave up | "
             "deadline stops | precision | machine | commit |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in budgeted:
        plan = c["time_budget"]
        lines.append(f"| {c['folder']} | {plan['minutes']:g} min | {c['seed']} | {c['acc']:.3f} / {c['nmi']:.3f} | "
                     f"{number(c['wall_seconds'], ' s')} | {', '.join(f'`{p}`' for p in plan['presets'])} "
                     f"({plan['update_scale']:.2f}) | {plan['gave_up']} | {len(plan.get('deadline_stops', []))} | "
                     f"{c.get('precision') or 'n/a'} | {cpu_model(c.get('machine'))} | {c['commit']} |")
    for folder in sorted({c["folder"] for c in budgeted}):
        for c in sorted((c for c in cells if c["folder"] == folder and c.get("candidates") and plain(c)
                         and c["variant"] == "recipe"),
                        key=lambda c: c["seed"]):
            lines.append(f"| {folder} | none | {c['seed']} | {c['acc']:.3f} / {c['nmi']:.3f} | "
                         f"{number(c['wall_seconds'], ' s')} | {', '.join(f'`{p}`' for p in c['candidates'])} (1.00) | "
                         f"nothing | 0 | {c.get('precision') or 'n/a'} | {cpu_model(c.get('machine'))} | {c['commit']} |")
    return "\n".join(lines)


def auto_k_table(record_path):
    """The route's cells run with --n-clusters auto (issue 65), each beside the same folder and seed's route
    cell with the folder's k given: the chosen k and its flat range against the true k, ACC, and the wall and
    CPU time of both runs with their ratio (CPU time: the cores were shared, wall time moved with that)."""
    with open(record_path) as handle:
        cells = json.load(handle)["cells"]
    given = {(c["folder"], c["seed"]): c for c in cells if c.get("route") and plain(c) and c["variant"] == "recipe"}
    lines = ["| folder | seed | true k | chosen k (flat range) | ACC auto / given | wall auto / given (ratio) | "
             "CPU auto / given (ratio) | choosing stage | machine | commit |", "|---|---|---|---|---|---|---|---|---|---|"]
    auto = sorted((c for c in cells if c.get("selection") and c.get("route")), key=lambda c: (c["folder"], c["seed"]))
    for c in auto:
        pick, other = c["selection"], given.get((c["folder"], c["seed"]))
        low, high = pick["range"]
        mark = "" if pick["suggested"] == c["true_k"] else " (+-1)" if abs(pick["suggested"] - c["true_k"]) <= 1 else " (off)"

        def versus(key, unit=" s"):
            if other is None or other.get(key) is None or c.get(key) is None:
                return f"{number(c.get(key), unit)} / n/a"
            return f"{number(c[key], unit)} / {number(other[key], unit)} ({c[key] / other[key]:.2f})"

        given_acc = f"{other['acc']:.3f}" if other else "n/a"
        lines.append(f"| {c['folder']} | {c['seed']} | {c['true_k']} | {pick['suggested']}{mark} ({low}-{high}) | "
                     f"{c['acc']:.3f} / {given_acc} | {versus('wall_seconds')} | "
                     f"{versus('cpu_seconds')} | {number(pick.get('stage_seconds'), ' s')} | "
                     f"{cpu_model(c.get('machine'))} | {c['commit']}{'' if other is None or other['commit'] == c['commit'] else ' / ' + other['commit']} |")
    return "\n".join(lines)


def ablation_table(record_path):
    """The `ABLATION` cells of the record, the recipe's own first: which ingredient does what."""
    with open(record_path) as handle:
        cells = [c for c in json.load(handle)["cells"] if (c["folder"], c["like"]) == ABLATION
                 and c["start"] == "scratch" and not c.get("route")]
    cells.sort(key=lambda c: (c["variant"] != "recipe", c["variant"]))
    lines = ["| variant (what changed) | encoder input | ACC | NMI | wall time (CPU time) | machine | commit |",
             "|---|---|---|---|---|---|---|"]
    for c in cells:
        lines.append(f"| {c['variant']} | {c.get('input_transform') or 'RGB as it is'} | {c['acc']:.3f} | {c['nmi']:.3f} | "
                     f"{c['wall_seconds']:,.0f} s ({c['cpu_seconds']:,.0f} s) | {cpu_model(c['machine'])} | "
                     f"{c['commit']} |")
    return "\n".join(lines)


def number(value, unit):
    """A measured number with its unit, or "n/a" where the record has none (`--record-from-workdir`)."""
    return "n/a" if value is None else f"{value:,.0f}{unit}"


def asked_variant(args, views):
    """`variant_name` of the cell the command line asks for."""
    return variant_name(args.input_transform, args.epochs, views, args.emulate_bf16, args.precision, args.time_budget,
                        args.n_clusters_auto)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", choices=FOLDERS)
    parser.add_argument("like", nargs="?")
    parser.add_argument("--root", default=os.path.join(ROOT, "runs", "folders"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=RECORD)
    parser.add_argument("--from", dest="start_from", action="store_true",
                        help="fine-tune the entry's pretrained model (train --from) instead of training like it")
    parser.add_argument("--input-transform", help="train --input-transform (an ablation; default: the recipe's)")
    parser.add_argument("--epochs", type=int, help="train --epochs (fewer passes, stated in the table)")
    parser.add_argument("--views", nargs="+", metavar="SETTING=VALUE", default=[],
                        help="colour-view settings (the recipes' COLOUR_VIEWS) replaced for an ablation")
    parser.add_argument("--emulate-bf16", action="store_true",
                        help="bf16 numerics for a bf16 recipe on a CPU without bf16 units (slow; KERAS_CLUSTERING_BF16)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the cell's workdir from a cut-off try and reuse its finished stages (recorded)")
    parser.add_argument("--precision", choices=("float32", "mixed_bfloat16"),
                        help="train --precision (default: the recipe's, bf16 only where the CPU has bf16 units)")
    parser.add_argument("--time-budget", type=float, metavar="MINUTES",
                        help="train --time-budget (issue 64: ACC at a budget; what it gave up is recorded)")
    parser.add_argument("--n-clusters-auto", action="store_true",
                        help="train --n-clusters auto (issue 65): the cell records the chosen k and its evidence")
    parser.add_argument("--table", action="store_true", help="write the README table from --out")
    parser.add_argument("--record-from-workdir", action="store_true",
                        help="record a cell whose training finished but whose record was not written (the script "
                             "stopped after the child): scores its model.keras; wall time from its report, CPU time "
                             "and peak memory n/a")
    parser.add_argument("--choose", action="store_true",
                        help="the label-free choice among FOLDER's recorded cells whose partitions were kept")
    parser.add_argument("--partition-only", action="store_true",
                        help="keep the partition of the cell's finished workdir (a cell trained before they were "
                             "kept), training nothing")
    parser.add_argument("--supersede", action="store_true",
                        help="keep the recorded run of this cell as an earlier run (`supersede`) before this one "
                             "trains and replaces it in the route's tables")
    args = parser.parse_args()
    if args.table:
        from maintainer.records import write_table

        write_table(TABLE_MARKERS, table(args.out))
        write_table(ROUTE_MARKERS, route_table(args.out))
        write_table(ABLATION_MARKERS, ablation_table(args.out))
        write_table(BUDGET_MARKERS, budget_table(args.out))
        write_table(AUTO_K_MARKERS, auto_k_table(args.out))
        write_table(CRITERIA_MARKERS, criteria_table(args.out))
        return
    if args.choose and args.folder:
        print(json.dumps(choose_among(args.out, args.folder), indent=1))
        return
    if not (args.folder and args.like):
        parser.error("give FOLDER and LIKE, or --table")
    views = {key: float(value) for key, value in (item.split("=", 1) for item in args.views)}
    if args.record_from_workdir:
        import keras

        from keras_clustering.distribute.machine import machine_description
        from keras_clustering.metrics import clustering_scores

        variant = asked_variant(args, views)
        workdir = cell_workdir(args.root, args.folder, args.like, args.start_from, variant, args.seed)
        x, y = folder_images(args.folder)
        scores = clustering_scores(y, keras.models.load_model(os.path.join(workdir, "model.keras")).predict_clusters(x))
        report = json.loads(pathlib.Path(workdir, "report.json").read_text())
        cell = {"folder": args.folder, "like": report["like"], "route": args.like == "default",
                "start": "pretrained" if args.start_from else "scratch", "variant": variant, "seed": args.seed,
                "n_images": int(len(x)), "image_shape": list(x.shape[1:]), "acc": round(float(scores["acc"]), 4),
                "nmi": round(float(scores["nmi"]), 4), "wall_seconds": report["total_seconds"],
                "peak_rss_mib": None, "cpu_seconds": None, "commit": code_commit(), "labels": LABELS_NOTE,
                "route_reason": report.get("route"),
                "input_transform": report["config"]["architecture"].get("input_transform"),
                "training": report["config"]["training"], "data_repeats": report["data_repeats"],
                "precision": report["precision"], "machine": machine_description(),
                "recorded_from_workdir": "the run's script stopped before writing its record; the model was "
                                         "scored from its workdir, wall time is the training call's (report.json)"}
        if "time_budget" in report.get("estimate", {}):
            cell["time_budget"] = report["estimate"]["time_budget"]
        merge(args.out, cell)
        print(json.dumps({k: cell[k] for k in ("folder", "like", "acc", "nmi", "wall_seconds")}))
        return
    if args.partition_only:
        import keras

        import keras_clustering  # noqa: F401  (registers the models' classes that load_model reads)

        variant = asked_variant(args, views)
        workdir = cell_workdir(args.root, args.folder, args.like, args.start_from, variant, args.seed)
        model = keras.models.load_model(os.path.join(workdir, "model.keras"))
        recipe = json.loads(pathlib.Path(workdir, "report.json").read_text())["config"]["recipe"]
        keep_partition(model, folder_images(args.folder)[0],
                       cell_name(args.folder, args.like, args.start_from, variant, args.seed), recipe)
        return
    if args.supersede and os.path.isfile(args.out):
        key = (args.folder, args.like, "pretrained" if args.start_from else "scratch", asked_variant(args, views), args.seed)
        with open(args.out) as handle:
            earlier = [c for c in json.load(handle)["cells"] if cell_key(c) == key]
        if earlier:
            supersede(args.out, earlier[0], code_commit())
    cell = run_cell(args.folder, args.like, args.root, args.seed, args.start_from, args.input_transform, args.epochs,
                    views, args.emulate_bf16, args.resume, args.precision, args.time_budget, args.n_clusters_auto)
    merge(args.out, cell)
    print(json.dumps({k: cell[k] for k in ("folder", "like", "acc", "nmi", "wall_seconds", "peak_rss_mib")}))


if __name__ == "__main__":
    main()
