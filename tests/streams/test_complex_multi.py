"""-filter_complex graphs with several inputs or outputs, against the static ffmpeg 9.0.2.

Two real clips of different sizes and rates (carphone 176x144 at 29.97 fps, bigbuckbunny
1280x720 at 25 fps with 5.1 audio) go through overlay, hstack, vstack and xstack; avdnn's
``-f framemd5`` must equal ffmpeg's for the same command line. DNN filters on the chains around
the core are checked against the libavfilter chain that gives the same bytes (an invert model
is ``negate`` on rgb24, an identity model is no filter). A graph with two outputs runs as one
pruned graph per output (graph_for_output), each compared with ffmpeg's two-output command.
"""

from __future__ import annotations

import http.server
import io
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from spine_util import lost_in, run_cli, run_ffmpeg

import avdnn
from avdnn.errors import InvalidArgumentError, NotSupportedError
from avdnn.graph.complexplan import graph_for_output, graphs_for_outputs

FMD5 = ["-f", "framemd5", "-"]


def _lines(out: bytes) -> list[str]:
    """The packet lines of a framemd5 (its #software header names the library version)."""
    return [ln for ln in out.decode().splitlines() if not ln.startswith("#")]


def _inputs(clip: dict[str, str]) -> list[str]:
    return ["-i", clip["carphone"], "-i", clip["bigbuckbunny"]]


def _same(ffmpeg: str, args: list[str], ours: list[str] | None = None) -> list[str]:
    """ffmpeg's framemd5 of ``args`` and avdnn's of ``ours`` (default: the same) are equal."""
    want = run_ffmpeg(ffmpeg, [*args, *FMD5], timeout=120)
    assert want.rc == 0, want.err
    got = run_cli(["-hide_banner", "-loglevel", "error", *(ours if ours is not None else args), *FMD5])
    assert got.rc == 0, got.err
    assert _lines(got.out) == _lines(want.out)
    return _lines(want.out)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    sys.path.insert(0, str(Path(__file__).parent.parent / "dnn"))
    from onnx_models import identity, invert

    tmp = tmp_path_factory.mktemp("models")
    return {"identity": identity(tmp), "invert": invert(tmp)}


def _dnn(model: str) -> str:
    return f"dnn_processing=dnn_backend=onnx:model={model}:input=x:output=y"


# --------------------------------------------------------------------------- several inputs


@pytest.mark.parametrize(
    ("graph", "least"),
    [
        ("[0:v][1:v]overlay=10:10[out]", 100),  # the overlay bigger than the main picture: clipped
        ("[1:v]scale=88:-2[b];[0:v][b]overlay=W-w-4:H-h-4[out]", 100),
        ("[0:v]scale=64:48[a];[1:v]scale=64:48[b];[a][b]hstack[out]", 100),  # 29.97 + 25 fps: ffmpeg's vfr union
        ("[0:v]scale=96:-2[a];[1:v]scale=96:-2[b];[a][b]vstack=shortest=1[out]", 100),
        ("[1:v]scale=64:48[b];[0:v]scale=64:48[a];[b][a]xstack=inputs=2:layout=0_0|w0_0,hflip[out]", 100),
        ("color=red:s=80x60:d=2,format=yuv420p[c];[c][0:v]overlay=8:6[out]", 100),  # a source filter in the core
        # 10 + 7 fps: no output rate, time base 1/70 (coarse: the muxer gives each packet one tick)
        ("[0:v]fps=10[a];[1:v]scale=176:144,fps=7[b];[a][b]hstack[out]", 60),
    ],
)
def test_multi_input_graphs_give_ffmpegs_framemd5(graph: str, least: int, ffmpeg: str, clip: dict[str, str]) -> None:
    lines = _same(ffmpeg, [*_inputs(clip), "-filter_complex", graph, "-map", "[out]"])
    assert len(lines) >= least


def test_unlabeled_output_keeps_the_automatic_audio(ffmpeg: str, clip: dict[str, str]) -> None:
    """No -map: the graph's video and the best audio of any input (bigbuckbunny's 5.1), as ffmpeg."""
    lines = _same(ffmpeg, [*_inputs(clip), "-filter_complex", "[1:v]scale=64:-2[b];[0:v][b]overlay", "-t", "1"])
    assert any(ln.startswith("1,") for ln in lines) and any(ln.startswith("0,") for ln in lines)


def test_one_input_feeding_two_pads(ffmpeg: str, clip: dict[str, str]) -> None:
    graph = "[0:v]hflip[a];[0:v][a]hstack[out]"
    assert len(_same(ffmpeg, ["-i", clip["carphone"], "-filter_complex", graph, "-map", "[out]"])) == 120


def test_dnn_filters_on_the_chains_around_the_core(ffmpeg: str, clip: dict[str, str], models: dict[str, str]) -> None:
    """An invert model before hstack is ffmpeg's negate; identity models before and after are no-ops."""
    ref = "[0:v]format=rgb24,negate[a];[1:v]scale=176:144,format=rgb24[b];[a][b]hstack,hflip[out]"
    ours = (
        f"[0:v]format=rgb24,{_dnn(models['invert'])}[a];"
        f"[1:v]scale=176:144,format=rgb24,{_dnn(models['identity'])}[b];"
        f"[a][b]hstack,hflip,{_dnn(models['identity'])}[out]"
    )
    tail = ["-map", "[out]"]
    lines = _same(
        ffmpeg,
        [*_inputs(clip), "-filter_complex", ref, *tail],
        [*_inputs(clip), "-filter_complex", ours, *tail],
    )
    assert len(lines) == 251


def test_accounting_balances_across_the_inputs(clip: dict[str, str], models: dict[str, str]) -> None:
    graph = f"[0:v]scale=64:48[a];[1:v]scale=64:48,format=rgb24,{_dnn(models['identity'])}[b];[a][b]hstack[o]"
    more = [(clip["bigbuckbunny"], None, {})]
    stats = avdnn.run(
        clip["carphone"], output=io.BytesIO(), format="framemd5", filter_complex=graph, map=["[o]"], more_inputs=more
    )
    assert stats.check(), stats.violations()
    (other,) = stats.graph_inputs
    assert (stats.frames_read, other.frames_read, other.output_in, stats.frames_written) == (120, 132, 132, 251)
    assert stats.frames_added == {"scale,hstack": 131}  # the core: 120 in from input 0, 251 out
    # stopped early by -frames:v: the frames still held are declared, nothing is lost
    stats = avdnn.run(
        clip["carphone"],
        output=io.BytesIO(),
        format="framemd5",
        filter_complex=graph,
        map=["[o]"],
        more_inputs=more,
        frames=10,
    )
    assert stats.check(), stats.violations()
    assert stats.frames_written == 10 and stats.graph_inputs[0].frames_read < 132


@pytest.mark.parametrize("where", ["branch", "after the core"])
def test_a_lossy_stage_in_an_early_stopped_graph_fails_the_check(clip: dict[str, str], lossy: str, where: str) -> None:
    """The twin of the -frames:v run above: a stage that loses frames shows, in a branch or after the core."""
    branch, tail = (f",{lossy}", "") if where == "branch" else ("", f",{lossy}")
    graph = f"[0:v]scale=64:48[a];[1:v]scale=64:48{branch}[b];[a][b]hstack{tail}[o]"
    stats = avdnn.run(
        clip["carphone"],
        output=io.BytesIO(),
        format="framemd5",
        filter_complex=graph,
        map=["[o]"],
        more_inputs=[(clip["bigbuckbunny"], None, {})],
        frames=10,
    )
    assert stats.frames_written == 10 and stats.stopped_early
    violations = stats.violations()
    assert not stats.check() and lost_in(violations), violations
    assert any(v.startswith("graph input #1") for v in violations) == (where == "branch"), violations


# --------------------------------------------------------------------------- several outputs


def test_split_outputs_as_per_output_graphs(
    ffmpeg: str, clip: dict[str, str], models: dict[str, str], tmp_path: Path
) -> None:
    """ffmpeg's two-output split command vs one pruned graph per output run by avdnn."""
    ref = "[0:v]split=3[a][b][c];[a][b]hstack[o1];[c]scale=88:72,format=rgb24,negate[o2]"
    ours = f"[0:v]split=3[a][b][c];[a][b]hstack[o1];[c]scale=88:72,format=rgb24,{_dnn(models['invert'])}[o2]"
    out1, out2 = tmp_path / "o1.txt", tmp_path / "o2.txt"
    want = run_ffmpeg(
        ffmpeg,
        [
            *["-i", clip["carphone"], "-filter_complex", ref],
            *["-map", "[o1]", "-f", "framemd5", str(out1), "-map", "[o2]", "-f", "framemd5", str(out2)],
        ],
    )
    assert want.rc == 0, want.err
    p1, p2 = graph_for_output(ours, "o1"), graph_for_output(ours, "o2")
    assert not p1.linear and p2.linear  # o1 keeps split (two of its pads) and hstack; o2 is a chain
    assert p1.pruned.endswith("nullsink") and "split" not in p2.pruned
    maps = [["[o1]"], ["[o2]"]]
    texts = graphs_for_outputs(ours, maps)  # what a run with two outputs gives each of them
    assert texts == [p1.pruned, p2.pruned]
    for text, omaps, ref_file in zip(texts, maps, (out1, out2), strict=True):
        assert text is not None
        args = ["-i", clip["carphone"], "-filter_complex", text, "-map", *omaps]
        got = run_cli(["-hide_banner", "-loglevel", "error", *args, *FMD5])
        assert got.rc == 0, got.err
        assert _lines(got.out) == _lines(ref_file.read_bytes()) and len(_lines(got.out)) == 120


def _two_outputs(
    ffmpeg: str, clip: dict[str, str], tmp_path: Path, ref: str, ours: str, labels: tuple[str, str]
) -> None:
    """ffmpeg's run of ``ref`` with two framemd5 outputs (``labels``: their two labels) and
    avdnn's one run of ``ours``: each output gives ffmpeg's 120 frames."""
    files = {tool: (tmp_path / f"{tool}1.txt", tmp_path / f"{tool}2.txt") for tool in ("ffmpeg", "avdnn")}

    def argv(graph: str, tool: str) -> list[str]:
        one, two = files[tool]
        return [
            *["-i", clip["carphone"], "-filter_complex", graph],
            *["-map", f"[{labels[0]}]", "-f", "framemd5", str(one), "-map", f"[{labels[1]}]", "-f", "framemd5"],
            str(two),
        ]

    want = run_ffmpeg(ffmpeg, argv(ref, "ffmpeg"))
    assert want.rc == 0, want.err
    got = run_cli(["-hide_banner", "-loglevel", "error", *argv(ours, "avdnn")])
    assert got.rc == 0, got.err
    for mine, theirs in zip(files["avdnn"], files["ffmpeg"], strict=True):
        assert _lines(mine.read_bytes()) == _lines(theirs.read_bytes()) and len(_lines(mine.read_bytes())) == 120


def test_split_to_two_outputs_in_one_run(
    ffmpeg: str, clip: dict[str, str], models: dict[str, str], tmp_path: Path
) -> None:
    """The same two-output split command line, run by avdnn in one run: each output its part."""
    ref = "[0:v]split[a][b];[a]scale=88:72[o1];[b]hflip,format=rgb24,negate[o2]"
    ours = f"[0:v]split[a][b];[a]scale=88:72[o1];[b]hflip,format=rgb24,{_dnn(models['invert'])}[o2]"
    _two_outputs(ffmpeg, clip, tmp_path, ref, ours, ("o1", "o2"))


@pytest.mark.parametrize(
    ("ref", "dnn"),
    [
        ("[0:v]split[a][b]", ""),
        ("[0:v]hflip,split[a][b]", ""),
        ("[0:v]format=rgb24,negate,split[a][b]", "invert"),  # a DNN chain before the split
    ],
)
def test_split_pads_straight_to_outputs(
    ref: str, dnn: str, ffmpeg: str, clip: dict[str, str], models: dict[str, str], tmp_path: Path
) -> None:
    """An output that is a pad of the split itself gets what feeds the split (a null takes the label)."""
    ours = ref.replace("negate", _dnn(models[dnn])) if dnn else ref
    _two_outputs(ffmpeg, clip, tmp_path, ref, ours, ("a", "b"))


def test_a_split_pad_output_gets_what_feeds_the_split() -> None:
    texts = graphs_for_outputs("[0:v]hflip,split=3[a][b][c];[c]vflip[o]", [["[a]"], ["[b]"], ["[o]"]])
    assert texts == [
        "[0:v:0]hflip[avdnn_0_0];[avdnn_0_0]null[a]",
        "[0:v:0]hflip[avdnn_0_0];[avdnn_0_0]null[b]",
        "[0:v:0]hflip[avdnn_0_0];[avdnn_0_0]vflip[o]",
    ]
    plan = graph_for_output("[0:v][1:v]hstack,split[a][b]", "b", n_inputs=2)  # after a core
    assert [s.name for s in plan.chain] == ["null"] and plan.exit == (0, 0)
    assert plan.pruned == "[0:v:0][1:v:0]hstack[avdnn_0_0];[avdnn_0_0]null[b]"


def test_outputs_bound_as_ffmpeg_binds_them() -> None:
    graph = "[0:v]split[a][b];[a]scale=32:32;[b]hflip[o2]"
    assert graphs_for_outputs(graph, [["0:a"], ["[o2]"], []]) == ["[0:v:0]scale=32:32", "[0:v:0]hflip[o2]", None]
    with pytest.raises(InvalidArgumentError, match="already used elsewhere"):
        graphs_for_outputs(graph, [["[o2]"], ["[o2]"]])
    with pytest.raises(InvalidArgumentError, match=r"Filter 'hflip:default' has output 1 \(o2\) unconnected"):
        graphs_for_outputs(graph, [[]])


@pytest.mark.parametrize(
    "graph",
    ["[0:v]split[a][b];[a]scale=32:32[o1];[b]hflip[o2]", "[0:v]split[a][b];[a]scale=32:32[o1]"],
)
def test_an_unmapped_output_is_ffmpegs_error(graph: str, ffmpeg: str, clip: dict[str, str]) -> None:
    args = ["-i", clip["carphone"], "-filter_complex", graph, "-map", "[o1]", "-f", "null", "-"]
    want = run_ffmpeg(ffmpeg, args)
    got = run_cli(["-hide_banner", *args])
    assert want.rc != 0 and got.rc != 0
    (line,) = [ln for ln in want.err.splitlines() if "unconnected" in ln]
    assert line.split("] ", 1)[1] in got.err  # "Filter 'split' has output 0 (b) unconnected"


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("graph", "error", "named"),
    [
        ("[0:v][1:v]hstack,dnn_processing=model=m.onnx[x];[x][0:v]vstack[o]", NotSupportedError, "'dnn_processing'"),
        ("[0:a][1:a]amix[o]", NotSupportedError, "amix"),
        ("[0:v][x]overlay,split[o][x]", InvalidArgumentError, "cycle"),
        ("[0:v]null[a];[a]hflip[b];[a][b]hstack[o]", InvalidArgumentError, "'a'"),
        ("[0:v]null[a];[a]hflip[o]", InvalidArgumentError, "'q'"),
        ("[2:v]null[o]", InvalidArgumentError, "Invalid file index 2"),
        ("[0:v][1:v][0:v]overlay[o]", InvalidArgumentError, "More input link labels"),
        ("testsrc=d=1[o]", NotSupportedError, "'testsrc' generates"),
        ("color[c];[c]dnn_processing=model=m.onnx[d];[d][0:v]overlay[o]", NotSupportedError, "source filter"),
    ],
)
def test_what_cannot_run_is_refused_by_name(graph: str, error: type[Exception], named: str) -> None:
    label = "q" if named == "'q'" else "o"
    with pytest.raises(error, match=named):
        graph_for_output(graph, label, n_inputs=2)


def test_refusals_on_the_command_line(clip: dict[str, str]) -> None:
    inputs = _inputs(clip)
    for args, words in (
        (["-filter_complex", "[1:v][1:v]hstack[o]", "-map", "[o]"], "no video of input #0"),
        (
            ["-filter_complex", "[0:v]hflip[a];[a][0:v]hstack[o]", "-map", "[o]", "-vf", "null"],
            "cannot be used together",
        ),
    ):
        got = run_cli(["-hide_banner", *inputs, *args, "-f", "null", "-"])
        assert got.rc != 0 and words in got.err, got.err
    # a pipe is read once: a graph that needs a reader of its own for it is refused
    proc = subprocess.run(
        [
            *[sys.executable, "-m", "avdnn", "-hide_banner", "-i", clip["carphone"]],
            *["-f", "rawvideo", "-s", "8x8", "-pix_fmt", "gray", "-i", "-"],
            *["-filter_complex", "[1:v]scale=176:144[b];[0:v][b]hstack[o]", "-map", "[o]", "-f", "null", "-"],
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode != 0 and b"pipe" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "graph", ["[0:v][1:v]overlay=10:10[out]", "[0:v]format=gray[a];[1:v]scale=64:48[b];[a][b]overlay,hflip[out]"]
)
def test_stream_mapping_block_is_ffmpegs(graph: str, ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """Every stream the graph reads, its first filter's pad, the graph's output pad; audio of input #1."""

    def mapping(exe: list[str], out: Path) -> str:
        args = [*_inputs(clip), "-filter_complex", graph, "-map", "[out]", "-map", "1:a", "-t", "0.2"]
        err = subprocess.run(
            [*exe, "-hide_banner", "-nostdin", *args, "-c:v", "mpeg4", "-c:a", "pcm_s16le", str(out)],
            capture_output=True,
            check=True,
            timeout=120,
        ).stderr.decode()
        block = err[err.index("Stream mapping:\n") :]
        return block[: block.index("Output #0")].removesuffix("Press [q] to stop, [?] for help\n")

    ref = mapping([ffmpeg], tmp_path / "ref.mkv")
    assert mapping([sys.executable, "-m", "avdnn"], tmp_path / "got.mkv") == ref
    assert "Stream #1:0 (h264) -> " in ref and "Stream #1:1 -> #0:1" in ref


# --------------------------------------------------------------------------- the core's output


def test_a_failed_probe_keeps_the_anchors_rate_and_aspect_and_says_so(
    ffmpeg: str, clip: dict[str, str], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Probing the core's output fails: the rate (tb 1001/30000) and SAR 128/117 stay input #0's, with a warning."""
    import avdnn.media.libav.pads as lavfipads
    from avdnn.errors import AvdnnError

    graph = "[0:v]hflip[a];[0:v][a]hstack[out]"

    def fails(text: str) -> None:
        raise AvdnnError("cannot configure the probe graph")

    monkeypatch.setattr(lavfipads, "probe_graph", fails)
    _same(ffmpeg, ["-i", clip["carphone"], "-filter_complex", graph, "-map", "[out]"])
    monkeypatch.setattr(logging.getLogger("avdnn"), "propagate", True)  # the CLI run turned it off
    with caplog.at_level("WARNING", logger="avdnn"):
        frames = list(avdnn.open(clip["carphone"], filter_complex=graph, map=["[out]"], frames=3))
    assert [f.sample_aspect_ratio for f in frames] == [Fraction(128, 117)] * 3
    assert (
        "aspect ratio of 'hflip,hstack' (cannot configure the probe graph); using input 0:v:0's (30000/1001, 128/117)"
        in caplog.text
    )

    def bug(text: str) -> None:
        raise RuntimeError("a bug in the probe")

    monkeypatch.setattr(lavfipads, "probe_graph", bug)
    with pytest.raises(RuntimeError, match="a bug in the probe"):  # a bug is not a fallback
        avdnn.run(clip["carphone"], output=io.BytesIO(), format="framemd5", filter_complex=graph, map=["[out]"])


@pytest.fixture
def http_clip(clip: dict[str, str]) -> Iterator[str]:
    """carphone served over http on loopback (a network input), stopped after the test."""
    root = Path(clip["carphone"]).parent

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{Path(clip['carphone']).name}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_network_input_is_not_opened_twice(http_clip: str, clip: dict[str, str]) -> None:
    """A core input needs its own reader of its file: refused for a network input, as for a pipe."""
    graph = "[1:v]scale=176:144[b];[0:v][b]hstack[o]"
    with pytest.raises(NotSupportedError, match=r"input #1 is a network input, which can be read only once"):
        avdnn.run(
            clip["carphone"],
            output=io.BytesIO(),
            format="framemd5",
            filter_complex=graph,
            map=["[o]"],
            more_inputs=[(http_clip, None, {})],
        )
    got = run_cli(
        [
            *["-hide_banner", "-i", http_clip, "-filter_complex", "[0:v]hflip[a];[0:v][a]hstack[o]"],
            *["-map", "[o]", "-f", "null", "-"],
        ]
    )
    assert got.rc != 0 and "input #0 is a network input" in got.err, got.err
