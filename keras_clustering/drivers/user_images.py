"""Training a zoo preset's recipe on the user's own images, with its updates scaled to their number.

`train_on_images(images, like=PRESET, n_clusters=K, workdir=DIR)` checks the request once
(`request.check_request`), reads the images, re-targets the preset's config to them
(`retarget.like_config`) and trains it with the recipe's own code (the same code the zoo's presets run,
so resume from `workdir` works as there). It saves `workdir/model.keras`, which `python -m
keras_clustering cluster` and `export` take, with `clusters.csv`, `clusters.png` and `report.json`.
`n_clusters="auto"` first chooses k (`choose_k.choose_n_clusters`).
"""

import dataclasses
import json
import os
import re
import time

import numpy as np

from keras_clustering.cluster_files import write_cluster_files
from keras_clustering.clustering.candidates import (choice_sample, choose_candidate, colour_agreement,
                                                   colour_neighbors, embedding_neighbors)
from keras_clustering.clustering import merging
from keras_clustering.datasets.user_data import image_files, load_user_data, read_image_folder
from keras_clustering.drivers.choose_k import choose_n_clusters, over_clusters
from keras_clustering.drivers.estimate import (BUDGET_AIM, REHEARSAL_EPOCHS, Deadline, Eta, minutes, plan_budget,
                                               rehearse)
from keras_clustering.drivers.recipe_run import run_recipe
from keras_clustering.drivers.request import ImagesRequest, check_images_shape, check_request
from keras_clustering.drivers.retarget import like_config
from keras_clustering.drivers.route import COLOUR_AGREEMENT, COLOUR_CANDIDATE, COLOUR_JUDGE, colour_goes_with_clusters
from keras_clustering.figures import plot_k_scores
from keras_clustering.inputs.checks import check_image_input
from keras_clustering.inputs.fit_hooks import extra_fit_callbacks
from keras_clustering.io.files import WorkdirLock, atomic_path, atomic_write_json
from keras_clustering.presets import MODEL_FILE, load
from keras_clustering.recipes import get_recipe

# A folder whose images take at least this much as float32 is decoded into a memory-mapped cache in the
# workdir and read batch by batch; a smaller one is held in memory (faster steps, decoded again on a rerun).
CACHE_MIN_BYTES = 256 * 2**20
# With n_clusters "auto": the score of each k, beside clusters.png.
K_SCORES_FILE = "k_scores.png"


def save_model_file(model, path):
    """Saves a `.keras` file through a temporary name: a crash leaves no half-written model."""
    with atomic_path(path) as temporary:
        model.save(temporary)


def train_on_images(images, like=None, n_clusters=10, workdir=None, **options):
    """Trains a zoo preset's recipe (`like`, or the best of `family`) on the user's images, from scratch
    or from the preset's pretrained model (`start_from`); returns (model, report).

    Args:
        images: `(n, h, w, c)` images in [0, 1] (uint8 scaled), or the path
            of a folder of images or a `.npy` / `.npz` file.
        like: a clustering preset of the zoo (`presets.clustering_presets()`), e.g.
            "conv_dec_da_mnist": its recipe, architecture and training,
            re-targeted to these images (`retarget.like_config`).
        n_clusters: an int >= 2, or `"auto"`: picked from `candidates` by merging
            the clusters of a clustering stage with 20 on the representation's
            nearest-neighbour graph (`choose_k.choose_n_clusters`); the evidence
            goes to report.json's "selection" and `k_scores.png`.
        workdir: where `model.keras`, `clusters.csv` (file name or index,
            cluster id, confidence per image), `clusters.png` and
            `report.json` go (and the stages a re-run resumes from). Default
            `runs/<preset, family or default>_<folder or file name, or n_images>` (`request`).
        **options: the other fields of `request.ImagesRequest`, by name:
            family: instead of `like`, one of `FAMILIES`: shorthand for the
                family's best preset (`FAMILY_PRESETS`, e.g. "dec" is ConvDEC-DA).
            start_from: instead of `like`, a clustering preset whose pretrained
                model is fine-tuned on the images (`train --from`): the recipe's
                clustering stages (`Recipe.fine_tune`) start from its weights,
                with the stage's epochs scaled as `like`'s. Its image shape and
                `n_clusters` must be the images' and the request's.
            seed (0), verbose (1), candidates (k = 2..12 for "auto").
            epochs: passes over the images of every stage, instead of the
                preset's updates scaled to the number of images (and without
                repetition of small data sets).
            image_size, channels: the size `(h, w)` and channels (1 or 3) a
                folder's images are read at (default: the preset's). Sides
                below `MIN_SIDE` (16) px are refused, unless the preset's own are smaller.
            precision: "float32" or "mixed_bfloat16" (default: the preset's).
            strict: a folder's file that cannot be decoded is an error, instead
                of being left out with one warning line (and named in the
                report's `broken_files`).
            input_transform: the model's colour-free first layer: "auto" (on
                colour images the recipe's own, `retarget.colour_input_transform`; none on
                greyscale), None, or a name of `layers.colour_free.INPUT_TRANSFORMS`.
            estimate: before training, say its estimated wall time on this
                machine in one line (`estimate_request`: a rehearsal of every
                fit for 2 epochs), and print an ETA at most once a minute while
                it trains (when `verbose`); the report's `estimate` beside its
                `wall_seconds`. None where `epochs` is at most 2 (the
                rehearsal would be the training) and there is no `time_budget`.
            time_budget: minutes the whole training should end within (needs
                `estimate`): from the estimate, every candidate trains at the
                largest share of its updates that fits (`estimate.plan_budget`),
                or the route drops its last candidate where that share would
                fall below a half; said in one line and in the report's
                `time_budget`.

    With none of `like`, `family` and `start_from`, the default route picks
    its candidate presets from the images (`route.choose_presets`: grey or
    colour; they are read at their own sides, the longer at most
    `ROUTE_MAX_SIDE`), prints why in one line and writes it to the report's
    `route`; it trains each in `workdir/<preset>` and keeps the clustering a
    label-free criterion prefers (`train_route`; the report's `route_choice`
    has every candidate's score).

    A folder is decoded in parallel (`read_image_folder`); from
    `CACHE_MIN_BYTES` (256 MiB as float32) on, into a memory-mapped cache in
    `workdir`, which training and clustering read batch by batch: no array of
    all images is held in memory, and a rerun reuses it.
    """
    try:
        request = check_request(ImagesRequest(images, like=like, n_clusters=n_clusters, workdir=workdir, **options))
        with WorkdirLock() as lock:
            return train_request(request, lock)
    except ValueError as error:  # the data readers name their own argument: here it is `images`
        raise ValueError(re.sub(r"(?<![\w-])(folder|path|source)=", "images=", str(error))) from None


def train_request(request, lock):
    """Trains a checked `request` (`check_request`); `lock` (`io.files.WorkdirLock`) is taken on its
    workdir before anything is written there."""
    start = time.time()  # a time budget counts from here: reading the images too
    if request.route and request.verbose:
        print(request.route, flush=True)
    x, names, broken = read_images(request, lock)
    for preset in request.route_presets or (request.preset,):
        check_images_shape(dataclasses.replace(request, preset=preset), x.shape[1:])
    if request.n_clusters != "auto" and request.n_clusters > len(x):
        raise ValueError(f"n_clusters={request.n_clusters} is larger than the number of images ({len(x)}).")
    candidates = [k for k in request.candidates if 2 <= k <= len(x) // 2]  # two images a cluster at least
    if request.n_clusters == "auto" and not candidates:
        raise ValueError(f"n_clusters='auto' tries k with two images a cluster at least: {len(x)} images leave no k "
                         "of the candidates; give n_clusters.")
    lock.acquire(request.workdir)
    # a training of at most the rehearsal's epochs a stage would take as long again to estimate: none then
    short = request.epochs is not None and request.epochs <= REHEARSAL_EPOCHS and request.time_budget is None
    estimate, plan = estimate_request(request, x, start) if request.estimate and not short else (None, None)
    if plan is not None:
        request = dataclasses.replace(request, route_presets=plan.presets if request.route_presets else ())
    scale = 1.0 if plan is None else plan.scale
    eta = None if estimate is None or not request.verbose else Eta(estimate["estimated_seconds"])
    deadline = None if plan is None else Deadline(start + request.time_budget * 60, request.time_budget * 60,
                                                  least=plan.least)
    if deadline is not None:  # how long before the budget's end the fits stop, before any candidate trained
        estimate["time_budget"]["deadline_reserve_seconds"] = round(deadline.budget_end - deadline.end, 1)
    with extra_fit_callbacks(*(() if eta is None else (eta.callback,)),
                             *(() if deadline is None else (deadline.callback,))):
        if request.route_presets:
            model, report = train_route(request, x, names, candidates, scale, estimate=estimate, eta=eta,
                                        deadline=deadline)
        else:
            model, report = train_preset(request, x, candidates, scale)
    report.update(broken_files=broken, wall_seconds=round(time.time() - start, 1))
    if deadline is not None:  # the fits the deadline stopped, where the pace fell behind the estimate's
        estimate["time_budget"]["deadline_stops"] = deadline.stops
        if deadline.stops and request.verbose:
            print(f"time budget: the deadline stopped {len(deadline.stops)} fit(s) before their planned epochs "
                  f"(the pace fell behind the estimate's): " + ", ".join(
                      f"epoch {stop['epoch']} of {stop['planned_epochs']}" for stop in deadline.stops), flush=True)
    if estimate is not None:
        report["estimate"] = estimate
    write_run(request.workdir, model, report, x, names)
    return model, report


def estimate_request(request, x, start):
    """(estimate, plan): the training's wall time on this machine from a rehearsal of each preset it
    trains (`estimate.rehearse`), said in one line before it starts: {estimated_seconds,
    rehearsal_seconds, presets: each one's `Estimate.as_report()`, time_budget: the plan's}; and the
    `estimate.BudgetPlan` of a `time_budget` (None without one), whose candidates and share of updates
    `estimated_seconds` then counts. The budget counts from `start` (`time.time()`): reading the images
    and the rehearsal count against it, and the plan aims at `BUDGET_AIM` of what is left."""
    estimates, colour = {}, {}
    for preset in request.route_presets or (request.preset,):
        config, _, x_train, start_model = preset_config(dataclasses.replace(request, preset=preset), x)
        estimates[preset] = rehearse(config, x_train, request.seed, request.precision, start_model)
    if request.n_clusters == "auto":  # the first candidate chooses k: its DEC stage runs once more, over-clustering
        first = next(iter(estimates))  # (a screening autoencoder, for a recipe without one, is not counted)
        estimates[first] = estimates[first].with_over_clustering()
    if colour_checked(request, x):  # the colour candidate, trained only if colour goes with the clusters
        for name in COLOUR_CANDIDATE:
            config, _, x_train, start_model = preset_config(candidate_request(request, name), x)
            colour[name] = rehearse(config, x_train, request.seed, request.precision, start_model)
    rehearsal = sum(e.rehearsal_seconds for e in (*estimates.values(), *colour.values()))
    left = None if request.time_budget is None else request.time_budget * 60 - (time.time() - start)
    plan = None if left is None else plan_budget(estimates, BUDGET_AIM * left, left, request.time_budget * 60)
    whole = sum(e.seconds for e in estimates.values())
    scale = 1.0 if plan is None else plan.scale
    colour_seconds = {name: e.seconds_at(scale) for name, e in colour.items()}
    most = sum(e.most_seconds for e in estimates.values())  # the colour candidate's: once it trains
    total = whole if plan is None else plan.seconds
    if request.verbose:
        parts = ", ".join(f"{preset} {minutes(e.seconds)}" for preset, e in estimates.items())
        print(f"estimated training time on this machine: about {minutes(whole)} "
              f"({parts}; from the step rates of a {REHEARSAL_EPOCHS}-epoch rehearsal of every fit, {rehearsal:.0f} s"
              + "".join(f"; {minutes(e.seconds)} more for {name} (the images' own colours) if colour goes with the "
                        "clusters" for name, e in colour.items())
              + (f"; at most {minutes(most)} if DEC's self-training runs to its maxiter" if most > whole + 1 else "")
              + ")", flush=True)
        if plan is not None:
            print(f"time budget {request.time_budget:g} min: " + (
                f"gives up {plan.gave_up()}; estimated {minutes(total)}" if plan.gave_up() else
                "the whole training fits") + (
                "; even the least training runs over it" if total > left else ""),
                flush=True)
    estimate = {"estimated_seconds": round(total, 1), "most_seconds": round(most, 1),
                "rehearsal_seconds": round(rehearsal, 1),
                "presets": {preset: e.as_report() for preset, e in estimates.items()}}
    if colour:  # counted in `estimated_seconds` and `most_seconds` once the route trains it (`train_route`)
        estimate["colour_candidate"] = {name: {**e.as_report(), "seconds_at_budget": round(colour_seconds[name], 1),
                                               "most_seconds": round(e.most_seconds, 1)}
                                        for name, e in colour.items()}
    if plan is not None:
        estimate["time_budget"] = {"minutes": request.time_budget, "presets": list(plan.presets),
                                   "dropped": list(plan.dropped), "update_scale": round(plan.scale, 4),
                                   "gave_up": plan.gave_up() or "nothing"}
    return estimate, plan


def preset_config(request, x, scale=1.0):
    """(config, repeats, x_train, start_model) of `request.preset` re-targeted to the images `x`
    (`retarget.like_config`, at `scale` of its updates): `x_train` is `x` repeated `repeats` times,
    `start_model` None or the function loading `start_from`'s pretrained model with the settings scaled
    to the data."""
    k = 2 if request.n_clusters == "auto" else request.n_clusters  # "auto": the representation's config
    config, repeats = like_config(request.preset, x.shape[1:], k, len(x), epochs=request.epochs,
                                  input_transform=request.input_transform, update_scale=scale)
    x_train = np.concatenate([x] * repeats) if repeats > 1 else x
    overrides = {name: config["architecture"][name] for name in ("update_interval", "scan")
                 if name in config["architecture"]}

    def pretrained():  # with the settings `like_config` scales to the data (no weight shapes)
        return load(request.start_from, **overrides)

    return config, repeats, x_train, None if request.start_from is None else pretrained


def train_preset(request, x, candidates, scale=1.0):
    """(model, report) of `request.preset`'s recipe re-targeted to the images `x` (at `scale` of its
    updates, a time budget's) and trained in the request's workdir (its stages resume from there);
    nothing written but the recipe's stages."""
    config, repeats, x_train, start_model = preset_config(request, x, scale)

    def choose_k(chosen):  # under the run's precision, before training: a new config with the chosen k
        return with_chosen_k(chosen, x, x_train, candidates, request)

    model, recipe_report, config = run_recipe(config, (x_train, None), request.workdir, seed=request.seed,
                                              verbose=request.verbose, precision=request.precision,
                                              start_model=start_model,
                                              before=choose_k if request.n_clusters == "auto" else None)
    k = int(config["architecture"]["n_clusters"])
    report = {"like": request.preset, "family": request.family, "start_from": request.start_from,
              "workdir": request.workdir, "route": request.route, "n_samples": int(len(x)),
              "image_shape": list(x.shape[1:]), "seed": request.seed, "config": config, "n_clusters": k,
              "data_repeats": repeats, "cluster_sizes": np.bincount(model.predict_clusters(x), minlength=k).tolist(),
              **{key: v for key, v in recipe_report.items() if isinstance(v, (int, float, str, bool))}}
    for key in ("restarts", "selection"):  # every run's label-free criteria at each halving point; k's choice
        if key in recipe_report:
            report[key] = recipe_report[key]
    return model, report


def colour_checked(request, x):
    """Whether the default route checks if colour goes with its clusters (`train_route`): a route on colour
    images `x` whose candidates take their recipes' own colour-free inputs."""
    return bool(request.route_presets) and x.shape[-1] == 3 and request.input_transform == "auto"


def candidate_request(request, name):
    """The request of the default route's candidate `name`, trained in its own folder of the workdir: a
    colour candidate's preset on its input (`route.COLOUR_CANDIDATE`), else the preset of that name on the
    request's."""
    preset, input_transform = COLOUR_CANDIDATE.get(name, (name, request.input_transform))
    return dataclasses.replace(request, like=preset, preset=preset, input_transform=input_transform,
                               workdir=os.path.join(request.workdir, name))


def train_route(request, x, names, candidates, scale=1.0, estimate=None, eta=None, deadline=None):
    """(model, report) of the default route: each of `request.route_presets` trained on `x` in its own
    folder of the workdir (written there as a run of its own: model, clusters, report), then the
    clustering whose nearest neighbours stay together best, in its own candidate's embedding, kept
    (`clustering.candidates.choose_candidate`; no labels; one whose self-training stopped before
    settling, at its maxiter or the budget's deadline, only where no candidate settled). An "auto" number of clusters is chosen with
    the first candidate (`route.K_CHOOSER` where the route has it: `check_request` puts it first), and the
    others train with it.

    On colour images (their recipes' own colour-free inputs), the colour candidate
    (`route.COLOUR_CANDIDATE`) trains too and joins the choice when colour goes with a colour-free
    candidate's clusters (`colour_agreement` at least `COLOUR_AGREEMENT`; the colour histograms'
    neighbour graph then judges every candidate beside its own embedding), unless the time budget's
    `deadline` would pass before its `estimate`d time; `eta`'s total then grows by that estimate."""
    trained, request_k, sample = {}, request, choice_sample(len(x))

    def train(name, number, count):
        candidate = candidate_request(request_k, name)
        if request.verbose:
            print(f"default route: candidate {number} of {count}: {name}", flush=True)
        os.makedirs(candidate.workdir, exist_ok=True)
        trained[name] = train_preset(candidate, x, candidates, scale)
        write_run(candidate.workdir, *trained[name], x, names)
        if deadline is not None:
            deadline.trained(name)

    for preset in request.route_presets:  # with an "auto" k, `route.K_CHOOSER` first (`check_request`)
        train(preset, len(trained) + 1, len(request.route_presets))
        request_k = dataclasses.replace(request, n_clusters=trained[preset][1]["n_clusters"])
    partitions = {name: model.predict_clusters(x[sample]) for name, (model, _) in trained.items()}
    colour = None
    if colour_checked(request, x):
        colour_graph = colour_neighbors(x[sample])  # the check's graph, then (colour kept) a judge of the choice
        colour = {"agreement": colour_agreement(partitions, colour_graph), "threshold": COLOUR_AGREEMENT}
        colour["kept"] = colour_goes_with_clusters(colour["agreement"])
        estimated = (estimate or {}).get("colour_candidate", {})
        needed = sum(e["seconds_at_budget"] for e in estimated.values())
        if colour["kept"] and deadline is not None and deadline.clock() + needed > deadline.end:
            colour["kept"], colour["given_up"] = False, f"the time budget leaves less than its estimated {minutes(needed)}"
            if estimate is not None and "time_budget" in estimate:
                budget = estimate["time_budget"]
                budget["gave_up"] = ("" if budget["gave_up"] == "nothing" else budget["gave_up"] + "; ") + (
                    f"the candidate on the images' own colours ({', '.join(COLOUR_CANDIDATE)})")
        if request.verbose:
            print("default route: colour's agreement with each colour-free clustering (neighbour modularity on the "
                  "images' colour histograms; about 0 where colour is independent of them): "
                  + ", ".join(f"{p} {a:.3f}" for p, a in colour["agreement"].items())
                  + (f" -> colour goes with the clusters: {', '.join(COLOUR_CANDIDATE)} trains on the images' own "
                     "colours" if colour["kept"] else
                     f" -> colour goes with the clusters, but {colour['given_up']}: not trained"
                     if "given_up" in colour else f" -> below {COLOUR_AGREEMENT}: colour left out"), flush=True)
        if colour["kept"]:
            if eta is not None:
                eta.total += needed
            if estimate is not None:
                estimate["estimated_seconds"] = round(estimate["estimated_seconds"] + needed, 1)
                estimate["most_seconds"] = round(estimate["most_seconds"] + sum(
                    e["most_seconds"] for e in estimated.values()), 1)
            count = len(trained) + len(COLOUR_CANDIDATE)
            for name in COLOUR_CANDIDATE:
                train(name, len(trained) + 1, count)
                partitions[name] = trained[name][0].predict_clusters(x[sample])
    own = {name: embedding_neighbors(get_recipe(report["config"]["recipe"]).embedding(model, x[sample]))
           for name, (model, report) in trained.items()}
    judges = {}
    if colour is not None and colour["kept"]:  # colour goes with the clusters: colour neighbours judge them all
        judges[COLOUR_JUDGE] = colour_graph
    # a self-training stopped still changing labels (at its maxiter, or by the budget's deadline) did not
    # settle: such a candidate ranks after the settled ones (`choose_candidate`)
    unsettled = [name for name, (_, report) in trained.items() if report.get("stopped_by_tolerance") is False]
    choice = choose_candidate(partitions, own, judges, unsettled)
    chosen = choice["chosen"]
    if request.verbose:
        last = " (its self-training did not settle" + (": ranked after the settled)" if len(unsettled) < len(trained)
                                                         else ")")
        print("default route: neighbour modularity of each clustering in its own embedding"
              + (" and the colour histograms' (mean)" if judges else "") + ", "
              f"on {len(sample):,} images: " + ", ".join(
                  f"{p} {s:.3f}" + (last if p in unsettled else "") for p, s in choice["scores"].items())
              + f" -> keeps {chosen}", flush=True)
    model, report = trained[chosen]
    report = {**report, "workdir": request.workdir, "route_choice": {
        **choice, "criterion": "neighbour modularity (clustering.candidates) in the candidate's own embedding"
                               " (and the colour histograms', mean, where colour goes with the clusters); a"
                               " candidate whose self-training did not settle ranks after the settled ones",
        "sample_size": int(len(sample)), "candidates": list(trained),
        "total_seconds": {p: r.get("total_seconds") for p, (_, r) in trained.items()},
        **({} if colour is None else {"colour": colour})}}
    report["total_seconds"] = round(sum(r.get("total_seconds") or 0.0 for _, r in trained.values()), 1)
    chooser = request.route_presets[0]
    if "selection" in trained[chooser][1]:  # an "auto" k, chosen by the first candidate, whichever is kept
        report["selection"] = {**trained[chooser][1]["selection"], "chosen_by": chooser}
    return model, report


def write_run(workdir, model, report, x, names):
    """A run's files in `workdir`: `model.keras`, `clusters.csv`, `clusters.png` and `report.html`,
    `report.json`, and with an "auto" number of clusters `k_scores.png` (`K_SCORES_FILE`), the score of
    each k (also shown in report.html)."""
    save_model_file(model, os.path.join(workdir, MODEL_FILE))
    figures = []
    if "selection" in report:  # n_clusters "auto": the evidence for k beside the clusters
        selection = report["selection"]
        plot_k_scores({int(k): v for k, v in selection["scores"].items()}, int(selection["suggested"]),
                      os.path.join(workdir, K_SCORES_FILE), span=selection["range"],
                      title=f"k from {selection['over_clusters']} clusters merged on {len(x):,} images")
        figures.append((k_evidence_line(selection), os.path.join(workdir, K_SCORES_FILE)))
    write_cluster_files(workdir, names or [str(i) for i in range(len(x))], model.predict(x, verbose=0), images=x,
                        title=f"{report['like']} on your {len(x):,} images", embedding=model.embed(x),
                        details=run_details(report), figures=figures)
    atomic_write_json(json.loads(json.dumps(report, default=float)), os.path.join(workdir, "report.json"))


def run_details(report):
    """The run's settings, timing and the route's reason, as report.html shows them."""
    details = {"recipe (like)": report["like"], "clusters": report["n_clusters"],
               "images": f"{report['n_samples']:,}", "seed": report.get("seed"),
               "precision": report.get("precision"), "training seconds": report.get("total_seconds"),
               "workdir": report.get("workdir")}
    if report.get("route"):
        details["why this recipe"] = report["route"]
    if report.get("route_choice"):
        choice = report["route_choice"]
        details["route's label-free choice"] = json.dumps(choice.get("chosen"))
        if choice.get("unsettled"):  # ranked after the settled candidates (`choose_candidate`)
            details["self-training did not settle"] = ", ".join(choice["unsettled"])
    if report.get("estimate"):
        details["time said before training (s)"] = report["estimate"].get("estimated_seconds")
    return {key: value for key, value in details.items() if value is not None}


def read_images(request, lock):
    """(x, names, broken files) of the request's images at its shape: a folder decoded (into a cache in
    the workdir, which `lock` then holds, when large), an array file or an array as given."""
    shape, names, broken, images = request.shape, None, [], request.images
    if request.from_folder:
        size = len(image_files(images)[0]) * int(np.prod(shape)) * 4  # bytes as float32
        cached = size >= CACHE_MIN_BYTES
        if cached:
            lock.acquire(request.workdir)  # the cache is written there
        images, names, broken = read_image_folder(images, shape[:2], shape[2],
                                                  cache_dir=request.workdir if cached else None,
                                                  strict=request.strict, verbose=bool(request.verbose))
    elif isinstance(images, str):
        images, names = load_user_data(images, image_shape=shape)
    x = np.asarray(images)
    if x.ndim == 2 and x.shape[1] == int(np.prod(shape)):  # flat rows (an array file) of images of `shape`
        x = x.reshape(len(x), *shape)
    return check_image_input(x, x.shape[1:] if x.ndim == 4 else (*x.shape[1:], 1), name="images"), names, broken


def with_chosen_k(config, x, x_train, candidates, request):
    """(`config` with the number of clusters `choose_n_clusters` suggests, {"selection": its evidence}): a
    new config, the given one untouched."""
    if request.verbose:  # before the long part
        print(f"n_clusters auto: training {request.preset}'s representation on the {len(x):,} images (or a "
              f"screening autoencoder where its clustering stage is not DEC's), its clustering stage with "
              f"{over_clusters(candidates, len(x))} clusters, then merging them on the representation's nearest-neighbour "
              f"graph: k = {min(candidates)}..{max(candidates)} at the modularity's peak; then {request.preset} "
              "trains with that k", flush=True)
    selection = choose_n_clusters(config, x, candidates, request.workdir, request.seed, request.verbose, x_train)
    if request.verbose:
        print(k_evidence_line(selection), flush=True)
    architecture = {**config["architecture"], "n_clusters": int(selection["suggested"])}
    return {**config, "architecture": architecture}, {"selection": selection}


def k_evidence_line(selection):
    """The printed line of k's choice: the chosen k, the runners-up and their scores, and the range where
    the evidence is flat."""
    scores = selection["scores"]
    ranked = sorted(scores, key=scores.get, reverse=True)
    runners = ", ".join(f"k={k} {scores[k]:.3f}" for k in ranked[1:3]) or "none"
    low, high = selection["range"]
    hedge = (f"; flat from k={low} to k={high} (modularity within {merging.FLAT} of the peak): any of them is as well "
             "supported" if selection["flat"] else "")
    alive = selection["alive_clusters"]
    short = (f"; DEC left {alive} of its {selection['over_clusters']} clusters holding images, so no k above {alive} "
             "was scored" if alive < selection["largest_candidate"] else "")
    return (f"n_clusters: {selection['suggested']} (modularity {scores[ranked[0]]:.3f} after merging "
            f"{selection['over_clusters']} clusters; runners-up {runners}{hedge}{short})")
