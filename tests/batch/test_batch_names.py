"""Names are data, never syntax or patterns: template fields, partial folders, collisions, atomic files (no Ray)."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avdnn.api import fill_fields
from avdnn.batch import files, ledger
from avdnn.batch.plan import fields, plan
from avdnn.batch.report import BatchReport, FileReport
from avdnn.errors import InvalidArgumentError
from avdnn.graph.parse import parse_chain, split_options

HOSTILE = [
    "a,vflip:b",
    "a,hflip",
    "a;b",
    "[in]x[out]",
    "it's",
    "back\\slash",
    "trailing\\",
    " lead and trail ",
    "k=v",
    "=",
    "{stem}",
    "%{pts}",
    "''",
    "a'b,c:d\\e[f]g;h=i",
    ":",
    ",",
    "\t",
]


def jsonl_of(chain: str) -> list[tuple[str | None, str]]:
    """The option values metadata_jsonl receives from ``chain`` (the parser's two levels)."""
    [spec] = [s for s in parse_chain(chain) if s.name == "metadata_jsonl"]
    return split_options(spec.args or "")


# --------------------------------------------------------------------------- fields as values


@pytest.mark.parametrize("stem", HOSTILE)
def test_a_hostile_name_reaches_the_filter_literally(stem: str) -> None:
    filled = fill_fields("scale=8:8,metadata_jsonl=file=out/{stem}.jsonl:direct=1", {"stem": stem})
    assert [s.name for s in parse_chain(filled.chain)] == ["scale", "metadata_jsonl"]  # no filter added
    assert jsonl_of(filled.chain) == [("file", f"out/{stem}.jsonl"), ("direct", "1")]
    assert filled.writes == (f"out/{stem}.jsonl",)


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(blacklist_characters="\x00/", blacklist_categories=("Cs",)), min_size=1, max_size=40))
def test_parse_of_a_filled_value_gives_the_name_back(name: str) -> None:
    for chain in ("metadata_jsonl=file={name}", "null,metadata_jsonl={name},null", "metadata_jsonl=file='{name}'"):
        filled = fill_fields(chain, {"name": name})
        assert [v for _, v in jsonl_of(filled.chain)] == [name], chain
    filled = fill_fields("drawtext=text=x{name}y:x=1", {"name": name})  # a libavfilter filter: the same rule
    [spec] = parse_chain(filled.chain)
    assert split_options(spec.args or "") == [("text", f"x{name}y"), ("x", "1")]


def test_filters_without_a_field_keep_their_text() -> None:
    chain = " scale = 8:8 , format=pix_fmts=gray\\|yuv420p,metadata_jsonl=file=o/{stem}.jsonl , null"
    filled = fill_fields(chain, {"stem": "a,b"})
    assert filled.chain.startswith(" scale = 8:8 , format=pix_fmts=gray\\|yuv420p,")
    assert filled.chain.endswith(", null")  # the rebuilt filter drops only its own trailing blanks
    assert fill_fields("scale=8:8,null", {"stem": "x"}).chain == "scale=8:8,null"


def test_a_filled_filter_keeps_its_graph_labels_as_the_parser_read_them() -> None:
    """A label holding an escaped ``]`` is written back escaped (it was written raw: another graph)."""
    from avdnn.graph.links import parse_graph

    graph = "[0:v]split[a\\]b][c];[a\\]b]metadata_jsonl=file=o/{stem}.jsonl[out];[c]null[d]"
    filled = fill_fields(graph, {"stem": "s"}, graph=True)
    assert filled.chain == "[0:v]split[a\\]b][c];[a\\]b]metadata_jsonl=file=o/s.jsonl[out];[c]null[d]"
    assert parse_graph(filled.chain) == parse_graph(graph.replace("{stem}", "s"))


def test_field_format_specs_and_other_braces() -> None:
    values = fields("/d/in/a,b.mp4", 7)
    got = fill_fields("drawtext=text='%{pts} {name} {index\\:03d} {nope}'", values)
    [spec] = parse_chain(got.chain)
    assert split_options(spec.args or "") == [("text", "%{pts} a,b.mp4 007 {nope}")]
    with pytest.raises(InvalidArgumentError, match="template field"):
        fill_fields("drawtext=text='{stem\\:05d}'", values)


@pytest.mark.parametrize(
    "chain",
    [
        "dnn_detect=model={stem}.onnx",
        "dnn_detect=model=zoo:{stem}",
        "dnn_processing=onnx:{stem}.onnx",  # positional: dnn_backend, then model (FFmpeg's order)
        "scale=8:8,dnn_classify=dnn_backend=onnx:model=m/{parent}.onnx",
    ],
)
def test_a_field_in_a_model_is_refused(chain: str) -> None:
    with pytest.raises(InvalidArgumentError, match="cannot name the model"):
        fill_fields(chain, fields("/d/in/a.mp4", 0))
    fill_fields(chain.replace("{stem}", "m").replace("{parent}", "m"), fields("/d/in/a.mp4", 0))  # no field: fine


def test_written_files_are_placed() -> None:
    got = fill_fields(
        "metadata_jsonl=file=j/{stem}.jsonl,metadata_jsonl=-,metadata_jsonl=file=all.jsonl",
        {"stem": "a:b"},
        place=lambda p: f"/tmp/x/{p}",
    )
    assert got.writes == ("/tmp/x/j/a:b.jsonl", "/tmp/x/all.jsonl")  # '-' is standard output, not a file
    values = [split_options(s.args or "") for s in parse_chain(got.chain)]
    assert values == [[("file", "/tmp/x/j/a:b.jsonl")], [(None, "-")], [("file", "/tmp/x/all.jsonl")]]


# --------------------------------------------------------------------------- the plan


def test_the_plan_fills_names_as_values_and_lists_the_sidecars(tmp_path: Path) -> None:
    inputs = [str(tmp_path / "in" / n) for n in ("clip.mp4", "clip.v2.mp4", "clip.v2.v3.mp4", "a,vflip:b.mp4")]
    tasks = plan(inputs, str(tmp_path / "out/{stem}.mkv"), "scale=8:8,metadata_jsonl=file=out/{stem}.jsonl")
    for task, stem in zip(tasks, ("clip", "clip.v2", "clip.v2.v3", "a,vflip:b"), strict=True):
        assert task.output == str(tmp_path / "out" / f"{stem}.mkv")
        assert task.sidecars == (os.path.abspath(f"out/{stem}.jsonl"),)  # absolute: a worker's cwd is not ours
        assert jsonl_of(task.chain) == [("file", task.sidecars[0])]
        assert task.files == (task.output, *task.sidecars)


def test_an_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    inputs = [str(tmp_path / "clip.mp4"), str(tmp_path / "clip.v2.mp4")]
    with pytest.raises(InvalidArgumentError, match=r"Output '.*clip\.v2\.mp4' same as Input") as info:
        plan(inputs, str(tmp_path / "{stem}.v2.mp4"), "")  # clip.mp4 -> clip.v2.mp4, the second input
    assert info.value.code == -errno.EINVAL
    with pytest.raises(InvalidArgumentError, match="same as Input"):
        plan(inputs, str(tmp_path / "o/{stem}.mkv"), f"metadata_jsonl=file={tmp_path}/{{name}}")
    link = tmp_path / "o" / "l.mkv"
    link.parent.mkdir()
    link.symlink_to(inputs[0])
    with pytest.raises(InvalidArgumentError, match="same as Input"):  # the same file under another name
        plan(inputs[:1], str(tmp_path / "o/l.mkv"), "")


def test_written_files_never_collide(tmp_path: Path) -> None:
    inputs = [str(tmp_path / "a.mp4"), str(tmp_path / "b.mp4")]
    with pytest.raises(InvalidArgumentError, match=r"would both write '.*all\.jsonl'"):
        plan(inputs, str(tmp_path / "o/{stem}.mkv"), f"metadata_jsonl=file={tmp_path}/all.jsonl")
    with pytest.raises(InvalidArgumentError, match=r"would both write '.*b\.mkv'"):  # a's JSONL is b's output
        plan(inputs, str(tmp_path / "o/{stem}.mkv"), f"metadata_jsonl=file={tmp_path}/o/b.mkv")
    with pytest.raises(InvalidArgumentError, match=r"would write '.*a\.mkv' twice"):
        plan(inputs[:1], str(tmp_path / "o/{stem}.mkv"), f"metadata_jsonl=file={tmp_path}/o/{{stem}}.mkv")


# --------------------------------------------------------------------------- partial folders


def test_an_attempt_never_clears_a_siblings_file(tmp_path: Path) -> None:
    names = ["clip.mkv", "clip.v2.mkv", "clip.mkv.v2.mkv", ".clip.mkv", "clip"]
    tmps = {n: files.new_attempt(str(tmp_path / n)) for n in names}
    for t in tmps.values():
        Path(t).write_bytes(b"being written")
    files.clear_attempts(str(tmp_path / "clip.mkv"))  # what a retry of clip.mkv does first
    assert not os.path.exists(tmps["clip.mkv"])
    assert all(os.path.exists(tmps[n]) for n in names[1:])
    assert sorted(files.leftovers(str(tmp_path))) == sorted(tmps[n] for n in names[1:])


def test_attempts_keep_the_final_name_and_never_share_a_folder(tmp_path: Path) -> None:
    out = str(tmp_path / "c1.framemd5")
    first, second = files.new_attempt(out), files.new_attempt(out)
    assert first != second and os.path.basename(first) == os.path.basename(second) == "c1.framemd5"
    assert Path(first).parent.name.startswith(f"{os.getpid()}.")
    Path(first).write_bytes(b"x")
    files.end_attempt(first)
    files.end_attempt(second)
    assert not (tmp_path / files.PARTIAL_DIR).exists()  # the last attempt removes the empty folders


# --------------------------------------------------------------------------- existing outputs, atomic files


def test_an_existing_output_is_refused_unless_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "a.mkv"
    out.write_bytes(b"x")
    with pytest.raises(OSError, match=r"already exists\. Use -y to overwrite\.") as info:
        files.refuse_existing([str(tmp_path / "b.mkv"), str(out)], None)
    assert getattr(info.value, "code", None) == -errno.EEXIST
    with pytest.raises(OSError, match=r"already exists\. Exiting\."):
        files.refuse_existing([str(out)], False)
    files.refuse_existing([str(out)], True)
    files.refuse_existing([str(out)], None, ours=[str(out)])  # renamed by an unfinished attempt of this job


def test_small_files_are_written_under_fresh_names(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    (tmp_path / f"r.json.{os.getpid()}.tmp").mkdir()  # a fixed temporary name would be taken
    rep = BatchReport([FileReport("/a", "/o/a", "unfinished")], job="j", chain="", output="o", workers=1)
    rep.write(str(path))
    assert json.loads(path.read_text())["totals"]["unfinished"] == 1 and not rep.ok
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask  # not mkstemp's 0600
    src, out = tmp_path / "in.mp4", tmp_path / "o" / "a.mkv"
    src.write_bytes(b"abc")
    (out.parent / ".avdnn-ledger" / f"a.mkv.json.{os.getpid()}.tmp").mkdir(parents=True)
    ledger.record(ledger.Entry.of(str(src), "j", str(out), sidecars=[str(tmp_path / "a.jsonl")]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.mp4", "o", "r.json", f"r.json.{os.getpid()}.tmp"]
    assert sorted(p.name for p in (out.parent / ".avdnn-ledger").iterdir()) == [
        "a.mkv.json",
        f"a.mkv.json.{os.getpid()}.tmp",
    ]


def test_the_ledger_needs_every_sidecar(tmp_path: Path) -> None:
    src, out, side = tmp_path / "a.mp4", tmp_path / "o" / "a.mkv", tmp_path / "j" / "a.jsonl"
    src.write_bytes(b"abc")
    for p in (out, side):
        p.parent.mkdir(exist_ok=True)
        p.write_bytes(b"x")
    ledger.record(ledger.Entry.of(str(src), "job", str(out), sidecars=[str(side)]))
    assert ledger.finished(str(src), "job", str(out), [str(side)])
    assert not ledger.finished(str(src), "job", str(out))  # another chain's sidecars (another cwd)
    side.unlink()
    assert not ledger.finished(str(src), "job", str(out), [str(side)])  # died between the renames
    entry = ledger.read(str(src), "job", str(out), [str(side)])
    assert entry is not None and entry.files == [str(out), str(side)]  # ...and those files are the job's own


def test_the_events_file_is_a_written_file() -> None:
    """events=file=... is placed and checked like metadata_jsonl's file; its MQTT URL is not a file."""
    got = fill_fields(
        "events=file=ev/{stem}.jsonl,events=mqtt=mqtt\\://127.0.0.1/{stem}", {"stem": "a"}, place=lambda p: f"/o/{p}"
    )
    assert got.writes == ("/o/ev/a.jsonl",)
