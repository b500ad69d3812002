"""Confined: a hostile client on loopback against the real service reads, copies and writes nothing
outside ``--media-root``, names no protocol off the allow-list, listens only with ``--allow-listen``,
and learns from no answer whether a file outside exists or what it holds."""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from serve_util import Served, free_port, source, tcp_listening, wait_for
from spine_util import run_ffmpeg

from avdnn import api
from avdnn.cli.serve import parse_flags
from avdnn.errors import InvalidArgumentError
from avdnn.serve import ServeConfig

TESTSRC = "testsrc2=size=64x48:rate=10:duration=0.5"
PASSWD_LINE = "root:x:0:0:"  # the first bytes of /etc/passwd, which no answer may carry


@pytest.fixture
def root(tmp_path: Path, ffmpeg: str) -> Path:
    """A media root holding a short clip, with a file and a clip beside it (outside) and a link out."""
    inside = tmp_path / "root"
    inside.mkdir()
    res = run_ffmpeg(ffmpeg, ["-f", "lavfi", "-i", TESTSRC, "-c:v", "mpeg4", str(inside / "clip.mkv")])
    assert res.rc == 0, res.err
    shutil.copy(inside / "clip.mkv", tmp_path / "outside.mkv")
    (tmp_path / "secret.txt").write_text("the secret words\n")
    (inside / "link.mkv").symlink_to(tmp_path / "outside.mkv")
    return inside


def _post(served: Served, body: dict[str, Any]) -> Any:
    return served.client.post("/api/pipelines", json=body)


def _refused(r: Any, status: int = 403) -> str:
    assert r.status_code == status, r.text
    assert PASSWD_LINE not in r.text and "secret words" not in r.text
    detail: str = r.json()["detail"]
    assert "\n" not in detail
    return detail


def _ended(served: Served, pid: str) -> dict[str, Any] | None:
    row = source(served.status(pid), "out0")
    return row if row["state"] in ("ended", "failed") else None


def _args(*args: str) -> dict[str, Any]:
    return {"args": list(args)}


def test_a_graph_script_outside_is_never_read_and_one_inside_never_echoed(serve: Any, root: Path) -> None:
    served = serve(media_root=root)
    for option in ("-filter_complex_script", "-/filter_complex"):
        for path in ("/etc/passwd", "../secret.txt"):
            body = _args(option, path, "-f", "lavfi", "-i", TESTSRC, "-f", "null", "-")
            assert "outside the media root" in _refused(_post(served, body))
    (root / "junk.txt").write_text("secretword,hflip")
    body = _args("-filter_complex_script", "junk.txt", "-f", "lavfi", "-i", TESTSRC, "-f", "null", "-")
    detail = _refused(_post(served, body), 400)
    assert "junk.txt" in detail and "Filter not found" in detail  # the kind of error, as ffmpeg ends it
    assert "secretword" not in detail


def test_the_passwd_copy_is_refused_and_its_output_never_made(serve: Any, root: Path, tmp_path: Path) -> None:
    served = serve(media_root=root)
    raw = ["-f", "rawvideo", "-pix_fmt", "gray", "-s", "1x1"]
    for out in ("copy.raw", str(tmp_path / "copy.raw")):
        _refused(_post(served, _args(*raw, "-i", "/etc/passwd", "-f", "rawvideo", out)))
    assert not (root / "copy.raw").exists() and not (tmp_path / "copy.raw").exists()
    _refused(_post(served, _args(*raw, "-i", "clip.mkv", "-f", "rawvideo", str(tmp_path / "copy.raw"))))
    _refused(_post(served, _args(*raw, "-i", "/etc/passwd", "-f", "rawvideo", "tcp://127.0.0.1:9")))
    assert not (tmp_path / "copy.raw").exists()
    # the client's own bytes, written with -y where a .pth would run as code: nothing is written
    data = "data:application/octet-stream;base64," + base64.b64encode(b"import os\n").decode()
    _refused(_post(served, _args(*raw[:4], "-s", "10x1", "-i", data, "-f", "rawvideo", "evil.pth")))
    assert "-y" in _refused(_post(served, _args("-f", "lavfi", "-i", TESTSRC, "-y", "evil.mkv")), 400)
    assert not (root / "evil.pth").exists() and not (root / "evil.mkv").exists()
    assert served.service.pipelines() == []  # none of them started a run


@pytest.mark.parametrize(
    ("before", "url"),
    [
        ((), "file:clip.mkv"),
        ((), "/etc/hostname"),
        ((), "../outside.mkv"),
        ((), "link.mkv"),  # a link inside the root to a file outside
        ((), "concat:clip.mkv|../outside.mkv"),
        ((), "subfile,,start,0,end,100,,:../outside.mkv"),
        ((), "crypto+file:../outside.mkv"),
        ((), "pipe:0"),
        ((), "-"),
        (("-f", "concat"), "list.txt"),
        (("-f", "lavfi"), "movie=/etc/passwd"),
        (("-f", "lavfi"), "amovie=../secret.txt,anullsink;testsrc2"),
        (("-f", "lavfi"), "sendcmd=c=0 drawtext reinit textfile\\=/etc/passwd,nullsink;testsrc2"),
        (("-f", "x11grab"), ":0"),
    ],
)
def test_a_refused_input(serve: Any, root: Path, before: tuple[str, ...], url: str) -> None:
    served = serve(media_root=root)
    _refused(_post(served, _args(*before, "-i", url, "-f", "null", "-")))
    template = {"chain": "", "output": ["-f", "null", "-"], "input_options": list(before)}
    _refused(_post(served, {**template, "sources": [{"id": "a", "url": url}]}))
    assert served.service.pipelines() == []


@pytest.mark.parametrize(
    "chain",
    [
        "movie=/etc/passwd,hflip",
        "hflip,lut3d=../secret.txt",
        "psnr=f=../stats.log",
        "metadata_jsonl=file=../frames.jsonl",
        "zmq",
        "dnn_detect=model=../tinydet.onnx",
        "dnn_detect=model=zoo\\:x:labels=/etc/passwd",
    ],
)
def test_a_refused_chain(serve: Any, root: Path, chain: str) -> None:
    served = serve(media_root=root)
    detail = _refused(_post(served, _args("-f", "lavfi", "-i", TESTSRC, "-vf", chain, "-f", "null", "-")))
    assert chain.partition("=")[0].partition(",")[0] in detail or "outside the media root" in detail
    assert not (root.parent / "frames.jsonl").exists() and not (root.parent / "stats.log").exists()


@pytest.mark.parametrize(
    "output",
    [["../out.mkv"], ["/tmp/../etc/out.mkv"], ["-f", "hls", "cam.m3u8"], ["-f", "tee", "a.mkv|../b.mkv"], ["-"]],
)
def test_a_refused_output(serve: Any, root: Path, output: list[str]) -> None:
    served = serve(media_root=root)
    _refused(_post(served, _args("-f", "lavfi", "-i", TESTSRC, "-c:v", "mpeg4", *output)))
    assert sorted(p.name for p in root.iterdir()) == ["clip.mkv", "link.mkv"]


def test_the_answer_is_the_same_whether_a_file_outside_exists_or_not(serve: Any, root: Path, detector: str) -> None:
    served = serve(media_root=root)

    def said(url: str, model: str = "") -> str:
        chain = f"dnn_detect=model={model}" if model else ""
        body = {"chain": chain, "output": ["-f", "null", "-"], "sources": [{"id": "a", "url": url}]}
        return _refused(_post(served, body)).replace(model or url, "NAME")

    assert said("/etc/passwd") == said("/etc/no-such-file")
    assert said("../outside.mkv") == said("../no-such.mkv") == said("link.mkv")
    assert said("clip.mkv", detector) == said("clip.mkv", detector + ".missing")
    r = _post(served, {"chain": "", "output": ["-f", "null", "-"], "sources": [{"id": "a", "url": "clip.mkv"}]})
    assert r.status_code == 201, r.text
    joined = served.client.post(f"/api/pipelines/{r.json()['id']}/sources", json={"id": "b", "url": "/etc/passwd"})
    assert said("/etc/passwd") == _refused(joined).replace("/etc/passwd", "NAME")


def test_allowed_paths_run_under_the_root_whatever_the_working_directory(
    serve: Any, root: Path, detector: str, tmp_path: Path
) -> None:
    """A relative path is the root's (the service runs in the test's directory), a model comes from
    --model-dir or the zoo, and a lavfi movie= inside the root reads its file."""
    served = serve(media_root=root, model_dir=Path(detector).parent)
    assert Path.cwd() != root
    chain = "dnn_detect=model=tinydet.onnx:confidence=0.5,metadata_jsonl=file=d.jsonl"
    for args in (["-i", "clip.mkv", "-vf", chain], ["-f", "lavfi", "-i", "movie=clip.mkv"]):
        r = _post(served, _args(*args, "-c:v", "mpeg4", "out/../made.mkv"))
        assert r.status_code == 201, r.text
        row = wait_for("the run's end", lambda r=r: _ended(served, r.json()["id"]))
        assert row["frames"]["written"] == 5 and row["outputs"][0].startswith(str(root / "made."))
    assert len((root / "d.jsonl").read_text().splitlines()) == 5 and not (tmp_path / "made.mkv").exists()
    zoo = _post(served, _args("-f", "lavfi", "-i", TESTSRC, "-vf", "dnn_detect=model=zoo:blazeface", "-f", "null", "-"))
    assert zoo.status_code == 201, zoo.text


def test_a_local_playlist_cannot_reach_a_file_outside(serve: Any, root: Path, tmp_path: Path, ffmpeg: str) -> None:
    """FFmpeg's own walls for nested opens: a local input may not be probed as a playlist."""
    served = serve(media_root=root)
    res = run_ffmpeg(ffmpeg, ["-f", "lavfi", "-i", TESTSRC, "-c:v", "libx264", "-f", "mpegts", str(tmp_path / "o.ts")])
    assert res.rc == 0, res.err
    entry = f"#EXTINF:1,\n{tmp_path / 'o.ts'}\n"
    (root / "list.m3u8").write_text(f"#EXTM3U\n#EXT-X-TARGETDURATION:1\n{entry}#EXT-X-ENDLIST\n")
    playlist = str(root / "list.m3u8")
    for args in (["-i", playlist], ["-f", "lavfi", "-i", f"movie={playlist}"]):
        r = _post(served, _args(*args, "-f", "null", "-"))
        assert r.status_code == 201, r.text
        row = wait_for("the run's end", lambda r=r: _ended(served, r.json()["id"]))
        assert row["frames"]["written"] == 0, row


def test_listening_needs_allow_listen(serve: Any, root: Path, ffmpeg: str) -> None:
    port = free_port()
    for url, options in ((f"tcp://127.0.0.1:{port}?listen=1", []), (f"tcp://127.0.0.1:{port}", ["-listen", "1"])):
        _refused(_post(serve(media_root=root), _args("-f", "mpegts", *options, "-i", url, "-f", "null", "-")))
    served = serve(media_root=root, allow_listen=True)
    r = _post(served, _args("-f", "mpegts", "-i", f"tcp://127.0.0.1:{port}?listen=1", "-f", "null", "-"))
    assert r.status_code == 201, r.text
    tcp_listening(port)
    sent = run_ffmpeg(
        ffmpeg, ["-f", "lavfi", "-i", TESTSRC, "-c:v", "mpeg4", "-f", "mpegts", f"tcp://127.0.0.1:{port}"]
    )
    assert sent.rc == 0, sent.err
    wait_for("the stream's frames", lambda: source(served.status(r.json()["id"]), "out0")["frames"]["written"] == 5)


def test_the_flags_and_their_defaults(tmp_path: Path) -> None:
    flags = parse_flags(["--media-root", str(tmp_path), "--model-dir", str(tmp_path), "--allow-listen"])
    assert (flags.media_root, flags.model_dir, flags.allow_listen) == (str(tmp_path), str(tmp_path), True)
    assert parse_flags([]).allow_listen is None  # unset: the config file's, else False
    assert ServeConfig().media_root == Path(os.path.realpath(os.getcwd()))
    with pytest.raises(InvalidArgumentError, match="not a folder"):
        ServeConfig(media_root=tmp_path / "nowhere")
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    assert ServeConfig(media_root=link).media_root == tmp_path


def test_the_confinement_of_a_job_in_python(tmp_path: Path) -> None:
    """The API the service uses: positional and aliased options of libavfilter seen, paths made real."""
    c = api.Confinement.at(tmp_path)
    job = api.confine_job(api.Job("a.mkv", "lut3d=x.cube,hflip", output="o.mkv"), c)
    assert (job.input, job.output) == (str(tmp_path / "a.mkv"), str(tmp_path / "o.mkv"))
    assert job.filters == f"lut3d={tmp_path / 'x.cube'},hflip"
    assert job.options["input_options"]["protocol_whitelist"].startswith("file,")
    for chain in ("lut3d=/x.cube", "psnr=f=/x.log", "ssim=stats_file=/x.log", "vidstabdetect=result=/x"):
        with pytest.raises(api.ConfinementError, match="outside the media root"):
            api.confine_job(api.Job("a.mkv", chain, output="o.mkv"), c)
    with pytest.raises(api.ConfinementError, match="may name a file"):
        api.confine_job(api.Job("a.mkv", output="o.mkv", codec_options={"x264-params": "stats=/x:pass=1"}), c)
    with pytest.raises(api.ConfinementError, match="outside the media root"):
        api.confine_job(api.Job("https://h/a.ts", output="o.mkv", input_options={"ca_file": "/etc/ssl/x"}), c)
