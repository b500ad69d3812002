#!/usr/bin/env bash
# Set up .venv with avdnn and run the main job: a lavfi test clip through an FFmpeg filter
# chain into out/demo.mp4, plus the same frames' MD5 (as `ffmpeg -f md5` would print it).
source "$(dirname "$0")/env.sh"
install_avdnn demo
mkdir -p out
CHAIN="scale=640:-2,drawbox=x=20:y=20:w=200:h=120:color=red@0.6:t=4,hflip,format=yuv420p"
"$VENV/bin/avdnn" -hide_banner -y -f lavfi -i "testsrc2=s=1280x720:r=25:d=4" -vf "$CHAIN" -c:v libx264 out/demo.mp4
"$VENV/bin/avdnn" -hide_banner -loglevel error -f lavfi -i "testsrc2=s=1280x720:r=25:d=4" -vf "$CHAIN" -f md5 - | tee out/demo.md5
echo "wrote out/demo.mp4 and out/demo.md5"
