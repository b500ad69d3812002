"""A track's text by vote over its reads, and events carrying the object's text and best keypoints."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from avdnn.events.objects import ObjectEvents
from avdnn.events.schema import validate_event
from avdnn.media.detections import Detections
from avdnn.media.frame import Frame
from avdnn.tracking.textvote import TextVotes


def reads(*rows: tuple[int, str, float]) -> Detections:
    n = len(rows)
    return Detections(
        xyxy=np.tile([[10, 10, 40, 20]], (n, 1)),
        confidence=np.full(n, 0.9),
        class_id=np.zeros(n),
        labels=("plate",) * n,
        frame_size=(64, 64),
        track_id=[t for t, _, _ in rows],
        text=tuple(s for _, s, _ in rows),
        text_score=[c for _, _, c in rows],
    )


def test_a_track_carries_its_text_once_reads_agree() -> None:
    votes = TextVotes(2)
    out = votes.apply(reads((1, "AB12", 0.9), (-1, "ZZ", 0.5)))
    assert out.text == ("", "ZZ")  # one read is no agreement; an untracked box keeps its own read
    out = votes.apply(reads((1, "A812", 0.6)))
    assert out.text == ("",)
    out = votes.apply(reads((1, "AB12", 0.7)))
    assert out.text == ("AB12",) and out.text_score[0] == pytest.approx(0.8)  # type: ignore[index]
    out = votes.apply(reads((1, "A812", 0.9)))  # 2 against 2: the first to agree stays
    assert out.text == ("AB12",)
    # a frame without a read (reclassify_interval): the track's text all the same
    plain = Detections(xyxy=[[0, 0, 5, 5]], confidence=[0.9], class_id=[0], frame_size=(64, 64), track_id=[1])
    assert votes.apply(plain).text == ("AB12",)
    assert TextVotes(1).apply(reads((4, "X", 0.5))).text == ("X",)


def test_events_carry_the_text_and_the_best_keypoints() -> None:
    life = ObjectEvents("cam")
    events = []
    for n, (text, score, kx) in enumerate([("", 0.5, 1.0), ("AB12", 0.9, 2.0), ("AB12", 0.7, 3.0)]):
        det = Detections(
            xyxy=[[10, 10, 40, 20]],
            confidence=[score],
            class_id=[0],
            labels=("car",),
            frame_size=(64, 64),
            track_id=[5],
            text=(text,),
            text_score=[0.95 if text else np.nan],
            keypoints=np.full((1, 2, 3), kx, np.float32),
            keypoint_names=("a", "b"),
        )
        y = np.zeros((64, 64), np.uint8)
        uv = np.full((32, 32), 128, np.uint8)
        frame = Frame.from_planes([y, uv, uv.copy()], "yuv420p", pts=n, time_base=Fraction(1, 25))
        events += life.update(det, frame, n / 25, n)
    events += life.finish()
    new, update, end = events
    assert "text" not in new and new["keypoints"] == [[1.0, 1.0, 1.0]] * 2 and new["keypoint_names"] == ["a", "b"]
    assert update["changes"] == ["text"] and update["previous"] == {"text": ""} and update["text"] == "AB12"
    assert update["keypoints"] == [[2.0, 2.0, 2.0]] * 2  # the best-scored box so far (0.9)
    assert end["text"] == "AB12" and end["text_score"] == pytest.approx(0.95) and end["keypoints"][0][0] == 2.0
    for e in events:
        validate_event(e)
