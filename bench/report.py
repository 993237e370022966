"""Writing benchmark figures into ``docs/performance.md`` between named markers.

Each benchmark owns one section, delimited by ``<!-- bench:NAME -->`` and
``<!-- /bench:NAME -->``; running it with ``--write`` replaces just that section, so the
figures in the document are always the ones a run printed.
"""

from __future__ import annotations

import os
import platform
import re
from datetime import UTC, datetime
from pathlib import Path

PERFORMANCE_DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"


def machine_line() -> str:
    """Date, CPU and Python version, for the record under each table."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {cpu}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()} ({platform.python_implementation()})"
    )


def update_section(name: str, body: str, path: Path = PERFORMANCE_DOC) -> None:
    """Replace the ``name`` section of the performance document with ``body``."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = path.read_text() if path.exists() else "# Performance\n"
    block = f"{start}\n{body.strip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        text = pattern.sub(lambda _: block, text)
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub-flavoured markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
