"""The generated docs stay true to the code, and every relative link in the README and docs/ leads somewhere.

docs/config.md is rendered from the schema's field descriptions (scripts/config_reference.py), the way
terraform-docs renders a module's inputs; `make docs` rewrites it, this test fails when it is stale.
"""

import re
from pathlib import Path

import pytest

from scripts import docs
from scripts.config_reference import Reference, render
from stacks.schema import json_schema

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_config_reference_is_current() -> None:
    assert docs.CONFIG_PAGE.read_text() == render() + "\n", "regenerate: make docs"


def test_check_mode_finds_every_page_current() -> None:
    assert docs.main(["--check"]) == 0


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
