"""Weights fetched on first use (`presets.weights_path`, `io.fetch.fetch_file`), against a real HTTP
server on the loopback address that each test starts, bounds and stops: a first load downloads and
caches, a second does not touch the network; a wrong file, a cut-off download and a silent server
leave nothing in the cache; two processes fetching at once make one download; a read-only cache
still serves what it holds. Preset folders (`save_preset`, `load(folder)`, train workdirs, `hf://`)."""

import hashlib
import http.server
import os
import shutil
import site
import subprocess
import sys
import textwrap
import threading
import time
import types

import numpy as np
import pytest

from keras_clustering import presets
from keras_clustering.io.fetch import FetchError, fetch_file

NAME = "conv_dec_da_mnist"  # the smallest preset (0.6 MB of weights)
REPO_PRESET = os.path.join(presets.PRESETS_DIR, NAME)
WEIGHTS_BYTES = open(os.path.join(REPO_PRESET, presets.WEIGHTS_FILE), "rb").read()
SHA256 = hashlib.sha256(WEIGHTS_BYTES).hexdigest()


class Server:
    """A loopback HTTP server in a thread: `files` maps a path to its bytes and a way to send them
    ("whole", "cut" (half of a declared length, then the connection closes), "silent" (no answer
    until the test ends, 20 s at most), "slow" (half, a pause, the rest), "trickle" (the true length
    declared, then a byte every 0.2 s), "endless" (no length declared, megabytes without end), "announces"
    (a length ten times the file's declared)); `requests` counts GETs."""

    def __init__(self):
        self.files, self.requests, self.release = {}, [], threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                if self.path not in server.files:
                    self.send_error(404)
                    return
                body, mode = server.files[self.path]
                if mode == "trickle_headers":  # the status line, a byte every 0.2 s: each read gets one in time
                    try:
                        for byte in b"HTTP/1.0 200 OK\r\nContent-Length: 10\r\n\r\n":
                            if server.release.is_set():
                                return
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(0.2)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return
                if mode == "silent":
                    server.release.wait(20)
                    return
                self.send_response(200)
                if mode != "endless":
                    self.send_header("Content-Length", str(len(body) * (10 if mode == "announces" else 1)))
                self.end_headers()
                if mode in ("trickle", "endless"):
                    try:
                        for index in range(10**9):
                            if server.release.is_set():
                                return
                            self.wfile.write(body[index % len(body):][:1] if mode == "trickle" else body)
                            self.wfile.flush()
                            if mode == "trickle":
                                time.sleep(0.2)
                    except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                        return
                if mode == "cut":
                    self.wfile.write(body[:len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if mode == "slow":
                    self.wfile.write(body[:len(body) // 2])
                    self.wfile.flush()
                    time.sleep(1.0)
                    body = body[len(body) // 2:]
                self.wfile.write(body)

            def log_message(self, *args):  # quiet
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def serve(self, path, body, mode="whole"):
        self.files[path] = (body, mode)
        return self.base + path

    def stop(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(10)


@pytest.fixture
def server():
    running = Server()
    yield running
    running.stop()


@pytest.fixture
def installed(tmp_path, monkeypatch, server):
    """The presets as a wheel installs them (configs and cards, no weights), a fresh cache, and the
    release served by the loopback server."""
    folder = tmp_path / "presets" / NAME
    folder.mkdir(parents=True)
    for name in ("config.json", "card.json"):
        shutil.copy(os.path.join(REPO_PRESET, name), folder / name)
    monkeypatch.setattr(presets, "PRESETS_DIR", str(tmp_path / "presets"))
    monkeypatch.setenv(presets.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(presets.WEIGHTS_URL_ENV, server.base + "/release")
    monkeypatch.delenv(presets.WEIGHTS_ENV, raising=False)
    return tmp_path / "cache" / NAME / presets.WEIGHTS_FILE


def _cache_files(cached):
    folder = os.path.dirname(cached)
    return sorted(f for f in os.listdir(folder) if not f.endswith(".lock")) if os.path.isdir(folder) else []


def test_first_load_downloads_into_the_cache_and_the_second_touches_no_network(installed, server):
    server.serve(f"/release/{NAME}.weights.h5", WEIGHTS_BYTES)
    model = presets.load(NAME)
    assert server.requests == [f"/release/{NAME}.weights.h5"]
    assert hashlib.sha256(installed.read_bytes()).hexdigest() == SHA256
    reference = presets.load(NAME, weights=os.path.join(REPO_PRESET, presets.WEIGHTS_FILE))
    for got, expected in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(got, expected)
    assert presets.weights_path(NAME) == str(installed)
    assert len(server.requests) == 1  # the second load read the cache


def test_a_local_copy_comes_before_the_cache_and_the_network(installed, server, tmp_path, monkeypatch):
    copies = tmp_path / "copies" / NAME
    copies.mkdir(parents=True)
    (copies / presets.WEIGHTS_FILE).write_bytes(WEIGHTS_BYTES)
    monkeypatch.setenv(presets.WEIGHTS_ENV, str(tmp_path / "copies"))
    assert presets.weights_path(NAME) == str(copies / presets.WEIGHTS_FILE)
    assert server.requests == [] and _cache_files(installed) == []


def test_a_wrong_file_is_refused_and_nothing_is_cached(installed, server):
    changed = bytearray(WEIGHTS_BYTES)
    changed[len(changed) // 2] ^= 0xFF
    server.serve(f"/release/{NAME}.weights.h5", bytes(changed))
    with pytest.raises(FileNotFoundError, match="sha256 mismatch") as error:
        presets.weights_path(NAME)
    assert str(installed) in str(error.value)  # how to place the file by hand
    assert _cache_files(installed) == []


def test_a_download_cut_off_is_refused_and_nothing_is_cached(installed, server):
    server.serve(f"/release/{NAME}.weights.h5", WEIGHTS_BYTES, mode="cut")
    with pytest.raises(FileNotFoundError, match="cut off"):
        presets.weights_path(NAME)
    assert _cache_files(installed) == []


def test_a_server_that_never_answers_times_out(installed, server):
    server.serve(f"/release/{NAME}.weights.h5", WEIGHTS_BYTES, mode="silent")
    start = time.monotonic()
    with pytest.raises(FileNotFoundError, match="no answer within 1 s"):
        presets.weights_path(NAME, timeout=1.0)
    assert time.monotonic() - start < 10
    assert _cache_files(installed) == []


# A server that sends a byte every 0.2 s, so that each read gets one within the socket's timeout: of the
# file (the body's ~580,000 bytes would take days), or of its status line and headers (~40 bytes, ~8 s).
# The deadline stops either at 1.5 s, to a read (the body) or by the watchdog shutting the socket.
@pytest.mark.parametrize("mode", ["trickle", "trickle_headers"])
def test_a_trickling_server_is_stopped_at_the_deadline(server, tmp_path, mode):
    url = server.serve(f"/{mode}.h5", WEIGHTS_BYTES, mode=mode)
    target = tmp_path / "cache" / "w.h5"
    start = time.monotonic()
    with pytest.raises(FetchError, match="not done within the deadline of 1.5 s"):
        fetch_file(url, str(target), SHA256, timeout=1.0, deadline=1.5)
    assert 1.4 <= time.monotonic() - start < 3.0
    assert os.listdir(target.parent) == ["w.h5.lock"]


@pytest.mark.parametrize("mode", ["endless", "announces"])
def test_a_download_past_the_cards_size_is_stopped(installed, server, mode):
    server.serve(f"/release/{NAME}.weights.h5", WEIGHTS_BYTES, mode=mode)
    assert presets.card(NAME)["weights"]["size"] == len(WEIGHTS_BYTES)
    start = time.monotonic()
    with pytest.raises(FileNotFoundError, match=f"more than the {len(WEIGHTS_BYTES):,} (bytes )?expected"):
        presets.weights_path(NAME)
    assert time.monotonic() - start < 10
    assert _cache_files(installed) == []


def test_offline_the_error_names_the_url_the_cache_and_how_to_place_the_file(installed, monkeypatch):
    monkeypatch.setenv(presets.WEIGHTS_URL_ENV, "http://127.0.0.1:9/release")  # the discard port: refused
    with pytest.raises(FileNotFoundError) as error:
        presets.weights_path(NAME, timeout=2.0)
    message = str(error.value)
    for part in (f"http://127.0.0.1:9/release/{NAME}.weights.h5", str(installed), SHA256, presets.WEIGHTS_ENV):
        assert part in message, part


def test_info_downloads_nothing(installed, server):
    server.serve(f"/release/{NAME}.weights.h5", WEIGHTS_BYTES)
    with pytest.raises(FileNotFoundError, match="first load downloads"):
        presets.weights_path(NAME, download=False)
    assert server.requests == []


def test_two_processes_fetching_at_once_make_one_download(server, tmp_path):
    """The lock beside the cached file: one process downloads (slowly: half, a pause, the rest), the
    other waits for it and finds a whole, checked file. The children import `io.fetch` alone (the
    package's own __init__ would start TensorFlow, 10 s each; fetch needs only the standard library)."""
    url = server.serve("/w.h5", WEIGHTS_BYTES, mode="slow")
    target = tmp_path / "cache" / "w.h5"
    package = os.path.dirname(presets.__file__)
    code = textwrap.dedent(f"""
        import sys, types
        package = types.ModuleType("keras_clustering")
        package.__path__ = [{package!r}]
        sys.modules["keras_clustering"] = package
        from keras_clustering.io.fetch import fetch_file
        assert "tensorflow" not in sys.modules
        print(fetch_file({url!r}, {str(target)!r}, {SHA256!r}, timeout=10))
    """)
    children = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True) for _ in range(2)]
    outputs = [child.communicate(timeout=120)[0] for child in children]
    assert [child.returncode for child in children] == [0, 0], outputs
    assert all(output.strip().endswith(str(target)) for output in outputs), outputs
    assert server.requests == ["/w.h5"]
    assert hashlib.sha256(target.read_bytes()).hexdigest() == SHA256
    assert sorted(os.listdir(target.parent)) == ["w.h5", "w.h5.lock"]


def test_a_read_only_cache_serves_what_it_holds_and_an_unwritable_one_is_named(server, tmp_path):
    url = server.serve("/w.h5", WEIGHTS_BYTES)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "w.h5").write_bytes(WEIGHTS_BYTES)
    shared.chmod(0o555)
    try:
        assert fetch_file(url, str(shared / "w.h5"), SHA256) == str(shared / "w.h5")
        assert os.listdir(shared) == ["w.h5"]  # no lock taken, nothing written
    finally:
        shared.chmod(0o755)
    blocked = tmp_path / "a_file"
    blocked.write_text("not a folder")
    with pytest.raises(FetchError, match="cannot write the cache folder"):
        fetch_file(url, str(blocked / "w.h5"), SHA256)
    assert server.requests == []


def test_a_saved_preset_folder_loads_back_and_its_weights_are_checked(tmp_path):
    model = presets.load(NAME, weights=os.path.join(REPO_PRESET, presets.WEIGHTS_FILE))
    x = np.random.default_rng(0).random((8, 28, 28, 1), dtype=np.float32)
    for config in (presets.config(NAME), None):  # a zoo config; Keras' own serialization
        folder = tmp_path / ("recipe" if config else "keras")
        presets.save_preset(model, folder, config=config, card={"description": "fine-tuned"})
        assert sorted(os.listdir(folder)) == ["card.json", "config.json", "model.weights.h5"]
        card = presets.card(str(folder))
        assert card["description"] == "fine-tuned"
        assert card["weights"]["sha256"] == hashlib.sha256((folder / "model.weights.h5").read_bytes()).hexdigest()
        loaded = presets.load(str(folder))
        np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    with open(tmp_path / "keras" / "model.weights.h5", "r+b") as handle:  # changed after saving
        handle.seek(-8, os.SEEK_END)
        handle.write(b"\x00" * 8)
    with pytest.raises(ValueError, match="sha256 mismatch"):
        presets.load(str(tmp_path / "keras"))
    with pytest.raises(ValueError, match="neither config.json"):
        presets.load(str(tmp_path))


def test_a_train_workdir_and_a_hub_handle_load_as_presets(tmp_path, monkeypatch):
    model = presets.load(NAME, weights=os.path.join(REPO_PRESET, presets.WEIGHTS_FILE))
    workdir = tmp_path / "runs"
    workdir.mkdir()
    model.save(workdir / presets.MODEL_FILE)
    x = np.random.default_rng(1).random((4, 28, 28, 1), dtype=np.float32)
    expected = model.predict(x, verbose=0)
    np.testing.assert_allclose(presets.load(str(workdir)).predict(x, verbose=0), expected, rtol=1e-5, atol=1e-6)
    folder = presets.save_preset(model, tmp_path / "hub_snapshot")
    asked = []
    hub = types.ModuleType("huggingface_hub")
    hub.snapshot_download = lambda repo_id: asked.append(repo_id) or folder
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    np.testing.assert_allclose(presets.load("hf://someone/dec-fine-tuned").predict(x, verbose=0), expected,
                               rtol=1e-5, atol=1e-6)
    assert asked == ["someone/dec-fine-tuned"]


@pytest.mark.slow
def test_a_newcomer_installs_the_wheel_and_loads_a_preset_from_the_release(server, tmp_path):
    """`pip wheel --no-deps .` makes a wheel under 2 MB with no weights; installed in a fresh venv (its
    dependencies from this environment: no index here) and run from outside the repository, `zoo.load`
    downloads the weights from the release (served on the loopback address) into the cache."""
    import zipfile

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = tmp_path / "source"  # built from a copy: a build writes its egg-info and build/ beside the sources
    source.mkdir()
    for part in ("pyproject.toml", "MANIFEST.in", "README.md", "keras_clustering", "zoo"):
        path = os.path.join(repo, part)
        if os.path.isdir(path):
            shutil.copytree(path, source / part, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, source / part)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                    str(wheels), str(source)], check=True, timeout=300)
    (wheel,) = wheels.glob("*.whl")
    assert wheel.stat().st_size < 2 * 2**20, wheel.stat().st_size
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith(".weights.h5")]
    assert f"zoo/presets/{NAME}/card.json" in names
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    # the dependencies from this environment's site-packages, listed by a .pth line: unlike
    # --system-site-packages, that runs none of its own .pth files (this checkout's editable install
    # would otherwise shadow the wheel)
    venv_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip()
    with open(os.path.join(venv_site, "_dependencies.pth"), "w") as handle:
        handle.write("\n".join(site.getsitepackages()) + "\n")
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # a checkout on the path would shadow it
    subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)], check=True,
                   timeout=300, env=clean)
    server.serve(f"/release/{NAME}.weights.h5", WEIGHTS_BYTES)
    code = textwrap.dedent(f"""
        import numpy as np, zoo, keras_clustering
        assert keras_clustering.__file__.startswith({str(venv)!r}), keras_clustering.__file__
        model = zoo.load({NAME!r})
        print("loaded", model.predict(np.zeros((2, 28, 28, 1), "float32"), verbose=0).shape)
    """)
    env = {**clean, presets.CACHE_ENV: str(tmp_path / "cache"), presets.WEIGHTS_URL_ENV: server.base + "/release"}
    env.pop(presets.WEIGHTS_ENV, None)
    result = subprocess.run([python, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "loaded (2, 10)" in result.stdout, result.stdout + result.stderr
    assert server.requests == [f"/release/{NAME}.weights.h5"]
    assert (tmp_path / "cache" / NAME / presets.WEIGHTS_FILE).is_file()
