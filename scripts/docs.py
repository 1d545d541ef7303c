"""`python scripts/docs.py [--check]` (`make docs`): rewrite the generated parts of docs/ from the code.

- docs/config.md, whole: the stack-file reference, from the schema's field descriptions
  (scripts/config_reference.py).
- docs/plan-json.md, whole: the fields of `plan --format json`, from plan.schema.json and their descriptions
  (scripts/plan_json_fields.py).
- docs/preflight-json.md, whole: the fields of `preflight --format json`, from preflight.schema.json and their
  descriptions (scripts/preflight_json_fields.py).
- docs/policies.md, between `<!-- generated:policies -->` markers: the environment tie, the rules, the floors
  and the waivers, from the policy pack, its three config files and the committed stacks (trainstack/review.py).
- docs/deploy.md, between `<!-- generated:example-refusal -->` markers: what `pulumi up` of prod says while example
  values remain (components/deploy_guard.py).
- README.md and docs/plan.md, between `<!-- generated:plan-example -->` markers: the dev stack's text plan, cut
  (scripts/plan_example.py).

With `--check` nothing is written; the exit code is 1 and the stale files are named when a page differs from
what the code renders (tests/unit/test_docs.py asserts the same).
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CONFIG_PAGE = DOCS / "config.md"
POLICIES_PAGE = DOCS / "policies.md"
PLAN_JSON_PAGE = DOCS / "plan-json.md"
PREFLIGHT_JSON_PAGE = DOCS / "preflight-json.md"
POLICIES_BLOCK = "policies"
README = ROOT / "README.md"
PLAN_PAGE = DOCS / "plan.md"
PLAN_EXAMPLE_BLOCK = "plan-example"
DEPLOY_PAGE = DOCS / "deploy.md"
REFUSAL_BLOCK = "example-refusal"


def replace_block(text: str, name: str, body: str) -> str:
    """TEXT with what sits between `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` replaced by BODY."""
    opening, closing = f"<!-- generated:{name} -->\n", f"\n<!-- /generated:{name} -->"
    start, stop = text.find(opening), text.find(closing)
    if start < 0 or stop < start:
        raise ValueError(f"no <!-- generated:{name} --> block")
    return text[: start + len(opening)] + body + text[stop:]


def block(text: str, name: str) -> str:
    """What sits between the markers of block NAME."""
    opening, closing = f"<!-- generated:{name} -->\n", f"\n<!-- /generated:{name} -->"
    return text.split(opening, 1)[1].split(closing, 1)[0]


def config_page(_current: str) -> str:
    from scripts.config_reference import render

    return render() + "\n"


def plan_json_page(_current: str) -> str:
    from scripts.plan_json_fields import render

    return render()


def preflight_json_page(_current: str) -> str:
    from scripts.preflight_json_fields import render

    return render()


def policies_page(current: str) -> str:
    from trainstack.review import policy_tables

    return replace_block(current, POLICIES_BLOCK, policy_tables())


def deploy_page(current: str) -> str:
    """The refusal `pulumi up` of prod stops with while its example values remain: its first lines, each cut to
    the page's width."""
    from components.deploy_guard import placeholder_refusal
    from stacks.load import load_file, stack_file

    message = placeholder_refusal(load_file(stack_file("prod")), "prod") or ""
    lines = [line if len(line) <= 110 else line[:106] + " ..." for line in message.splitlines()]
    shown = lines[:3] + (["  ..."] if len(lines) > 3 else [])
    return replace_block(current, REFUSAL_BLOCK, "```\n" + "\n".join(shown) + "\n```")


@functools.cache
def dev_plan_text() -> str:
    """The dev plan both pages cut from, run once however many pages ask."""
    from scripts.plan_example import dev_plan_text

    return dev_plan_text()


def plan_example(sections: tuple[str, ...], footer: bool) -> Callable[[str], str]:
    def page(current: str) -> str:
        from scripts.plan_example import excerpt, fenced

        return replace_block(current, PLAN_EXAMPLE_BLOCK, fenced(excerpt(dev_plan_text(), sections, footer)))

    return page


PAGES: dict[Path, Callable[[str], str]] = {
    CONFIG_PAGE: config_page,
    PLAN_JSON_PAGE: plan_json_page,
    PREFLIGHT_JSON_PAGE: preflight_json_page,
    POLICIES_PAGE: policies_page,
    DEPLOY_PAGE: deploy_page,
    README: plan_example(("Compute",), footer=False),
    PLAN_PAGE: plan_example(("Risks", "Compute"), footer=True),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/docs.py", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a page is stale")
    args = parser.parse_args(argv)
    stale: list[Path] = []
    for page, render in PAGES.items():
        current = page.read_text() if page.exists() else ""
        wanted = render(current)
        if wanted == current:
            continue
        stale.append(page.relative_to(ROOT))
        if not args.check:
            page.write_text(wanted)
    for page in stale:
        print(f"{page}: {'stale (run make docs)' if args.check else 'regenerated'}", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
