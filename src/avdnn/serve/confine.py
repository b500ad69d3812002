"""Every job the service makes, confined to its media root before it is checked or started.

The service turns each request into jobs through one parser (an args pipeline's argv, each
source of a template), so the confinement wraps that parser: the options that make the parser
read a file (``-filter_complex_script``) are checked before it reads them, then every job it
returns is confined (:func:`avdnn.api.confine_job`: paths made real and kept under
``--media-root``, models also from the zoo or ``--model-dir``, URLs on the allow-list, no
listening without ``--allow-listen``). A refusal is a 403 that names what was given and never
says whether a file exists; ``-y`` is a 400 (the service never overwrites: it writes beside).
An error about a graph read from a file says what kind of error it is and never quotes the file.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

from avdnn import api
from avdnn.errors import AVERROR, AvdnnError, InvalidArgumentError, av_err2str
from avdnn.serve.config import ServeConfig
from avdnn.serve.errors import ServeError
from avdnn.serve.pipeline import CommandParser

__all__ = ["ForbiddenError", "confined_parser", "confinement"]


class ForbiddenError(ServeError):
    """A path, URL or option the service may not touch: 403."""

    status = 403
    default_code = AVERROR(errno.EACCES)


def confinement(config: ServeConfig) -> api.Confinement:
    """The service's confinement: ``media_root``, ``model_dir``, ``allow_listen``."""
    return api.Confinement.at(config.media_root or ".", config.model_dir, allow_listen=config.allow_listen)


def confined_parser(parser: CommandParser, config: ServeConfig) -> CommandParser:
    """``parser`` whose every job is confined (module docstring)."""
    policy = confinement(config)

    def parse(argv: Sequence[str]) -> list[api.Job]:
        try:
            given = api.confine_argv(argv, policy)
            try:
                jobs = [api.confine_job(job, policy) for job in parser(given.argv)]
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
        return jobs

    return parse
