"""The docs and the ``--help`` texts tell one story: the main job's figure
(seconds, date, load) is the same in the README and in ``run --help``,
``secea-fast flower --help`` names every mode the flower parser accepts, the
install lines work from a checkout (``-e ".[extra]"`` with an extra that
exists), and ``bench throughput`` errors name the option.  Parsing only: no
protocol runs here."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from secea_fast.cli import main

ROOT = Path(__file__).resolve().parent.parent


def _help(argv: list[str], capsys: pytest.CaptureFixture[str], entry=main) -> str:
    with pytest.raises(SystemExit) as exc:
        entry(argv)
    assert exc.value.code == 0
    return " ".join(capsys.readouterr().out.split())      # argparse wraps lines


def _readme() -> str:
    return " ".join((ROOT / "README.md").read_text().split())


def test_main_job_figure_same_in_readme_and_run_help(capsys: pytest.CaptureFixture[str]) -> None:
    text = _help(["run", "--help"], capsys)
    h = re.search(r"on (\d{4}-\d\d-\d\d) at load average (\d[\d.-]*\d)\b.*?secea about ([\d.]+) s", text)
    assert h, text
    r = re.search(r"\(`python3 -m secea_fast run --quiet`\) took about ([\d.]+) s on (\d{4}-\d\d-\d\d)"
                  r".*?at load average (\d[\d.-]*\d)", _readme())
    assert r, "README: the main job's figure sentence is missing"
    date, load, secs = h.groups()
    assert (secs, date, load) == r.groups(), "README and run --help give different main-job figures"
    # the figure is the only one: no other "about N s" claim for the main job in run --help
    assert len(re.findall(r"secea \(default\)[^;]*\d+ s", text)) == 0


def test_flower_help_lists_every_mode(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("flwr")
    from secea_fast.flower import cli as fcli
    own = _help(["--help"], capsys, fcli.main)
    modes = re.search(r"positional arguments: \{([a-z,]+)\}", own)
    assert modes, own
    outer = _help(["flower", "--help"], capsys)
    top = _help(["--help"], capsys)
    for mode in modes.group(1).split(","):
        assert mode in outer.split("[options]")[0], f"secea-fast flower --help does not list {mode}"
        assert mode in top, f"secea-fast --help does not list flower {mode}"


def test_install_lines_work_from_a_checkout() -> None:
    extras = set(re.findall(r"^([a-z][a-z-]*) = \[", (ROOT / "pyproject.toml").read_text(), re.M))
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = doc.read_text()
        assert not re.search(r"pip install \"?secea_fast\[", text), f"{doc.name}: not on the index"
        for extra in re.findall(r"pip install -e \"?\.\[([a-z,-]+)\]", text):
            assert set(extra.split(",")) <= extras, f"{doc.name}: unknown extra {extra}"


@pytest.mark.parametrize("argv, option", [(["-P", "0"], "-P/--processes"), (["--repeat", "0"], "--repeat")])
def test_bench_throughput_errors_name_the_option(argv: list[str], option: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "throughput", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and option in err, err
