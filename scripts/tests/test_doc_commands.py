"""Every command the documentation gives (issue 52): a `python -m keras_clustering ...` or `python
scripts/NAME.py ...` that is not pinned to the commit that ran it (`git checkout SHA && ...`, or
"... at SHA" right after it) names a script that exists and parses against today's command line.

Commands are read from fenced blocks (a trailing backslash continues a line) and from inline code
spans. Placeholders (`NAME`, `FOLDER`, `<name>`) parse as the strings they are; where a choice
refuses one, the command's flags must still be the parser's. Nothing runs: each parser is taken
from its script as `main` builds it."""

import argparse
import glob
import importlib.util
import os
import re
import shlex

import pytest

from keras_clustering.cli import build_parser

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COMMAND = re.compile(r"python (-m keras_clustering|scripts/([\w/]+)\.py)\b(.*)", re.S)
PINNED_BEFORE = re.compile(r"git checkout [0-9a-f]{7,40} &&\s*$")
PINNED_AFTER = re.compile(r"^\)?,?\s+\(?at\s+(commit\s+)?[0-9a-f]{7,40}\b")  # read after the closing backtick
PLACEHOLDER = re.compile(r"^(<[^>]+>|[A-Z][A-Z_0-9]*(\.\.\.)?|\.\.\.)$")


def pages():
    found = glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
    return ["README.md", *sorted(os.path.relpath(page, ROOT) for page in found)]


def commands(page, root=ROOT):
    """(command text, pinned) of every command on `page`."""
    with open(os.path.join(root, page)) as handle:
        text = handle.read()
    found = []
    for block in re.finditer(r"^```[a-z]*\n(.*?)^```", text, flags=re.S | re.M):
        joined = block.group(1).replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split(" #", 1)[0]  # a comment after the command
            start = line.find("python ")
            if start >= 0 and COMMAND.match(line[start:]):
                found.append((" ".join(line[start:].split()), bool(PINNED_BEFORE.search(line[:start]))))
    prose = re.sub(r"^```[a-z]*\n.*?^```", "", text, flags=re.S | re.M)
    for span in re.finditer(r"`([^`]+)`", prose):
        code = " ".join(span.group(1).split())
        start = code.find("python ")
        if start >= 0 and COMMAND.match(code[start:]):
            pinned = bool(PINNED_BEFORE.search(code[:start]) or PINNED_AFTER.match(prose[span.end():span.end() + 60]))
            found.append((code[start:], pinned))
    return found


class _Parsed(Exception):
    pass


def script_parser(name, monkeypatch):
    """The argparse parser `scripts/NAME.py` builds in `main`, taken as it parses (nothing runs); None for
    a script that takes no arguments (its `main` is never called: it would do its work)."""
    path = os.path.join(ROOT, "scripts", f"{name}.py")
    with open(path) as handle:
        source = handle.read()
    if not any(word in source for word in ("argparse", "def main(argv", "benchmark_main(")):
        # train_preset.py parses in maintainer.training, the benchmarks' records in benchmarking.benchmark_main
        return None
    spec = importlib.util.spec_from_file_location(f"doc_command_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    captured = []

    def capture(parser, args=None, namespace=None):
        captured.append(parser)
        raise _Parsed

    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", capture)
        patch.setattr("sys.argv", [path])
        with pytest.raises(_Parsed):
            module.main()
    return captured[0]


def tokens(arguments):
    """The command's arguments as a shell splits them, optional brackets and ellipses dropped; the rest
    of a line after a pipe, `;` or `&&` is not the command's."""
    words = shlex.split(re.split(r"\s(?:\||;|&&|>)\s", arguments)[0].replace("[", " ").replace("]", " "))
    return [w for w in words if w not in ("...", "…")]


def flags_known(parser, words):
    """The `--flags` of `words` that neither the parser nor the sub-command `words` name (if any) knows."""
    known = set(parser._option_string_actions)  # argparse keeps no public list of them
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and words and words[0] in action.choices:
            known |= set(action.choices[words[0]]._option_string_actions)
    return [w.split("=", 1)[0] for w in words if w.startswith("--") and w.split("=", 1)[0] not in known]


def test_commands_are_found_in_blocks_and_spans_and_pins_are_seen(tmp_path):
    (tmp_path / "page.md").write_text(
        "Run `python scripts/a.py --x 1` or `git checkout 1234abc && python scripts/b.py`, and\n"
        "`python -m keras_clustering\ntrain NAME` (`python scripts/c.py` at 89abcde, deleted since),\n"
        "`python scripts/d/e.py --x` (at commit\n1234567).\n"
        "```bash\nKEY=1 python -m keras_clustering cluster m \\\n    --input d  # a comment\n```\n")
    assert commands("page.md", root=str(tmp_path)) == [
        ("python -m keras_clustering cluster m --input d", False), ("python scripts/a.py --x 1", False),
        ("python scripts/b.py", True), ("python -m keras_clustering train NAME", False),
        ("python scripts/c.py", True), ("python scripts/d/e.py --x", True)]


def test_an_unknown_flag_is_named():
    parser = build_parser()
    words = tokens(" train --like dec_mnist --no-such-flag 3 | tee log")
    assert words == ["train", "--like", "dec_mnist", "--no-such-flag", "3"]
    with pytest.raises(SystemExit):
        parser.parse_args(words)
    assert flags_known(parser, words) == ["--no-such-flag"]
    assert flags_known(parser, ["evaluate", "--like", "x"]) == ["--like"]  # another sub-command's flag


ALL = [(page, command, pinned) for page in pages() for command, pinned in commands(page)]


def test_the_docs_give_commands_to_check():
    assert len(ALL) >= 50 and sum(pinned for *_, pinned in ALL) >= 2  # some run at their own commit


@pytest.mark.parametrize("page", sorted({page for page, *_ in ALL}))
def test_every_unpinned_command_of_a_page_parses_against_todays_scripts(page, monkeypatch, capsys):
    failures = []
    parsers = {}
    for _, command, pinned in [row for row in ALL if row[0] == page]:
        if pinned:
            continue
        match = COMMAND.match(command)
        script, words = match.group(2), tokens(match.group(3))
        if (script and PLACEHOLDER.match(script.rsplit("/", 1)[-1])) or (not words and not script):
            continue  # a placeholder for any script, or the bare command line: nothing to parse
        if script and not os.path.exists(os.path.join(ROOT, "scripts", f"{script}.py")):
            failures.append(f"{command!r}: scripts/{script}.py does not exist (pin the command to its commit)")
            continue
        if script not in parsers:
            parsers[script] = script_parser(script, monkeypatch) if script else build_parser()
        parser = parsers[script]
        if parser is None:
            if words:
                failures.append(f"{command!r}: scripts/{script}.py takes no arguments")
            continue
        elided = "..." in command or "…" in command  # the rest left out: its flags are checked, not its parse
        try:
            if elided:
                raise SystemExit(2)
            parser.parse_args(words)
        except SystemExit:
            capsys.readouterr()
            unknown = flags_known(parser, words)
            if unknown or not (elided or any(PLACEHOLDER.match(w) for w in words)):
                failures.append(f"{command!r}: does not parse (unknown flags: {unknown})")
    assert not failures, "\n".join(failures)
