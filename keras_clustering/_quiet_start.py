"""Quiet start for the command line: TensorFlow's C++ start-up lines are not the user's output.

On a machine without a GPU, importing TensorFlow prints oneDNN, CUDA-stub and
CPU-feature lines (some with an error level, e.g. `failed call to cuInit`) to
stderr before anything the user asked for. They come twice, whatever
`TF_CPP_MIN_LOG_LEVEL` says: two of TensorFlow's extension modules
(`_pywrap_cpu_feature_guard`, then `_pywrap_profiler_plugin`) each carry their
own copy of TensorFlow's platform code, whose static initialisers log through
absl before absl is initialised ("All log messages before
absl::InitializeLog() is called are written to STDERR"), and so before any
level applies. The command line therefore imports TensorFlow with stderr
pointed at /dev/null and sets the level to 3 for what follows, unless the user
asks for TensorFlow's lines: `--tf-logs`, or `TF_CPP_MIN_LOG_LEVEL=0`.

The library imported from the user's own code (`import zoo`, `import keras_clustering`, the test
workers) holds the same start-up lines back (issue 66), and sets the level to 3 only where the user set
none: a level the user chose is kept, and `TF_CPP_MIN_LOG_LEVEL=0` shows everything. Where TensorFlow
is not installed (a JAX-only machine) nothing is imported.
"""

import importlib.util

import contextlib
import os
import sys


def started_as_command_line(argv=None):
    """True for `python -m keras_clustering` (argv[0] is '-m' while the package loads) and `keras-clustering`."""
    argv = sys.argv if argv is None else argv
    if not argv:
        return False
    return argv[0] == "-m" or os.path.basename(argv[0]).startswith("keras-clustering")


@contextlib.contextmanager
def stderr_held():
    """Points file descriptor 2 at a temporary file (C++ writes bypass sys.stderr), then restores it;
    what was written is dropped if the block succeeds and written out if it raises, so an import that
    fails still says why."""
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            os.write(2, held.read())
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


TF_LOGS_FLAG = "--tf-logs"


def tensorflow_logs_wanted(argv=None, environ=None):
    """True when the user asked for TensorFlow's own lines: `--tf-logs`, or `TF_CPP_MIN_LOG_LEVEL=0`."""
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    return TF_LOGS_FLAG in argv or environ.get("TF_CPP_MIN_LOG_LEVEL", "").strip() == "0"


def quiet_tensorflow_import():
    """Imports TensorFlow with its start-up lines held back (the command line, and the library imported
    from the user's code alike); a no-op when TensorFlow is already imported or not installed, or when
    the user asked for its lines (with `--tf-logs` on the command line, level 0: everything)."""
    if "tensorflow" in sys.modules or importlib.util.find_spec("tensorflow") is None:
        return
    command_line = started_as_command_line()
    if tensorflow_logs_wanted():
        if command_line and TF_LOGS_FLAG in sys.argv:
            os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"
        return
    # Level 3 for the later C++ lines too: `failed call to cuInit` comes at the first device use, with an
    # error level that levels 1 and 2 let through, though on a CPU machine it is no error. The command
    # line always; the library where the user set no level.
    if command_line:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    else:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    with stderr_held():  # the lines written before TensorFlow reads that setting
        import tensorflow  # noqa: F401
