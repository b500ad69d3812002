"""The filter-string parser against libavfilter's own parse of the same hostile strings.

graph/parse.py ports libavfilter's two levels (``av_get_token`` over the graph, then
``ff_filter_opt_parse``); here each generated string also goes through
``avfilter_graph_segment_parse`` (lavfi_oracle). Where libavfilter takes the string as one
linear chain of filters it knows, avdnn must take it too, with the same names, instances and
option values; where avdnn takes a string with only ``key=value`` options, libavfilter must take
it the same way. What avdnn escapes (escape_value, format_chain) libavfilter reads back as given.
"""

from __future__ import annotations

import functools

from hostile_util import HOSTILE, SPECIALS
from hypothesis import assume, given
from hypothesis import strategies as st
from lavfi_oracle import LavfiFilter, segment_parse

from avdnn.errors import AVERROR_OPTION_NOT_FOUND, InvalidArgumentError
from avdnn.graph.parse import FilterSpec, escape_value, format_chain, parse_chain, split_options

#: real one-in, one-out libavfilter filters (and one name it does not know)
NAMES = ["scale", "hflip", "null", "format", "setpts", "drawbox", "crop", "pad", "trim", "nosuchfilter"]
_piece = st.text(st.sampled_from("abxyz019" + SPECIALS), max_size=10)
_key = st.sampled_from(["w", "h", "x", "expr", "text", "pix_fmts", "flags", "a-b", "", "w "])


@functools.cache
def _known() -> frozenset[str]:
    import av

    return frozenset(av.filter.filters_available)


@st.composite
def _args(draw: st.DrawFn) -> str:
    """Options as a user might type them, hostile characters unescaped or half escaped."""
    parts = []
    for _ in range(draw(st.integers(0, 3))):
        value = draw(st.one_of(_piece, _piece.map(escape_value)))
        parts.append(draw(st.sampled_from(["", "k="])).replace("k", draw(_key)) + value)
    return ":".join(parts)


@st.composite
def chains(draw: st.DrawFn) -> str:
    filters = []
    for _ in range(draw(st.integers(1, 3))):
        text = draw(st.sampled_from(NAMES))
        if draw(st.booleans()):
            text += "@" + draw(st.text(st.sampled_from("ab1_@ '\\"), max_size=4))
        if draw(st.booleans()):
            text += "=" + draw(st.one_of(_args(), _args().map(lambda a: "'" + a + "'")))
        filters.append(
            draw(st.sampled_from(["", " ", "[in]", "[x]"])) + text + draw(st.sampled_from(["", " ", "[out]"]))
        )
    return draw(st.sampled_from([",", ", ", ";"])).join(filters)


def _one_chain(theirs: list[list[LavfiFilter]] | int) -> list[LavfiFilter] | None:
    """libavfilter's parse when it is what a -vf takes: one chain of filters it knows, labels only
    ``[in]`` first and ``[out]`` last (avdnn refuses the rest by design: one linear chain)."""
    if isinstance(theirs, int) or len(theirs) != 1:
        return None
    chain = theirs[0]
    for k, f in enumerate(chain):
        if f.name not in _known() or any(not key for key, _ in f.options):
            return None  # an option with no name: ffmpeg's "Option '' not found" comes next, avdnn's now
        if f.inputs not in ((), ("in",)) or (f.inputs and k) or f.outputs not in ((), ("out",)):
            return None
        if f.outputs and k != len(chain) - 1:
            return None
    return chain


def _same(ours: list[FilterSpec], theirs: list[LavfiFilter]) -> None:
    assert [(s.name, s.instance) for s in ours] == [(f.name, f.instance) for f in theirs]
    for spec, f in zip(ours, theirs, strict=True):
        options = split_options(spec.args) if spec.args is not None else []
        assert [v for _, v in options] == [v for _, v in f.options], (spec, f)
        assert all(k is None or k == lk for (k, _), (lk, _) in zip(options, f.options, strict=True)), (spec, f)


@HOSTILE
@given(chains())
def test_a_chain_libavfilter_takes_is_taken_the_same(text: str) -> None:
    chain = _one_chain(segment_parse(text))
    assume(chain is not None)
    assert chain is not None
    try:
        ours = parse_chain(text)
    except InvalidArgumentError as exc:
        raise AssertionError(f"libavfilter takes {text!r} as {chain}, avdnn refuses: {exc}") from exc
    _same(ours, chain)


@HOSTILE
@given(chains())
def test_a_chain_avdnn_takes_with_named_options_is_libavfilters(text: str) -> None:
    try:
        ours = parse_chain(text)
        options = [split_options(s.args) if s.args is not None else [] for s in ours]
    except InvalidArgumentError:
        return
    assume(ours and all(s.name in _known() for s in ours))
    assume(all(k is not None for opts in options for k, _ in opts))
    chain = _one_chain(segment_parse(text))
    assert chain is not None, f"avdnn takes {text!r} as {ours}, libavfilter does not"
    _same(ours, chain)


@HOSTILE
@given(st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=40))
def test_what_avdnn_escapes_libavfilter_reads_back(value: str) -> None:
    keyed = segment_parse(format_chain([FilterSpec("null", None, f"foo={escape_value(value)}")]))
    assert not isinstance(keyed, int) and keyed[0][0].options == (("foo", value),)
    positional = segment_parse(format_chain([FilterSpec("scale", None, escape_value(value))]))
    assert not isinstance(positional, int) and positional[0][0].options == (("w", value),)
    inst = segment_parse(format_chain([FilterSpec("null", value, None)]))
    assert not isinstance(inst, int) and inst[0][0].instance == value


@HOSTILE
@given(st.text(st.sampled_from("abc=:,;[]'\\@ \t\n"), max_size=30))
def test_no_hostile_string_gets_past_as_anything_but_an_error_or_specs(text: str) -> None:
    """Any string: a list of specs whose options split, or avdnn's InvalidArgumentError."""
    try:
        specs = parse_chain(text)
        for spec in specs:
            split_options(spec.args or "")
    except InvalidArgumentError as exc:
        assert exc.code in (-22, AVERROR_OPTION_NOT_FOUND) and exc.message  # EINVAL, or an option without a name


def test_a_trailing_semicolon_ends_the_chain() -> None:
    """Found by the oracle: libavfilter takes ``scale=32:32;`` as one chain (avdnn refused the ';')."""
    for text in ("scale=32:32;", "scale=32:32 ;\n"):
        assert parse_chain(text) == [FilterSpec("scale", None, "32:32")]
        chain = _one_chain(segment_parse(text))
        assert chain is not None and chain[0].options == (("w", "32"), ("h", "32"))
    for text in ("scale;;", "scale;hflip"):
        try:
            parse_chain(text)
        except InvalidArgumentError as exc:
            assert "one linear chain" in exc.message
        else:
            raise AssertionError(f"{text!r} is two chains")
