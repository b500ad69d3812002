"""What an input holds is released on every way out: a Source that fails after its container opened closes it."""

from __future__ import annotations

from typing import Any

import pytest

from avdnn.errors import AvdnnError
from avdnn.media.input import source as source_module
from avdnn.media.input.source import Source


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every container a Source opens, in order (the real ones, spied on)."""
    real = source_module.open_input
    seen: list[Any] = []

    def spy(url: str, **kw: Any) -> Any:
        container = real(url, **kw)
        seen.append(container)
        return container

    monkeypatch.setattr(source_module, "open_input", spy)
    return seen


def _is_open(container: Any) -> bool:
    try:
        container.duration  # noqa: B018 - PyAV asserts the container is open on this read
    except AssertionError:
        return False
    return True


@pytest.mark.parametrize(
    ("case", "kw"),
    [
        ("bad discard", {"discard": "sometimes"}),
        ("bad thread count", {"threads": "many"}),  # not an avdnn error (PyAV's ValueError): closed all the same
        ("no video", {"format": "lavfi", "url": "sine=d=0.1"}),
    ],
)
def test_a_source_that_fails_after_opening_closes_its_container(
    clip: dict[str, str], opened: list[Any], case: str, kw: dict[str, Any]
) -> None:
    url = kw.pop("url", clip["carphone"])
    with pytest.raises(
        (AvdnnError, ValueError)
    ) as info:  # the traceback (kept alive here) must not keep the input open
        Source(url, **kw)
    assert len(opened) == 1, case
    assert not _is_open(opened[0]), f"{case}: {info.value} left its container open"


def test_a_source_that_opens_keeps_its_container_until_close(clip: dict[str, str], opened: list[Any]) -> None:
    src = Source(clip["carphone"])
    assert _is_open(opened[0])
    src.close()
    assert not _is_open(opened[0])
