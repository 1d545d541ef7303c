"""The generated docs stay true to the code, and every relative link in the README and docs/ leads somewhere.

docs/config.md is rendered from the schema's field descriptions (scripts/config_reference.py), the way
terraform-docs renders a module's inputs; `make docs` rewrites it, this test fails when it is stale.
"""

import re
from pathlib import Path

import pytest

from scripts import docs
from scripts.config_reference import Reference, render
from scripts.plan_example import excerpt
from stacks.schema import json_schema

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The areas are the folders under components/ (the type tokens' `trainstack:<area>:*`); each has one page.
AREAS = sorted(p.parent.name for p in (ROOT / "components").glob("*/__init__.py"))
# Where code, comments and build files name a page of ours: `docs/<page>.md`, not a path inside another repository.
SOURCES = ("components", "policies", "scripts", "stacks", "tests", "trainstack", "bench", ".ci", ".github")
DOCS_PATH = re.compile(r"(?<![\w/.-])docs/([\w.-]+\.md)\b")


def test_config_reference_is_current() -> None:
    assert docs.CONFIG_PAGE.read_text() == render() + "\n", "regenerate: make docs"


def test_every_schema_field_has_a_description() -> None:
    schema = json_schema()
    objects = {"(root)": schema, **schema["$defs"]}
    missing = [
        f"{name}.{key}"
        for name, model in objects.items()
        for key, field in model.get("properties", {}).items()
        if not field.get("description", "").strip()
    ]
    assert missing == [], "add a description= to these schema fields"


def test_every_area_and_key_is_in_the_reference() -> None:
    page = docs.CONFIG_PAGE.read_text()
    for area in ("network", "eks", "gpu_node_groups[]", "storage.fsx", "kubernetes", "sagemaker.hyperpod"):
        assert f"\n## {area}\n" in page, area
    for area in ("health", "security", "waivers[]", "tags", "cost"):
        assert f"\n## {area}\n" in page, area
    assert "| `max_gpus` | integer | required | >= 0; <= 1000000 |" in page
    assert "| `cost_center` | string | required |" in page


def test_rows_say_type_default_and_bounds() -> None:
    schema = {
        "description": "root",
        "required": ["size"],
        "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 4, "description": "Nodes."},
            "mode": {"$ref": "#/$defs/Mode", "default": "a", "description": "How."},
            "names": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}, "description": "N."},
        },
        "$defs": {"Mode": {"enum": ["a", "b|c"], "type": "string"}},
    }
    from pydantic import BaseModel, Field

    class Root(BaseModel):
        size: int
        mode: str = "a"
        names: list[str] = Field(default_factory=list)

    rows = Reference(schema, {"": Root}).table("", Reference(schema, {"": Root}).walker.sections[""])
    assert rows[2] == "| `size` | integer | required | >= 1; <= 4 | Nodes. |"
    assert rows[3] == '| `mode` | enum | `"a"` | one of `"a"`, `"b\\|c"` | How. |'
    assert rows[4] == "| `names` | list of string | `[]` | each item: matches `^[a-z]+$` | N. |"


def _anchors(text: str) -> set[str]:
    headings = re.findall(r"^#+ (.+)$", text, flags=re.M)
    return {"".join(c for c in h.strip().lower().replace(" ", "-") if c.isalnum() or c in "-_") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", page.read_text(), flags=re.S))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
            continue
        if anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text()):
            broken.append(target)
    assert broken == [], f"{page.name}: broken links"


# A path of this repository in backticks, as the pages name files: `components/gpu/efa.py`, `stacks/catalog.py:42`.
REPO_PATH = re.compile(
    r"`((?:components|trainstack|stacks|policies|scripts|tests|bench|monitoring|docs|\.github|\.ci)/[^`\s]*)`"
)


def named_paths(text: str) -> list[str]:
    """The repository paths a page names in backticks, without a `:line` or `#anchor` and without the ones that are
    patterns (`<area>`, `*`, `{a,b}`)."""
    paths = (re.split(r"[:#]", found, maxsplit=1)[0] for found in REPO_PATH.findall(text))
    return [p for p in paths if not re.search(r"[<*{]", p)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_path_a_page_names_exists(page: Path) -> None:
    missing = sorted({p for p in named_paths(page.read_text()) if not (ROOT / p).exists()})
    assert missing == [], f"{page.name} names paths that do not exist (moved or removed?)"


def test_named_paths_drop_lines_anchors_and_patterns() -> None:
    text = "`stacks/catalog.py:42`, `docs/plan.md#diff`, `components/<area>/x.py`, `tests/*.py`, `README.md`, `x/y.py`"
    assert named_paths(text) == ["stacks/catalog.py", "docs/plan.md"]
    assert not [p for p in named_paths("`components/gpu/missing.py`") if (ROOT / p).exists()]


def test_the_areas_are_the_component_folders() -> None:
    assert AREAS == ["eks", "gpu", "health", "k8s", "network", "sagemaker", "security", "storage"]


@pytest.mark.parametrize("area", AREAS)
def test_every_area_has_its_page_by_its_name(area: str) -> None:
    page = ROOT / "docs" / f"{area}.md"
    assert page.is_file(), f"docs/{area}.md: the page of components/{area}/ (docs/extending.md, step 9)"
    assert f"components/{area}/" in page.read_text(), f"docs/{area}.md names none of components/{area}/"
    assert f"[{area}.md]({area}.md)" in (ROOT / "docs" / "README.md").read_text(), "docs/README.md lists every page"


def _extending_rows() -> dict[str, list[str]]:
    rows = re.findall(r"^\| `([a-z0-9]+)` \|(.*)\|$", (ROOT / "docs" / "extending.md").read_text(), flags=re.M)
    return {area: [cell.strip() for cell in cells.split("|")] for area, cells in rows}


def test_extending_names_each_areas_files_and_they_exist() -> None:
    rows = _extending_rows()
    assert sorted(rows) == AREAS, "docs/extending.md: one row per components/<area>/"
    for area, cells in rows.items():
        assert cells[0] == f"`components/{area}/`", area
        assert cells[2] == f"`policies/rules/{area}.py`", area
        assert cells[-1] == f"[{area}.md]({area}.md)", area
        named = [path for cell in cells[:-1] for path in re.findall(r"`([^`]+)`", cell)]
        assert [path for path in named if not (ROOT / path).exists()] == [], f"docs/extending.md: {area}'s row"


def code_files(tops: tuple[str, ...] = SOURCES, skip: Path | None = None) -> list[Path]:
    """The code and build files under `tops` (and at the root), without virtualenvs, caches and what `skip` holds."""
    files = [
        path
        for top in tops
        for path in (ROOT / top).rglob("*")
        if path.is_file()
        and not {".venv", "__pycache__", "node_modules"} & set(path.parts)
        and not (skip is not None and path.is_relative_to(skip))
        and path.suffix in {".py", ".sh", ".yml", ".yaml", ".toml", ".json", ".txt", ""}
    ]
    return [*files, ROOT / "Makefile", ROOT / "pyproject.toml", ROOT / "__main__.py"]


def test_every_docs_path_named_in_code_exists() -> None:
    missing = {
        f"{path.relative_to(ROOT)}: docs/{name}"
        for path in code_files(skip=Path(__file__))  # its own example of a missing page
        for name in DOCS_PATH.findall(path.read_text(errors="replace"))
        if not (ROOT / "docs" / name).is_file()
    }
    assert sorted(missing) == []


# A file of this repository as code and build files name it (`components/gpu/efa.py`, `stacks/catalog.py`).
CODE_PATH = re.compile(
    r"(?<![\w/.<-])((?:components|trainstack|stacks|policies|scripts|tests|bench|monitoring)/[\w./-]*\w"
    r"\.(?:py|yaml|yml|json|toml|md|sh|txt))"
)
# The lifecycle scripts' text is frozen: their S3 prefix is a digest of the scripts (components/sagemaker/hyperpod.py
# `bundle_digest`), so editing a comment would replace the bundle on a running HyperPod cluster. Their comments keep
# the paths they were written with.
FROZEN = ROOT / "components" / "sagemaker" / "lifecycle"


def test_every_repository_file_named_in_code_exists() -> None:
    """Tests are left out: their fixtures name files that must not exist."""
    missing = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in code_files(tuple(t for t in SOURCES if t != "tests"), skip=FROZEN)
        for name in CODE_PATH.findall(path.read_text(errors="replace"))
        if not (ROOT / name).exists()
    }
    assert sorted(missing) == []


def test_a_moved_file_named_in_code_is_found() -> None:
    text = "see components/hyperpod.py and stacks/catalog.py; not x/components/y.py nor components/<area>/z.py"
    assert CODE_PATH.findall(text) == ["components/hyperpod.py", "stacks/catalog.py"]


def test_a_missing_page_named_in_code_is_found() -> None:
    assert DOCS_PATH.findall("see docs/aws.md, docs/k8s.md; cmd/x/docs/request-handling.md") == ["aws.md", "k8s.md"]


# ------------------------------------------------------------------------------------- the plan examples

PLAN = "head\n  verdict\n\nRisks (2)\n  low a\n\nTime to ready\n  x\n\nCompute\n  g5\n\nCost\n  $1\n\ndev: ok\n"


def test_an_excerpt_keeps_the_head_the_named_sections_and_marks_each_gap_once() -> None:
    assert excerpt(PLAN, ["Compute"]) == "head\n  verdict\n...\nCompute\n  g5\n..."
    assert excerpt(PLAN, ["Risks", "Compute"], footer=True) == (
        "head\n  verdict\nRisks (2)\n  low a\n...\nCompute\n  g5\n...\ndev: ok"
    )
    assert excerpt(PLAN, ["Time to ready", "Risks"]) == "head\n  verdict\nRisks (2)\n  low a\nTime to ready\n  x\n..."
    assert excerpt("head\n\ndev: ok\n", [], footer=True) == "head\ndev: ok"


@pytest.mark.parametrize(("title", "found"), [("Storage", "0 paragraphs"), ("", "6 paragraphs")])
def test_a_section_the_plan_has_not_or_twice_is_refused_by_name(title: str, found: str) -> None:
    with pytest.raises(ValueError, match=rf"^{found} of the plan start with '{title}'; its paragraphs: head, Risks"):
        excerpt(PLAN, ["Compute", title])
