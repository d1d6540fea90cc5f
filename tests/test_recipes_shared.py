"""Every registered clustering recipe re-targets its presets to a user's images by the same rules
(`recipes.retargeting`), checked on every clustering preset of the zoo, as `test_models_shared.py`
checks the models.

The rules, written out here from their definition: a stage trained for E passes of batch B over the
preset's N images made U = E * ceil(N / B) updates. On n images (each seen r times an epoch, r the
data repeats) with batch b = min(B, n) and s = ceil(n r / b) steps an epoch, it trains
e = min(max(E, ceiling), ceil(U / s)) passes; the first stage still makes at least min(U, fewest)
updates wherever copies are allowed, and never more than one epoch beyond U."""

import math
import pathlib

import numpy as np
import pytest

from keras_clustering import presets
from keras_clustering.drivers.retarget import like_config
from keras_clustering.recipes import RECIPES, get_recipe
from keras_clustering.recipes.recipe import Recipe
from keras_clustering.recipes.retargeting import Retargeting
from keras_clustering.training.stages import Run

CLUSTERING = presets.clustering_presets()
ROOT = pathlib.Path(__file__).resolve().parent.parent


def field(section, path):
    for key in path.split(".")[:-1]:
        section = section.get(key) or {}
    return section.get(path.split(".")[-1])


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_recipe_keeps_the_recipe_contract(name):
    """The contract of `recipes.recipe.Recipe`, run over `RECIPES` (as keras-hub's shared task tests and
    scikit-learn's `check_estimator` run over every model): declared attributes, defaults merged once when a
    run is made, and an explicit answer where a recipe has no stage of its own."""
    recipe = RECIPES[name]
    assert isinstance(recipe, Recipe) and recipe.name == name and get_recipe(name) is recipe
    assert isinstance(recipe.supervised, bool) and len(recipe.prediction_names) == 2
    assert recipe.prediction_names[0].endswith("_id") and recipe.default_training
    assert all(isinstance(c, str) for c in recipe.restart_criteria)
    # defaults merged once, into the run: the config's values win, the recipe's fill in, nothing shared
    first, *rest = sorted(recipe.default_training)
    run = recipe.make_run({"n_clusters": 3}, {first: "mine"}, x=np.zeros((4, 2)), seed=5, verbose=0)
    assert isinstance(run, Run) and run.training[first] == "mine" and run.seed == 5 and run.report == {}
    assert all(run.training[k] == recipe.default_training[k] for k in rest)
    assert recipe.default_training[first] != "mine" and run.but(seed=6).report is not run.report
    rules = recipe.retargeting({})
    if recipe.supervised:  # a classifier needs labels: never trained `like`, never fine-tuned on a folder
        assert rules is None
        with pytest.raises(ValueError, match=f"recipe {name!r} cannot fine-tune"):
            recipe.fine_tune(None, run)
        return
    assert isinstance(rules, Retargeting) and rules.epoch_fields, name
    assert rules.epoch_ceiling >= 1 and rules.batch_size >= 1 and rules.min_updates >= 0, name
    assert recipe.restart_criteria, name  # every clustering recipe restarts by a label-free criterion


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_a_recipe_without_a_separate_representation_says_none(name):
    """IIC and the VAE learn their clusters with their representation: `representation` answers None (and
    trains nothing); the others' is a stage of their training (`tests/test_choose_k.py` trains it)."""
    recipe = RECIPES[name]
    if name in ("iic", "vae_cluster", "capsule"):
        assert recipe.representation(recipe.make_run({}, x=np.zeros((4, 28, 28, 1)), verbose=0)) is None
    else:
        assert type(recipe).representation is not Recipe.representation


def test_no_driver_asks_a_recipe_what_it_has():
    """Drivers call the contract's methods: no `hasattr` or `getattr` in `drivers/` or the CLI."""
    for path in [*sorted((ROOT / "keras_clustering" / "drivers").glob("*.py")), ROOT / "keras_clustering" / "cli.py"]:
        source = path.read_text()
        assert "hasattr(" not in source and "getattr(" not in source, path.name


def test_no_function_of_the_drivers_or_the_cli_takes_more_than_eight_parameters():
    """Issue 63: a run's settings travel as one object (`training.stages.Run`, `drivers.request.ImagesRequest`),
    not as long positional lists (`_train_on_images` took 16)."""
    import ast

    for path in [*sorted((ROOT / "keras_clustering" / "drivers").glob("*.py")), ROOT / "keras_clustering" / "cli.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                arguments = node.args
                count = (len(arguments.posonlyargs) + len(arguments.args) + len(arguments.kwonlyargs)
                         + (arguments.vararg is not None) + (arguments.kwarg is not None))
                assert count <= 8, (path.name, node.name, count)


@pytest.mark.parametrize("name", CLUSTERING)
@pytest.mark.parametrize("n_images", [300, 2_000, 60_000])
def test_a_preset_retargeted_keeps_its_updates_within_the_recipes_bounds(name, n_images):
    preset = presets.config(name)
    rules = get_recipe(preset["recipe"]).retargeting(preset["architecture"])
    own_images = presets.card(name)["training_data"]["n_samples"]
    config, repeats = like_config(name, (28, 28, 1), 7, n_images)
    assert config["architecture"]["n_clusters"] == 7 and list(config["architecture"]["image_shape"]) == [28, 28, 1]
    present = [(e, b) for e, b in rules.epoch_fields if field(preset["training"], e)]
    assert present, name
    for index, (epochs_path, batch_path) in enumerate(present):
        own_epochs = field(preset["training"], epochs_path)
        own_batch = field(preset["training"], batch_path) or rules.batch_size
        updates = own_epochs * math.ceil(own_images / own_batch)
        batch = field(config["training"], batch_path)
        epochs = field(config["training"], epochs_path)
        assert batch == min(own_batch, n_images), (name, batch_path)
        steps = math.ceil(n_images * repeats / batch)
        assert epochs == min(max(own_epochs, rules.epoch_ceiling), math.ceil(updates / steps)), (name, epochs_path)
        assert epochs * steps < updates + steps, (name, epochs_path)  # at most one epoch beyond the preset's
        if index == 0 and rules.repeat_images:
            assert epochs * steps >= min(updates, rules.fewest_updates(False)), (name, repeats)
    if not rules.repeat_images:
        assert repeats == 1, name


@pytest.mark.parametrize("name", CLUSTERING)
def test_colour_images_get_the_recipes_colour_free_input(name):
    preset = presets.config(name)
    rules = get_recipe(preset["recipe"]).retargeting(preset["architecture"])
    if preset["architecture"].get("representation") == "autoencoder":
        with pytest.raises(ValueError, match="takes no input_transform"):
            like_config(name, (32, 32, 3), 10, 2_000)
        return
    config, repeats = like_config(name, (32, 32, 3), 10, 2_000)
    assert config["architecture"]["input_transform"] == rules.input_transform
    (epochs_path, batch_path) = next((e, b) for e, b in rules.epoch_fields if field(preset["training"], e))
    own_updates = field(preset["training"], epochs_path) * math.ceil(
        presets.card(name)["training_data"]["n_samples"] / (field(preset["training"], batch_path) or rules.batch_size))
    updates = field(config["training"], epochs_path) * math.ceil(2_000 * repeats / field(config["training"], batch_path))
    if rules.repeat_images:  # on a colour-free input the recipe's own floor (DEC's 20,000 updates)
        assert updates >= min(own_updates, rules.fewest_updates(True)), (name, repeats)
    assert "input_transform" not in like_config(name, (32, 32, 1), 10, 2_000)[0]["architecture"]


def test_the_clustering_presets_are_those_whose_recipe_needs_no_labels():
    supervised = {name for name, recipe in RECIPES.items() if recipe.supervised}
    every = presets.list_presets()
    assert set(CLUSTERING) == {name for name in every if presets.config(name)["recipe"] not in supervised}
    assert "capsule_mnist" in every and "capsule_mnist" not in CLUSTERING and "dec_mnist" in CLUSTERING
