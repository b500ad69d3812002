"""A stranger's job confined: every local path under one root, every URL on an allow-list.

``avdnn serve`` runs command lines sent over the network. Whatever they name, a file read or
written (inputs, outputs, a ``-filter_complex_script``, a filter's model, LUT or stats file, a
TLS key), a protocol (``file:``, ``pipe:``, ``concat:``...) or a socket to listen on, is checked
here before anything opens it, and the job is rewritten to open exactly what was checked: a
path becomes its real absolute path (symlinks followed), so the check and the open agree
whatever the process's working directory, and libavformat can never read it as a URL. Nested
opens get FFmpeg's own second wall: ``protocol_whitelist`` on every input (``file`` only for a
local one), and for a local input a ``format_whitelist`` without the demuxers that follow
entries (concat, hls, dash, image sequences). A refusal is a :class:`ConfinementError`, one
line that names what was given and never depends on whether the file exists.
"""

from __future__ import annotations

import copy
import errno
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict
from urllib.parse import parse_qsl

from avdnn.api.many import Job
from avdnn.errors import AVERROR, InvalidArgumentError, PermissionDeniedError
from avdnn.graph.files import NamedFile, format_dict, place_files
from avdnn.media.libav import fileopts as fo
from avdnn.media.libav.avio import guess_muxer
from avdnn.media.output.muxer import check_output_name
from avdnn.run.request import RunOptions
from avdnn.zoo.resolve import is_zoo_ref

__all__ = ["ALLOWED_PROTOCOLS", "ConfinedArgv", "Confinement", "ConfinementError", "confine_argv", "confine_job"]

#: the protocols a confined job may name (a URL of any other scheme, a nested one too, is refused)
ALLOWED_PROTOCOLS = ("rtsp", "rtsps", "rtmp", "rtmps", "srt", "http", "https", "tcp", "udp", "rtp")
#: what those are made of, for the nested opens of a network input (an HLS playlist's segments)
_NETWORK_WHITELIST = ",".join((*ALLOWED_PROTOCOLS, "tls", "httpproxy", "crypto"))
_SCHEME = re.compile(r"[A-Za-z0-9+.-]*")
#: options whose value is a file to read (``-/filter_complex``: ffmpeg 7's ``-/NAME FILE`` form)
_SCRIPT_OPTIONS = ("-filter_complex_script", "-/")
#: ``-x264-params`` keys that name a file or make the encoder write one (its two-pass log)
_FILE_PARAM = re.compile(r"file|stats|csv|save|load|dump|recon|qp|cqm|scaling|zone|lambda|dhdr|log|pass|input|output")
_OUTSIDE = "outside the media root"


class _Where(TypedDict, total=False):
    """The context of a refusal: the filter and the option that named it."""

    filter: str | None
    option: str | None


class ConfinementError(PermissionDeniedError):
    """What a confined job may not touch: AVERROR(EACCES)."""

    default_code = AVERROR(errno.EACCES)


@dataclass(frozen=True)
class Confinement:
    """Where a confined job may read and write: ``media_root`` (its models also in ``model_dir`` or
    the zoo), and whether it may listen for a peer (``?listen``, ``-listen 1``, srt ``mode=listener``)."""

    media_root: Path
    model_dir: Path | None = None
    allow_listen: bool = False

    @classmethod
    def at(
        cls, media_root: str | os.PathLike[str], model_dir: str | os.PathLike[str] | None = None, **kw: bool
    ) -> Confinement:
        """The folders resolved (symlinks followed); each must be a folder."""
        folders = []
        for name, folder in (("media_root", media_root), ("model_dir", model_dir)):
            real = None if folder is None else Path(os.path.realpath(folder))
            if real is not None and not real.is_dir():
                raise InvalidArgumentError(f"{name} '{folder}' is not a folder", option=name)
            folders.append(real)
        assert folders[0] is not None
        return cls(folders[0], folders[1], **kw)

    # -- paths --------------------------------------------------------------------------------

    def path(
        self,
        given: str,
        *,
        within: Sequence[Path] = (),
        filter: str | None = None,  # noqa: A002 - FFmpeg's noun, as AvdnnError's
        option: str | None = None,
    ) -> str:
        """``given`` (relative to the first root) as a real absolute path inside one of the roots
        (``within``, the media root by default); ConfinementError otherwise, the same whether
        or not the file exists."""
        roots = list(within) or [self.media_root]
        where = _Where(filter=filter, option=option)
        if "\x00" in given:
            raise ConfinementError("a NUL character in a path", **where)
        if not given:
            return given  # names nothing, opens nothing: refused as ffmpeg refuses it where it is used
        full = os.path.realpath(os.path.join(roots[0], given))
        root = next((r for r in roots if full == str(r) or full.startswith(os.path.join(r, ""))), None)
        if root is None:
            raise ConfinementError(_OUTSIDE, file=given, **where)
        if "%" in os.path.relpath(os.path.dirname(full), root):  # an image2 pattern spans folders
            raise ConfinementError("a '%' pattern in a folder name", file=given, **where)
        return full

    def model(self, given: str, *, filter: str | None = None, option: str | None = None) -> str:  # noqa: A002
        """A model (or its labels, its extra inputs): a zoo reference, or a path in --model-dir or the media root."""
        if is_zoo_ref(given):
            return given
        roots = [self.media_root] if self.model_dir is None else [self.model_dir, self.media_root]
        if self.model_dir is not None and not os.path.exists(os.path.join(self.model_dir, given)):
            roots.reverse()  # relative: the model folder's first, then the media root's
        return self.path(given, within=roots, filter=filter, option=option)

    # -- URLs ---------------------------------------------------------------------------------

    def url(
        self,
        given: str,
        options: Mapping[str, str] | None = None,
        *,
        filter: str | None = None,  # noqa: A002 - FFmpeg's noun, as AvdnnError's
        option: str | None = None,
    ) -> str | None:
        """The scheme of an allowed URL, None for a local path; ConfinementError for any other."""
        scheme = protocol(given)
        where = _Where(filter=filter, option=option)
        if given == "-" or scheme in ("pipe", "fd"):
            raise ConfinementError("standard input and output and pipes are not allowed", **where)
        if scheme is None:
            return None
        if scheme not in ALLOWED_PROTOCOLS:
            allowed = ", ".join(ALLOWED_PROTOCOLS)
            raise ConfinementError(
                f"protocol '{scheme}' is not allowed (allowed: {allowed}, and local paths)", file=given, **where
            )
        if not self.allow_listen and listens(given, options or {}):
            raise ConfinementError("a listening URL (the service was started without --allow-listen)", **where)
        return scheme


def protocol(url: str) -> str | None:
    """The protocol libavformat opens ``url`` with, as its url_find_protocol reads it (None: a file path)."""
    if url.startswith("subfile,"):
        return "subfile"
    n = _SCHEME.match(url).end()  # type: ignore[union-attr]
    return url[:n].lower() if 0 < n < len(url) and url[n] == ":" else None


def listens(url: str, options: Mapping[str, str]) -> bool:
    """Whether a URL or its options make the protocol wait for a peer to connect."""
    params = dict(parse_qsl(url.partition("?")[2], keep_blank_values=True))
    params.update(options)
    return (
        any(params.get(k, "0") not in ("0", "") for k in ("listen", "rtmp_listen"))
        or params.get("mode") in ("listener", "rendezvous")
        or "listen" in params.get("rtsp_flags", "")
    )


@dataclass(frozen=True)
class ConfinedArgv:
    """An argv whose file-reading options were checked and now name their real paths."""

    argv: list[str]
    #: the files the parser will read (``-filter_complex_script``), as given
    scripts: list[str] = field(default_factory=list)


def confine_argv(argv: Sequence[str], c: Confinement) -> ConfinedArgv:
    """Check the paths of the options that make the parser read a file, before it reads them.

    Every occurrence counts (a word that is another option's value too: refused the same).
    """
    out = list(argv)
    scripts: list[str] = []
    for i, tok in enumerate(argv[:-1]):
        name = tok.partition(":")[0]
        if name == _SCRIPT_OPTIONS[0] or tok.startswith(_SCRIPT_OPTIONS[1]):
            out[i + 1] = c.path(argv[i + 1], option=name.lstrip("-"))
            scripts.append(argv[i + 1])
    return ConfinedArgv(out, scripts)


def confine_job(job: Job, c: Confinement) -> Job:
    """``job`` with every path it opens checked and made real, every URL checked, FFmpeg's
    whitelists set on its inputs; ConfinementError for the first thing it may not touch."""
    opts: RunOptions = {**job.options}
    url, _, in_opts = _input(c, job.input, opts.get("input_format"), opts.get("input_options") or {})
    opts["input_options"] = in_opts
    more = []
    for extra, extra_fmt, extra_opts in opts.get("more_inputs") or ():
        more.append(_input(c, extra, extra_fmt, extra_opts or {}))
    if more:
        opts["more_inputs"] = more
    place = _Placer(c)
    filters = place_files(job.filters, place, graph=False) if job.filters else job.filters
    if opts.get("filter_complex"):
        opts["filter_complex"] = place_files(str(opts["filter_complex"]), place, graph=True)
    if opts.get("audio_filters"):
        opts["audio_filters"] = place_files(str(opts["audio_filters"]), place, graph=False, avdnn=False)
    streams = opts.get("stream_options")
    if streams is not None:
        streams = copy.deepcopy(streams)
        if streams.audio_filters:
            streams.audio_filters = place_files(streams.audio_filters, place, graph=False, avdnn=False)
        streams.per_stream = {(n, s): _av_options(c, {n: v}, "codec")[n] for (n, s), v in streams.per_stream.items()}
        opts["stream_options"] = streams
    opts["codec_options"] = _av_options(c, opts.get("codec_options") or {}, "codec") or None
    opts["format_options"] = _av_options(c, opts.get("format_options") or {}, "output") or None
    output = _output(c, job.output, opts.get("format"), opts.get("format_options") or {})
    return Job(url, filters, output=output, **opts)


def _input(
    c: Confinement, url: str, fmt: str | None, options: Mapping[str, str]
) -> tuple[str, str | None, dict[str, str]]:
    """An input as it may be opened: (URL or real path, format, its options with the whitelists)."""
    opts = _av_options(c, options, "input", lavfi=fmt == "lavfi")
    if fmt == "lavfi":
        return place_files(url, _Placer(c), graph=True, avdnn=False), fmt, opts
    if fmt in fo.DEVICE_FORMATS:
        raise ConfinementError(f"the device '{fmt}' is not allowed", option="f")
    scheme = c.url(url, opts, option="i")
    if scheme is None:
        if fmt in fo.NESTED_DEMUXERS:
            raise ConfinementError(f"the demuxer '{fmt}' opens the files its input names", option="f")
        path = c.path(url, option="i")
        whitelist = f"file,{_NETWORK_WHITELIST}"  # an SDP file names its network streams
        return path, fmt, {**opts, "protocol_whitelist": whitelist, "format_whitelist": fo.local_demuxers()}
    if fmt in fo.NESTED_DEMUXERS - fo.NETWORK_PLAYLISTS:
        raise ConfinementError(f"the demuxer '{fmt}' opens the files its input names", option="f")
    return url, fmt, {**opts, "protocol_whitelist": _NETWORK_WHITELIST}


def _output(c: Confinement, output: object, fmt: str | None, options: Mapping[str, str]) -> str:
    """The output as it may be written: a real path under the media root, or an allowed URL."""
    if not isinstance(output, str):
        raise ConfinementError("an output must be a path or a URL")
    if output == "-" and fmt == "null":
        return output  # -f null -: nothing is written
    scheme = c.url(output, options, option="output")
    if scheme is None:
        check_output_name(output, fmt)  # in the client's words, before the name is made absolute
    muxer = fmt or (guess_muxer(None, output) if scheme is None else None)
    if muxer in fo.NESTED_MUXERS:
        raise ConfinementError(f"the muxer '{muxer}' writes files beside its output", file=output)
    if muxer in fo.DEVICE_FORMATS:
        raise ConfinementError(f"the device '{muxer}' is not allowed", option="f")
    return output if scheme is not None else c.path(output, option="output")


def _av_options(c: Confinement, options: Mapping[str, str], where: str, *, lavfi: bool = False) -> dict[str, str]:
    """AVOptions (``-name value``) with their files placed; ConfinementError for what cannot be."""
    out = dict(options)
    for name, value in options.items():
        kind = fo.AV_OPTIONS.get(name)
        if name == "flags" and re.search(r"pass[12]", value):
            raise ConfinementError("two-pass encoding writes its log beside the service", option=name)
        if kind is None or kind.kind == fo.LISTEN:
            continue  # listening: judged with the URL it applies to
        if kind.kind in (fo.READ, fo.WRITE):
            out[name] = c.path(value, option=name)
        elif kind.kind == fo.URL:
            out[name] = value if c.url(value, option=name) else c.path(value, option=name)
        elif kind.kind == fo.GRAPH and lavfi:
            out[name] = place_files(value, _Placer(c), graph=True, avdnn=False)
        elif kind.kind == fo.PARAMS:
            keys = [pair.partition("=")[0] for pair in re.split(r"[:,]", value)]
            bad = next((k for k in keys if _FILE_PARAM.search(k)), None)
            if bad is not None:
                raise ConfinementError(f"'{bad}' may name a file", option=name)
        elif kind.kind == fo.REFUSED and name == "enable_drefs" and value.lower() in ("0", "false"):
            continue
        elif kind.kind != fo.GRAPH:
            what = {fo.POLICY: "is set by the service", fo.FORMAT_OPTS: "sets the options of a nested open"}
            raise ConfinementError(what.get(kind.kind, "reaches files a path check cannot bound"), option=name)
    return out


class _Placer:
    """What a filter's file-valued option may open (``place`` of :func:`avdnn.graph.files.place_files`)."""

    def __init__(self, c: Confinement) -> None:
        self.c = c

    def __call__(self, f: NamedFile) -> str | None:
        where = _Where(filter=f.filter, option=f.option)
        value = f.value if f.value is not None else f.default
        if f.kind == fo.REFUSED:
            raise ConfinementError(f"'{f.filter}' is not allowed: {f.value}", filter=f.filter)
        if f.kind == fo.FORMAT_OPTS:
            if f.value is not None:
                raise ConfinementError("sets the options of a nested open", **where)
            local = f.default is not None and protocol(f.default) is None
            wall = {"protocol_whitelist": _NETWORK_WHITELIST}
            if local:
                wall = {"protocol_whitelist": f"file,{_NETWORK_WHITELIST}", "format_whitelist": fo.local_demuxers()}
            return format_dict(wall)
        if value is None:
            return None
        if f.kind == fo.FORMAT:
            if value in fo.NESTED_DEMUXERS or value in fo.DEVICE_FORMATS:
                raise ConfinementError(f"the demuxer '{value}' is not allowed", **where)
            return None
        if f.kind == fo.MODEL or (f.kind == fo.READ and f.option in ("labels", "extra_inputs")):
            return self.c.model(value, **where)
        if f.kind in (fo.URL, fo.OUT_URL):
            return value if self.c.url(value, None, **where) else self.c.path(value, **where)
        return self.c.path(value, **where)
