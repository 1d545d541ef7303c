"""Write the URN set of every committed stack to `tests/stack/golden_urns/<stack>.txt`, one URN a line, sorted.

A URN is what Pulumi keeps a resource's state by: when it changes, `pulumi up` deletes the resource and creates a
new one (unless an alias covers the old URN). `tests/stack/test_golden_urns.py` fails when a stack's URNs differ
from its file, so a change that renames or re-parents resources is seen and decided on, not slipped in.

    .venv/bin/python scripts/golden_urns.py            # every stack in stacks/
    .venv/bin/python scripts/golden_urns.py prod       # one stack

Regenerate only after checking the diff: a URN that goes away needs an alias on its new resource.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from stacks.load import load_file  # noqa: E402
from trainstack.engine import Recording, run_program  # noqa: E402

GOLDEN_DIR = ROOT / "tests" / "stack" / "golden_urns"


def golden_text(recording: Recording) -> str:
    return "".join(f"{urn}\n" for urn in sorted(r.urn for r in recording.resources))


def main(stacks: list[str]) -> None:
    names = stacks or sorted(p.name.split(".")[1] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in names:
        recording = run_program(load_file(ROOT / "stacks" / f"Pulumi.{name}.yaml"), stack_name=name)
        (GOLDEN_DIR / f"{name}.txt").write_text(golden_text(recording))
        print(f"{name}: {len(recording.resources)} URNs -> {(GOLDEN_DIR / f'{name}.txt').relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
