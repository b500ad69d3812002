"""The issue's check: two live cameras into one template pipeline with a shared detector, a third
joining at run time and batched with them, one leaving, the pipeline deleted; every output
playable (the oracle decodes it), the final accounting balanced, ``/metrics`` equal to it: with a
tiny generated detector, then with the zoo's SSD (slow: its first load converts a TensorFlow graph)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import av
import pytest
from prometheus_client.parser import text_string_to_metric_families
from serve_util import Camera, Served, decoded_frames, mjpeg_frames, source, wait_for
from spine_util import missing, need_installed

TEMPLATE_OUTPUT = ["-c:v", "mpeg4"]


def _chain(model: str, instance: str = "det") -> str:
    return (
        f"dnn_detect=model={model}:model_instance={instance}:batch_size=3:batch_timeout=0.05:confidence=0.5,"
        "drawbox=box_source=side_data_detection_bboxes:color=red:thickness=2"
    )


def _running(served: Served, pid: str, *sids: str) -> bool:
    st = served.status(pid)
    return all(source(st, s)["state"] == "running" and source(st, s)["frames"]["written"] > 5 for s in sids)


def _balanced(row: dict[str, Any]) -> None:
    f = row["frames"]
    assert row["balanced"], row["violations"]
    assert f["read"] + f["added"] == f["written"] + f["failed"] + f["dropped"] + f["unfinished"], row


def metric_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page, by (name, sorted labels), parsed by prometheus_client."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def frames_metric(values: dict[Any, float], pipeline: str, sid: str, stage: str) -> float:
    return sum(
        v
        for (name, labels), v in values.items()
        if name == "avdnn_frames_total"
        and dict(labels)["pipeline"] == pipeline
        and dict(labels)["source"] == sid
        and dict(labels)["stage"] == stage
    )


def check_metrics_equal_accounting(served: Served, final: dict[str, Any]) -> None:
    r = served.client.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    values = metric_values(r.text)
    pid = final["id"]
    for row in final["sources"]:
        for stage in ("read", "written", "failed", "dropped"):
            assert frames_metric(values, pid, row["id"], stage) == row["frames"][stage], (row["id"], stage)
        for cause, n in row["dropped"].items():
            key = (
                "avdnn_frames_total",
                (("cause", cause), ("pipeline", pid), ("source", row["id"]), ("stage", "dropped")),
            )
            assert values[key] == n
        ids = (("pipeline", pid), ("source", row["id"]))
        assert values[("avdnn_latency_seconds_count", ids)] == row["latency_count"]
        assert values[("avdnn_reconnects_total", ids)] == row["reconnects"]
    for inst in final["instances"]:
        ids = (("instance", inst["name"]), ("node", inst["node"]), ("pipeline", pid))
        assert values[("avdnn_instance_inferences_total", ids)] == inst["inferences"]
        assert values[("avdnn_instance_batches_total", ids)] == inst["batches"]
        assert values[("avdnn_instance_streams", ids)] == inst["stream_count"]
        # every backend run of a batch is timed: a batch that failed as a whole is rerun stream by stream
        runs = values[("avdnn_inference_seconds_count", ids)]
        assert runs == inst["batches"] if not inst["reruns"] else runs > inst["batches"]


def _jpeg_size(data: bytes) -> tuple[int, int]:
    with av.open(io.BytesIO(data), format="jpeg_pipe") as c:
        frame = next(c.decode(video=0))
        return frame.width, frame.height


def test_cameras_join_and_leave_a_shared_detector_and_the_accounting_holds(
    serve: Any, ffmpeg: str, detector: str, tmp_path: Path
) -> None:
    served = serve(stall_after=2.0)
    output = [*TEMPLATE_OUTPUT, str(tmp_path / "{source}.mkv")]
    with Camera(ffmpeg) as cam1, Camera(ffmpeg) as cam2, Camera(ffmpeg) as cam3:
        body = {
            "name": "lobby",
            "chain": _chain(detector),
            "output": output,
            "sources": [{"id": "cam1", "url": cam1.url}, {"id": "cam2", "url": cam2.url}],
        }
        r = served.client.post("/api/pipelines", json=body)
        assert r.status_code == 201, r.text
        assert r.json()["id"] == "lobby" and r.json()["kind"] == "template"

        # both sources running in its status
        wait_for("cam1 and cam2 running", lambda: _running(served, "lobby", "cam1", "cam2"))
        listed = served.client.get("/api/pipelines").json()["pipelines"]
        assert [(p["id"], p["state"], p["sources"]) for p in listed] == [
            ("lobby", "running", {"cam1": "running", "cam2": "running"})
        ]

        # a third joins at run time: one model instance, three streams, batches mixing them
        r = served.client.post("/api/pipelines/lobby/sources", json={"id": "cam3", "url": cam3.url})
        assert r.status_code == 201, r.text
        wait_for("cam3 running", lambda: _running(served, "lobby", "cam1", "cam2", "cam3"))
        st = served.status("lobby")
        (inst,) = st["instances"]
        assert inst["name"] == "det" and inst["stream_count"] == 3
        streams = [s.split(":")[0] for s in inst["streams"]]
        assert sorted(streams[:2]) == ["cam1", "cam2"] and streams[2] == "cam3"  # the third joined last
        assert inst["mixed_batches"] > 0 and inst["mean_batch"] > 1
        assert sum(inst["batch_sizes"]) == inst["batches"]  # batches by size: every batch counted once
        assert sum((n + 1) * k for n, k in enumerate(inst["batch_sizes"])) == inst["inferences"]
        for sid in ("cam1", "cam2", "cam3"):
            row = source(st, sid)
            assert row["fps"] > 0 and row["latency"]["p95"] is not None and row["cause"] is None

        # the annotated preview: multipart JPEG frames of the chain's output, and a snapshot
        with served.client.stream("GET", "/api/pipelines/lobby/sources/cam3/preview.mjpg?fps=10") as r:
            assert r.headers["content-type"] == "multipart/x-mixed-replace; boundary=frame"
            data = b""
            for chunk in r.iter_bytes():
                data += chunk
                if len(mjpeg_frames(data)) >= 3:
                    break
        pictures = mjpeg_frames(data)
        assert len(pictures) >= 3 and all(_jpeg_size(p) == (160, 120) for p in pictures)
        snap = served.client.get("/api/pipelines/lobby/sources/cam1/snapshot.jpg?width=80")
        assert snap.status_code == 200 and snap.headers["content-type"] == "image/jpeg"
        assert _jpeg_size(snap.content) == (80, 60)
        assert source(served.status("lobby"), "cam3")["preview"]["sent"] >= 3

        # one leaves: its run stopped as Ctrl-C stops one, its output finished
        r = served.client.delete("/api/pipelines/lobby/sources/cam2")
        assert r.status_code == 200, r.text
        left = r.json()
        assert left["id"] == "cam2" and left["state"] == "ended" and left["runs"] == 1
        _balanced(left)
        assert decoded_frames(ffmpeg, tmp_path / "cam2.mkv") == left["frames"]["written"]
        st = served.status("lobby")
        assert st["state"] == "running" and source(st, "cam1")["state"] == "running"
        assert source(st, "cam2").get("departed") is True

        # the pipeline deleted: its final accounting, every output playable
        r = served.client.delete("/api/pipelines/lobby")
        assert r.status_code == 200, r.text
        final = r.json()
    assert final["state"] == "ended"
    assert sorted(row["id"] for row in final["sources"]) == ["cam1", "cam2", "cam3"]
    for row in final["sources"]:
        assert row["state"] == "ended" and row["frames"]["written"] > 5
        _balanced(row)
        assert decoded_frames(ffmpeg, tmp_path / f"{row['id']}.mkv") == row["frames"]["written"]
    (inst,) = final["instances"]
    assert inst["stream_count"] == 3 and inst["failures"] == 0
    assert inst["inferences"] >= sum(row["frames"]["written"] for row in final["sources"])

    # /metrics: parsed by prometheus_client, equal to the final accounting
    check_metrics_equal_accounting(served, final)
    assert served.client.get("/api/pipelines/lobby").json()["state"] == "ended"  # kept readable
    assert served.client.delete("/api/pipelines/lobby").status_code == 409


@pytest.mark.slow
def test_the_zoo_ssd_shared_by_two_live_cameras(serve: Any, ffmpeg: str, clip: dict[str, str], tmp_path: Path) -> None:
    need_installed("openvino", "pip install 'avdnn[openvino]'")
    from avdnn.zoo import get

    spec = get("ssd_mobilenet_v2_coco")
    if spec.source_file() is None:
        missing("models", spec.package.pip)
    served = serve(stall_after=5.0)
    chain = (
        "dnn_detect=model=zoo:ssd_mobilenet_v2_coco:dnn_backend=openvino:model_instance=ssd:batch_size=2,"
        "drawbox=box_source=side_data_detection_bboxes:color=yellow"
    )
    with Camera(ffmpeg, clip=clip["carphone"]) as a, Camera(ffmpeg, clip=clip["carphone"]) as b:
        body = {
            "name": "road",
            "chain": chain,
            "output": [*TEMPLATE_OUTPUT, str(tmp_path / "{source}.mkv")],
            "sources": [{"id": "a", "url": a.url}, {"id": "b", "url": b.url}],
        }
        assert served.client.post("/api/pipelines", json=body).status_code == 201
        # the SSD's first load converts its TensorFlow graph: minutes on a busy machine
        wait_for("both cameras through the SSD", lambda: _running(served, "road", "a", "b"), deadline=300)
        final = served.client.delete("/api/pipelines/road").json()
    (inst,) = final["instances"]
    assert inst["name"] == "ssd" and inst["stream_count"] == 2 and inst["failures"] == 0
    for row in final["sources"]:
        _balanced(row)
        assert decoded_frames(ffmpeg, tmp_path / f"{row['id']}.mkv") == row["frames"]["written"]
    check_metrics_equal_accounting(served, final)
