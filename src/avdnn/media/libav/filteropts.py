"""The AVOptions of libavfilter's filters, walked through ctypes (PyAV does not expose them).

A filter's ``priv_class`` options (names, types, defaults, ranges, named constants, and those of
its child classes such as framesync or the SWResampler) feed ``-h filter=NAME``, the checks of a
libavfilter segment's option names and "did you mean". The libraries are :mod:`avdnn.media.libav`'s.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from avdnn.media.libav.bindings import _AVOption, _load

__all__ = [
    "FilterInfo",
    "OptionInfo",
    "filter_description",
    "filter_info",
    "filter_is_source",
    "filter_option_names",
    "filter_options",
    "option_consts",
    "positional_names",
]

_OPT_TYPES = {  # enum AVOptionType, libavutil >= 59 (starts at 1)
    1: "flags",
    2: "int",
    3: "int64",
    4: "double",
    5: "float",
    6: "string",
    7: "rational",
    8: "binary",
    9: "dict",
    10: "uint64",
    11: "const",
    12: "image_size",
    13: "pixel_fmt",
    14: "sample_fmt",
    15: "video_rate",
    16: "duration",
    17: "color",
    18: "bool",
    19: "chlayout",
    20: "uint",
}
_OPT_FLAG_ARRAY = 1 << 16
_DBL_TYPES = {"double", "float", "rational"}
_STR_TYPES = {"string", "binary", "dict", "image_size", "video_rate", "color", "chlayout"}
AVFILTER_FLAG_DYNAMIC_INPUTS = 1 << 0
AVFILTER_FLAG_DYNAMIC_OUTPUTS = 1 << 1
AVFILTER_FLAG_SUPPORT_TIMELINE = (1 << 16) | (1 << 17)


@dataclass(frozen=True)
class OptionInfo:
    """One AVOption of a filter's private class (``type == "const"`` for named values)."""

    name: str
    help: str | None
    type: str
    default: str | float | int | None
    min: float
    max: float
    unit: str | None
    flags: int = 0
    array: bool = False
    owner: str = ""  # AVClass name: the filter's, or a child class's such as "framesync"
    #: where the value lives in the filter's context: aliases share one (a positional value skips them)
    offset: int = -1


@dataclass(frozen=True)
class FilterInfo:
    """The public part of an AVFilter."""

    name: str
    description: str | None
    nb_inputs: int  # static pads; see dynamic_inputs
    nb_outputs: int
    flags: int

    @property
    def dynamic_inputs(self) -> bool:
        return bool(self.flags & AVFILTER_FLAG_DYNAMIC_INPUTS)

    @property
    def dynamic_outputs(self) -> bool:
        return bool(self.flags & AVFILTER_FLAG_DYNAMIC_OUTPUTS)

    @property
    def timeline(self) -> bool:
        """The graph gives the filter an ``enable`` option (not among its AVOptions)."""
        return bool(self.flags & AVFILTER_FLAG_SUPPORT_TIMELINE)

    @property
    def is_source(self) -> bool:
        return self.nb_inputs == 0 and not self.dynamic_inputs


def _s(b: bytes | None) -> str | None:
    return None if b is None else b.decode("utf-8", "replace")


def _default(o: _AVOption, kind: str, array: bool) -> str | float | int | None:
    raw = o.default_val
    if array or kind in _STR_TYPES:
        ptr = ctypes.c_void_p(raw & 0xFFFFFFFFFFFFFFFF).value
        if array and ptr:  # AVOptionArrayDef *arr; its first member is const char *def
            ptr = ctypes.c_void_p.from_address(ptr).value
        return ctypes.string_at(ptr).decode("utf-8", "replace") if ptr else None
    if kind in _DBL_TYPES:
        return float(ctypes.c_double.from_buffer(ctypes.c_int64(raw)).value)
    if kind == "uint64":
        return int(raw) & 0xFFFFFFFFFFFFFFFF
    return int(raw)


def filter_info(name: str) -> FilterInfo | None:
    """Name, description, static pad counts and flags of a libavfilter filter, or None."""
    _, avf = _load()
    f = avf.avfilter_get_by_name(name.encode())
    if not f:
        return None
    c = f.contents
    return FilterInfo(
        name=_s(c.name) or name,
        description=_s(c.description),
        nb_inputs=avf.avfilter_filter_pad_count(f, 0),
        nb_outputs=avf.avfilter_filter_pad_count(f, 1),
        flags=c.flags,
    )


def filter_description(name: str) -> str | None:
    """The one-line description libavfilter has for ``name`` (None when unknown)."""
    info = filter_info(name)
    return info.description if info else None


def filter_is_source(name: str) -> bool:
    """True for a known filter with no (static or dynamic) inputs, like ``testsrc``."""
    info = filter_info(name)
    return bool(info and info.is_source)


def _walk(avu: ctypes.CDLL, cls: int, seen: set[int] | None, out: list[OptionInfo]) -> None:
    """Options of AVClass ``cls`` then, depth first, of its child classes unless ``seen`` is None."""
    if not cls or (seen is not None and cls in seen):
        return
    owner = _s(ctypes.c_char_p.from_address(cls).value) or ""  # AVClass.class_name
    holder = ctypes.c_void_p(cls)
    fake_obj = ctypes.byref(holder)  # pointer to pointer to AVClass, as AV_OPT_SEARCH_FAKE_OBJ
    opt = avu.av_opt_next(fake_obj, None)
    while opt:
        o = opt.contents
        array = bool(o.type & _OPT_FLAG_ARRAY)
        kind = _OPT_TYPES.get(o.type & ~_OPT_FLAG_ARRAY, f"unknown({o.type})")
        out.append(
            OptionInfo(
                name=_s(o.name) or "",
                help=_s(o.help),
                type=kind,
                default=_default(o, kind, array),
                min=o.min,
                max=o.max,
                unit=_s(o.unit),
                flags=o.flags,
                array=array,
                owner=owner,
                offset=o.offset,
            )
        )
        opt = avu.av_opt_next(fake_obj, opt)
    if seen is None:
        return
    seen.add(cls)
    it = ctypes.c_void_p()
    while child := avu.av_opt_child_class_iterate(holder, ctypes.byref(it)):
        _walk(avu, child, seen, out)


def filter_options(name: str, *, children: bool = True) -> list[OptionInfo] | None:
    """The AVOptions of filter ``name`` in declaration order, const entries included.

    With ``children`` the options of child classes (framesync's ``shortest``, ...) follow,
    as ``ffmpeg -h filter=NAME`` lists them; an option may then appear twice. None for an
    unknown filter, [] for one without options.
    """
    avu, avf = _load()
    f = avf.avfilter_get_by_name(name.encode())
    if not f:
        return None
    out: list[OptionInfo] = []
    _walk(avu, f.contents.priv_class or 0, set() if children else None, out)
    return out


def filter_option_names(name: str) -> list[str] | None:
    """Non-const option names, declaration order, no repeats (None for an unknown filter)."""
    opts = filter_options(name)
    if opts is None:
        return None
    return list(dict.fromkeys(o.name for o in opts if o.type != "const"))


def positional_names(name: str) -> list[str]:
    """The options a filter's positional values go to, in order, as libavfilter's process_options
    takes them: its own options (no child class's), named constants and aliases skipped."""
    out: list[str] = []
    last = None
    for o in filter_options(name, children=False) or []:
        if o.type == "const" or o.offset == last:
            continue
        last = o.offset
        out.append(o.name)
    return out


def option_consts(name: str, option: str) -> list[str]:
    """Named constants accepted by ``option`` of filter ``name`` ([] when none or unknown)."""
    opts = filter_options(name) or []
    opt = next((o for o in opts if o.name == option and o.type != "const"), None)
    if opt is None or opt.unit is None:
        return []
    return list(
        dict.fromkeys(o.name for o in opts if o.type == "const" and o.unit == opt.unit and o.owner == opt.owner)
    )
