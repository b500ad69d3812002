"""The zoo's pose, segmentation and OCR models run through the CLI, judged from the run's own JSONL.

What issue 30 asks: on carphone MoveNet's nose falls inside BlazeFace's face box on nearly every
frame; the selfie mask holds the face box's centre and does not cover the whole frame; on a clip
of black text on white (written here by the oracle ffmpeg's drawtext, deterministic) PP-OCR
reads the string exactly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from spine_util import ffmpeg_exe, missing, run_cli, run_ffmpeg
from test_zoo_models import clip, entry

from avdnn.media.objects import rle_decode

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
TEXT = "AVDNN 2025"


def jsonl(tmp: Path, name: str, source: str, chain: str) -> list[dict[str, Any]]:
    """Run ``avdnn -i source -vf chain,metadata_jsonl=...`` and read its frame lines."""
    path = tmp / f"{name}.jsonl"
    res = run_cli(["-v", "error", "-i", source, "-vf", f"{chain},metadata_jsonl=file={path}", "-f", "null", "-"])
    assert res.rc == 0, res.err
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in lines if r["type"] == "frame"]


def test_movenet_nose_inside_the_face_box(tmp_path: Path) -> None:
    entry("movenet_lightning", "ai_edge_litert:tflite")
    entry("blazeface", "ai_edge_litert:tflite")
    car = clip("carphone_pristine.mp4")
    poses = jsonl(tmp_path, "pose", car, "dnn_detect=model=zoo/movenet_lightning")
    faces = jsonl(tmp_path, "face", car, "dnn_detect=model=zoo/blazeface")
    assert len(poses) == len(faces) == 120
    inside = 0
    for pose, face in zip(poses, faces, strict=True):
        (person,) = pose["boxes"]
        assert person["label"] == "person" and len(person["keypoints"]) == 17
        assert person["keypoint_names"][0] == "nose"
        nx, ny, _ = person["keypoints"][0]
        x0, y0, x1, y1 = face["boxes"][0]["xyxy"]
        inside += x0 <= nx <= x1 and y0 <= ny <= y1
    assert inside >= 114, inside  # nearly every frame (95 %)


def test_selfie_mask_holds_the_face_and_not_the_frame(tmp_path: Path) -> None:
    entry("selfie_segmentation", "ai_edge_litert:tflite")
    entry("blazeface", "ai_edge_litert:tflite")
    car = clip("carphone_pristine.mp4")
    masks = jsonl(tmp_path, "selfie", car, "dnn_detect=model=zoo/selfie_segmentation")
    faces = jsonl(tmp_path, "face", car, "dnn_detect=model=zoo/blazeface")
    for seg, face in zip(masks, faces, strict=True):
        (person,) = seg["boxes"]
        assert person["label"] == "person" and person["mask"]["size"] == [144, 176]
        mask, w, h = rle_decode(person["mask"])
        full = mask.full(w, h)
        x0, y0, x1, y1 = face["boxes"][0]["xyxy"]
        assert full[int((y0 + y1) / 2), int((x0 + x1) / 2)], seg["n"]
        assert 0.1 < full.mean() < 0.8, (seg["n"], full.mean())
        assert mask.area == full.sum() == sum(person["mask"]["counts"][1::2])


def test_ppocr_reads_the_text_exactly(tmp_path: Path) -> None:
    entry("ppocr_det")
    entry("ppocr_rec")
    exe = ffmpeg_exe()
    if exe is None:
        missing("oracle", "imageio-ffmpeg==0.8.1 (the static ffmpeg writes the text clip)")
    if not os.path.exists(FONT):
        missing("tools", f"{FONT}: apt-get install fonts-dejavu-core")
    assert exe is not None
    video = tmp_path / "text.mkv"
    draw = f"drawtext=fontfile={FONT}:text='{TEXT}':fontsize=40:fontcolor=black:x=(w-tw)/2:y=(h-th)/2"
    res = run_ffmpeg(exe, ["-f", "lavfi", "-i", f"color=white:s=320x96:r=10:d=0.3,{draw}", "-c:v", "ffv1", str(video)])
    assert res.rc == 0, res.err
    frames = jsonl(tmp_path, "ocr", str(video), "dnn_detect=model=zoo/ppocr_det,dnn_classify=model=zoo/ppocr_rec")
    assert len(frames) == 3
    for rec in frames:
        (line,) = rec["boxes"]
        assert line["label"] == "text" and line["text"] == TEXT and line["text_score"] > 0.9
        assert rec["source"] == "zoo/ppocr_det, zoo/ppocr_rec"
