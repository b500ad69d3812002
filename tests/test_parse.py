"""Tests for avdnn.graph.parse: FFmpeg's filtergraph syntax for one linear chain."""

from __future__ import annotations

import errno

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avdnn.errors import InvalidArgumentError, OptionNotFoundError
from avdnn.graph.parse import (
    FilterSpec,
    _get_token,
    escape_value,
    format_chain,
    parse_chain,
    split_options,
)

# ffmpeg-filters(1), "Notes on filtergraph escaping": the drawtext text at each level.
DOC_TEXT = "this is a 'string': may contain one, or more, special characters"
DOC_LEVEL1 = r"text=this is a \'string\'\: may contain one, or more, special characters"
DOC_GRAPH = r"drawtext=text=this is a \\\'string\\\'\\: may contain one\, or more\, special characters"
# The same text with '...' quoting at both levels (a common way to write it).
DOC_GRAPH_QUOTED = r"drawtext=text='this is a '\\\''string'\\\''\: may contain one, or more, special characters'"


def S(name: str, args: str | None = None, instance: str | None = None) -> FilterSpec:
    return FilterSpec(name, instance, args)


# --------------------------------------------------------------------------- level 1

PARSE_CASES = [
    ("scale=320:-2,format=rgb24", [S("scale", "320:-2"), S("format", "rgb24")]),
    ("", []),
    (" \t\n\r ", []),
    ("null", [S("null")]),
    ("scale=", [S("scale", "")]),
    ("scale=1:2;", [S("scale", "1:2")]),  # a trailing ';' ends the one chain (ffmpeg 9.0.2; 5.1 refused it)
    ("scale=   ", [S("scale", "")]),
    ("scale=w=iw/2:h=-1", [S("scale", "w=iw/2:h=-1")]),
    ("  scale = 320:240 ,\n format=gray  ", [S("scale", "320:240"), S("format", "gray")]),
    ("scale@my=1:2", [S("scale", "1:2", "my")]),
    ("scale@a@b", [S("scale", None, "a@b")]),
    ("scale@", [S("scale", None, "")]),
    ("scale@'x, y '=1", [S("scale", "1", "x, y ")]),
    # '...' and backslashes are processed and removed once at this level
    (DOC_GRAPH, [S("drawtext", DOC_LEVEL1)]),
    (DOC_GRAPH_QUOTED, [S("drawtext", DOC_LEVEL1)]),
    ("scale='1,2'", [S("scale", "1,2")]),
    (r"scale=a\,b", [S("scale", "a,b")]),
    (r"drawtext=text=it\'s", [S("drawtext", "text=it's")]),
    ("crop='iw/2:ih/2'", [S("crop", "iw/2:ih/2")]),
    ("scale=' '", [S("scale", " ")]),
    (r"scale=a\ ", [S("scale", "a ")]),
    (r"scale=a\\ ", [S("scale", "a\\")]),  # escaped backslash kept, bare space trimmed
    ("scale=a\\", [S("scale", "a\\")]),  # a lone trailing backslash is kept
    ("scale='a,b;c", [S("scale", "a,b;c")]),  # unterminated quote runs to the end
    ("scale='abc   ", [S("scale", "abc")]),  # ... and its trailing spaces are trimmed
    ("sc'al'e=1", [S("scale", "1")]),
    ("format=yuv420p|rgb24", [S("format", "yuv420p|rgb24")]),
    ("dnn_processing=output=a&b", [S("dnn_processing", "output=a&b")]),
    ("dnn_classify=model=/m/x.onnx:labels=l.txt", [S("dnn_classify", "model=/m/x.onnx:labels=l.txt")]),
    # [in] and [out] are accepted and dropped
    ("[in]scale=1:2[out]", [S("scale", "1:2")]),
    ("[in] scale=1:2 [out]", [S("scale", "1:2")]),
    ("[ in ]scale,format[ 'out' ]", [S("scale"), S("format")]),
    ("[in]scale=1:2,format=gray[out]", [S("scale", "1:2"), S("format", "gray")]),
    ("scale[out] , ", [S("scale")]),
    # FFmpeg 7's chain_parse stops at end of string after a ','
    ("scale,", [S("scale")]),
    ("scale , \n", [S("scale")]),
]


@pytest.mark.parametrize(("text", "expected"), PARSE_CASES)
def test_parse_chain(text: str, expected: list[FilterSpec]) -> None:
    assert parse_chain(text) == expected


PARSE_ERRORS = [
    ("scale;format", "-filter_complex"),
    ("sws_flags=bicubic;scale=1:2", "sws_flags"),
    ("[a]scale", "-filter_complex"),
    ("[in][x]scale", "-filter_complex"),
    ("scale[in]", "-filter_complex"),
    ("[out]scale", "-filter_complex"),
    ("scale[out],format", "-filter_complex"),
    ("scale,[in]format", "-filter_complex"),
    ("scale[out][o2]", "-filter_complex"),
    ("[]scale", "Bad (empty?) label"),
    ("[ ]scale", "Bad (empty?) label"),
    ("[in scale", "Mismatched '['"),
    (",scale", "empty"),
    ("scale,,format", "empty"),
    ("=x", "empty"),
    ("[in]", "empty"),
    ("@inst", "empty"),
    ("scale, ,format", "empty"),
    ("sc ale", "Invalid filter name"),
    ("scale]", "Invalid filter name"),
    ("sc\u00e9le", "Invalid filter name"),
    ("scale=1]", "Trailing garbage"),
    ("scale[out]x", "Trailing garbage"),
    ("scale[out]=1", "Trailing garbage"),
    ("scale\x00", "NUL"),
]


@pytest.mark.parametrize(("text", "needle"), PARSE_ERRORS)
def test_parse_chain_errors(text: str, needle: str) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        parse_chain(text)
    assert needle in str(info.value)
    assert info.value.code == -errno.EINVAL


def test_label() -> None:
    assert S("scale").label == "scale"
    assert S("scale", instance="my").label == "scale@my"


# --------------------------------------------------------------------------- level 2

SPLIT_CASES = [
    ("", []),
    ("320:-2", [(None, "320"), (None, "-2")]),
    ("w=320:h=-2", [("w", "320"), ("h", "-2")]),
    ("320:h=-2", [(None, "320"), ("h", "-2")]),
    ("a=1:b='x:y'", [("a", "1"), ("b", "x:y")]),
    ("output=a&b", [("output", "a&b")]),
    (DOC_LEVEL1, [("text", DOC_TEXT)]),
    (r"text=Crime d\'Amour", [("text", "Crime d'Amour")]),
    ("'  starts and ends with whitespaces  '", [(None, "  starts and ends with whitespaces  ")]),
    (r"'The string '\'string\'' is a string'", [(None, "The string 'string' is a string")]),
    (r"c\:\\foo", [(None, "c:\\foo")]),
    ("320:", [(None, "320")]),
    (":", [(None, "")]),
    ("a::b", [(None, "a"), (None, ""), (None, "b")]),
    (" w = 320 : h= 2 ", [("w", "320"), ("h", "2")]),
    ("k=", [("k", "")]),
    ("k=a=b", [("k", "a=b")]),
    ("a b=1", [(None, "a b=1")]),
    (r"a\=b", [(None, "a=b")]),
    ("'a=b'", [(None, "a=b")]),
    ("\u00e9=1", [(None, "\u00e9=1")]),
    ("x.y-z/w_1=3", [("x.y-z/w_1", "3")]),
    ("/text=/tmp/t.txt", [("/text", "/tmp/t.txt")]),
    ("k='x'y'z'", [("k", "xyz")]),
    ("k='unterminated:x", [("k", "unterminated:x")]),
    ("k=a\\", [("k", "a\\")]),
]


@pytest.mark.parametrize(("args", "expected"), SPLIT_CASES)
def test_split_options(args: str, expected: list[tuple[str | None, str]]) -> None:
    assert split_options(args) == expected


def test_both_levels_of_the_doc_example() -> None:
    for graph in (DOC_GRAPH, DOC_GRAPH_QUOTED):
        [spec] = parse_chain(graph)
        assert split_options(spec.args or "") == [("text", DOC_TEXT)]


def test_a_level_one_quote_does_not_protect_a_colon_at_level_two() -> None:
    [spec] = parse_chain("crop='iw/2:ih/2'")
    assert split_options(spec.args or "") == [(None, "iw/2"), (None, "ih/2")]
    [spec] = parse_chain(r"crop=\'iw/2:ih/2\'")
    assert split_options(spec.args or "") == [(None, "iw/2:ih/2")]


@pytest.mark.parametrize(
    ("args", "near"),
    [("w=1:2", "2"), ("w=1:  2:3", "  2:3"), ("a:b=1:c", "c"), ("a=1:'x=y'", "'x=y'")],
)
def test_positional_after_key(args: str, near: str) -> None:
    with pytest.raises(InvalidArgumentError, match="No option name near") as info:
        split_options(args)
    assert f"near '{near}'" in str(info.value)


def test_empty_key() -> None:
    with pytest.raises(OptionNotFoundError):
        split_options("=5")
    with pytest.raises(InvalidArgumentError):
        split_options("w=1: =5")


# --------------------------------------------------------------------------- inverses

ESCAPE_CASES = [
    ("320", "320"),
    ("", "''"),
    (DOC_TEXT, r"this is a \'string\'\: may contain one, or more, special characters"),
    ("c:\\foo", r"c\:\\foo"),
    (" pad ", r"\ pad\ "),
    ("a=b", r"a\=b"),
    ("a =b", r"a \=b"),
    ("=", r"\="),
    ("x+1=y", "x+1=y"),
    ("a&b|c", "a&b|c"),
]


@pytest.mark.parametrize(("value", "escaped"), ESCAPE_CASES)
def test_escape_value(value: str, escaped: str) -> None:
    assert escape_value(value) == escaped
    assert split_options(escaped) == [(None, value)]
    assert split_options("k=" + escaped) == [("k", value)]


def test_format_chain_writes_the_doc_example() -> None:
    spec = S("drawtext", "text=" + escape_value(DOC_TEXT))
    assert format_chain([spec]) == DOC_GRAPH
    assert parse_chain(DOC_GRAPH) == [spec]


@pytest.mark.parametrize(
    "specs",
    [
        [],
        [S("scale", "320:-2"), S("format", "rgb24")],
        [S("scale", "", "a b"), S("null", None, "")],
        [S("x", " [in], ;'\\ "), S("y", None, " @=,;[]' \\")],
        [S("x", "\\"), S("y", "'")],
    ],
)
def test_format_chain_round_trip(specs: list[FilterSpec]) -> None:
    assert parse_chain(format_chain(specs)) == specs


@pytest.mark.parametrize(
    "spec",
    [S(""), S("a b"), S("sc\u00e9le"), S("a@b"), S("scale", "a\x00"), S("scale", None, "\x00")],
)
def test_format_chain_rejects(spec: FilterSpec) -> None:
    with pytest.raises(InvalidArgumentError):
        format_chain([spec])


def test_nul_is_rejected() -> None:
    for call in (split_options, escape_value):
        with pytest.raises(InvalidArgumentError):
            call("a\x00b")


# --------------------------------------------------------------------------- properties

SPECIALS = list(" \t\n\r\\'[],;:=@&|\u00e9\u4e2d")
any_char = st.one_of(st.sampled_from(SPECIALS), st.characters())
no_nul = st.one_of(st.sampled_from(SPECIALS), st.characters(blacklist_characters="\x00"))
texts = st.text(any_char, max_size=40)
clean_texts = st.text(no_nul, max_size=20)
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
names = st.text(ALNUM, min_size=1, max_size=8)
keys = st.text(ALNUM + "./-", min_size=1, max_size=6)
specs = st.builds(FilterSpec, names, st.none() | clean_texts, st.none() | clean_texts)


def c_av_get_token(buf: bytes, term: bytes) -> tuple[bytes, int]:
    """Line-by-line transliteration of libavutil/avstring.c av_get_token() on bytes."""
    ws = b" \n\t\r"
    buf += b"\0"
    out = bytearray(len(buf) + 1)
    o = end = p = 0
    while buf[p] and buf[p] in ws:  # p += strspn(p, WHITESPACES);
        p += 1
    while buf[p] and buf[p] not in term:  # while (*p && !strspn(p, term))
        c = buf[p]
        p += 1
        if c == ord("\\") and buf[p]:
            out[o] = buf[p]
            o, p, end = o + 1, p + 1, o + 1
        elif c == ord("'"):
            while buf[p] and buf[p] != ord("'"):
                out[o] = buf[p]
                o, p = o + 1, p + 1
            if buf[p]:
                p += 1
                end = o
        else:
            out[o] = c
            o += 1
    while True:  # do *out-- = 0; while (out >= end && strspn(out, WHITESPACES));
        out[o] = 0
        o -= 1
        if not (o >= end and out[o] in ws):
            break
    return bytes(out[: o + 1]), p


@settings(max_examples=300, deadline=None)
@given(st.text(no_nul, max_size=30), st.sampled_from(["=,;[", "[],;", ":", "]"]))
def test_get_token_matches_the_c_code(text: str, term: str) -> None:
    token, pos = _get_token(text, 0, term)
    c_token, c_pos = c_av_get_token(text.encode("utf-8", "surrogatepass"), term.encode())
    assert token.encode("utf-8", "surrogatepass") == c_token
    assert len(text[:pos].encode("utf-8", "surrogatepass")) == c_pos


@settings(max_examples=300, deadline=None)
@given(texts)
def test_parse_chain_never_raises_anything_else(text: str) -> None:
    try:
        result = parse_chain(text)
    except InvalidArgumentError:
        return
    assert all(isinstance(spec, FilterSpec) for spec in result)
    assert parse_chain(format_chain(result)) == result


@settings(max_examples=300, deadline=None)
@given(texts)
def test_split_options_never_raises_anything_else(text: str) -> None:
    try:
        result = split_options(text)
    except InvalidArgumentError:
        return
    assert all(isinstance(v, str) and (k is None or isinstance(k, str)) for k, v in result)
    keyed = [k is not None for k, _ in result]
    assert keyed == sorted(keyed)  # positional values only come first


@settings(max_examples=300, deadline=None)
@given(texts)
def test_escape_value_never_raises_anything_else(text: str) -> None:
    try:
        escaped = escape_value(text)
    except InvalidArgumentError:
        return
    assert split_options(escaped) == [(None, text)]


@settings(max_examples=300, deadline=None)
@given(st.lists(specs, max_size=4))
def test_format_chain_round_trip_property(chain: list[FilterSpec]) -> None:
    assert parse_chain(format_chain(chain)) == chain


@settings(max_examples=300, deadline=None)
@given(st.lists(clean_texts, max_size=3), st.lists(st.tuples(keys, clean_texts), max_size=3), names)
def test_two_level_round_trip(positional: list[str], keyed: list[tuple[str, str]], name: str) -> None:
    parts = [escape_value(v) for v in positional] + [f"{k}={escape_value(v)}" for k, v in keyed]
    args = ":".join(parts)
    expected = [(None, v) for v in positional] + list(keyed)
    assert split_options(args) == expected
    [spec] = parse_chain(format_chain([S(name, args)]))
    assert spec.args == args
    assert split_options(spec.args) == expected
