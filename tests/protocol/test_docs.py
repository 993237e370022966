"""docs/protocol.md says what the code does: its reference section is the generated one."""

from __future__ import annotations

from pathlib import Path

import protocol
from protocol import CLIENT_MESSAGES, SERVER_MESSAGES, CloseCode, ErrorCode
from protocol.reference import VALUE_TYPES, render

PAGE = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def test_reference_section_is_up_to_date() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert render(page) == page, "run: python -m protocol.reference docs/protocol.md"


def test_every_message_code_and_type_is_documented() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for kind, cls in {**CLIENT_MESSAGES, **SERVER_MESSAGES}.items():
        assert f"### `{kind}`" in page
        assert f"`protocol.{cls.__name__}`" in page
        assert hasattr(protocol, cls.__name__)
    for value_type in VALUE_TYPES:
        assert f"### {value_type.__name__}" in page
    for code in ErrorCode:
        assert f"| `{code.value}` |" in page
    for close in CloseCode:
        assert f"| {close.value} |" in page
