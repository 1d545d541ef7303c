"""How each SageMaker HyperPod instance group comes up, as lines for the text and Markdown renderers (the data:
trainstack/model/bringup.py)."""

from __future__ import annotations

from trainstack.model.bringup import GroupBringUp


def lines(groups: tuple[GroupBringUp, ...]) -> list[str]:
    """One line per group with its steps, then what it needs."""
    out: list[str] = []
    for g in groups:
        out.append(f"{g.cluster}/{g.group} ({g.role}): " + " -> ".join(s.split(":", 1)[0] for s in g.steps))
        if g.needs:
            out.append(f"  needs: {'; '.join(g.needs)}")
    return out
