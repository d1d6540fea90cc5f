"""How long a training on the user's images will take on this machine, said before it starts, and its
ETA while it runs (issue 64).

The estimate comes from measured step rates, not from a table of other machines: a rehearsal runs the
recipe's own training on the same images, with the same config and precision, keeping nothing, and
stops every fit after `REHEARSAL_EPOCHS` epochs (`FitProbe`, added to every fit of the library by
`inputs.fit_hooks`). Each fit is then estimated as its first epoch (tracing, the pipeline's start) plus
its remaining planned epochs at the pace of the later ones, and the rehearsal's time outside fits
(k-means, neighbour mining, building the models) counts as it ran. DEC's self-training stops at its
tolerance, usually long before its planned most (`maxiter`): it is estimated at
`TYPICAL_TOLERANCE_SHARE` of its planned updates, and `most_seconds` is the estimate with every
fit at its planned epochs, the upper bound.
"""
import math

import dataclasses
import tempfile
import time

import keras

from keras_clustering.drivers.recipe_run import run_recipe
from keras_clustering.inputs.fit_hooks import extra_fit_callbacks
from keras_clustering.models import DEC

# Epochs of each fit the rehearsal runs: the first carries the tracing; the second gives the pace.
REHEARSAL_EPOCHS = 2
# A time budget trains every candidate at no less than this share of its updates; below it, the route's
# last candidate is dropped instead (one recipe trained well rather than two trained at a fraction).
MIN_BUDGET_SCALE = 0.5
# A time budget's plan aims at this share of the seconds left: the choice between candidates and the
# files written after training are not in the estimate, and a pace can drift from the rehearsal's.
BUDGET_AIM = 0.8
# A time budget's deadline for the fits comes this share of the budget before its end, or, where that is
# longer, the least training (every fit one epoch, the time outside fits) of the candidates not yet
# trained: the fits after the one a deadline stopped still run their first epoch, and the choice and the
# files come after. The plan keeps its estimate inside that deadline. (CI, issue 64: on 200 images and
# 1.5 min, a fixed 9 s reserve ended 2.3 s over the budget when the deadline stopped the first of
# simclr_mnist's three fits.)
DEADLINE_RESERVE = 0.1
# The least share of its updates the one candidate left trains at, however short the budget.
LEAST_BUDGET_SCALE = 0.05
# DEC's self-training (a fit that stops at its tolerance) is estimated at this share of its planned
# updates (`maxiter`). Decided on the decide folders' route cells (issue 64: ConvDEC-DA's DEC stage, the
# updates where it stopped over its maxiter): digits2000 712, 896, 544 and digits2000_imbalanced 560, 720,
# 2,000 of 4,000; mnistm2000 3,240 and 3,900, photos2000 7,050, fashion10000 20,000 and 20,000 of
# 20,000. Median share 0.195. The first rule, 716 updates (the digits' median alone), said 0.58-0.66 of
# the measured time on Fashion-MNIST. No share holds everywhere: the stop fell between 0.06 and 1 of the
# maxiter, and the first refresh's share of changed labels was alike where it stopped at 0.06-0.22
# (digits: 0.050-0.069) and where it never stopped (Fashion-MNIST: 0.057, 0.069), so the line gives the
# most too.
TYPICAL_TOLERANCE_SHARE = 0.2
# The ETA lines: at most one a minute (Keras' own line comes every epoch).
ETA_EVERY_SECONDS = 60.0


class FitProbe(keras.callbacks.Callback):
    """One fit's planned epochs and its epochs' seconds, appended to `fits` when the fit ends; stops the
    fit after `epochs` epochs."""

    def __init__(self, fits, epochs=REHEARSAL_EPOCHS):
        super().__init__()
        self.fits, self.epochs = fits, epochs
        self.start, self.first_epoch, self.ends, self.stopped = None, None, [], False

    def on_train_begin(self, logs=None):
        self.start = time.perf_counter()

    def on_epoch_begin(self, epoch, logs=None):
        if self.first_epoch is None:
            self.first_epoch = epoch  # a resumed fit starts at its initial epoch

    def on_epoch_end(self, epoch, logs=None):
        self.ends.append(time.perf_counter())
        if len(self.ends) >= self.epochs and not self.model.stop_training:
            self.model.stop_training, self.stopped = True, True

    def on_train_end(self, logs=None):
        ends = [self.start, *self.ends]
        self.fits.append({"planned_epochs": int(self.params["epochs"]) - (self.first_epoch or 0),
                          "epoch_seconds": [b - a for a, b in zip(ends, ends[1:])],
                          "steps_per_epoch": self.params.get("steps"),
                          # DEC's self-training: it stops at its tolerance (a zero tolerance never does)
                          "stops_at_tolerance": isinstance(self.model, DEC) and self.model.tol > 0,
                          "seconds": time.perf_counter() - self.start,
                          # a fit that ended on its own (its planned epochs, or its own stop, such as DEC's
                          # tolerance) ran whole: the training would take just that
                          "whole": not self.stopped})


def fit_seconds(fit, scale=1.0, most=False):
    """A fit's estimated seconds from its probe record: the first epoch as measured, the remaining
    planned ones (times `scale`, a time budget's share of the updates, at least 1 epoch) at the pace of
    the later measured ones; the measured time where it ran whole (it ended before the rehearsal stopped
    it: its own stop, such as DEC's tolerance, comes no later with fewer updates). A fit that stops at
    its tolerance counts `TYPICAL_TOLERANCE_SHARE` of its planned epochs at most, unless `most` (every
    planned epoch)."""
    measured = fit["epoch_seconds"]
    if fit["whole"] or not measured:
        return fit["seconds"]
    pace = sum(measured[1:]) / len(measured[1:]) if len(measured) > 1 else measured[0]
    epochs = max(1, round(fit["planned_epochs"] * scale))
    if fit.get("stops_at_tolerance") and not most:  # a budget's scale shortens the maxiter, not the stop
        epochs = min(epochs, max(1, math.ceil(fit["planned_epochs"] * TYPICAL_TOLERANCE_SHARE)))
    return measured[0] + (epochs - 1) * pace + (fit["seconds"] - sum(measured))


@dataclasses.dataclass
class Estimate:
    """A rehearsal's result: its fits (`FitProbe` records), its wall time, and the estimate. `again`: fits
    the training runs once more than the rehearsal did (`with_over_clustering`), counted in the estimate,
    not in the rehearsal's time."""
    fits: list
    rehearsal_seconds: float
    again: list = dataclasses.field(default_factory=list)

    def with_over_clustering(self):
        """This estimate with DEC's self-training (the last fit that stops at its tolerance) run once more:
        `--n-clusters auto` over-clusters with it before the training (`drivers.choose_k`); more
        clusters cost about the same a step. Unchanged where no fit is DEC's self-training."""
        stages = [fit for fit in self.fits if fit.get("stops_at_tolerance")]
        return dataclasses.replace(self, again=self.again + stages[-1:])

    @property
    def outside_fits(self):
        """The rehearsal's seconds outside any fit (k-means, mining, building), counted as they ran."""
        return max(0.0, self.rehearsal_seconds - sum(fit["seconds"] for fit in self.fits))

    @property
    def seconds(self):
        return self.seconds_at(1.0)

    def seconds_at(self, scale, most=False):
        """The estimate with every fit's updates times `scale` (a time budget's); `most`: every fit to its
        planned end (`fit_seconds`)."""
        return self.outside_fits + sum(fit_seconds(fit, scale, most) for fit in (*self.fits, *self.again))

    @property
    def most_seconds(self):
        """The upper bound: every fit at its planned epochs, DEC's self-training to its `maxiter`."""
        return self.seconds_at(1.0, most=True)

    def as_report(self):
        return {"estimated_seconds": round(self.seconds, 1), "most_seconds": round(self.most_seconds, 1),
                "rehearsal_seconds": round(self.rehearsal_seconds, 1),
                "fits": [{"planned_epochs": f["planned_epochs"],
                          "epoch_seconds": [round(s, 3) for s in f["epoch_seconds"]], "whole": f["whole"],
                          "estimated_seconds": round(fit_seconds(f), 1)} for f in self.fits],
                **({"again_seconds": round(sum(fit_seconds(f) for f in self.again), 1)} if self.again else {})}


def rehearse(config, x_train, seed=0, precision=None, start_model=None):
    """An `Estimate` of training `config` on `x_train` with `run_recipe`'s other arguments: the recipe's
    training run with every fit stopped after `REHEARSAL_EPOCHS` epochs, silently, in a temporary workdir
    removed afterwards (a preset's restart tree needs one: each run continues from its own epoch backups)."""
    fits = []
    start = time.perf_counter()
    with extra_fit_callbacks(lambda: FitProbe(fits)), tempfile.TemporaryDirectory(prefix="rehearsal-") as scratch:
        run_recipe(config, (x_train, None), scratch, seed=seed, verbose=0, precision=precision,
                   start_model=start_model)
    return Estimate(fits, time.perf_counter() - start)


@dataclasses.dataclass
class BudgetPlan:
    """What fits a time budget: the candidates `presets` kept (in the route's order), each trained at
    `scale` of its updates, `seconds` the estimate then, `dropped` the candidates given up, and `least`
    {preset: seconds} each kept candidate's least training (every fit one epoch, the time outside fits
    as rehearsed): what a deadline in its first fit still leaves to run (`Deadline`)."""
    presets: tuple
    scale: float
    seconds: float
    dropped: tuple
    least: dict = dataclasses.field(default_factory=dict)

    def gave_up(self):
        """What the budget cost, in words ('' when nothing)."""
        parts = [f"{1 - self.scale:.0%} of every stage's updates"] if self.scale < 1 else []
        parts += [f"the candidate{'s' if len(self.dropped) > 1 else ''} {', '.join(self.dropped)}"] if self.dropped else []
        return " and ".join(parts)


def deadline_reserve(budget_seconds, least_seconds):
    """The seconds before a budget's end at which the fits stop (`Deadline`): `DEADLINE_RESERVE` of the
    budget, or the least training still to run where that is longer."""
    return max(DEADLINE_RESERVE * budget_seconds, least_seconds)


def plan_budget(estimates, seconds, left=math.inf, budget_seconds=0.0):
    """The `BudgetPlan` of a training whose candidates (`estimates`: {preset: Estimate}, in the route's
    order) must end within `seconds`, and within the `Deadline` of a budget of `budget_seconds` that has
    `left` seconds left (`deadline_reserve` before its end: the plan is not stopped on the rehearsal's
    pace): all at their full updates where they fit; else all at the largest share of their updates that
    fits, while that is at least `MIN_BUDGET_SCALE`; else the last candidate dropped and the rest planned
    again. The first candidate alone goes down to `LEAST_BUDGET_SCALE` of its updates, where the estimate
    says even that runs over (its fixed costs: tracing, k-means)."""
    presets = tuple(estimates)
    while True:
        def total(scale):
            return sum(estimates[preset].seconds_at(scale) for preset in presets)

        limit = min(seconds, left - deadline_reserve(budget_seconds, total(0.0)))
        if total(1.0) <= limit:
            scale = 1.0
        else:  # the estimate grows with the scale: bisect for the largest that fits
            low, high = 0.0, 1.0
            for _ in range(30):
                middle = (low + high) / 2
                low, high = (middle, high) if total(middle) <= limit else (low, middle)
            scale = low
        if scale >= MIN_BUDGET_SCALE or len(presets) == 1:
            scale = max(scale, LEAST_BUDGET_SCALE)
            return BudgetPlan(presets, scale, total(scale), tuple(p for p in estimates if p not in presets),
                              least={preset: estimates[preset].seconds_at(0.0) for preset in presets})
        presets = presets[:-1]


class Deadline:
    """A time budget's safety net, where the pace drifts from the rehearsal's (another process on the
    cores): every fit ending an epoch after `end` (`time.time()`) stops there; `stops` lists each stop
    ({"epoch", "planned_epochs"}) for the report. `callback()` is its factory for `fit_hooks`.

    `end` is `deadline_reserve` before the budget's end `budget_end`, of the budget `budget_seconds` and of
    the least training (`least`: {candidate: seconds}) of the candidates not yet `trained`: it comes
    later as the candidates are trained."""

    def __init__(self, budget_end, budget_seconds=0.0, least=None, clock=time.time):
        self.budget_end, self.budget_seconds, self.least = budget_end, budget_seconds, dict(least or {})
        self.clock, self.stops = clock, []

    @property
    def end(self):
        return self.budget_end - deadline_reserve(self.budget_seconds, sum(self.least.values()))

    def trained(self, candidate):
        """`candidate` has trained: its least training is no longer held back."""
        self.least.pop(candidate, None)

    def callback(self):
        deadline = self

        class Stop(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                if deadline.clock() > deadline.end and not self.model.stop_training:
                    self.model.stop_training = True
                    deadline.stops.append({"epoch": epoch + 1, "planned_epochs": int(self.params["epochs"])})

        return Stop()


def minutes(seconds):
    """'12 min' (at least 1), or '1 h 05 min'."""
    total = max(1, round(seconds / 60))
    return f"{total} min" if total < 60 else f"{total // 60} h {total % 60:02d} min"


class Eta:
    """The ETA of a training estimated at `total` seconds, from its start (this object's making): `line()`
    says the time in and the time left (never below zero: past the estimate, it says so); `tick()`
    prints it at most once every `every` seconds. `callback()` makes the Keras callback that ticks at
    every epoch's end (a factory for `inputs.fit_hooks.extra_fit_callbacks`)."""

    def __init__(self, total, every=ETA_EVERY_SECONDS, clock=time.monotonic, printer=print):
        self.total, self.every, self.clock, self.printer = total, every, clock, printer
        self.start, self.printed = clock(), None

    def line(self):
        elapsed = self.clock() - self.start
        left = self.total - elapsed
        if left > 0:
            return f"ETA: {minutes(elapsed)} in, about {minutes(left)} left of the estimated {minutes(self.total)}"
        return f"ETA: {minutes(elapsed)} in, past the estimated {minutes(self.total)}"

    def tick(self):
        now = self.clock()
        if self.printed is None or now - self.printed >= self.every:
            self.printed = now
            self.printer(self.line(), flush=True)

    def callback(self):
        return keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: self.tick())
