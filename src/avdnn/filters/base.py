"""The avdnn filter contract: push a frame, get the frames that are ready; flush at EOF.

A filter is a template over FFmpeg's activate loop, written the Python way:
``filter(frame)`` consumes one input frame and returns the output frames that are ready now
(zero or more, in order); ``flush()`` at end of stream returns the rest; ``close()`` frees
everything and may be called at any point, also after an error or an early stop. A filter
that fails raises an :class:`~avdnn.errors.AvdnnError` after having returned every frame
before the failure. ``configure(frame)`` runs once with the first frame, like FFmpeg's
config_input, so size and format checks happen before any work.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from avdnn.errors import InvalidArgumentError
from avdnn.filters.options import Option
from avdnn.media.frame import Frame
from avdnn.media.pixfmt import canonical


class Filter:
    """Base of every avdnn filter. Subclasses set the class attributes and override hooks."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()
    #: Input pixel formats accepted, FFmpeg names; None accepts any.
    pix_fmts: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, values: dict[str, Any], *, label: str | None = None) -> None:
        self.opts = values
        self.label = label or self.name
        self.configured = False
        #: Frames this filter refused, by cause (frame accounting).
        self.failed: dict[str, int] = {}

    @classmethod
    def joins(cls, key: str, value: str) -> bool:
        """Whether option ``key`` set to ``value`` takes the next bare value (``model=zoo:NAME``)."""
        try:
            return value in cls.option(key).joins_bare
        except KeyError:
            return False

    @classmethod
    def option(cls, name: str) -> Option:
        for opt in cls.options:
            if name == opt.name or name in opt.aliases:
                return opt
        raise KeyError(name)

    @classmethod
    def option_given(cls, key: str | None, nth: int) -> Option | None:
        """The option a value of the arguments goes to: by name, or (``key`` None) the ``nth``
        positional one in FFmpeg's order; None for neither."""
        if key is None:
            return cls.options[nth] if nth < len(cls.options) else None
        try:
            return cls.option(key)
        except KeyError:
            return None

    # -- hooks ----------------------------------------------------------------------------

    def configure(self, frame: Frame) -> None:
        """Check the first input frame (format, size) and set up; raise to refuse it."""
        if self.pix_fmts is not None and canonical(frame.format) not in self.pix_fmts:
            raise InvalidArgumentError(
                f"pixel format {frame.format} is not supported (accepted: {', '.join(self.pix_fmts)}); "
                f"insert format= before {self.name}",
                filter=self.label,
            )

    def filter(self, frame: Frame) -> Sequence[Frame]:
        """Consume one frame; return the frames that are ready, oldest first."""
        return (frame,)

    def flush(self) -> Sequence[Frame]:
        """End of stream: return every frame still held, oldest first."""
        return ()

    def close(self) -> None:
        """Free resources; safe to call twice and after errors."""

    def interrupt(self) -> None:
        """The run is stopping (called from another thread): stop waiting; ``close`` follows."""

    @property
    def holding(self) -> int:
        """Frames taken and not yet returned, failed or dropped (a filter with latency keeps some).

        The frame accounting reads it when a run stops early: at most this many of the filter's
        frames count as in flight, the rest as lost (run.stats). A filter that keeps frames
        between calls must say how many; the default keeps none.
        """
        return 0

    # -- used by the graph ----------------------------------------------------------------

    def push(self, frame: Frame) -> Iterable[Frame]:
        if not self.configured:
            self.configure(frame)
            self.configured = True
        return self.filter(frame)

    def __repr__(self) -> str:
        return f"<avdnn filter {self.label}>"
