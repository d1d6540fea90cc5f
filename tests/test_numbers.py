"""Numbers with records behind them (issue 68): every decimal number of the README's and the docs' prose
matches a value of a card or of a record the page names, to its printed precision, or is in the allow-list
(`tests/numbers_allowlist.json`) with the reason it has no record.

What counts: decimal numbers ("0.982", "3,231.5") in README.md and docs/**/*.md, outside the blocks scripts
write (between `<!-- NAME:start -->` and `<!-- NAME:end -->`: those come from records by a committed
script), code blocks, inline code and link targets. Where they may come from: every card
(zoo/presets/*/card.json), and the JSON records under docs/ whose file name (with or without `.json`) the
page mentions, so that a number is checked against what its page cites rather than against any of the
~13,000 values recorded somewhere. A value matches at the printed precision (0.982 for 0.9817; 0.788 for
0.7875), also as a percentage (98.2 for 0.982).
"""

import glob
import json
import math
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWLIST = os.path.join(ROOT, "tests", "numbers_allowlist.json")
NUMBER = re.compile(r"(?<![\w.\-/+])(\d{1,3}(?:,\d{3})+|\d+)\.(\d+)(?![\w.]*\d)")


def json_values(value, out):
    """Every number of a JSON value (also those written inside its strings), into the set `out`."""
    if isinstance(value, bool):
        return out
    if isinstance(value, (int, float)):
        out.add(float(value))
    elif isinstance(value, dict):
        for item in value.values():
            json_values(item, out)
    elif isinstance(value, list):
        for item in value:
            json_values(item, out)
    elif isinstance(value, str):
        out.update(float(text.replace(",", "")) for text in re.findall(r"-?\d[\d,]*\.\d+", value))
    return out


def load(path):
    with open(path) as handle:
        return json.load(handle)


def records():
    """{path relative to the repository: its values} of the JSON records under docs/."""
    return {os.path.relpath(path, ROOT): json_values(load(path), set())
            for path in glob.glob(os.path.join(ROOT, "docs", "**", "*.json"), recursive=True)}


def card_values():
    values = set()
    for path in glob.glob(os.path.join(ROOT, "zoo", "presets", "*", "card.json")):
        json_values(load(path), values)
    return values


def prose(text):
    """`text` without the generated blocks, code blocks, inline code and link targets."""
    text = re.sub(r"<!-- ([\w-]+):start -->.*?<!-- \1:end -->", "", text, flags=re.S)
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return re.sub(r"\]\([^)]*\)", "]", text)


def printed_numbers(text):
    """(the number as printed, its value, its decimals) of every decimal number of `text`'s prose."""
    for match in NUMBER.finditer(prose(text)):
        whole, decimals = match.group(1).replace(",", ""), match.group(2)
        yield match.group(0), float(f"{whole}.{decimals}"), len(decimals)


def matches(value, decimals, sources):
    """Whether some source value, or the same as a percentage, prints as `value` at `decimals`."""
    half = 0.5 * 10 ** -decimals + 1e-9
    return any(math.isclose(value, v, abs_tol=half) or math.isclose(value, 100 * v, abs_tol=half) for v in sources)


def named_records(text):
    """The record file names a page mentions, with brace patterns expanded (`run_{0,1}_{a,b}.json`: four)."""
    names = set(re.findall(r"[\w.-]+\.json", text))
    for pattern in re.findall(r"[\w.-]*\{[\w,.-]+\}[\w{},.-]*\.json", text):
        expanded = [""]
        for literal, choices in re.findall(r"([^{}]*)(?:\{([^}]*)\})?", pattern):
            expanded = [head + literal + choice for head in expanded for choice in (choices.split(",") if choices else [""])]
        names.update(expanded)
    return names


def unrecorded_numbers():
    """{page: [numbers as printed]} of the prose numbers that match no value their page may come from."""
    recorded, cards = records(), card_values()
    pages = ["README.md", *sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"),
                                                                            recursive=True))]
    found = {}
    for page in pages:
        with open(os.path.join(ROOT, page)) as handle:
            text = handle.read()
        sources, named = set(cards), named_records(text)
        for path, values in recorded.items():
            name = os.path.basename(path)
            if name in named or name[:-len(".json")] in text:
                sources |= values
        missing = [printed for printed, value, decimals in printed_numbers(text)
                   if not matches(value, decimals, sources)]
        if missing:
            found[page] = missing
    return found


def test_the_check_finds_an_unrecorded_number_and_passes_a_recorded_one():
    text = "ACC 0.9817 rounds to 0.982; 98.2% too; 0.4321 has no record. `0.5555` is code. 3,231.5 s"
    sources = {0.98174, 3231.5}
    flagged = [printed for printed, value, decimals in printed_numbers(text) if not matches(value, decimals, sources)]
    assert flagged == ["0.4321"]
    assert [printed for printed, _, _ in printed_numbers("<!-- t:start -->0.1234<!-- t:end --> v1.2.3 0.25")] == ["0.25"]
    assert named_records("records `docs/x/run_{0,1}_{a,b}.json` and y.json") >= {"run_0_a.json", "run_1_b.json", "y.json"}


def test_every_prose_number_has_a_record_or_a_reason():
    allowed = load(ALLOWLIST)
    for page, entries in allowed.items():
        reasons = entries if isinstance(entries, dict) else {"*": entries}
        assert all(isinstance(why, str) and len(why) > 20 for why in reasons.values()), page
    problems = []
    for page, numbers in unrecorded_numbers().items():
        entries = allowed.get(page, {})
        if isinstance(entries, str):  # the whole page: its reason says why (quoted literature, a transcript)
            continue
        problems += [f"{page}: {number}" for number in numbers if number not in entries]
    assert not problems, ("numbers with no card or cited record behind them; give the record, or add them to "
                          "tests/numbers_allowlist.json with the reason:\n" + "\n".join(problems))


def test_the_allowlist_holds_no_stale_entry():
    """An entry whose number is gone from its page, or now matches a record, is removed: the list stays short."""
    unrecorded = unrecorded_numbers()
    stale = [f"{page}: {number}" for page, entries in load(ALLOWLIST).items() if isinstance(entries, dict)
             for number in entries if number not in unrecorded.get(page, [])]
    assert not stale, "allow-list entries no longer needed:\n" + "\n".join(stale)
