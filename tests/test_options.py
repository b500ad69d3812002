"""Declared options parse values as av_opt_set does; the error tree carries FFmpeg's codes."""

from __future__ import annotations

import errno
import math

import pytest

from avdnn import errors
from avdnn.errors import (
    AVERROR_EXTERNAL,
    AvdnnError,
    BackendUnavailableError,
    ExternalError,
    FilterNotFoundError,
    InvalidArgumentError,
    InvalidDataError,
    IOFailureError,
    NotFoundError,
    NotSupportedError,
    OptionNotFoundError,
    OutOfMemoryError,
    OutOfRangeError,
    PermissionDeniedError,
)
from avdnn.filters.options import INT_MAX, Option, bind_options, closest, did_you_mean, parse_number

INT = Option("x", "int", default=1, min=0, max=100)
FLOAT = Option("f", "float", default=0.5, min=0.0, max=1.0)
BOOL = Option("b", "bool", default=False, min=0, max=1)
TRI = Option("async", "bool", default=-1, min=-1, max=1)
STR = Option("model", "string")
LIST = Option("mean", "float_list", min=-10, max=10)
ENUM = Option("backend", "int", default=1, min=0, max=2, consts={"native": 0, "tensorflow": 1, "openvino": 2})
BIG = Option("nireq", "int", default=0, min=0, max=INT_MAX)


@pytest.mark.parametrize(
    ("opt", "text", "value"),
    [
        (INT, "5", 5),
        (INT, " 7 ", 7),
        (INT, "0x10", 16),
        (INT, "1.5", 2),  # llrint
        (INT, "2.5", 2),  # llrint: half to even
        (INT, "1e1", 10),
        (INT, "+3", 3),
        (BIG, "1k", 1000),
        (BIG, "2M", 2_000_000),
        (BIG, "1Ki", 1024),
        (BIG, "1KiB", 8192),
        (FLOAT, "0.25", 0.25),
        (FLOAT, ".5", 0.5),
        (FLOAT, "1e-1", 0.1),
        (FLOAT, "500m", 0.5),
        (FLOAT, "1", 1.0),
        (BOOL, "1", True),
        (BOOL, "0", False),
        (BOOL, "true", True),
        (BOOL, "YES", True),
        (BOOL, "on", True),
        (BOOL, "enable", True),
        (BOOL, "false", False),
        (BOOL, "off", False),
        (BOOL, "disable", False),
        (TRI, "auto", -1),
        (TRI, "-1", -1),
        (TRI, "1", True),
        (STR, "a:b&c", "a:b&c"),
        (STR, "", ""),
        (LIST, "1&2.5&-3", (1.0, 2.5, -3.0)),
        (LIST, "0", (0.0,)),
        (ENUM, "openvino", 2),
        (ENUM, "native", 0),
        (ENUM, "1", 1),
    ],
)
def test_parse(opt: Option, text: str, value: object) -> None:
    got = opt.parse(text)
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize(
    ("opt", "text", "shown"),
    [
        (INT, "101", "Value 101.000000 for parameter 'x' out of range [0 - 100]"),
        (INT, "-1", "Value -1.000000 for parameter 'x' out of range [0 - 100]"),
        (INT, "1k", "Value 1000.000000 for parameter 'x' out of range [0 - 100]"),
        (FLOAT, "1.5", "Value 1.500000 for parameter 'f' out of range [0 - 1]"),
        (BOOL, "2", "Value 2.000000 for parameter 'b' out of range [0 - 1]"),
        (BIG, "-5", "Value -5.000000 for parameter 'nireq' out of range [0 - INT_MAX]"),
        (LIST, "1&20", "Value 20.000000 for parameter 'mean' out of range [-10 - 10]"),
        (ENUM, "3", "Value 3.000000 for parameter 'backend' out of range [0 - 2]"),
    ],
)
def test_out_of_range(opt: Option, text: str, shown: str) -> None:
    with pytest.raises(OutOfRangeError) as info:
        opt.parse(text)
    exc = info.value
    assert exc.code == -errno.ERANGE == -34
    assert exc.message == shown
    assert exc.option == opt.name
    assert isinstance(exc, InvalidArgumentError) and isinstance(exc, ValueError)


def test_auto_needs_a_minimum_of_minus_one() -> None:
    with pytest.raises(InvalidArgumentError):
        BOOL.parse("auto")


@pytest.mark.parametrize(
    ("opt", "text"),
    [
        (INT, "abc"),
        (INT, ""),
        (INT, "1q"),
        (FLOAT, "nan"),
        (BOOL, "maybe"),
        (LIST, "1&x"),
        (LIST, ""),
        (ENUM, "tflite"),
    ],
)
def test_unparsable(opt: Option, text: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        opt.parse(text)
    exc = info.value
    assert not isinstance(exc, OutOfRangeError)
    assert exc.code == -errno.EINVAL
    assert "Unable to parse option value" in exc.message
    assert exc.option == opt.name
    assert f"option '{opt.name}'" in exc.oneline()


def test_unparsable_named_value_lists_the_names() -> None:
    with pytest.raises(InvalidArgumentError, match="named values: native, tensorflow, openvino"):
        ENUM.parse("tflite")


def test_parse_number() -> None:
    assert parse_number("1.5k") == 1500.0
    assert parse_number("1Mi") == 2.0**20
    assert parse_number("-0x1f") == -31.0
    assert math.isclose(parse_number("3u"), 3e-6)
    for bad in ("", "k", "1..2", "1 2", "0x"):
        with pytest.raises(ValueError):
            parse_number(bad)


# --------------------------------------------------------------------------- bind_options

OPTS = (
    Option("model", "string", help="path"),
    Option("input", "string", default="x"),
    Option("output", "string", default="y"),
    Option("backend_configs", "string", aliases=("options",)),
    Option("nireq", "int", default=0, min=0, max=INT_MAX),
    Option("async", "bool", default=True, min=0, max=1),
)


def test_bind_defaults() -> None:
    assert bind_options(OPTS, [], filter_name="f") == {
        "model": None,
        "input": "x",
        "output": "y",
        "backend_configs": None,
        "nireq": 0,
        "async": True,
    }


def test_bind_positional_in_declaration_order_then_keys() -> None:
    got = bind_options(OPTS, [(None, "m.onnx"), (None, "in"), ("nireq", "4"), ("async", "0")], filter_name="f")
    assert (got["model"], got["input"], got["output"], got["nireq"], got["async"]) == ("m.onnx", "in", "y", 4, False)


def test_bind_alias_sets_the_option() -> None:
    got = bind_options(OPTS, [("options", "a=1&b=2")], filter_name="f")
    assert got["backend_configs"] == "a=1&b=2"
    assert "options" not in got


def test_bind_later_value_wins() -> None:
    assert bind_options(OPTS, [("nireq", "1"), ("nireq", "2")], filter_name="f")["nireq"] == 2


def test_bind_unknown_option_suggests() -> None:
    with pytest.raises(OptionNotFoundError) as info:
        bind_options(OPTS, [("modle", "m.onnx")], filter_name="dnn_x")
    exc = info.value
    assert exc.code == errors.AVERROR_OPTION_NOT_FOUND
    assert exc.filter == "dnn_x" and exc.option == "modle"
    assert exc.oneline() == "dnn_x: Option 'modle' not found (did you mean 'model'?)"


def test_bind_too_many_positionals() -> None:
    with pytest.raises(InvalidArgumentError, match="too many positional values"):
        bind_options(OPTS[:1], [(None, "a"), (None, "b")], filter_name="f")


def test_bind_range_error_names_filter_and_option() -> None:
    with pytest.raises(OutOfRangeError) as info:
        bind_options(OPTS, [("nireq", "-1")], filter_name="dnn_y")
    assert info.value.oneline() == "dnn_y: Value -1.000000 for parameter 'nireq' out of range [0 - INT_MAX]"


def test_closest_and_did_you_mean() -> None:
    assert closest("scal", ["scale", "crop", "scale2ref"])[0] == "scale"
    assert did_you_mean("zzzz", ["scale"]) == ""
    assert did_you_mean("nireg", ["nireq", "input"]) == " (did you mean 'nireq'?)"


def test_describe_has_type_range_default_and_consts() -> None:
    text = ENUM.describe()
    first, *consts = text.splitlines()
    assert first.split()[:2] == ["backend", "<int>"]
    assert "(from 0 to 2 default tensorflow)" in first
    assert [c.split()[0] for c in consts] == ["native", "tensorflow", "openvino"]
    assert "default true" in Option("a", "bool", default=True).describe()
    long = Option("a_very_long_option_name_indeed", "int").describe()
    assert "a_very_long_option_name_indeed <int>" in long


# --------------------------------------------------------------------------- the error tree

LEAVES = [
    (InvalidArgumentError, -errno.EINVAL, ValueError),
    (OptionNotFoundError, errors.AVERROR_OPTION_NOT_FOUND, ValueError),
    (FilterNotFoundError, errors.AVERROR_FILTER_NOT_FOUND, ValueError),
    (OutOfRangeError, -errno.ERANGE, ValueError),
    (NotFoundError, -errno.ENOENT, FileNotFoundError),
    (PermissionDeniedError, -errno.EPERM, PermissionError),
    (IOFailureError, -errno.EIO, OSError),
    (OutOfMemoryError, -errno.ENOMEM, MemoryError),
    (NotSupportedError, -errno.ENOSYS, NotImplementedError),
    (InvalidDataError, errors.AVERROR_INVALIDDATA, ValueError),
    (ExternalError, AVERROR_EXTERNAL, RuntimeError),
    (BackendUnavailableError, -errno.ENOSYS, ImportError),
    (errors.ExitRequestedError, errors.AVERROR_EXIT, Exception),
]


@pytest.mark.parametrize(("cls", "code", "builtin"), LEAVES, ids=[c.__name__ for c, _, _ in LEAVES])
def test_leaf(cls: type[AvdnnError], code: int, builtin: type[BaseException]) -> None:
    exc = cls("why", filter="f", option="o", file="m.onnx", pts=3)
    assert isinstance(exc, AvdnnError) and isinstance(exc, builtin)
    assert exc.code == code
    assert cls.default_code == code
    assert str(exc) == exc.oneline() == "f: option 'o': 'm.onnx': why (frame pts 3)"
    with pytest.raises(builtin):
        raise exc


def test_every_leaf_is_listed() -> None:
    def walk(cls: type) -> set[type]:
        out = set()
        for sub in cls.__subclasses__():
            if sub.__module__ == "avdnn.errors":
                out |= {sub} | walk(sub)
        return out

    assert walk(AvdnnError) == {c for c, _, _ in LEAVES}


def test_codes() -> None:
    assert AVERROR_EXTERNAL == -542398533
    assert errors.AVERROR_EOF == -541478725
    assert errors.AVERROR_INVALIDDATA == -1094995529
    assert errors.AVERROR_OPTION_NOT_FOUND == -1414549496
    assert errors.AVERROR_FILTER_NOT_FOUND == -1279870712
    assert errors.AVERROR(errno.EINVAL) == -22


@pytest.mark.parametrize(
    ("err", "cls"),
    [
        (errno.EAGAIN, IOFailureError),
        (errno.EINVAL, InvalidArgumentError),
        (errno.EPERM, PermissionDeniedError),
        (errno.EACCES, PermissionDeniedError),
        (errno.ENOENT, NotFoundError),
        (errno.ENOMEM, OutOfMemoryError),
        (errno.ENOSYS, NotSupportedError),
        (errno.ERANGE, OutOfRangeError),
        (errno.EIO, IOFailureError),
    ],
)
def test_from_errno(err: int, cls: type[AvdnnError]) -> None:
    exc = errors.from_errno(err, filter="dnn_detect")
    assert type(exc) is cls
    assert exc.code == -err
    assert exc.message == __import__("os").strerror(err)
    assert exc.filter == "dnn_detect"


@pytest.mark.parametrize(
    ("code", "cls", "text"),
    [
        (AVERROR_EXTERNAL, ExternalError, "Generic error in an external library"),
        (errors.AVERROR_INVALIDDATA, InvalidDataError, "Invalid data found when processing input"),
        (errors.AVERROR_FILTER_NOT_FOUND, FilterNotFoundError, "Filter not found"),
        (errors.AVERROR_OPTION_NOT_FOUND, OptionNotFoundError, "Option not found"),
        (errors.AVERROR_PATCHWELCOME, NotSupportedError, "Not yet implemented in FFmpeg, patches welcome"),
        (errors.AVERROR_ENCODER_NOT_FOUND, NotFoundError, "Encoder not found"),
        (-errno.EAGAIN, IOFailureError, "Resource temporarily unavailable"),
        (errors.AVERROR_EOF, AvdnnError, "End of file"),
        (errors.DNN_GENERIC_ERROR, AvdnnError, "Generic DNN error"),
    ],
)
def test_from_code(code: int, cls: type[AvdnnError], text: str) -> None:
    exc = errors.from_code(code)
    assert type(exc) is cls and exc.code == code and exc.message == text
    assert errors.av_err2str(code) == text
    assert errors.from_code(code, "custom").message == "custom"


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (-errno.ENOENT, NotFoundError),
        (-errno.EINVAL, InvalidArgumentError),
        (-errno.EPERM, PermissionDeniedError),
        (-errno.EAGAIN, IOFailureError),
        (AVERROR_EXTERNAL, ExternalError),
        (errors.AVERROR_INVALIDDATA, InvalidDataError),
        (errors.AVERROR_OPTION_NOT_FOUND, OptionNotFoundError),
    ],
)
def test_from_av_error(code: int, cls: type[AvdnnError]) -> None:
    import av.error

    with pytest.raises(av.error.FFmpegError) as info:
        av.error.err_check(code, filename="in.mp4")
    exc = errors.from_av_error(info.value, filter="scale")
    assert type(exc) is cls
    assert exc.code == code
    assert exc.file == "in.mp4" and exc.filter == "scale"


def test_from_av_error_of_an_os_error() -> None:
    exc = errors.from_av_error(FileNotFoundError(errno.ENOENT, "No such file or directory", "x.onnx"))
    assert type(exc) is NotFoundError and exc.code == -2 and exc.file == "x.onnx"
    assert exc.oneline() == "'x.onnx': No such file or directory"


def test_from_av_error_without_errno_is_external() -> None:
    exc = errors.from_av_error(RuntimeError("boom"))
    assert type(exc) is ExternalError and exc.message == "boom"


def test_with_context_fills_only_unset_fields() -> None:
    exc = InvalidArgumentError("bad", filter="a")
    assert exc.with_context(filter="b", option="o", pts=None) is exc
    assert (exc.filter, exc.option, exc.pts) == ("a", "o", None)


def test_oneline_does_not_repeat_context() -> None:
    exc = OutOfRangeError("Value 5 for parameter 'b' out of range", option="b", file="m.onnx")
    assert exc.oneline() == "'m.onnx': Value 5 for parameter 'b' out of range"
    assert InvalidArgumentError("Unable to parse", option="b").oneline() == "option 'b': Unable to parse"


def test_did_you_mean_has_no_repeats_and_not_the_name_itself() -> None:
    assert closest("drawtext", ["drawtext", "drawbox", "drawbox", "drawgrid"]) == ["drawbox", "drawgrid"]
