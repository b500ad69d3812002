"""A tracked object's text, decided by vote over its reads (a plate read once per object).

A recognizer reads an object's text on many frames, and the reads differ (``AB12CDE``,
``AB12CDF``, a blur read as ``A812CDE``). Frigate's licence plate recognition and DL Streamer's
OCR samples settle one string per object; here a track's text is the string read most often on
its boxes, once it was read the same at least ``min_agreement`` times (ties: the first to get
there). Until then the track's boxes carry no text; afterwards every box of the track carries
it, frames without a read (``reclassify_interval``, predicted boxes) included. Its score is the
mean score of the agreeing reads. Boxes without a track keep their own read.

Per track a few counters, bounded as dnn_classify's per-track state (the least recently seen go
first), so a stream that never ends keeps bounded memory.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np

from avdnn._util.lru import LruDict
from avdnn.media.detections import Detections
from avdnn.tracking.summary import MAX_TRACKS


class _Reads:
    __slots__ = ("best", "counts", "scores")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.scores: dict[str, float] = {}
        self.best = ""

    def add(self, text: str, score: float, need: int) -> None:
        self.counts[text] += 1
        self.scores[text] = self.scores.get(text, 0.0) + score
        n = self.counts[text]
        if n >= need and (not self.best or n > self.counts[self.best]):
            self.best = text

    def decided(self) -> tuple[str, float]:
        if not self.best:
            return "", float("nan")
        return self.best, self.scores[self.best] / self.counts[self.best]


class TextVotes:
    """The text of each track of one stream; :meth:`apply` once per frame that carries reads."""

    def __init__(self, min_agreement: int = 2) -> None:
        self.min_agreement = max(1, int(min_agreement))
        self._tracks: LruDict[int, _Reads] = LruDict(MAX_TRACKS)

    def apply(self, det: Detections) -> Detections:
        """``det`` with each tracked box's text replaced by its track's decided text (see the module docstring).

        A record without tracked boxes, or without text and no track with a decided one, is returned as is.
        """
        ids = det.track_ids.tolist()
        if not any(t >= 0 for t in ids) or (det.text is None and not len(self._tracks)):
            return det
        texts = list(det.text) if det.text is not None else [""] * len(det)
        scores = (
            np.array(det.text_score, np.float32)
            if det.text_score is not None
            else np.full(len(det), np.nan, np.float32)
        )
        predicted = det.predicted_mask.tolist()
        changed = False
        for i, tid in enumerate(ids):
            if tid < 0:
                continue
            reads = self._tracks.get(tid)
            if texts[i] and not predicted[i]:
                if reads is None:
                    reads = self._tracks[tid] = _Reads()
                reads.add(texts[i], float(scores[i]), self.min_agreement)
            text, score = reads.decided() if reads is not None else ("", float("nan"))
            if texts[i] != text or not ((np.isnan(score) and np.isnan(scores[i])) or scores[i] == np.float32(score)):
                texts[i], scores[i], changed = text, score, True
        if not changed:
            return det
        return dataclasses.replace(det, text=tuple(texts), text_score=scores)


__all__ = ["TextVotes"]
