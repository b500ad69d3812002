"""Every stream, ffmpeg's way: the same arguments to ffmpeg 9.0.2 and to avdnn print the same
``-fflags +bitexact -f framemd5 -`` (every stream, in ffmpeg's interleaved order) and exit alike.

Inputs: bigbuckbunny (h264 + AAC 5.1) and a Matroska file the oracle writes here with mpeg4
video, two audio tracks (vorbis 44.1 kHz "eng", flac 22.05 kHz "fre") and a SubRip track.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from spine_util import run_cli, run_cli_subprocess, run_ffmpeg

FMD5 = ["-fflags", "+bitexact", "-f", "framemd5", "-"]

BBB_CASES = {
    "default": [],
    "audio_copy": ["-c:a", "copy"],
    "an": ["-an"],
    "map_a_then_v": ["-map", "0:a", "-map", "0:v"],
    "map_v": ["-map", "0:v"],
    "map_a_only": ["-map", "0:a"],
    "vn_audio_copy": ["-vn", "-c:a", "copy"],
    "copy_all": ["-c", "copy"],
    "out_ss_to": ["-ss", "1", "-to", "3"],
    "out_ss_to_copy": ["-ss", "1", "-to", "3", "-c:a", "copy"],
    "out_t": ["-t", "1"],
    "out_ss_t_offgrid": ["-ss", "0.5", "-t", "1", "-c:a", "copy"],
    "frames_v_audio_copy": ["-frames:v", "10", "-c:a", "copy"],
    "frames_v_audio_pcm": ["-frames:v", "10"],
    "frames_v_out_ss": ["-frames:v", "30", "-c:a", "copy", "-ss", "0.2"],
    "frames_v_video_copied": ["-c", "copy", "-frames:v", "10"],
    "chain_and_copy": ["-vf", "scale=64:-2", "-c:a", "copy"],
    "copy_others_of_a_chain": ["-vf", "scale=64:-2", "-c:a", "copy", "-t", "1"],
    "opus_downmix": ["-t", "1", "-vn", "-c:a", "libopus", "-ac", "2", "-ar", "24000"],
    "af": ["-t", "1", "-vn", "-af", "volume=0.5", "-ac", "2"],
    "out_size": ["-t", "0.5", "-s", "64x36", "-c:a", "copy"],
    "out_size_name_and_chain": ["-t", "0.5", "-s", "qvga", "-vf", "hflip"],
}

#: input options (before -i) with the audio kept: the trims and loops reach every stream
BBB_INPUT_CASES = {
    "in_ss_audio_pcm": (["-ss", "1"], ["-t", "1"]),
    "in_ss_audio_copy": (["-ss", "1"], ["-t", "1", "-c:a", "copy"]),
    "in_ss_t_audio_pcm": (["-ss", "1", "-t", "1"], []),
    "in_ss_t_audio_copy": (["-ss", "1", "-t", "1"], ["-c:a", "copy"]),
    "in_ss_to": (["-ss", "0.5", "-to", "2"], ["-c:a", "copy", "-s", "64x36"]),
    "in_itsoffset": (["-itsoffset", "0.5"], ["-t", "1", "-c:a", "copy"]),
    "in_noaccurate_seek": (["-ss", "0.5", "-noaccurate_seek"], ["-t", "1", "-s", "64x36"]),
    "in_stream_loop": (["-stream_loop", "1"], ["-t", "7", "-c:a", "copy", "-s", "64x36"]),
    "in_stream_loop_ss": (["-stream_loop", "1"], ["-ss", "4", "-t", "3", "-s", "64x36"]),
    "in_an": (["-an"], ["-frames:v", "3"]),
    "in_vn": (["-vn"], ["-t", "1"]),
    "in_an_mapped": (["-an"], ["-map", "0:a", "-frames:v", "3"]),  # ffmpeg: disabled, cannot be mapped (234)
}

MKV_CASES = {
    "default": [],
    "map_all_copy_sub": ["-map", "0", "-c:a", "copy", "-c:s", "copy"],
    "second_audio": ["-map", "0:a:1"],
    "second_audio_resampled": ["-map", "0:a:1", "-ar", "8000", "-ac", "2"],
    "negative_map": ["-map", "0", "-map", "-0:s"],
    "optional_map": ["-map", "0:v", "-map", "0:a:7?"],
    "copy_all": ["-c", "copy"],
    "subtitle_copy": ["-c:s", "copy"],
    "trimmed_copy": ["-ss", "0.25", "-t", "0.5", "-map", "0", "-c", "copy"],
    "stream_specific_codecs": ["-map", "0:a", "-c:a:0", "copy", "-c:a:1", "pcm_s16le"],
}


@pytest.fixture(scope="session")
def multi_mkv(ffmpeg: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """mpeg4 video, vorbis + flac audio with language tags, a SubRip track (made by the oracle)."""
    d = tmp_path_factory.mktemp("streams")
    srt = d / "s.srt"
    srt.write_text("1\n00:00:00,000 --> 00:00:00,500\nHello\n\n2\n00:00:00,600 --> 00:00:01,000\nWorld\n")
    out = d / "multi.mkv"
    res = run_ffmpeg(
        ffmpeg,
        [
            "-f",
            "lavfi",
            "-i",
            "testsrc=s=64x48:r=10:d=1",
            "-f",
            "lavfi",
            "-i",
            "sine=f=440:r=44100:d=1",
            "-f",
            "lavfi",
            "-i",
            "sine=f=880:r=22050:d=1",
            "-i",
            str(srt),
            "-map",
            "0",
            "-map",
            "1",
            "-map",
            "2",
            "-map",
            "3",
            "-c:v",
            "mpeg4",
            "-c:a:0",
            "libvorbis",
            "-c:a:1",
            "flac",
            "-c:s",
            "srt",
            "-metadata:s:a:0",
            "language=eng",
            "-metadata:s:a:1",
            "language=fre",
            str(out),
        ],
    )
    assert res.rc == 0, res.err
    return str(out)


def _same(ffmpeg: str, args: list[str]) -> None:
    want = run_ffmpeg(ffmpeg, [*args, *FMD5], timeout=120)
    got = run_cli(["-hide_banner", "-loglevel", "error", *args, *FMD5])
    assert got.rc == want.rc, (got.err, want.err)
    assert want.out.count(b"\n") > 10 or want.rc != 0, want.out[:300]
    assert got.out.decode() == want.out.decode()


@pytest.mark.parametrize("case", sorted(BBB_CASES))
def test_bigbuckbunny_streams_as_ffmpeg(case: str, ffmpeg: str, clip: dict[str, str]) -> None:
    _same(ffmpeg, ["-i", clip["bigbuckbunny"], *BBB_CASES[case]])


@pytest.mark.parametrize("case", sorted(BBB_INPUT_CASES))
def test_input_options_reach_every_stream(case: str, ffmpeg: str, clip: dict[str, str]) -> None:
    before, after = BBB_INPUT_CASES[case]
    _same(ffmpeg, [*before, "-i", clip["bigbuckbunny"], *after])


@pytest.mark.parametrize(
    "args",
    [
        ["-stream_loop", "1", "-i", "MKV", "-c", "copy"],
        ["-stream_loop", "1", "-i", "MKV"],
        ["-stream_loop", "2", "-t", "2.5", "-i", "MKV", "-map", "0:v", "-map", "0:a:1", "-c:a", "copy"],
    ],
)
def test_stream_loop_with_audio(args: list[str], ffmpeg: str, multi_mkv: str) -> None:
    """ffmpeg's loop duration spans every stream (the audio decoder's end included) and rewinds the decoders."""
    _same(ffmpeg, [multi_mkv if a == "MKV" else a for a in args])


@pytest.mark.parametrize("case", sorted(MKV_CASES))
def test_matroska_streams_as_ffmpeg(case: str, ffmpeg: str, multi_mkv: str) -> None:
    _same(ffmpeg, ["-i", multi_mkv, *MKV_CASES[case]])


def test_audio_streams_are_really_there(clip: dict[str, str]) -> None:
    """Not only equal to the oracle: the default output of a clip with sound carries the sound."""
    res = run_cli(["-hide_banner", "-loglevel", "error", "-i", clip["bigbuckbunny"], "-t", "0.5", *FMD5])
    assert res.rc == 0, res.err
    text = res.out.decode()
    assert "#media_type 1: audio" in text and "#channel_layout_name 1: 5.1" in text
    assert sum(1 for line in text.splitlines() if line.startswith("1,")) >= 20


@pytest.mark.parametrize(
    ("args", "status", "words"),
    [
        (["-map", "0:a:5"], 234, "matches no streams"),
        (["-map", "1:v"], 234, "Invalid input file index"),
        (["-vf", "scale=32:-2", "-c:v", "copy"], 234, "Filtering and streamcopy cannot be used together"),
        (["-bogus_opt", "3"], 8, "Unrecognized option 'bogus_opt'"),
    ],
)
def test_refused_like_ffmpeg(args: list[str], status: int, words: str, ffmpeg: str, clip: dict[str, str]) -> None:
    full = ["-i", clip["carphone"], *args, "-f", "null", "-"]
    assert run_ffmpeg(ffmpeg, full).rc == status
    res = run_cli(["-hide_banner", *full])
    assert res.rc == status, res.err
    assert words in res.err


def test_unknown_input_option_is_refused(ffmpeg: str) -> None:
    """Before -i too: a typo is never passed to the demuxer silently."""
    args = ["-bogus_opt", "3", "-f", "lavfi", "-i", "testsrc=d=0.1", "-f", "null", "-"]
    assert run_ffmpeg(ffmpeg, args).rc == 8
    res = run_cli(args)
    assert res.rc == 8 and "Unrecognized option 'bogus_opt'" in res.err


def test_an_option_after_the_output_is_an_error(clip: dict[str, str]) -> None:
    res = run_cli(["-i", clip["carphone"], "-f", "null", "-", "-c:a", "copy"])
    assert res.rc != 0 and "Trailing option" in res.err


def test_bitexact_before_the_input_takes_no_value() -> None:
    """``-bitexact`` is a flag: it must not swallow the next argument (it once ate ``-f``)."""
    res = run_cli(["-bitexact", "-f", "lavfi", "-i", "testsrc=s=32x32:d=0.2", "-f", "md5", "-"])
    assert res.rc == 0, res.err
    assert res.out.startswith(b"MD5=")


def _packets(ffmpeg: str, path: Path, stream: str) -> str:
    res = run_ffmpeg(ffmpeg, ["-i", str(path), "-map", stream, "-c", "copy", "-f", "framemd5", "-"])
    assert res.rc == 0, res.err
    return "\n".join(line for line in res.out.decode().splitlines() if not line.startswith("#software"))


@pytest.mark.parametrize("container", ["mp4", "mkv", "webm"])
def test_file_outputs_carry_ffmpegs_packets(container: str, ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """libx264/vp9 video with copied or opus audio: the packets in the file are ffmpeg's."""
    codecs = {
        "mp4": ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "copy"],
        "mkv": ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "libopus"],
        "webm": ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-c:a", "libopus"],
    }[container]
    args = ["-i", clip["bigbuckbunny"], "-t", "1", "-vf", "scale=160:90", *codecs, "-threads", "1"]
    ours, theirs = tmp_path / f"a.{container}", tmp_path / f"f.{container}"
    # 160x90 in libx264: its packets depend on heap bytes it never wrote (spine_util.ZEROED_HEAP)
    assert run_ffmpeg(ffmpeg, [*args, str(theirs)], zeroed=True).rc == 0
    res = run_cli_subprocess(["-hide_banner", "-loglevel", "error", *args, str(ours)], zeroed=True)
    assert res.rc == 0, res.err
    assert _packets(ffmpeg, ours, "0:a") == _packets(ffmpeg, theirs, "0:a")
    if container == "mp4":
        assert _packets(ffmpeg, ours, "0:v") == _packets(ffmpeg, theirs, "0:v")


def test_subtitles_are_converted_as_ffmpeg_converts_them(ffmpeg: str, multi_mkv: str, tmp_path: Path) -> None:
    """Matroska to Matroska: SubRip becomes ASS (the muxer's default), packet for packet as ffmpeg's."""
    ours, theirs = tmp_path / "a.mkv", tmp_path / "f.mkv"
    args = ["-i", multi_mkv, "-map", "0", "-c:v", "copy", "-c:a", "copy"]
    assert run_ffmpeg(ffmpeg, [*args, str(theirs)]).rc == 0
    res = run_cli(["-hide_banner", "-loglevel", "error", *args, str(ours)])
    assert res.rc == 0, res.err

    def subs(path: Path) -> str:
        text = _packets(ffmpeg, path, "0:s")
        return "\n".join(line for line in text.splitlines() if not line.startswith("#extradata"))  # Lavc version

    assert "#codec_id 0: ass" in subs(theirs)
    assert subs(ours) == subs(theirs)
    for stream in ("0:v", "0:a:0", "0:a:1"):
        assert _packets(ffmpeg, ours, stream) == _packets(ffmpeg, theirs, stream)


def test_stream_metadata_is_kept(ffmpeg: str, multi_mkv: str, tmp_path: Path) -> None:
    out = tmp_path / "o.mkv"
    res = run_cli(["-hide_banner", "-loglevel", "error", "-i", multi_mkv, "-map", "0:a", "-c", "copy", str(out)])
    assert res.rc == 0, res.err
    probe = subprocess.run([ffmpeg, "-hide_banner", "-i", str(out)], capture_output=True, text=True, check=False)
    assert "Stream #0:0(eng): Audio: vorbis" in probe.stderr
    assert "Stream #0:1(fre): Audio: flac" in probe.stderr


def test_dnn_identity_chain_with_audio_copy_is_ffmpegs_bytes(ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    """A DNN stage in the chain changes nothing around it: audio copied, video as ffmpeg's without the model."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[1] / "dnn"))
    from onnx_models import identity

    model = identity(tmp_path)
    head = ["-i", clip["bigbuckbunny"], "-t", "1", "-c:a", "copy"]
    want = run_ffmpeg(ffmpeg, [*head, "-vf", "scale=160:90,format=rgb24,format=yuv420p", *FMD5])
    chain = f"scale=160:90,format=rgb24,dnn_processing=dnn_backend=onnx:model={model},format=yuv420p"
    got = run_cli(["-hide_banner", "-loglevel", "error", *head, "-vf", chain, *FMD5])
    assert want.rc == 0 and got.rc == 0, got.err
    assert got.out.decode() == want.out.decode()
    assert "#codec_id 1: aac" in got.out.decode()


def _tags(ffmpeg: str, path: Path) -> list[str]:
    """The input banner of ``path`` as ffmpeg prints it, without lines that carry a build's version."""
    probe = subprocess.run([ffmpeg, "-hide_banner", "-i", str(path)], capture_output=True, text=True, check=False)
    skip = ("Input #", "Duration", "DURATION", "ENCODER", "encoder", "At least one output")
    return [line for line in probe.stderr.splitlines() if not any(k in line for k in skip)]


@pytest.mark.parametrize(
    "extra",
    [
        ["-c", "copy", "-metadata", "artist=Me", "-metadata:s:a:0", "language=fre"],
        ["-c", "copy", "-map_metadata", "-1", "-map_chapters", "-1"],
        ["-c:v", "mpeg4", "-c:a", "copy", "-metadata", "title="],
    ],
)
def test_metadata_and_chapters_as_ffmpeg(extra: list[str], ffmpeg: str, tmp_path: Path) -> None:
    """Global tags, stream tags and chapters are copied as ffmpeg copies them; -metadata and -map_* apply."""
    src = tmp_path / "tagged.mkv"
    meta = tmp_path / "chapters.txt"
    meta.write_text(
        ";FFMETADATA1\ntitle=Hello\n[CHAPTER]\nTIMEBASE=1/1000\nSTART=0\nEND=1000\ntitle=One\n"
        "[CHAPTER]\nTIMEBASE=1/1000\nSTART=1000\nEND=2000\ntitle=Two\n"
    )
    made = run_ffmpeg(
        ffmpeg,
        [
            "-f",
            "lavfi",
            "-i",
            "testsrc=d=2:s=64x48",
            "-f",
            "lavfi",
            "-i",
            "sine=d=2",
            "-i",
            str(meta),
            "-map",
            "0",
            "-map",
            "1",
            "-map_metadata",
            "2",
            "-map_chapters",
            "2",
            "-metadata:s:a:0",
            "language=ger",
            "-c:v",
            "mpeg4",
            "-c:a",
            "libopus",
            str(src),
        ],
    )
    assert made.rc == 0, made.err
    ours, theirs = tmp_path / "a.mkv", tmp_path / "f.mkv"
    assert run_ffmpeg(ffmpeg, ["-i", str(src), *extra, str(theirs)]).rc == 0
    res = run_cli(["-hide_banner", "-loglevel", "error", "-i", str(src), *extra, str(ours)])
    assert res.rc == 0, res.err
    want = _tags(ffmpeg, theirs)
    assert any("Chapter" in line for line in _tags(ffmpeg, src))
    assert _tags(ffmpeg, ours) == want


def test_a_slow_chain_neither_desyncs_nor_grows_the_audio_buffers(
    clip: dict[str, str],
    register,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chain 10x slower than decoding: the audio waits with the video, its buffer stays bounded."""
    import time as _time

    from avdnn.filters.base import Filter
    from avdnn.media.output import sink as sink_module

    class _Slow(Filter):
        name = "avdnn_test_slow"
        description = "Sleeps 15 ms a frame."

        def filter(self, frame):  # type: ignore[no-untyped-def]
            _time.sleep(0.015)
            return (frame,)

    register(_Slow)
    peaks: list[int] = []
    real_close = sink_module.Sink.close

    def close(self):  # type: ignore[no-untyped-def]
        peaks.append(self.packets_held_peak)
        real_close(self)

    monkeypatch.setattr(sink_module.Sink, "close", close)
    args = ["-i", clip["bigbuckbunny"], "-c:a", "copy", "-vf", "scale=64:36,avdnn_test_slow", "-t", "3"]
    res = run_cli(["-hide_banner", "-loglevel", "error", *args, *FMD5])
    assert res.rc == 0, res.err
    fast = run_cli(
        [
            "-hide_banner",
            "-loglevel",
            "error",
            "-i",
            clip["bigbuckbunny"],
            "-c:a",
            "copy",
            "-vf",
            "scale=64:36",
            "-t",
            "3",
            *FMD5,
        ]
    )
    assert res.out == fast.out  # same packets, same interleaving: nothing desynchronised
    # 3 s of audio is 141 packets; the interleaver held only what the video pipeline's depth allows
    assert peaks and peaks[0] <= 48, peaks  # measured: 21 (slow) and 24 (fast)


@pytest.mark.parametrize("autorotate", [[], ["-noautorotate"]])
def test_the_display_matrix_of_a_file_output(
    autorotate: list[str], ffmpeg: str, clip: dict[str, str], tmp_path: Path
) -> None:
    """Applied by default (the output carries none); kept on the output with -noautorotate, as ffmpeg."""
    rotated = tmp_path / "rot.mp4"
    assert run_ffmpeg(ffmpeg, ["-display_rotation", "90", "-i", clip["carphone"], "-c", "copy", str(rotated)]).rc == 0
    ours, theirs = tmp_path / "a.mp4", tmp_path / "f.mp4"
    args = [*autorotate, "-i", str(rotated), "-c:v", "mpeg4"]
    assert run_ffmpeg(ffmpeg, [*args, str(theirs)]).rc == 0
    res = run_cli(["-hide_banner", "-loglevel", "error", *args, str(ours)])
    assert res.rc == 0, res.err

    def banner(path: Path) -> list[str]:
        return [line.split(",")[0] for line in _tags(ffmpeg, path) if "Display Matrix" in line or "Video:" in line]

    assert banner(ours) == banner(theirs)
    assert any("Display Matrix" in line for line in banner(theirs)) == bool(autorotate)
