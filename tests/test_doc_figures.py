"""Figures in the docs (issue 57): each measurement stated is one figure, from a result file kept in the
repository (docs/figures.toml lists them with their machine, load and date)."""

import re
import tomllib

import pytest
from conftest import ROOT

FIGURES = tomllib.loads((ROOT / "docs" / "figures.toml").read_text())["figure"]
DOCS = [ROOT / "README.md", ROOT / "benchmarks" / "PERFORMANCE.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("figure", FIGURES, ids=[f["value"] for f in FIGURES])
def test_the_result_file_holds_the_figure_and_says_where_it_was_measured(figure):
    assert (ROOT / figure["source"]).is_file(), figure["source"]
    assert figure["evidence"] in (ROOT / figure["source"]).read_text(errors="replace")
    assert figure["machine"] and figure["load"] and re.fullmatch(r"\d{4}-\d\d-\d\d", figure["date"])


@pytest.mark.parametrize("figure", FIGURES, ids=[f["value"] for f in FIGURES])
def test_every_doc_states_the_same_figure_for_one_measurement(figure):
    pattern, figures, stated, differ = re.compile(figure["mentions"]), re.compile(figure["figures"]), 0, []
    for doc in DOCS:
        for number, line in enumerate(doc.read_text().splitlines(), 1):
            if pattern.search(line) and figures.search(line):
                stated += 1
                if figure["value"] not in line:
                    differ.append(f"{doc.relative_to(ROOT)}:{number}: {line.strip()}")
    assert stated and not differ, "\n".join(differ)
