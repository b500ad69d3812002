"""ctypes bindings to the libav* libraries PyAV loaded, and ffmpeg's listings and banner built on them."""
