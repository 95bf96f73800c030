"""Native code: the C image-processing extension (``_imgproc``) and its Python binding (``imgproc``)."""
