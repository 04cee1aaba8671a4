"""The docs in docs/ stay true to the code: a page per strategy naming each parameter (its
table generated from PARAMS), links that resolve, and no source file pointing a reader at
something outside the repository."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ctxlab.engine import strategy_docs
from ctxlab.engine.strategies import STRATEGIES

BASE = Path(__file__).resolve().parents[1]
DOCS = BASE / "docs"
# Reference files that lived beside the project while it was built, never inside it.
OUTSIDE_NAMES = (
    "strategies.md",
    "stack.md",
    "formats.md",
    "house-style.md",
    "field-2026.md",
    "product.md",
    "provider-strategies.md",
)
OUTSIDE = re.compile(
    r"(?<![\w/.-])(" + "|".join(re.escape(n) for n in OUTSIDE_NAMES) + r")"
    r"|/work/shared"
    r"|\bissues?\s+#?\d+",
    re.IGNORECASE,
)
LINK = re.compile(r"\]\(([^)\s]+)\)")
SKIP_DIRS = {".git", ".venv", "node_modules", "var", "artifacts", "staticfiles", "__pycache__"}


def _source_dirs() -> list[Path]:
    apps = sorted(p for p in BASE.glob("*_app") if p.is_dir())
    return [BASE / "ctxlab", *apps]


def _repo_files(suffix: str) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(BASE):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        found += [Path(root) / f for f in files if f.endswith(suffix)]
    return found


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_has_a_page_naming_each_parameter(name: str) -> None:
    page_path = DOCS / "strategies" / f"{name}.md"
    assert page_path.is_file(), f"no docs page for strategy {name!r}: write {page_path}"
    page = page_path.read_text(encoding="utf-8")
    for spec in STRATEGIES[name].param_specs():
        assert f"`{spec.name}`" in page, f"{page_path.name} does not name parameter {spec.name}"
    assert strategy_docs.with_params_block(page, name) == page, (
        f"{page_path.name}: parameter table is stale; run "
        "`.venv/bin/python -m ctxlab.engine.strategy_docs`"
    )
    for heading in ("## What", "ources", "## Where", "## Parameters"):
        assert heading in page, f"{page_path.name} lacks a {heading!r} section"


def test_params_block_tracks_the_specs() -> None:
    # The generated table is what the check compares with: a changed default must show.
    spec = STRATEGIES["aider"].param_specs()[0]
    block = strategy_docs.params_block("aider")
    assert f"| `{spec.name}` | {spec.type} | `{spec.default}` |" in block
    stale = block.replace(f"`{spec.default}`", "`-1`", 1)
    page = f"# aider\n\n{stale}\n"
    assert strategy_docs.with_params_block(page, "aider") != page
    with pytest.raises(ValueError, match="markers"):
        strategy_docs.with_params_block("# no markers\n", "aider")


def test_docs_index_links_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {(DOCS / target).resolve() for target in LINK.findall(index)}
    for page in DOCS.rglob("*.md"):
        if page.name != "README.md":
            assert page.resolve() in linked, (
                f"docs/README.md does not link {page.relative_to(BASE)}"
            )


def test_readme_points_at_docs() -> None:
    assert "](docs/README.md)" in (BASE / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "page", [BASE / "README.md", *sorted(DOCS.rglob("*.md"))], ids=lambda p: p.name
)
def test_relative_links_resolve(page: Path) -> None:
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:|^#", target):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.relative_to(BASE)} links {target}, which does not exist"


def test_no_source_points_outside_the_repository() -> None:
    in_repo = {p.name for p in _repo_files(".md")}
    offenders = []
    for directory in _source_dirs():
        for path in sorted(directory.rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                for match in OUTSIDE.finditer(line):
                    if match.group(1) and match.group(1) in in_repo:
                        continue
                    offenders.append(f"{path.relative_to(BASE)}:{number}: {line.strip()}")
    docs_text = [BASE / "README.md", *DOCS.rglob("*.md")]
    for path in docs_text:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if OUTSIDE.search(line) and not any(n in line and n in in_repo for n in OUTSIDE_NAMES):
                offenders.append(f"{path.relative_to(BASE)}:{number}: {line.strip()}")
    assert offenders == [], "references to files outside the repository:\n" + "\n".join(offenders)


def test_outside_pattern_catches_what_it_should() -> None:
    assert OUTSIDE.search("see strategies.md §2")
    assert OUTSIDE.search("# issue 7: costs")
    assert OUTSIDE.search("(Issue #15 target)")
    assert OUTSIDE.search("/work/shared/corpus")
    assert not OUTSIDE.search("https://github.com/anthropics/claude-code/issues/12004")
    assert not OUTSIDE.search("docs/strategies/codex.md")


README_MAX_LINES = 500
TWO_COMMANDS = (
    "make run     # set up everything and serve http://127.0.0.1:8000",
    "make test    # set up the same environment and run the whole suite",
)


def test_readme_stays_a_guide() -> None:
    # The README is read top to bottom; reference material belongs in docs/. CI runs the
    # two commands it states, so they stay word for word.
    readme = (BASE / "README.md").read_text(encoding="utf-8")
    lines = readme.count("\n")
    assert lines <= README_MAX_LINES, (
        f"README.md has {lines} lines (at most {README_MAX_LINES}): move reference material "
        "to a page under docs/ and link it"
    )
    for command in TWO_COMMANDS:
        assert command in readme, f"README.md no longer states {command!r}"
    assert "make run ADDR=" in readme, "README.md does not document make run's ADDR="


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not re.match(r"#{1,6} ", line):
            continue
        slug = _slug(line.lstrip("#"))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_slug_matches_githubs_anchors() -> None:
    assert _slug("Suites: many transcripts × many settings") == (
        "suites-many-transcripts--many-settings"
    )
    assert _slug("Measured (`manage.py bench --only pages`)") == (
        "measured-managepy-bench---only-pages"
    )
    assert _slug("What a finished run's pages derive, built once") == (
        "what-a-finished-runs-pages-derive-built-once"
    )


@pytest.mark.parametrize(
    "page", [BASE / "README.md", *sorted(DOCS.rglob("*.md"))], ids=lambda p: p.name
)
def test_link_anchors_name_a_heading(page: Path) -> None:
    # Sections move between the README and docs/: a link to #section must follow them.
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or "#" not in target:
            continue
        path, anchor = target.split("#", 1)
        linked = (page.parent / path).resolve() if path else page
        if linked.suffix != ".md" or not linked.is_file():
            continue  # a missing file is test_relative_links_resolve's to report
        assert anchor in _anchors(linked), (
            f"{page.relative_to(BASE)} links {target}: no such heading in "
            f"{linked.relative_to(BASE)}"
        )
