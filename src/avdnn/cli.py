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
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TextIO

from .errors import AVERROR_OPTION_NOT_FOUND, AvdnnError, InvalidArgumentError, OptionNotFoundError

log = logging.getLogger("avdnn")

LOG_LEVELS = {"quiet": logging.CRITICAL + 10, "panic": logging.CRITICAL, "fatal": logging.CRITICAL,
              "error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO,
              "verbose": logging.INFO - 1, "debug": logging.DEBUG, "trace": logging.DEBUG - 1}
_NUMERIC_LEVELS = {-8: "quiet", 0: "panic", 8: "fatal", 16: "error", 24: "warning", 32: "info",
                   40: "verbose", 48: "debug", 56: "trace"}


@dataclass
class Args:
    """The parsed command line."""

    overwrite: bool | None = None
    hide_banner: bool = False
    loglevel: str = "info"
    stats: bool | None = None
    help_topic: str | None = None
    list_filters: bool = False
    show_version: bool = False
    input: str | None = None
    input_format: str | None = None
    input_options: dict[str, str] = field(default_factory=dict)
    filters: str = ""
    frames: int | None = None
    codec: str | None = None
    pix_fmt: str | None = None
    rate: Fraction | None = None
    format: str | None = None  # noqa: A003
    fps_mode: str = "auto"
    bitexact: bool = False
    codec_options: dict[str, str] = field(default_factory=dict)
    output: str | None = None


_GLOBAL_FLAGS = {"-y", "-n", "-hide_banner", "-stats", "-nostats", "-filters", "-version", "-nostdin"}
_OUT_VALUE = {"-vf", "-filter:v", "-filter", "-frames:v", "-vframes", "-frames", "-c:v", "-vcodec", "-codec:v",
              "-c", "-codec", "-pix_fmt", "-r", "-f", "-fps_mode", "-vsync", "-fflags"}
_IGNORED_FLAGS = {"-an", "-sn", "-dn", "-bitexact"}


def parse_args(argv: Sequence[str]) -> Args:
    """ffmpeg's argument order: options apply to the next -i (input) or output path."""
    a = Args()
    pending_fmt: str | None = None
    pending_in: dict[str, str] = {}
    i = 0

    def value(opt: str) -> str:
        nonlocal i
        if i + 1 >= len(argv):
            raise InvalidArgumentError(f"Missing argument for option '{opt.lstrip('-')}'.")
        i += 1
        return argv[i]

    while i < len(argv):
        tok = argv[i]
        if tok in _GLOBAL_FLAGS:
            if tok == "-y":
                a.overwrite = True
            elif tok == "-n":
                a.overwrite = False
            elif tok == "-hide_banner":
                a.hide_banner = True
            elif tok in ("-stats", "-nostats"):
                a.stats = tok == "-stats"
            elif tok == "-filters":
                a.list_filters = True
            elif tok == "-version":
                a.show_version = True
        elif tok in ("-loglevel", "-v"):
            a.loglevel = _loglevel(value(tok))
        elif tok in ("-h", "-help", "--help", "-?"):
            a.help_topic = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("-") else ""
            i += 1 if a.help_topic else 0
        elif tok == "-i":
            if a.input is not None:
                raise InvalidArgumentError("avdnn takes one input (-i)")
            a.input, a.input_format, a.input_options = value(tok), pending_fmt, pending_in
            pending_fmt, pending_in = None, {}
        elif tok == "-f" and a.input is None:
            pending_fmt = value(tok)
        elif a.input is None and tok.startswith("-") and len(tok) > 1:
            pending_in[tok[1:]] = value(tok)  # demuxer options: -framerate, -video_size, ...
        elif tok in _OUT_VALUE:
            _output_option(a, tok, value(tok))
        elif tok in _IGNORED_FLAGS:
            a.bitexact = a.bitexact or tok == "-bitexact"
        elif tok.startswith("-") and tok != "-":
            opt = tok[1:].split(":", 1)[0]
            if opt in ("threads",) or opt.startswith("x264") or opt in _CODEC_OPTS:
                a.codec_options[opt] = value(tok)
            else:
                raise OptionNotFoundError(f"Unrecognized option '{tok[1:]}'.", code=AVERROR_OPTION_NOT_FOUND)
        else:
            if a.output is not None:
                raise InvalidArgumentError("avdnn writes one output")
            a.output = tok
        i += 1
    return a


_CODEC_OPTS = {"b", "b:v", "crf", "preset", "tune", "profile", "profile:v", "g", "bf", "qp", "level", "qscale",
               "q:v", "maxrate", "bufsize", "pix_fmt:v", "lossless", "deadline", "cpu-used", "row-mt"}


def _output_option(a: Args, tok: str, val: str) -> None:
    if tok in ("-vf", "-filter:v", "-filter"):
        a.filters = val
    elif tok in ("-frames:v", "-vframes", "-frames"):
        try:
            a.frames = int(val)
        except ValueError:
            raise InvalidArgumentError(f"Invalid frame count '{val}'", option="frames:v") from None
    elif tok in ("-c:v", "-vcodec", "-codec:v", "-c", "-codec"):
        a.codec = val
    elif tok == "-pix_fmt":
        from .media.pixfmt import canonical, is_known

        if not is_known(val):
            raise InvalidArgumentError(f"Unknown pixel format requested: {val}.", option="pix_fmt")
        a.pix_fmt = canonical(val)
    elif tok == "-r":
        try:
            a.rate = Fraction(val)
        except (ValueError, ZeroDivisionError):
            raise InvalidArgumentError(f"Invalid framerate value: {val}", option="r") from None
    elif tok == "-f":
        a.format = val
    elif tok in ("-fps_mode", "-vsync"):
        modes = {"0": "passthrough", "1": "cfr", "2": "vfr", "-1": "auto"}
        a.fps_mode = modes.get(val, val)
        if a.fps_mode not in ("passthrough", "cfr", "vfr", "auto"):
            raise InvalidArgumentError(f"Invalid value {val} for fps_mode", option="fps_mode")
    elif tok == "-fflags":
        a.bitexact = a.bitexact or "bitexact" in val.split("+")


def _loglevel(text: str) -> str:
    name = text.split("+")[-1]
    if name.lstrip("-").isdigit():
        n = int(name)
        name = min(_NUMERIC_LEVELS.items(), key=lambda kv: abs(kv[0] - n))[1]
    if name not in LOG_LEVELS:
        raise InvalidArgumentError(f"Invalid loglevel \"{text}\". Possible levels are: {', '.join(LOG_LEVELS)}")
    return name


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
        fps = stats.frames_written / elapsed
        self.stream.write(f"frame={stats.frames_written:5d} fps={fps:5.3g} time={int(hh):02d}:{int(mm):02d}:"
                          f"{ss:05.2f} speed={t / elapsed:5.3g}x elapsed={elapsed:.2f}s"
                          + ("\n" if final else "\r"))
        self.stream.flush()
        self.shown = True


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``avdnn`` and ``python -m avdnn``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    err = sys.stderr
    if argv[:1] == ["models"]:  # a subcommand (ffmpeg has none; "models" cannot be an option)
        from .zoo.listing import main as models

        return models(argv[1:])
    if argv[:1] == ["batch"]:
        return _batch(argv[1:])
    try:
        args = parse_args(argv)
        level = LOG_LEVELS[args.loglevel]
        _setup_logging(level)
        if not args.hide_banner and not args.show_version and level <= logging.INFO:
            err.write(_banner() + "\n")
        if args.show_version:
            sys.stdout.write(_banner() + "\n")
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
            raise InvalidArgumentError("At least one output file must be specified")
        return _run(args, level)
    except AvdnnError as exc:
        if not _quiet(argv):
            err.write(f"avdnn: {exc.oneline()}\n")
        return exit_status(exc.code)
    except KeyboardInterrupt:
        err.write("avdnn: interrupted\n")
        return 255


def _quiet(argv: list[str]) -> bool:
    """-loglevel quiet silences even the error line, as in ffmpeg."""
    for flag in ("-loglevel", "-v"):
        if flag in argv[:-1]:
            level = argv[argv.index(flag) + 1].split("+")[-1]
            return level in ("quiet", "-8")
    return False


def exit_status(code: int) -> int:
    """ffmpeg's exit status for an AVERROR code: its low byte (never 0 for an error)."""
    return (code & 0xFF) or 1


def _run(args: Args, level: int) -> int:
    from . import api

    show = args.stats if args.stats is not None else sys.stderr.isatty()
    progress = Progress(sys.stderr) if show and level <= logging.INFO else None
    last: list[Any] = [None]

    def on_frame(stats: Any, frame: Any) -> None:
        last[0] = frame
        if progress is not None:
            progress(stats, frame)

    try:
        stats = api.run(args.input or "", args.filters, output=args.output, progress=on_frame, **run_kwargs(args))
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
            sys.stderr.write(f"avdnn: output '{args.output}' was finished cleanly with the "
                             f"{failed.frames_written} frames before the error\n")
        return exit_status(exc.code)
    if progress is not None:
        progress(stats, last[0], final=True)
    if level <= logging.INFO:
        sys.stderr.write(stats.summary() + "\n")
    return 0


def run_kwargs(args: Args) -> dict[str, Any]:
    """The api.run() keywords of a parsed command line (all but the input, chain, output and progress)."""
    return {"input_format": args.input_format, "input_options": args.input_options, "frames": args.frames,
            "format": args.format, "codec": args.codec, "pix_fmt": args.pix_fmt, "rate": args.rate,
            "overwrite": args.overwrite, "bitexact": args.bitexact, "codec_options": args.codec_options,
            "fps_mode": args.fps_mode}


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
            raise InvalidArgumentError(f"Unexpected argument '{args.output}': inputs follow -i, the output "
                                       "template follows -o")
        level = LOG_LEVELS[args.loglevel]
        _setup_logging(level)
        return run_command(flags, args.filters, run_kwargs(args), stats=args.stats, level=level)
    except AvdnnError as exc:
        if not _quiet(argv):
            sys.stderr.write(f"avdnn: {exc.oneline()}\n")
        return exit_status(exc.code)
    except KeyboardInterrupt:
        sys.stderr.write("avdnn: interrupted\n")
        return 255


def _setup_logging(level: int) -> None:
    handler = logging.StreamHandler(sys.stderr)
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
    import av

    from . import __version__

    libs = av.library_versions
    lavf = ".".join(str(x) for x in libs.get("libavfilter", ()))
    return f"avdnn version {__version__} (PyAV {av.__version__}, libavfilter {lavf})"
