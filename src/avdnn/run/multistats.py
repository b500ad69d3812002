"""The accounting of a run with several outputs: each output's :class:`RunStats`, and how it ended.

Every output of a run is its own pipeline (:mod:`avdnn.run.parallel`), so each keeps its own
accounting, per input and output stream, exactly as a one-output run does; this collects them.
A failed output keeps the stats of what it did before the error (None when it failed before it
started: its input could not be opened). With one output the summary is that output's, unchanged.
Outputs and inputs are kept as shown, their credentials redacted (avdnn._util.redact).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from avdnn._util.redact import redact_url
from avdnn.dnn import InstanceReport
from avdnn.errors import AvdnnError
from avdnn.run.stats import RunStats


@dataclass
class OutputResult:
    """One output of the run: where it wrote, what it read, its accounting and its error."""

    index: int
    output: str
    #: The inputs the output read, as (input index, URL as shown).
    inputs: list[tuple[int, str]]
    stats: RunStats | None = None
    error: AvdnnError | None = None
    #: The output was stopped by Ctrl-C (its frames before are written, the file is finished).
    interrupted: bool = False
    #: "output" (a file the run writes) or "stream" (frames handed to the caller, avdnn.open_many)
    kind: str = "output"
    #: The KeyboardInterrupt that stopped it (re-raised by the run, its traceback kept).
    stop_signal: BaseException | None = field(default=None, repr=False)
    #: Its thread has ended (after Ctrl-C, one still blocked in its input is left behind).
    ended: bool = False

    def __post_init__(self) -> None:
        # what the summary, the failure lines and as_dict() show: never a URL's credentials
        self.output = redact_url(self.output)
        self.inputs = [(k, redact_url(url)) for k, url in self.inputs]

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def name(self) -> str:
        """``output #1 'b.mkv'``, as ffmpeg numbers outputs (``stream #1`` for iterated frames)."""
        return f"{self.kind} #{self.index}" + (f" '{self.output}'" if self.output else "")

    def describe_inputs(self) -> str:
        """``input #1 'b.mp4'``, or ``inputs #0 'a.mp4', #1 'b.mp4'``."""
        if len(self.inputs) == 1:
            k, url = self.inputs[0]
            return f"input #{k} '{url}'"
        return "inputs " + ", ".join(f"#{k} '{url}'" for k, url in self.inputs)


@dataclass
class MultiRunStats:
    """The accounting of every output of one run, in command-line order."""

    outputs: list[OutputResult] = field(default_factory=list)
    #: Lines about models shared across the outputs' chains (``model_instance``), for the summary.
    instance_lines: list[str] = field(default_factory=list)
    #: The same models' reports (streams, batches by size, the backend's time per batch).
    instances: list[InstanceReport] = field(default_factory=list)

    def __getitem__(self, index: int) -> RunStats | None:
        return self.outputs[index].stats

    def __len__(self) -> int:
        return len(self.outputs)

    @property
    def failed(self) -> list[OutputResult]:
        return [o for o in self.outputs if o.failed]

    def unstarted_error(self) -> AvdnnError | None:
        """The error of a one-output run that failed before it started (its input or output could
        not be opened): the whole story of the run, told as its one line. None otherwise."""
        if len(self.outputs) != 1:
            return None
        only = self.outputs[0]
        return only.error if only.stats is None else None

    def violations(self) -> list[str]:
        """Each output's accounting violations, prefixed with the output."""
        return [f"{o.name}: {v}" for o in self.outputs if o.stats is not None for v in o.stats.violations()]

    def check(self) -> bool:
        """True when every output's accounting balances (RunStats.check over all)."""
        return not self.violations()

    def summary(self) -> str:
        """One block per output; one output: its summary as a one-output run prints it."""
        if len(self.outputs) == 1 and self.outputs[0].stats is not None:
            return "\n".join([self.outputs[0].stats.summary(), *self.instance_lines])
        lines: list[str] = []
        for o in self.outputs:
            inputs = ", ".join(f"#{k}" for k, _ in o.inputs)
            head = f"{o.name} (input{'s' if len(o.inputs) > 1 else ''} {inputs})"
            if o.stats is None:
                why = "interrupted" if o.interrupted else "failed before it started (see its error)"
                lines.append(f"{head}: {why}")
                continue
            lines.append(f"{head}:")
            lines += ["  " + line for line in o.stats.summary().splitlines()]
        return "\n".join(lines + self.instance_lines)

    def as_dict(self) -> dict[str, object]:
        return {
            "outputs": [
                {
                    "output": o.output,
                    "inputs": [url for _, url in o.inputs],
                    "stats": None if o.stats is None else o.stats.as_dict(),
                    "error": None if o.error is None else {"code": o.error.code, "message": o.error.oneline()},
                }
                for o in self.outputs
            ],
            "instances": list(self.instance_lines),
        }
