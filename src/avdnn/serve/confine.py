"""Every job the service makes, confined to its media root before it is checked or placed.

The service turns each request into jobs through one parser (an args pipeline's argv, each
source of a template), so the confinement wraps that parser: the options that make the parser
read a file (``-filter_complex_script``) are checked before it reads them, then every job it
returns is confined (:func:`avdnn.api.confine_job`: paths made real and kept under
``--media-root``, models also from the zoo or ``--model-dir``, URLs on the allow-list, no
listening without ``--allow-listen``). A refusal is a 403 that names what was given and never
says whether a file exists; ``-y`` is a 400 (the service never overwrites: it writes beside).
An error about a graph read from a file says what kind of error it is and never quotes the file.

Each job comes back twice (:class:`ParsedJob`): confined, for the head's checks, and as the parser
made it, for the node that runs it: that node's agent confines it again against its own media root
(:class:`~avdnn.serve.host.LocalAgent`), since a confined job cannot be confined twice (its
whitelists are the service's own options) and a path is only real on the node that opens it.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from avdnn import api
from avdnn.errors import AVERROR, AvdnnError, InvalidArgumentError, av_err2str
from avdnn.serve.config import ServeConfig
from avdnn.serve.errors import ServeError

__all__ = ["CommandParser", "ForbiddenError", "JobParser", "ParsedJob", "confine", "confined_parser", "confinement"]

#: argv (as the ``avdnn`` command takes it) to its output jobs: the CLI's parser, handed in by it
CommandParser = Callable[[Sequence[str]], list[api.Job]]


class ForbiddenError(ServeError):
    """A path, URL or option the service may not touch: 403."""

    status = 403
    default_code = AVERROR(errno.EACCES)


def confinement(config: ServeConfig) -> api.Confinement:
    """The service's confinement: ``media_root``, ``model_dir``, ``allow_listen``."""
    return api.Confinement.at(config.media_root or ".", config.model_dir, allow_listen=config.allow_listen)


def confine(job: api.Job, policy: api.Confinement) -> api.Job:
    """``job`` confined by ``policy`` (a node's own, :class:`~avdnn.serve.host.LocalAgent`); a refusal is a 403."""
    try:
        return api.confine_job(job, policy)
    except api.ConfinementError as exc:
        raise ForbiddenError(exc.message, code=exc.code, filter=exc.filter, option=exc.option, file=exc.file) from None


@dataclass(frozen=True)
class ParsedJob:
    """One job of a request: ``raw`` as the parser made it, ``confined`` as the head checked it."""

    raw: api.Job
    confined: api.Job


#: argv to its jobs, each confined (:func:`confined_parser`)
JobParser = Callable[[Sequence[str]], list[ParsedJob]]


def confined_parser(parser: CommandParser, config: ServeConfig) -> JobParser:
    """``parser`` whose every job is confined (module docstring)."""
    policy = confinement(config)

    def parse(argv: Sequence[str]) -> list[ParsedJob]:
        try:
            given = api.confine_argv(argv, policy)
            try:
                raw = parser(given.argv)
                jobs = [api.confine_job(job, policy) for job in raw]
                for job in jobs if given.scripts else ():
                    api.check_job(job)  # its errors, here, where they can be told without the text
            except api.ConfinementError:
                raise
            except AvdnnError as exc:
                if not given.scripts:
                    raise
                raise InvalidArgumentError(
                    f"the filtergraph read from '{given.scripts[0]}' is not valid: {av_err2str(exc.code)} "
                    "(its text is not shown)",
                    code=exc.code,
                ) from None
        except api.ConfinementError as exc:
            raise ForbiddenError(
                exc.message, code=exc.code, filter=exc.filter, option=exc.option, file=exc.file
            ) from None
        for job in jobs:
            if job.options.get("overwrite"):
                raise InvalidArgumentError(
                    "-y is not taken by a served pipeline: the service never overwrites a file, "
                    "it writes beside it (NAME.1.EXT)",
                    option="y",
                )
        return [ParsedJob(r, j) for r, j in zip(raw, jobs, strict=True)]

    return parse
