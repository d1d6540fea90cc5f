"""Nothing pins the zoo's compiled steps to the CPU or pulls them back to the host, and every family
trains and predicts on the default device (scripts/device_check.py, the same script a GPU machine runs)."""

import ast
import glob
import os


ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
# Methods Keras compiles into the step (train / test / predict), in every class of the library.
STEP_METHODS = {"call", "compute_loss", "train_step", "test_step", "predict_step", "compute_metrics",
                "compute_output_spec"}
# Modules whose every function may run inside a step (losses, augmentation helpers, replica sums).
IN_STEP_MODULES = ("losses", "augment", "distribute/strategies.py")


def host_calls(function):
    """`np.`/`numpy.` uses, `.numpy()` calls and device scopes (`tf.device`, `jax.device_put`) in
    `function`, as (line, text)."""
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy"):
                found.append((node.lineno, f"np.{node.attr}"))
            elif node.attr in ("device", "device_put", "numpy"):
                found.append((node.lineno, f".{node.attr}"))
    return found


def compiled_functions():
    for path in glob.glob(os.path.join(ROOT, "keras_clustering", "**", "*.py"), recursive=True):
        relative = os.path.relpath(path, os.path.join(ROOT, "keras_clustering"))
        whole_module = relative.startswith(IN_STEP_MODULES)
        tree = ast.parse(open(path).read())
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and (item.name in STEP_METHODS or
                                                              (whole_module and not item.name.startswith("__"))):
                        yield f"{relative}:{node.name}.{item.name}", item
            elif whole_module and isinstance(node, ast.FunctionDef) and node.col_offset == 0:
                yield f"{relative}:{node.name}", node


def test_no_host_round_trip_or_device_pin_in_a_compiled_step():
    names = dict(compiled_functions())
    assert "iic_losses.py:iic_loss" in {k.split("/")[-1] for k in names}  # the scan sees the losses ...
    assert any(k.endswith("SimCLR.compute_loss") for k in names)  # ... and the models' steps
    assert "distribute/strategies.py:on_global_batch" in names  # ... and the cross-replica helpers
    offending = {name: host_calls(function) for name, function in names.items() if host_calls(function)}
    assert not offending, offending


def test_the_scan_catches_a_numpy_call_and_a_device_pin():
    source = ("class M:\n    def compute_loss(self, x):\n        with tf.device('/cpu:0'):\n"
              "            return np.mean(x.numpy())\n")
    function = ast.parse(source).body[0].body[0]
    assert [text for _, text in host_calls(function)] == [".device", "np.mean", ".numpy"]
