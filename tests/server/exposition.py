"""Reading a Prometheus text exposition in tests, through the client library's parser."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

Labels = tuple[tuple[str, str], ...]


def exposition_samples(text: str) -> dict[tuple[str, Labels], float]:
    """Every sample of ``text`` by name and sorted labels (parsing it checks its syntax)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def exposition_types(text: str) -> dict[str, str]:
    """The declared type of each metric, by the name its ``# TYPE`` line gives."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
