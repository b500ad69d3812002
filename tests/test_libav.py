"""Tests for avdnn.media.libav: ctypes probing of libavfilter through PyAV's own libraries."""

from __future__ import annotations

import errno
import os
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import pytest

from avdnn import errors
from avdnn.media.libav import bindings as libav
from avdnn.media.libav import filteropts

IN = {
    "width": 64,
    "height": 64,
    "pix_fmt": "yuv420p",
    "time_base": Fraction(1, 25),
    "frame_rate": Fraction(25),
    "sar": Fraction(1),
}


def _opt(filter_name: str, option: str) -> filteropts.OptionInfo:
    opts = filteropts.filter_options(filter_name)
    assert opts is not None
    return next(o for o in opts if o.name == option and o.type != "const")


# --------------------------------------------------------------------------- loading


def test_loads_the_libraries_pyav_loaded() -> None:
    import av

    libs_dir = os.path.join(os.path.dirname(os.path.dirname(av.__file__)), "av.libs")
    avu, avf = libav._load()
    assert libav._load() == (avu, avf)  # loaded once
    if os.path.isdir(libs_dir):
        assert os.path.dirname(avf._name) == libs_dir and "libavfilter-" in avf._name
        assert os.path.dirname(avu._name) == libs_dir and "libavutil-" in avu._name
    with open("/proc/self/maps") as fh:
        mapped = fh.read()
    assert avf._name in mapped and avu._name in mapped


# --------------------------------------------------------------------------- probe_chain


def test_probe_empty_chain_is_the_input() -> None:
    info = libav.probe_chain("", **IN)
    assert info == libav.ChainInfo(64, 64, "yuv420p", Fraction(1, 25), Fraction(25), Fraction(1))


def test_probe_fps_sets_frame_rate_and_time_base() -> None:
    info = libav.probe_chain("fps=10", **IN)
    assert info.frame_rate == Fraction(10)
    assert info.time_base == Fraction(1, 10)
    assert (info.width, info.height, info.pix_fmt) == (64, 64, "yuv420p")


def test_probe_scale_and_format() -> None:
    info = libav.probe_chain("scale=32:-2,format=gray", **IN)
    assert (info.width, info.height, info.pix_fmt) == (32, 32, "gray")
    assert info.time_base == Fraction(1, 25) and info.frame_rate == Fraction(25)


def test_probe_setpts_keeps_link_rate() -> None:
    info = libav.probe_chain("setpts=2*PTS", **IN)
    assert info.time_base == Fraction(1, 25)
    assert info.frame_rate == Fraction(25)  # libavfilter 11's setpts leaves the link rate alone


@pytest.mark.parametrize(
    ("chain", "field", "value"),
    [
        ("settb=1/1000", "time_base", Fraction(1, 1000)),
        ("setsar=2", "sar", Fraction(2)),
        ("framerate=50", "frame_rate", Fraction(50)),
        ("crop=16:8", "width", 16),
        ("transpose=1,scale=iw/2:ih", "height", 64),
        ("split[a][b];[a][b]hstack", "width", 128),
        ("format=rgb24", "pix_fmt", "rgb24"),
    ],
)
def test_probe_various(chain: str, field: str, value: object) -> None:
    assert getattr(libav.probe_chain(chain, **IN), field) == value


def test_probe_unknown_rate_and_sar() -> None:
    info = libav.probe_chain("", **{**IN, "frame_rate": None, "sar": None})
    assert info.frame_rate is None
    assert info.sar == Fraction(0, 1)


def test_probe_odd_rates() -> None:
    info = libav.probe_chain("", **{**IN, "time_base": Fraction(1001, 30000), "frame_rate": Fraction(30000, 1001)})
    assert info.frame_rate == Fraction(30000, 1001)
    assert info.time_base == Fraction(1001, 30000)


@pytest.mark.parametrize(
    ("chain", "cls", "code"),
    [
        ("scale=w=abc", errors.InvalidArgumentError, -errno.EINVAL),
        ("fps=abc", errors.InvalidArgumentError, -errno.EINVAL),
        ("nosuchfilter", errors.FilterNotFoundError, errors.AVERROR_FILTER_NOT_FOUND),
        ("scale=foo=1", errors.OptionNotFoundError, errors.AVERROR_OPTION_NOT_FOUND),
        ("split", errors.InvalidArgumentError, -errno.EINVAL),  # an unconnected output pad
    ],
)
def test_probe_errors(chain: str, cls: type[errors.AvdnnError], code: int) -> None:
    with pytest.raises(cls) as exc_info:
        libav.probe_chain(chain, **IN)
    err = exc_info.value
    assert err.code == code < 0
    assert chain in err.message
    assert errors.av_err2str(code) in err.message  # av_strerror text


def test_probe_rejects_bad_input() -> None:
    with pytest.raises(errors.InvalidArgumentError):
        libav.probe_chain("", **{**IN, "pix_fmt": "yuv420p:frame_rate=1"})
    with pytest.raises(errors.InvalidArgumentError):
        libav.probe_chain("", **{**IN, "width": 0})
    with pytest.raises(errors.InvalidArgumentError):
        libav.probe_chain("", **{**IN, "time_base": Fraction(0)})
    with pytest.raises(errors.InvalidArgumentError) as exc_info:
        libav.probe_chain("", **{**IN, "pix_fmt": "bogus"})  # rejected by libavfilter itself
    assert exc_info.value.code == -errno.EINVAL


def test_probe_prints_nothing_on_success(capfd: pytest.CaptureFixture[str]) -> None:
    libav.probe_chain("scale=32:32,format=gray,fps=5", **IN)
    assert capfd.readouterr() == ("", "")


def test_probe_is_thread_safe() -> None:
    chains = ["fps=10", "scale=32:-2,format=gray", "setsar=2", ""] * 8
    expected = [libav.probe_chain(c, **IN) for c in chains]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(lambda c: libav.probe_chain(c, **IN), chains)) == expected
        assert (
            list(pool.map(filteropts.filter_options, ["scale", "fps"] * 8))
            == [filteropts.filter_options("scale"), filteropts.filter_options("fps")] * 8
        )


# --------------------------------------------------------------------------- filter options


def test_scale_option_names() -> None:
    names = filteropts.filter_option_names("scale")
    assert names is not None
    assert names[:4] == ["w", "width", "h", "height"]
    assert {"flags", "interl", "size", "s", "force_original_aspect_ratio", "eval"} <= set(names)
    assert len(names) == len(set(names))


def test_option_types_and_defaults() -> None:
    fps = _opt("fps", "fps")
    assert (fps.type, fps.default, fps.unit, fps.array) == ("string", "25", None, False)
    assert fps.help and "framerate" in fps.help
    assert _opt("fps", "start_time").type == "double"
    rnd = _opt("fps", "round")
    assert (rnd.type, rnd.default, rnd.min, rnd.max, rnd.unit) == ("int", 5, 0, 5, "round")
    assert _opt("format", "pix_fmts").type == "string"
    assert _opt("format", "pix_fmts").default is None
    assert (_opt("crop", "w").type, _opt("crop", "w").default) == ("string", "iw")
    assert (_opt("crop", "keep_aspect").type, _opt("crop", "keep_aspect").default) == ("bool", 0)
    assert (_opt("scale", "interl").type, _opt("scale", "interl").min) == ("bool", -1)
    assert _opt("scale", "flags").default == ""
    assert _opt("scale", "w").default is None
    assert (_opt("testsrc", "size").type, _opt("testsrc", "size").default) == ("image_size", "320x240")
    assert (_opt("testsrc", "rate").type, _opt("testsrc", "rate").default) == ("video_rate", "25")
    assert (_opt("testsrc", "duration").type, _opt("testsrc", "duration").default) == ("duration", -1)
    assert (_opt("color", "color").type, _opt("color", "color").default) == ("color", "black")
    assert _opt("addroi", "qoffset").type == "rational"
    assert _opt("addroi", "qoffset").default == pytest.approx(-0.1)
    assert _opt("acrossfade", "nb_samples").type == "int64"
    assert _opt("acrossfade", "nb_samples").default == 44100
    assert _opt("perlin", "seed").type == "uint"
    assert _opt("abuffer", "channel_layout").type == "chlayout"


def test_array_options() -> None:
    pf = _opt("buffersink", "pixel_formats")
    assert (pf.type, pf.array) == ("pixel_fmt", True)
    sf = _opt("aformat", "sample_fmts")
    assert (sf.type, sf.array) == ("sample_fmt", True)
    assert not _opt("scale", "w").array


def test_consts() -> None:
    assert filteropts.option_consts("fps", "round") == ["zero", "inf", "down", "up", "near"]
    assert filteropts.option_consts("fps", "eof_action") == ["round", "pass"]
    assert {"auto", "bt601", "bt709", "bt2020"} <= set(filteropts.option_consts("scale", "in_color_matrix"))
    assert filteropts.option_consts("scale", "w") == []
    assert filteropts.option_consts("scale", "nosuchoption") == []
    assert filteropts.option_consts("nosuchfilter", "w") == []
    zero = next(o for o in filteropts.filter_options("fps") or [] if o.name == "zero")
    assert (zero.type, zero.default, zero.unit) == ("const", 0, "round")
    assert "zero" not in (filteropts.filter_option_names("fps") or [])


def test_child_class_options() -> None:
    names = filteropts.filter_option_names("overlay") or []
    assert {"shortest", "repeatlast", "eof_action"} <= set(names)
    assert names.count("eof_action") == 1  # own and framesync's, listed once
    assert "osr" in (filteropts.filter_option_names("aresample") or [])  # the SWResampler child
    own = filteropts.filter_options("overlay", children=False) or []
    assert {o.owner for o in own} == {"overlay"}
    assert "framesync" in {o.owner for o in filteropts.filter_options("overlay") or []}
    assert filteropts.option_consts("overlay", "eof_action") == ["repeat", "endall", "pass"]


def test_unknown_and_optionless_filters() -> None:
    assert filteropts.filter_options("nosuchfilter") is None
    assert filteropts.filter_option_names("nosuchfilter") is None
    assert filteropts.filter_options("null") == []
    assert filteropts.filter_option_names("null") == []


# --------------------------------------------------------------------------- filter info


def test_filter_info() -> None:
    scale = filteropts.filter_info("scale")
    assert scale is not None and (scale.nb_inputs, scale.nb_outputs) == (1, 1)
    assert not scale.is_source and scale.description
    assert filteropts.filter_description("scale") == scale.description
    assert filteropts.filter_description("fps") == "Force constant framerate."
    assert filteropts.filter_description("nosuchfilter") is None
    assert filteropts.filter_info("nosuchfilter") is None
    hstack = filteropts.filter_info("hstack")
    assert hstack is not None and hstack.dynamic_inputs and hstack.nb_inputs == 0
    split = filteropts.filter_info("split")
    assert split is not None and split.dynamic_outputs and split.nb_inputs == 1
    nullsink = filteropts.filter_info("nullsink")
    assert nullsink is not None and (nullsink.nb_inputs, nullsink.nb_outputs) == (1, 0)
    hflip, fps = filteropts.filter_info("hflip"), filteropts.filter_info("fps")
    assert hflip is not None and hflip.timeline
    assert fps is not None and not fps.timeline


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("testsrc", True),
        ("color", True),
        ("movie", True),
        ("nullsrc", True),
        ("scale", False),
        ("hstack", False),
        ("overlay", False),
        ("nullsink", False),
        ("nosuchfilter", False),
    ],
)
def test_filter_is_source(name: str, expected: bool) -> None:
    assert filteropts.filter_is_source(name) is expected
