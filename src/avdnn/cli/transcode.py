"""The main command: a parsed command line's outputs run through the API, and what it prints of them.

The API decides (which part of a ``-filter_complex`` feeds which output, how the run ends, its
exit status); this shows it as ffmpeg does: the status line (``-stats``), the ``-progress``
blocks, the summary, one line per failed output, and ffmpeg's message for an input without an
output.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

from avdnn import api
from avdnn._util.redact import redact_url
from avdnn.cli.args import Args, run_kwargs
from avdnn.cli.progress import ProgressWriter
from avdnn.cli.statusline import Progress

__all__ = ["probe", "transcode"]


def probe(args: Args, level: int) -> int:
    """``ffmpeg -i FILE`` without an output: the input block, then ffmpeg's error (exit 1)."""
    api.probe(
        args.input or "",
        input_format=args.input_format,
        input_options=args.input_options,
        banner=level <= logging.INFO,
    )
    if level <= logging.CRITICAL:
        sys.stderr.write("At least one output file must be specified\n")
    return api.NO_OUTPUT


def transcode(args: Args, level: int) -> int:
    """Every output of the command line, each its own pipeline on its own thread (avdnn.run_many)."""
    outputs = args.outputs or [args]
    progress: Progress | None = None
    machine: ProgressWriter | None = None
    last: list[Any] = [None] * len(outputs)

    def on_frame(index: int) -> Callable[[Any, Any], None]:
        def report(stats: Any, frame: Any) -> None:
            last[index] = frame
            if progress is not None:
                progress(stats, frame, index=index)
            if machine is not None and index == 0:
                machine(stats, frame)

        return report

    given: list[tuple[str, str | BinaryIO, api.RunOptions]] = []
    for index, out in enumerate(outputs):
        assert out.output is not None  # main() refused a command line without one
        options = run_kwargs(out)
        options["progress"] = on_frame(index)
        given.append((out.filters, out.output, options))
    # each output runs the part of the graph its maps need; the Input/Output blocks: info level
    jobs = api.command_jobs(args.input or "", given, banner=level <= logging.INFO)
    show = args.stats is not False  # ffmpeg's -stats is on by default (tools parse its frame= line)
    progress = Progress(sys.stderr, len(outputs)) if show and level <= logging.INFO else None
    if args.progress is not None:  # the machine-readable report follows the first output
        machine = ProgressWriter(args.progress, period=args.stats_period, output=outputs[0].output)
    try:
        report = api.run_many(jobs)
    except api.OutputsFailedError as exc:
        error = exc.stats.unstarted_error()
        if error is not None:
            _close(machine)
            raise error from None  # failed before it ran: main() prints its line (ffmpeg writes no block)
        _end(machine, exc.stats, last[0])
        return _failed(exc, [str(out.output) for out in outputs], progress, level)
    except (
        BaseException
    ) as exc:  # Ctrl-C (KeyboardInterrupt with the outputs' stats), a bug: the last block still says end
        _end(machine, getattr(exc, "stats", None), last[0])
        raise
    _end(machine, report, last[0])
    if progress is not None:
        for index, result in enumerate(report.outputs):
            if result.stats is not None:
                progress(result.stats, last[index], final=index == len(outputs) - 1, index=index)
    if level <= logging.INFO:
        sys.stderr.write(report.summary() + "\n")
    return 0


def _end(machine: ProgressWriter | None, report: Any, frame: Any) -> None:
    """The last ``-progress`` block (``progress=end``), however the run ended, as ffmpeg's final print_report."""
    if machine is None:
        return
    try:
        stats = report[0] if report is not None else None
        machine(stats, frame, final=True)
    finally:
        _close(machine)


def _close(machine: ProgressWriter | None) -> None:
    if machine is not None:
        machine.close()


def _failed(exc: api.OutputsFailedError, names: list[str], progress: Progress | None, level: int) -> int:
    """Some outputs failed (the others are complete): one line each, the accounting, ffmpeg's status."""
    report = exc.stats
    several = len(report.outputs) > 1
    if progress is not None and several:  # the outputs that ran: their last counts
        ran = [(k, out) for k, out in enumerate(report.outputs) if out.stats is not None]
        for n, (k, out) in enumerate(ran):
            progress(out.stats, None, final=n == len(ran) - 1, index=k)
    elif progress is not None and progress.shown:
        sys.stderr.write("\n")
    if level <= logging.CRITICAL:
        for out in exc.failed:
            assert out.error is not None
            where = f"{out.name} ({out.describe_inputs()}): " if several else ""
            sys.stderr.write(f"avdnn: {where}{out.error.oneline()}\n")
    if level <= logging.ERROR:
        sys.stderr.write(report.summary() + "\n")
        for out in exc.failed:
            if out.stats is not None:
                sys.stderr.write(
                    f"avdnn: output '{redact_url(names[out.index])}' was finished cleanly with the "
                    f"{out.stats.frames_written} frames before the error\n"
                )
    return api.status_of(exc)
