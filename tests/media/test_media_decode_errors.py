"""Broken input, ffmpeg's way: concealed and counted, -xerror, -max_error_rate, passed-through options.

The oracle is the static ffmpeg 9.0.2; single-threaded decoding is exact (with frame threads
ffmpeg's own concealment varies from run to run, so only the frame count is compared there).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from media_util import both, corrupt_mp4, ffmpeg_make, frame_lines

import avdnn
from avdnn.errors import AVERROR_INVALIDDATA, InvalidDataError
from avdnn.media.input.decode import ErrorRateExceededError, VideoDecoder
from avdnn.media.input.source import Source


@pytest.fixture(scope="module")
def bad_carphone(clip: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """carphone with 20 KB damaged in ten 2 KB runs."""
    return corrupt_mp4(
        clip["carphone"], tmp_path_factory.mktemp("bad") / "carphone_bad.mp4", total=20_000, chunk=2_000, seed=1
    )


@pytest.fixture(scope="module")
def bad_mpeg4(ffmpeg: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An mpeg4 clip of our own (testsrc, GOP 12, B-frames) with 1 KB damaged."""
    d = tmp_path_factory.mktemp("bad4")
    clean = ffmpeg_make(
        ffmpeg,
        ["-f", "lavfi", "-i", "testsrc=s=160x120:d=3:r=25", "-c:v", "mpeg4", "-g", "12", "-bf", "2"],
        d / "m4.mp4",
    )
    return corrupt_mp4(clean, d / "m4_bad.mp4", total=1_000, chunk=200, seed=3)


@pytest.fixture(scope="module")
def h264_clip(ffmpeg: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An h264 clip of our own (testsrc2, GOP 25, 3 B-frames), undamaged."""
    return ffmpeg_make(
        ffmpeg,
        [
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=160x120:d=3:r=25",
            "-c:v",
            "libx264",
            "-g",
            "25",
            "-bf",
            "3",
            "-pix_fmt",
            "yuv420p",
        ],
        tmp_path_factory.mktemp("h264") / "h264.mp4",
    )


@pytest.mark.parametrize(("damage", "rate_rc"), [((2_000, 100, 7), 0), ((6_000, 300, 11), 69)], ids=["light", "heavy"])
@pytest.mark.parametrize("opts", [[], ["-xerror"], ["-max_error_rate", "0.05"]], ids=["conceal", "xerror", "rate"])
def test_damaged_h264_equals_ffmpeg(
    ffmpeg: str, h264_clip: Path, tmp_path: Path, damage: tuple[int, int, int], rate_rc: int, opts: list[str]
) -> None:
    """A 5% error rate: the light damage stays under it (exit 0), the heavy one goes over (exit 69)."""
    total, chunk, seed = damage
    bad = corrupt_mp4(h264_clip, tmp_path / "bad.mp4", total=total, chunk=chunk, seed=seed)
    ref, ours = both(ffmpeg, ["-threads", "1", *opts], bad)
    assert ours.rc == ref.rc, ours.err
    assert ours.out == ref.out
    if opts[:1] == ["-max_error_rate"]:
        assert ref.rc == rate_rc
    if not opts:
        assert ref.rc == 0 and 0 < len(frame_lines(ref.out)) < 75  # concealed, a few frames lost


CASES = {"conceal": [], "xerror": ["-xerror"], "max_error_rate_0": ["-max_error_rate", "0"]}


@pytest.mark.parametrize("case", CASES)
def test_damaged_carphone_single_thread_equals_ffmpeg(ffmpeg: str, bad_carphone: Path, case: str) -> None:
    ref, ours = both(ffmpeg, ["-threads", "1", *CASES[case]], bad_carphone)
    assert ours.rc == ref.rc, ours.err
    assert ours.out == ref.out
    n = len(frame_lines(ref.out))
    expected_rc = {"conceal": 0, "xerror": 183, "max_error_rate_0": 69}[case]
    assert ref.rc == expected_rc
    if case == "xerror":
        assert n < 100  # stopped at the first error
    else:
        assert 100 < n < 120  # concealed: all but the frames libavcodec could not rebuild


def test_damaged_carphone_frame_threads_same_count(ffmpeg: str, bad_carphone: Path) -> None:
    ref, ours = both(ffmpeg, [], bad_carphone)
    assert (ours.rc, len(frame_lines(ours.out))) == (ref.rc, len(frame_lines(ref.out)))


@pytest.mark.parametrize(
    "opts",
    [
        [],
        ["-xerror"],
        ["-max_error_rate", "0"],
        ["-max_error_rate", "0.9"],
        ["-err_detect", "aggressive"],
        ["-fflags", "+discardcorrupt"],
        ["-err_detect", "crccheck+bitstream", "-xerror"],
    ],
)
def test_damaged_mpeg4_equals_ffmpeg(ffmpeg: str, bad_mpeg4: Path, opts: list[str]) -> None:
    ref, ours = both(ffmpeg, ["-threads", "1", *opts], bad_mpeg4)
    assert ours.rc == ref.rc, ours.err
    assert ours.out == ref.out


def test_counters_name_the_causes(bad_carphone: Path, clip: dict[str, str]) -> None:
    with Source(str(bad_carphone), threads=1) as src:
        n = sum(1 for _ in src)
        assert n == src.frames_decoded == src.frames_read
        assert src.decode_errors > 0 and src.errors["send_packet"] + src.errors["receive_frame"] == src.decode_errors
        assert src.frames_concealed > 0 and src.errors["corrupt_frame"] == src.frames_concealed
        c = src.counters
        assert c["frames_read"] == n and c["decode_errors"] == src.decode_errors
        assert c["errors.send_packet"] == src.errors["send_packet"] and c["frames_trimmed"] == 0
    with Source(clip["carphone"]) as src:
        assert sum(1 for _ in src) == 120
        assert src.decode_errors == src.frames_concealed == src.packets_corrupt == 0


def test_xerror_raises_invalid_data_after_the_good_frames(bad_carphone: Path) -> None:
    src = Source(str(bad_carphone), threads=1, xerror=True)
    got = 0
    with pytest.raises(InvalidDataError) as info:
        for _ in src:
            got += 1
    src.close()
    assert info.value.code == AVERROR_INVALIDDATA
    assert 0 < got < 100


def test_error_rate_is_checked_when_the_input_ends(bad_carphone: Path) -> None:
    src = Source(str(bad_carphone), threads=1, max_error_rate=0.0)
    got = 0
    with pytest.raises(ErrorRateExceededError, match=r"Decode error rate .* exceeds maximum 0"):
        for _ in src:
            got += 1
    src.close()
    assert got == src.frames_decoded > 100  # every frame came out first


def test_error_rate_arithmetic() -> None:
    class _Ctx:
        thread_type, thread_count, options = "SLICE", 0, {}

    class _Stream:
        codec_context, time_base = _Ctx(), None

    dec = VideoDecoder(_Stream(), threads=1)
    dec.frames_decoded, dec.errors["send_packet"] = 1, 2
    assert dec.error_rate() == pytest.approx(2 / 3)
    dec.check_error_rate()  # 2/3 is not above ffmpeg's default 2/3
    dec.errors["receive_frame"] = 1
    with pytest.raises(ErrorRateExceededError, match=r"0\.75 exceeds maximum 0\.666667"):
        dec.check_error_rate()


def test_max_error_rate_range() -> None:
    with pytest.raises(ValueError, match="max_error_rate"):
        Source("x.mp4", max_error_rate=2)


def test_the_run_accounting_names_decode_errors(bad_carphone: Path, tmp_path: Path) -> None:
    """The run's books carry the input's decode errors and concealed frames, and still balance."""
    stats = avdnn.run(str(bad_carphone), output=str(tmp_path / "o.mkv"), source_options={"threads": 1}, codec="ffv1")
    counters = stats.input_counters
    assert counters["decode_errors"] > 0 and counters["frames_decoded"] == stats.frames_read
    assert stats.check(), stats.summary()
    assert "decode error(s)" in stats.summary() and "concealed" in stats.summary()
    assert stats.as_dict()["input"]["decode_errors"] == counters["decode_errors"]
