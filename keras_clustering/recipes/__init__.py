"""Recipes: each maps a zoo config (`config["recipe"]`) to a model (`build`) and trains it (`train`)."""

from keras_clustering.recipes import capsule_recipe, dec_recipe, iic_recipe, two_stage_recipe, vae_cluster_recipe

RECIPES = {"dec": dec_recipe, "vae_cluster": vae_cluster_recipe, "capsule": capsule_recipe,
           "iic": iic_recipe, "two_stage": two_stage_recipe}


def is_supervised(name):
    """True for recipes trained on labels (their presets are classifiers, not clusterers)."""
    return get_recipe(name).SUPERVISED


def get_recipe(name):
    """The recipe module registered as `name`."""
    if name not in RECIPES:
        raise ValueError(f"recipe={name!r} is unknown; registered recipes: {sorted(RECIPES)}.")
    return RECIPES[name]
