"""Frame accounting: where every frame that came in went.

At the end of a run avdnn knows how many frames were read, written and failed (with
causes), and which stage dropped, added or still held the rest. The books always balance:
``read + added == written + failed + dropped + unfinished``, and :meth:`RunStats.check`
proves it, so a frame can never vanish without a line saying where.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import AvdnnError
from ..media.sidepath import StreamStats


@dataclass
class StageStats:
    """Frames in and out of one stage of the chain."""

    label: str
    frames_in: int = 0
    frames_out: int = 0
    failed: dict[str, int] = field(default_factory=dict)

    @property
    def residual(self) -> int:
        """Frames that went in and neither came out nor failed (negative: frames added)."""
        return self.frames_in - self.frames_out - sum(self.failed.values())


@dataclass
class RunStats:
    """The frame accounting of one run, as the CLI prints it and the API returns it."""

    frames_read: int = 0
    frames_written: int = 0
    stages: list[StageStats] = field(default_factory=list)
    sink_dropped: int = 0
    sink_duplicated: int = 0
    #: Frames that reached the sink but were not written because -frames:v was reached.
    over_limit: int = 0
    #: Frames decoded ahead on the decoder thread that never entered the chain (early stop, error).
    read_ahead: int = 0
    #: Frames the output could not take (encoder or muxer failure), by cause.
    output_failed: dict[str, int] = field(default_factory=dict)
    stopped_early: bool = False
    error: AvdnnError | None = None
    #: The streams that went around the chain (audio, subtitles, copied video), one entry each.
    streams: list[StreamStats] = field(default_factory=list)

    @property
    def frames_failed(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for stage in self.stages:
            for cause, n in stage.failed.items():
                key = f"{stage.label}: {cause}"
                out[key] = out.get(key, 0) + n
        for cause, n in self.output_failed.items():
            out[f"output: {cause}"] = n
        return out

    @property
    def ended_abnormally(self) -> bool:
        return self.error is not None or self.stopped_early

    def _residuals(self) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
        dropped: dict[str, int] = {}
        added: dict[str, int] = {}
        unfinished: dict[str, int] = {}
        for stage in self.stages:
            r = stage.residual
            if r > 0:
                (unfinished if self.ended_abnormally else dropped)[stage.label] = r
            elif r < 0:
                added[stage.label] = -r
        if self.sink_dropped:
            dropped["output fps_mode"] = self.sink_dropped
        if self.read_ahead:
            unfinished["input (decoded ahead)"] = self.read_ahead
        if self.over_limit:
            unfinished["output (-frames:v reached)"] = self.over_limit
        return dropped, added, unfinished

    @property
    def frames_dropped(self) -> dict[str, int]:
        return self._residuals()[0]

    @property
    def frames_added(self) -> dict[str, int]:
        return self._residuals()[1]

    @property
    def frames_unfinished(self) -> dict[str, int]:
        return self._residuals()[2]

    def check(self) -> bool:
        """True when read + added == written + failed + dropped + unfinished."""
        dropped, added, unfinished = self._residuals()
        lhs = self.frames_read + sum(added.values())
        rhs = (self.frames_written + sum(self.frames_failed.values()) + sum(dropped.values())
               + sum(unfinished.values()))
        return lhs == rhs

    def summary(self) -> str:
        """Human-readable accounting, one fact per line."""
        dropped, added, unfinished = self._residuals()
        failed = self.frames_failed
        lines = [f"frames: read {self.frames_read}, written {self.frames_written}, "
                 f"failed {sum(failed.values())}"]
        lines += [f"  failed in {k}: {v}" for k, v in failed.items()]
        lines += [f"  dropped by {k}: {v}" for k, v in dropped.items()]
        lines += [f"  added by {k}: {v}" for k, v in added.items()]
        lines += [f"  unfinished in {k}: {v}" for k, v in unfinished.items()]
        if self.sink_duplicated:
            lines.append(f"  duplicated by output fps_mode: {self.sink_duplicated}")
        if self.error is not None:
            lines.append(f"  stopped by error: {self.error.oneline()}")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, object]:
        dropped, added, unfinished = self._residuals()
        return {
            "frames_read": self.frames_read, "frames_written": self.frames_written,
            "frames_failed": self.frames_failed, "frames_dropped": dropped, "frames_added": added,
            "frames_unfinished": unfinished, "frames_duplicated": self.sink_duplicated,
            "error": None if self.error is None else {"code": self.error.code, "message": self.error.oneline()},
        }
