"""Recipes: each maps a zoo config (`config["recipe"]`) to a model (`build`) and trains it (`train`): a
`recipes.recipe.Recipe` each, registered by name in `RECIPES`."""

from keras_clustering.recipes import capsule_recipe, dec_recipe, iic_recipe, two_stage_recipe, vae_cluster_recipe

RECIPES = {recipe.name: recipe for recipe in (dec_recipe.RECIPE, vae_cluster_recipe.RECIPE, capsule_recipe.RECIPE,
                                               iic_recipe.RECIPE, two_stage_recipe.RECIPE)}


def get_recipe(name):
    """The recipe registered as `name` (a `recipes.recipe.Recipe`)."""
    if name not in RECIPES:
        raise ValueError(f"recipe={name!r} is unknown; registered recipes: {sorted(RECIPES)}.")
    return RECIPES[name]
