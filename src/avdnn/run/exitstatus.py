"""How a run ended, as the status ffmpeg's process exits with.

ffmpeg exits with the low byte of the AVERROR that ended it (254 for ENOENT, 234 for EINVAL, 8
for an unknown filter or option), 69 when the decode error rate was exceeded, 255 after SIGINT
(the outputs finished: "Exiting normally, received signal 2."), and 1 for a command line with
an input and no output. A bug in avdnn ends as AVERROR_BUG does.
"""

from __future__ import annotations

from avdnn.errors import AVERROR_BUG, FFMPEG_ERROR_RATE_EXCEEDED, AvdnnError

__all__ = ["NO_OUTPUT", "exit_status", "status_of"]

#: ``-i INPUT`` without an output: ffmpeg's "At least one output file must be specified".
NO_OUTPUT = 1


def exit_status(code: int) -> int:
    """ffmpeg's exit status for an AVERROR code: its low byte (never 0 for an error)."""
    if code == FFMPEG_ERROR_RATE_EXCEEDED:  # ffmpeg's main(): "Decode error rate ... exceeds maximum"
        return 69
    return (code & 0xFF) or 1


def status_of(exc: BaseException) -> int:
    """The exit status of a run that ``exc`` ended: its error code's, 255 for Ctrl-C (the outputs
    were finished cleanly), AVERROR_BUG's for any other exception (a bug)."""
    if isinstance(exc, AvdnnError):
        return exit_status(exc.code)
    if isinstance(exc, KeyboardInterrupt):
        return 255
    return exit_status(AVERROR_BUG)
